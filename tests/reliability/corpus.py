"""What the reliability runs publish: valid turns with a known fate, and malformed events of every kind.

Every item says what must become of it — ``entry`` (one line in its project's log), ``skip`` (counted
as ``skipped_*``) or ``dead`` (one dead letter, with ``reason`` when the kind fixes it) — so the ledger can
check each one independently of the code under test.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from store.entry import entry_id
from tests.ingest.turns import turn

Fate = Literal["entry", "skip", "dead"]
MIB = 1 << 20


@dataclass(frozen=True)
class Item:
    """One stream entry to publish (``fields``) and its expected fate."""

    kind: str
    fields: Mapping[bytes, bytes]
    fate: Fate
    reason: str | None = None  # the dead-letter reason, when the kind decides it
    owner: str = ""
    project: str = ""
    event_id: str = ""

    @property
    def entry_id(self) -> str:
        """The id of the entry a valid turn becomes (``entry`` fate only)."""
        return entry_id(self.owner, self.project, self.event_id)


def valid(
    i: int, *, owners: int = 2, projects: int = 20, run: str = "r", kinds: tuple[str, ...] | None = None
) -> Item:
    """Turn ``i`` of a run: fixed / partial / unverified turns and a fifth that touch no file (skipped).

    Events spread over ``owners`` x ``projects`` projects, each with an explicit, unique event id.
    """
    choices = kinds or ("fixed", "partial", "unverified", "fixed", "no_files")
    kind = choices[i % len(choices)]
    owner = f"owner{i % owners}"
    project = f"github.com/acme/p{(i // owners) % projects}"
    event_id = f"ev-{run}-{i:06d}"
    event = turn(i, owner=owner, project=project, kind=kind, event_id=event_id)  # type: ignore[arg-type]
    return Item(
        kind=f"valid_{kind}",
        fields={b"event": orjson.dumps(event)},
        fate="skip" if kind == "no_files" else "entry",
        owner=owner,
        project=project,
        event_id=event_id,
    )


def _base(i: int, **changes: Any) -> dict[str, Any]:
    event = turn(i, owner="mallory", project="github.com/acme/hostile", event_id=f"ev-bad-{i:06d}")
    event.update(changes)
    return event


def _json(event: object) -> dict[bytes, bytes]:
    return {b"event": orjson.dumps(event)}


def _without(i: int, name: str) -> dict[bytes, bytes]:
    event = _base(i)
    del event[name]
    return _json(event)


def _yes_10mb() -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": "yes"}, "output": "y\n" * (5 * MIB)}


# kind -> (maker, fate, reason). Each maker returns the stream fields of event ``i``.
MALFORMED: dict[str, tuple[Any, Fate, str | None]] = {
    "invalid_json_truncated": (lambda i: {b"event": orjson.dumps(_base(i))[:-7]}, "dead", "invalid_json"),
    "invalid_json_garbage": (lambda i: {b"event": b"{v:1, owner: mallory}"}, "dead", "invalid_json"),
    "invalid_json_empty": (lambda i: {b"event": b""}, "dead", "invalid_json"),
    "invalid_utf8": (
        lambda i: {b"event": orjson.dumps(_base(i)).replace(b"mallory", b"mall\xff\xfery")},
        "dead",
        "invalid_utf8",
    ),
    "nul_byte_raw": (
        lambda i: {b"event": orjson.dumps(_base(i)).replace(b'"v":1', b'"v":1\x00')},
        "dead",
        "invalid_json",
    ),
    "nul_in_owner": (lambda i: _json(_base(i, owner="mal\x00lory")), "dead", "invalid_fields"),
    "nul_in_project": (lambda i: _json(_base(i, project_key="acme\x00/etc")), "dead", "invalid_fields"),
    "wrong_type_ts": (lambda i: _json(_base(i, ts="yesterday")), "dead", "invalid_fields"),
    "wrong_type_tools": (lambda i: _json(_base(i, tool_events="rm -rf /")), "dead", "invalid_fields"),
    "wrong_type_owner": (lambda i: _json(_base(i, owner=42)), "dead", "invalid_fields"),
    "wrong_type_tool_item": (lambda i: _json(_base(i, tool_events=[1, 2, 3])), "dead", "invalid_fields"),
    "wrong_type_version": (lambda i: _json(_base(i, v="1")), "dead", "unsupported_version"),
    "missing_owner": (lambda i: _without(i, "owner"), "dead", "invalid_fields"),
    "missing_ts": (lambda i: _without(i, "ts"), "dead", "invalid_fields"),
    "missing_version": (lambda i: _without(i, "v"), "dead", "unsupported_version"),
    "missing_event_field": (lambda i: {b"evnet": orjson.dumps(_base(i))}, "dead", "missing_field"),
    "version_2": (lambda i: _json(_base(i, v=2)), "dead", "unsupported_version"),
    "not_an_object": (lambda i: {b"event": b"[1, 2, 3]"}, "dead", "not_an_object"),
    "json_null": (lambda i: {b"event": b"null"}, "dead", "not_an_object"),
    "deep_nesting_json": (lambda i: {b"event": b"[" * 100_000 + b"]" * 100_000}, "dead", "invalid_json"),
    "owner_dotdot": (lambda i: _json(_base(i, owner="..")), "dead", "invalid_fields"),
    "owner_slash": (lambda i: _json(_base(i, owner="../../etc")), "dead", "invalid_fields"),
    "owner_5kb": (lambda i: _json(_base(i, owner="m" * 5000)), "dead", "invalid_fields"),
    "project_5kb": (lambda i: _json(_base(i, project_key="p/" * 2500)), "dead", "invalid_fields"),
    "ts_negative": (lambda i: _json(_base(i, ts=-1)), "dead", "invalid_fields"),
    "output_10mb": (lambda i: _json(_base(i, tool_events=[_yes_10mb()])), "dead", "too_large"),
}

# Hostile but valid: the pipeline must record them safely (inside fix_memory/, nothing crashing).
HOSTILE_VALID: dict[str, dict[str, Any]] = {
    "project_dotdot": {"project_key": "../../../../etc/passwd"},
    "project_slash": {"project_key": "/"},
    "project_dot": {"project_key": "."},
    "project_unicode": {"project_key": "github.com/ácme/wïdgets-😀"},
    "project_4kb": {"project_key": "q/" * 2000},
    "owner_unicode": {"owner": "mällory-😀"},
    "nul_in_message": {"user_message": "parse\x00 should split; test fails\x00"},
}


def hostile_valid(i: int, kind: str) -> Item:
    """A hostile-but-valid turn of ``kind`` (see ``HOSTILE_VALID``) that must become an entry."""
    event = _base(i, **HOSTILE_VALID[kind])
    event["event_id"] = f"ev-hostile-{i:06d}"
    return Item(
        kind=f"hostile_{kind}",
        fields=_json(event),
        fate="entry",
        owner=event["owner"],
        project=event["project_key"],
        event_id=event["event_id"],
    )


def many_tools(i: int, count: int = 10_000) -> Item:
    """A valid turn of ``count`` tool events (thousands of reads, then an edit): one entry."""
    tools: list[dict[str, Any]] = [
        {"tool": "bash", "input": {"command": f"cat src/f{n}.py"}, "output": "x = 1"} for n in range(count)
    ]
    tools.append(turn(i)["tool_events"][1])  # the edit, last (past 2,000 events the middle is not read)
    event = _base(i, tool_events=tools, event_id=f"ev-many-{i:06d}")
    return Item(
        "many_tool_events", _json(event), "entry", None, "mallory", event["project_key"], event["event_id"]
    )


def deep_but_parseable(i: int, depth: int = 200) -> Item:
    """A valid turn whose tool input and harness metadata nest ``depth`` levels deep: one entry."""
    nested: Any = "leaf"
    for _ in range(depth):
        nested = {"k": nested}
    event = _base(i, event_id=f"ev-deep-{i:06d}")
    event["harness_meta"] = {"harness": "test", "extra": nested}
    event["tool_events"][0]["input"]["deep"] = nested
    return Item(
        "deep_nesting_valid", _json(event), "entry", None, "mallory", event["project_key"], event["event_id"]
    )


# Kinds whose events are big: cap how many a run publishes (a 10 MB event x 700 is 7 GB of Redis).
HEAVY_LIMIT = {"output_10mb": 3, "deep_nesting_json": 20}


def mixed(
    malformed: int, good: int, *, seed: int, run: str = "m", heavy: int | None = None
) -> Iterator[Item]:
    """``malformed`` bad events of every kind (heavy kinds capped, at ``heavy`` each if given) shuffled
    among ``good`` valid ones.

    Hostile-valid turns, a 10,000-tool turn and a deep-but-parseable one are counted in ``good``.
    """
    rng = random.Random(seed)
    kinds = list(MALFORMED)
    counts = dict.fromkeys(kinds, 0)
    bad: list[Item] = []
    n = 0
    while len(bad) < malformed:
        kind = kinds[n % len(kinds)]
        n += 1
        cap = HEAVY_LIMIT.get(kind, malformed) if heavy is None or kind not in HEAVY_LIMIT else heavy
        if counts[kind] >= cap:
            continue
        counts[kind] += 1
        maker, fate, reason = MALFORMED[kind]
        bad.append(Item(kind, maker(len(bad)), fate, reason))
    special: list[Item] = [hostile_valid(k, kind) for k, kind in enumerate(HOSTILE_VALID)]
    special += [many_tools(900_001), deep_but_parseable(900_002)]
    items = bad + special + [valid(k, run=run) for k in range(max(0, good - len(special)))]
    rng.shuffle(items)
    yield from items
