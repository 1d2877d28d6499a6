"""Fitting a turn under the wire limit: cut the middle out of its longest strings (tool outputs first),
mark each cut, and drop tool events from the middle only as a last resort. Pure: values in, values out.

Shared by the backfill importers (``ingest.importers._common.fit_event``) and the publisher SDK
(``ingest.publish``), so a huge test log in a live turn is recorded with its head and tail instead of the
whole turn being refused. The paths of the cut strings go to ``harness_meta.cut``, the number of dropped
tool events to ``harness_meta.cut_tool_events``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ingest.schema import TurnEvent

# Strings are never cut shorter than this many characters while fitting an event under the wire limit.
MIN_FIT_CHARS = 256
# Fitting aims this many bytes under the limit, so a consumer that adds a field still fits.
WIRE_HEADROOM_BYTES = 4096


def cut_middle(text: str, keep: int) -> str:
    """``text`` with its middle replaced by a marker so that about ``keep`` characters remain."""
    if len(text) <= keep:
        return text
    head = keep // 2
    tail = keep - head
    return f"{text[:head]}\n[... fixmem cut {len(text) - keep} chars from the middle ...]\n{text[-tail:]}"


Slot = tuple[str, Callable[[dict[str, Any]], Iterator[tuple[str, dict[str, Any] | list[Any], str | int]]]]


def _outputs(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | list[Any], str | int]]:
    for i, tool in enumerate(body["tool_events"]):
        if isinstance(tool.get("output"), str):
            yield f"tool_events.{i}.output", tool, "output"


def _diffs(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | list[Any], str | int]]:
    for i, tool in enumerate(body["tool_events"]):
        if isinstance(tool.get("diff"), str):
            yield f"tool_events.{i}.diff", tool, "diff"


def _inputs(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | list[Any], str | int]]:
    for i, tool in enumerate(body["tool_events"]):
        arguments = tool.get("input")
        if isinstance(arguments, dict):
            for key, value in arguments.items():
                if isinstance(value, str):
                    yield f"tool_events.{i}.input.{key}", arguments, key


def _texts(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | list[Any], str | int]]:
    for i in range(len(body["round_texts"])):
        yield f"round_texts.{i}", body["round_texts"], i
    yield "user_message", body, "user_message"


_SLOTS: tuple[Slot, ...] = (("outputs", _outputs), ("diffs", _diffs), ("inputs", _inputs), ("texts", _texts))


def fit_body(
    body: dict[str, Any], budget: int, validate: Callable[[dict[str, Any]], TurnEvent]
) -> TurnEvent | None:
    """``validate(body)``, with the middle cut out of its longest strings until the wire form fits
    ``budget`` bytes; None when even that and dropping tool events cannot make it fit.

    Outputs are cut first, then diffs, tool inputs, assistant texts and the user message (never below
    ``MIN_FIT_CHARS``); as a last resort tool events are dropped from the middle. ``body`` is a JSON-like
    dict with ``tool_events``, ``round_texts`` and ``harness_meta``; it is not changed. ``validate``
    raises for an invalid turn (its own error type).
    """
    event = validate(body)
    if len(event.to_wire()) <= budget:
        return event
    body = orjson.loads(orjson.dumps(body))  # a private deep copy: the caller's body stays untouched
    body.setdefault("tool_events", [])
    body.setdefault("round_texts", [])
    body.setdefault("user_message", "")
    if not isinstance(body.get("harness_meta"), dict):
        body["harness_meta"] = {}
    cut: list[str] = []
    for _name, slots in _SLOTS:
        originals = {path: (holder, key, holder[key]) for path, holder, key in slots(body)}  # type: ignore[index]
        longest = max((len(v) for _, _, v in originals.values()), default=0)
        cap = longest // 2
        while cap >= MIN_FIT_CHARS:
            for path, (holder, key, value) in originals.items():
                if len(value) > cap:
                    holder[key] = cut_middle(value, cap)  # type: ignore[index]
                    if path not in cut:
                        cut.append(path)
            body["harness_meta"]["cut"] = cut
            event = validate(body)
            if len(event.to_wire()) <= budget:
                return event
            cap //= 2
    dropped = 0
    while len(event.to_wire()) > budget and len(body["tool_events"]) > 2:
        tools = body["tool_events"]
        n = max(1, len(tools) // 4)
        start = (len(tools) - n) // 2
        del tools[start : start + n]
        dropped += n
        body["harness_meta"]["cut_tool_events"] = dropped
        event = validate(body)
    return event if len(event.to_wire()) <= budget else None
