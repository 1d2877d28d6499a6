"""Count every published event's outcome from what the pipeline left behind, not from what it says it did.

Three independent sources: the fix logs' raw lines (each id once?), the dead-letter stream (each origin
id once?), and the fleet counters (skips are only counted there). ``Ledger.settle`` compares them with
what each published item was meant to become.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import redis

from ingest import dead_letters, keys
from store.paths import ROOT_DIR_NAME, is_log_file
from tests.reliability.corpus import Item
from workers.counters import read_counters

SKIP_RESULTS = ("skipped_no_files", "skipped_disabled", "skipped_no_owner")


@dataclass(frozen=True)
class Published:
    """An item and the stream id Redis acknowledged it with."""

    stream_id: str
    item: Item


def scan_logs(data_dir: Path) -> tuple[collections.Counter[str], int, list[str]]:
    """Every log line under ``data_dir``: id -> lines holding it, unparsable lines, logs with a torn tail."""
    ids: collections.Counter[str] = collections.Counter()
    bad = 0
    torn: list[str] = []
    root = data_dir / ROOT_DIR_NAME
    if not root.exists():
        return ids, bad, torn
    for owner_dir in root.iterdir():
        for path in owner_dir.iterdir():
            if not is_log_file(path.name):
                continue
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                torn.append(str(path))
            for line in data.split(b"\n"):
                if not line.strip():
                    continue
                try:
                    ids[orjson.loads(line)["id"]] += 1
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    bad += 1
    return ids, bad, torn


@dataclass
class Settlement:
    """Where every published event ended up, and what is wrong."""

    published: int = 0
    expected: dict[str, int] = field(default_factory=dict)  # by fate
    entries_missing: list[str] = field(default_factory=list)  # stream ids whose entry is not on disk
    entries_duplicated: int = 0  # extra lines of an id already on disk
    entries_unexpected: int = 0  # ids on disk no published item explains
    lines_unparsable: int = 0
    torn_logs: list[str] = field(default_factory=list)
    dead_missing: list[str] = field(default_factory=list)  # stream ids that should have a dead letter
    dead_duplicated: int = 0  # letters beyond the first for one origin id
    dead_unexpected: list[str] = field(default_factory=list)  # letters for valid events: (id, reason)
    dead_wrong_reason: list[str] = field(default_factory=list)
    dead_without_reason: int = 0
    skips_counted: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    dead_by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        """Events with no outcome at all."""
        missing_skips = max(0, self.expected.get("skip", 0) - self.skips_counted)
        return len(self.entries_missing) + len(self.dead_missing) + missing_skips

    @property
    def duplicated(self) -> int:
        """Outcomes beyond one per event."""
        extra_skips = max(0, self.skips_counted - self.expected.get("skip", 0))
        return self.entries_duplicated + self.dead_duplicated + extra_skips + len(self.dead_unexpected)

    @property
    def uncounted(self) -> int:
        """Events the fleet counters do not account for yet (negative: counted more than once).

        An entry reaches disk before its job's counters: a worker killed in between leaves the batch to a
        re-run, which counts it. So wait for this to reach 0, not only for the entries.
        """
        counted = sum(self.counters.get(r, 0) for r in ("recorded", "duplicate", "dead_letter"))
        return self.published - counted - self.skips_counted

    @property
    def settled(self) -> bool:
        """Every event has exactly one outcome, and nothing on disk is broken."""
        return (
            self.lost == 0
            and self.duplicated == 0
            and self.entries_unexpected == 0
            and self.lines_unparsable == 0
            and not self.torn_logs
            and not self.dead_wrong_reason
            and self.dead_without_reason == 0
        )

    def summary(self) -> str:
        """One line of figures for the test output (and docs/reliability.md)."""
        return (
            f"published {self.published} (entries {self.expected.get('entry', 0)}, skips "
            f"{self.expected.get('skip', 0)}, dead letters {self.expected.get('dead', 0)}): "
            f"lost {self.lost}, "
            f"duplicated {self.duplicated}, unexpected entries {self.entries_unexpected}, unparsable lines "
            f"{self.lines_unparsable}, torn logs {len(self.torn_logs)}, wrong reasons "
            f"{len(self.dead_wrong_reason)}; counters recorded {self.counters.get('recorded', 0)} "
            f"duplicate {self.counters.get('duplicate', 0)} skipped {self.skips_counted} "
            f"dead_letter {self.counters.get('dead_letter', 0)}"
        )


def settle(
    published: Sequence[Published],
    client: redis.Redis,
    data_dir: Path,
    *,
    dead_stream: str = keys.DEFAULT_DEAD_STREAM,
) -> Settlement:
    """Compare what ``published`` should have become with the logs, the dead letters and the counters."""
    result = Settlement(published=len(published))
    result.expected = dict(collections.Counter(p.item.fate for p in published))
    on_disk, result.lines_unparsable, result.torn_logs = scan_logs(data_dir)
    wanted = {p.item.entry_id: p.stream_id for p in published if p.item.fate == "entry"}
    result.entries_missing = [sid for eid, sid in wanted.items() if on_disk[eid] == 0]
    result.entries_duplicated = sum(n - 1 for n in on_disk.values() if n > 1)
    result.entries_unexpected = sum(1 for eid in on_disk if eid not in wanted)

    letters: dict[str, list[str]] = collections.defaultdict(list)
    for letter in dead_letters.iter_letters(client, dead_stream):
        letters[letter.origin_id].append(letter.reason)
        if not letter.reason or not letter.error:
            result.dead_without_reason += 1
    by_id = {p.stream_id: p.item for p in published}
    for origin, reasons in letters.items():
        for reason in reasons:
            result.dead_by_reason[reason] = result.dead_by_reason.get(reason, 0) + 1
        item = by_id.get(origin)
        if item is None:
            continue
        result.dead_duplicated += len(reasons) - 1
        if item.fate != "dead":
            result.dead_unexpected.append(f"{origin} ({item.kind}): {reasons[0]}")
        elif item.reason is not None and reasons[0] != item.reason:
            result.dead_wrong_reason.append(f"{origin} ({item.kind}): {reasons[0]}, expected {item.reason}")
    result.dead_missing = [
        p.stream_id for p in published if p.item.fate == "dead" and p.stream_id not in letters
    ]

    counters = read_counters(client)
    result.counters = dict(counters.events)
    result.skips_counted = sum(counters.events.get(r, 0) for r in SKIP_RESULTS)
    return result
