"""The rewrites of a log other than rotation: verdicts, ``forget``, ``repair``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from store.api.core import Cached
from store.api.summaries import Summaries
from store.entry import ENTRY_ID_PATTERN, Outcome
from store.errors import InvalidKey
from store.persist import fixlog
from store.persist.forgotten import add_forgotten, read_forgotten
from store.persist.repair import Repaired, plan_relink
from store.redact import might_hold_secret, redact
from store.summary import summarize
from store.verdicts import State, Verdict, agent_outcome, judge, state_of

_ID_RE = re.compile(ENTRY_ID_PATTERN)


@dataclass(frozen=True)
class Judged:
    """What ``apply_verdicts`` made of one verdict: ``state`` (``applied``: it is the verdict in effect;
    ``superseded``: one that ranks above it is; ``missing``: no such entry in the log; ``forgotten``: the
    entry was deleted by ``forget``) and the entry's own agent label (None when there is no entry)."""

    verdict: Verdict
    state: State
    agent_outcome: Outcome | None = None


def _redacted_verdict(verdict: Verdict) -> Verdict:
    v = verdict
    return Verdict(v.entry_id, v.source, v.outcome, v.ts, redact(v.detail), v.via)


class Rewrites(Summaries):
    """``apply_verdicts``, ``forget``, ``repair``."""

    def apply_verdicts(self, owner: str, project_key: str, verdicts: Sequence[Verdict]) -> list[Judged]:
        """Apply verdicts to a project's entries by precedence (``store.verdicts``), one per input, in order.

        Idempotent: a verdict in effect, or one a higher verdict outranks, changes nothing. One atomic
        rewrite under the lock when any line changes (details are redacted). Raises InvalidKey,
        StoreUnavailable.
        """
        files = self._files(owner, project_key)
        if not files.log.exists():
            refused = read_forgotten(files.forgotten)
            return [Judged(v, "forgotten" if v.entry_id in refused else "missing") for v in verdicts]
        verdicts = [v if not might_hold_secret(v.detail) else _redacted_verdict(v) for v in verdicts]
        with self._lock(owner, project_key, files):
            current, _ = self._prepare(files)
            entries = list(current.view.entries)
            rows = current.view.rows
            changed: set[int] = set()
            for verdict in verdicts:
                row = rows.get(verdict.entry_id)
                judged = None if row is None else judge(entries[row], verdict)
                if row is not None and judged is not None:
                    entries[row] = judged
                    changed.add(row)
            if changed:
                raws = current.raw_lines()
                keep = [
                    (e, fixlog.encode_entry(e) if i in changed else raws[i]) for i, e in enumerate(entries)
                ]
                snapshot, _ = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, keep, now=self._clock()
                )
                self._keep_summary(files, snapshot, lambda: summarize(entries))
                self._keep_usage(files, snapshot, entries)
                self._adopt(files, None, snapshot, False)
            refused = read_forgotten(files.forgotten)
        out = []
        for verdict in verdicts:
            row = rows.get(verdict.entry_id)
            if row is None:
                out.append(Judged(verdict, "forgotten" if verdict.entry_id in refused else "missing"))
            else:
                out.append(Judged(verdict, state_of(entries[row], verdict), agent_outcome(entries[row])))
        return out

    def forget(self, owner: str, entry_id: str) -> bool:
        """Delete entry ``entry_id`` from whichever of ``owner``'s projects holds it; False if none does.

        An atomic rewrite per project that held it (malformed lines move to quarantine); the index is
        refreshed. The id is recorded as forgotten first (``store.persist.forgotten``), so replaying its turn
        does not write it back. Never touches another owner's files. Raises InvalidKey, StoreUnavailable.
        """
        if not owner:
            raise InvalidKey("owner must not be empty")
        if not _ID_RE.match(entry_id):
            return False
        deleted = False
        for files in list(self._owner_logs(owner)):
            listed = self._load(files).view
            if entry_id not in listed.rows:
                continue
            project_key = listed.entries[listed.rows[entry_id]].project
            with self._lock(owner, project_key, files):
                current, _ = self._prepare(files, sweep=True)  # no copy of a forgotten entry may stay
                rows = [i for i, e in enumerate(current.view.entries) if e.id != entry_id]
                if len(rows) == len(current.view.entries):
                    continue
                add_forgotten(files.forgotten, entry_id)
                raws = current.raw_lines()
                keep = [(current.view.entries[i], raws[i]) for i in rows]
                snapshot, _ = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, keep, now=self._clock()
                )
                view = current.view.subset(rows)
                self._keep_summary(files, snapshot, partial(summarize, view.entries))
                self._keep_usage(files, snapshot, view.entries)
                self._remember(files.log, Cached(snapshot, view))
                fixlog.write_index(files.index, view.index_bytes())
                deleted = True
        return deleted

    def repair(self, owner: str, project_key: str, *, check: bool = False) -> Repaired:
        """Under the lock: repair a torn tail, put the lines in time order with the ``supersedes`` links
        decided by the turns' time (``store.persist.repair``; one atomic rewrite, only when one changes),
        and rewrite the index and summary. ``check``: only say what would change (no lock, no write).

        Raises InvalidKey, StoreUnavailable.
        """
        files = self._files(owner, project_key)
        if not files.log.exists():
            return Repaired()
        if check:
            cached = self._load(files)
            plan = plan_relink(cached.view.entries, cached.raw_lines(), cached.view.superseded)
            return Repaired(moved=plan.moved, relinked=plan.relinked)
        with self._lock(owner, project_key, files):
            current, quarantined = self._prepare(files)
            view = current.view
            plan = plan_relink(view.entries, current.raw_lines(), view.superseded)
            written = bool(plan.moved or plan.relinked)
            if written:
                snapshot, moved = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, plan.keep, now=self._clock()
                )
                quarantined += moved
                current = self._adopt(files, None, snapshot, False)
            fixlog.write_index(files.index, current.view.index_bytes())
            self._keep_summary(files, current.snapshot, lambda: self._summary_before(files, current))
            self._keep_usage(files, current.snapshot, current.view.entries)
            return Repaired(quarantined, plan.moved, plan.relinked, written)
