"""Appending a batch: dedup, redaction, reconciling by meaning, rotation (with slack), one write."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from store.api.core import Cached
from store.api.summaries import Summaries
from store.entry import FixEntry, content_key
from store.errors import InvalidEntry
from store.impact import dropped_records
from store.paths import ProjectFiles, canonical_key
from store.persist import fixlog
from store.persist.fixlog import Snapshot
from store.persist.forgotten import read_forgotten
from store.persist.fsio import ensure_dir
from store.persist.rotation import plan_rotation, should_rotate
from store.persist.sessions_file import join_into
from store.recall.vectors import embed_many
from store.recall.view import meaning_tokens
from store.reconcile import reconcile
from store.redact import might_hold_secret, redact, redact_obj
from store.summary import summarize


@dataclass(frozen=True)
class AppendResult:
    """What one ``append`` did.

    ``added``: the new entries as written (redacted, ``supersedes`` set), in batch order — including any
    that rotation then dropped at once. ``duplicates``: ids already in the log (or repeated in the batch),
    skipped. ``dropped``: entries rotation removed (old or new; count them by outcome).
    ``quarantined``: lines moved to the quarantine file (a torn tail, malformed lines on rewrite).
    ``forgotten``: ids ``forget`` deleted earlier (a replayed turn), refused (``store.persist.forgotten``).
    ``same_content``: new ids whose content an entry of the log already holds (``store.entry.content_key``:
    the same turn recorded under an id of an earlier rule, e.g. a backfill that once keyed turns by path).
    """

    added: list[FixEntry]
    duplicates: list[str]
    dropped: list[FixEntry]
    quarantined: int
    forgotten: list[str] = field(default_factory=list)
    same_content: list[str] = field(default_factory=list)


def _redacted(entry: FixEntry, line: bytes) -> FixEntry:
    """``entry`` with every string redacted (defence in depth: extraction redacts already); ``line``: its
    log line (``fixlog.encode_entry``), scanned once for every field. The same object when nothing is."""
    if not might_hold_secret(line.decode()):
        return entry
    return FixEntry.model_validate(redact_obj(entry.model_dump()))


@dataclass
class _Batch:
    """A batch sorted against the log: what to write (redacted) and what is skipped, by why."""

    fresh: list[FixEntry] = field(default_factory=list)
    lines: dict[str, tuple[FixEntry, bytes]] = field(default_factory=dict)  # by id: an unredacted one's line
    contents: set[bytes | None] = field(default_factory=set)  # the content_key of each fresh entry
    duplicates: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    same_content: list[str] = field(default_factory=list)


def _keep_sessions(files: ProjectFiles, dropped: Sequence[FixEntry]) -> None:
    """Fold the sessions of the entries rotation drops into the project's session records, with the
    outcome each entry had, so impact still counts them (``store.impact.dropped_records``). Idempotent:
    written before the log, a retried append after a crash folds the same. Raises StoreUnavailable."""
    records = dropped_records(dropped)
    if records:
        project = canonical_key(records[0].project)
        join_into(files.sessions, project, [dataclasses.replace(r, project=project) for r in records])


def _sort_batch(
    entries: Sequence[FixEntry],
    seen: set[str],
    refused: Collection[str],
    contents: Collection[bytes | None],
    lines: Sequence[bytes],
) -> _Batch:
    """Sort ``entries`` (in order; ``lines``: each one's log line) against the ids ``seen`` in the log
    (added to as it goes), the ids ``forget`` deleted (``refused``) and the ``contents`` the log holds
    (``store.entry.content_key``)."""
    batch = _Batch()
    for entry, line in zip(entries, lines, strict=True):
        if entry.id in seen:
            batch.duplicates.append(entry.id)
            continue
        seen.add(entry.id)
        if entry.id in refused:
            batch.forgotten.append(entry.id)
            continue
        redacted = _redacted(entry, line)
        if redacted is entry:
            batch.lines[entry.id] = (entry, line)
        content = content_key(redacted)
        if content is not None and (content in contents or content in batch.contents):
            batch.same_content.append(entry.id)
            continue
        batch.contents.add(content)
        batch.fresh.append(redacted)
    return batch


def _lines_of(added: Sequence[FixEntry], made: dict[str, tuple[FixEntry, bytes]]) -> list[bytes]:
    """The log line of each of ``added``: the one ``append`` made when neither redaction nor reconcile
    (``supersedes``) changed the entry since, else encoded again."""
    lines = []
    for entry in added:
        known = made.get(entry.id)
        lines.append(known[1] if known is not None and known[0] is entry else fixlog.encode_entry(entry))
    return lines


class Appending(Summaries):
    """``append``."""

    def append(self, owner: str, project_key: str, entries: Sequence[FixEntry]) -> AppendResult:
        """Append a batch to a project's log: one write and one fsync, whole lines, under the lock.

        Ids already present are skipped, ids ``forget`` deleted are refused (``store.persist.forgotten``); new
        entries are redacted, reconciled by meaning (``supersedes``) and the log is rotated to ``cap`` (one
        atomic rewrite instead of the append). The index is refreshed.
        Raises InvalidKey, InvalidEntry (an entry of another project; nothing written), StoreUnavailable
        (naming the path; the log is left as it was).
        """
        canonical = canonical_key(project_key)
        lines = []
        for entry in entries:
            if entry.project not in (project_key, canonical):  # extraction stores the redacted key
                raise InvalidEntry(
                    f"entry {entry.id} is for project {redact(entry.project)!r}, not {canonical!r}"
                )
            try:
                lines.append(fixlog.encode_entry(entry))
            except TypeError as exc:  # orjson refuses lone surrogates: such text cannot be a JSON line
                raise InvalidEntry(f"entry {entry.id} holds text that is not valid UTF-8: {exc}") from exc
        files = self._files(owner, project_key)
        ensure_dir(files.directory)
        with self._lock(owner, project_key, files):
            return self._append_locked(files, entries, lines)

    def _append_locked(
        self, files: ProjectFiles, entries: Sequence[FixEntry], lines: Sequence[bytes]
    ) -> AppendResult:
        current, quarantined = self._prepare(files)
        view = current.view
        contents = current.content_keys()  # not changed here: a write that fails must leave it as it was
        # seen: the log's entries at the cap (lines past it are no entries of it)
        batch = _sort_batch(entries, set(view.rows), read_forgotten(files.forgotten), contents, lines)
        if not batch.fresh:
            if quarantined:  # the repair changed the log
                self._keep_summary(files, current.snapshot, lambda: summarize(view.entries))
                self._keep_usage(files, current.snapshot, view.entries)
            return AppendResult([], batch.duplicates, [], quarantined, batch.forgotten, batch.same_content)
        new_vectors = embed_many([meaning_tokens(e) for e in batch.fresh])
        added = reconcile(
            view.entries,
            view.vectors,
            batch.fresh,
            new_vectors=new_vectors,
            live=view.live,
            existing_files=view.file_sets,
            row_of=view.rows,
        )
        grown = view.extend(added, new_vectors=new_vectors)
        dropped: list[FixEntry] = []
        rows: Sequence[int] = range(len(grown.entries))
        if should_rotate(len(grown.entries), self.cap):
            plan = plan_rotation(grown.entries, self.cap)
            dropped, rows = plan.drop, plan.kept_rows
            _keep_sessions(files, dropped)  # first: a crash before the log's write loses no session
        snapshot, line_rows, moved = self._write_added(
            files, current, added, grown.entries, rows, encoded=_lines_of(added, batch.lines)
        )
        known: set[bytes | None] | None
        if dropped:
            grown = grown.subset(rows)
            known = None  # entries left the log: its keys are computed again at the next append
            kept = grown.entries
            self._keep_summary(files, snapshot, lambda: summarize(kept))
        else:
            known = contents | batch.contents
            self._keep_summary(files, snapshot, lambda: self._summary_before(files, current).extended(added))
        unchanged = not dropped and not any("recall" in (e.model_extra or {}) for e in added)
        self._keep_usage(files, snapshot, grown.entries, same_as=current.snapshot if unchanged else None)
        whole = line_rows is None or len(line_rows) == len(snapshot.entries)
        self._remember(files.log, Cached(snapshot, grown, known, None if whole else tuple(line_rows or ())))
        fixlog.write_index(files.index, grown.index_bytes())
        dup, forgotten, same = batch.duplicates, batch.forgotten, batch.same_content
        return AppendResult(added, dup, dropped, quarantined + moved, forgotten, same)

    def _write_added(
        self,
        files: ProjectFiles,
        current: Cached,
        added: Sequence[FixEntry],
        grown: Sequence[FixEntry],
        rows: Sequence[int],
        *,
        encoded: Sequence[bytes],
    ) -> tuple[Snapshot, list[int] | None, int]:
        """Write ``added`` (``encoded``: each one's log line) to the log, which then holds the ``rows`` of
        ``grown`` (its entries and ``added``). Returns the new parse, the line of each kept entry (None:
        every line, in order) and the lines moved to quarantine.

        Rotation with slack: the lines stay on disk until the log would hold more than cap + slack (or a
        new entry has the id of a line past the cap: a replayed turn rotation dropped); readers rotate.
        """
        snapshot, view = current.snapshot, current.view
        past_cap = snapshot.ids.difference(view.rows) if len(snapshot.entries) > len(view.entries) else set()
        lines = len(snapshot.entries) + len(added)
        if lines > self.cap + self.slack or any(e.id in past_cap for e in added):
            raws = [*current.raw_lines(), *encoded]
            keep = [(grown[i], raws[i]) for i in rows]
            snapshot, moved = fixlog.rewrite(files.log, files.quarantine, snapshot, keep, now=self._clock())
            return snapshot, None, moved
        start = len(snapshot.entries)
        snapshot = fixlog.append_entries(files.log, snapshot, added, encoded)
        every = [*current.line_rows(), *range(start, start + len(added))]
        return snapshot, [every[i] for i in rows], 0
