"""Export a project's fix log (a markdown digest to review in a diff; JSONL, lossless) and import JSONL.

- ``markdown_digest`` (pure): entries grouped by file, then by error signature, each with its outcome,
  date (UTC), task, solution and tests; what history says of it (regressed, superseded). Redacted,
  clipped, deterministic (no export time in it), so re-exporting an unchanged log gives no diff. An
  entry appears once: under its first file and its first error signature; other files are listed.
- ``jsonl_lines`` (pure): one JSON object per entry, every field including unknown ones, log order.
- ``parse_jsonl`` (pure): every line validated; problems reported with their line numbers.
- ``export_log`` / ``import_log``: thin I/O over ``FixStore``'s public API. An import writes nothing
  unless every line is valid; ids are kept, and an id already in the log is a no-op, so importing the
  same file twice adds nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import orjson
from pydantic import ValidationError

from store.api import FixStore
from store.entry import OUTCOMES, FixEntry
from store.errors import StoreError
from store.history import regressions
from store.lineage import supersession
from store.notes.suggest import day
from store.redact import redact

ExportFormat = Literal["markdown", "jsonl"]
NO_FILE = "(no file)"
NO_ERROR = "(no error signature)"
TASK_CHARS = 200
SOLUTION_CHARS = 300
_MD_SPECIAL = re.compile(r"([\\`*_<>])")  # what would change how a line renders; brackets stay readable


class ImportRefused(StoreError, ValueError):
    """Raised when an import file has invalid lines; nothing was written. ``problems`` lists them."""

    def __init__(self, problems: Sequence[ImportProblem]) -> None:
        shown = "; ".join(f"line {p.line}: {p.reason}" for p in problems[:10])
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        super().__init__(f"{len(problems)} invalid line(s), nothing imported: {shown}{more}")
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class ImportProblem:
    """A line of an import file that cannot be imported: its 1-based number and why."""

    line: int
    reason: str


# -- markdown ------------------------------------------------------------------------------------------


def _text(text: str, limit: int) -> str:
    """One line of markdown-escaped, redacted text, clipped to ``limit`` characters with "…"."""
    flat = " ".join(redact(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return _MD_SPECIAL.sub(r"\\\1", flat)


def _code(text: str) -> str:
    """A markdown code span holding ``text`` (redacted, one line), whatever backticks it contains."""
    flat = " ".join(redact(text).split()) or " "
    fence = "`"
    while fence in flat:
        fence += "`"
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _sort_key(name: str, missing: str) -> tuple[bool, str]:
    return (name == missing, name)


def _entry_lines(
    entry: FixEntry,
    by_id: Mapping[str, FixEntry],
    regressed: Mapping[str, str],
    superseded: Mapping[str, str],
) -> list[str]:
    lines = [f"- {day(entry.ts)} **{entry.outcome}** — {_text(entry.task, TASK_CHARS) or '(no task text)'}"]
    lines[0] += f" ({_code(entry.id)})"
    if entry.solution.strip():
        lines.append(f"  - solution: {_text(entry.solution, SOLUTION_CHARS)}")
    if entry.tests is not None:
        result = "passed" if entry.tests.ok else "failed"
        summary = f" — {_text(entry.tests.summary, 120)}" if entry.tests.summary.strip() else ""
        lines.append(f"  - tests: {_code(entry.tests.command)} {result}{summary}")
    if len(entry.files) > 1:
        lines.append("  - also: " + ", ".join(_code(f) for f in entry.files[1:]))
    if len(entry.errors) > 1:
        lines.append("  - other errors: " + "; ".join(_code(e) for e in entry.errors[1:]))
    if entry.id in regressed:
        later = by_id.get(regressed[entry.id])
        when = f" on {day(later.ts)}" if later is not None else ""
        lines.append(f"  - **regressed**: {_code(regressed[entry.id])} failed again{when}")
    if entry.id in superseded:
        lines.append(f"  - superseded by {_code(superseded[entry.id])}")
    return lines


def markdown_digest(
    entries: Sequence[FixEntry],
    *,
    project: str,
    regressed: Mapping[str, str] | None = None,
    superseded: Mapping[str, str] | None = None,
    malformed: int = 0,
) -> str:
    """The reviewable digest of a project's log (entries in log order); ends with one newline."""
    regressed = regressed or {}
    superseded = superseded or {}
    counts = Counter(e.outcome for e in entries)
    lines = [f"# Fix log: {_text(project, 200)}", ""]
    summary = f"{len(entries)} entries: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)
    if entries:
        first, last = min(e.ts for e in entries), max(e.ts for e in entries)
        summary += f"; {day(first)} to {day(last)} (UTC dates)"
    lines.append(summary + ".")
    if malformed:
        lines.append(f"{malformed} malformed line(s) of the log are not in this digest.")
    lines += ["Grouped by file, then error signature. The lossless form is `fixmem export --format jsonl`."]
    groups: dict[str, dict[str, list[FixEntry]]] = {}
    for entry in entries:
        file = entry.files[0] if entry.files else NO_FILE
        error = entry.errors[0] if entry.errors else NO_ERROR
        groups.setdefault(file, {}).setdefault(error, []).append(entry)
    by_id = {e.id: e for e in entries}
    for file in sorted(groups, key=lambda name: _sort_key(name, NO_FILE)):
        lines += ["", f"## {_code(file) if file != NO_FILE else NO_FILE}"]
        for error in sorted(groups[file], key=lambda name: _sort_key(name, NO_ERROR)):
            lines += ["", f"### {_code(error) if error != NO_ERROR else NO_ERROR}", ""]
            for entry in sorted(groups[file][error], key=lambda e: (e.ts, e.id)):
                lines += _entry_lines(entry, by_id, regressed, superseded)
    return "\n".join(lines) + "\n"


# -- JSONL ---------------------------------------------------------------------------------------------


def jsonl_lines(entries: Iterable[FixEntry]) -> Iterator[bytes]:
    """Each entry as one JSON line (every field, unknown ones included), newline-terminated."""
    for entry in entries:
        yield orjson.dumps(entry.model_dump(mode="json")) + b"\n"


def _validation_reason(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, err['loc'])) or 'entry'}: {err['msg']}" for err in exc.errors(include_url=False)
    )


def parse_jsonl(data: bytes, *, project: str | None = None) -> tuple[list[FixEntry], list[ImportProblem]]:
    """Entries of an export file and the problems of its bad lines; blank lines are skipped.

    With ``project``, an entry of another project is a problem. The same id twice with different
    content is a problem (the log keeps ids unique); the same line twice is not.
    """
    entries: list[FixEntry] = []
    problems: list[ImportProblem] = []
    seen: dict[str, tuple[int, FixEntry]] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problems.append(ImportProblem(number, f"not JSON: {exc}"))
            continue
        if not isinstance(value, dict):
            problems.append(ImportProblem(number, f"not a JSON object but {type(value).__name__}"))
            continue
        try:
            entry = FixEntry.model_validate(value)
        except ValidationError as exc:
            problems.append(ImportProblem(number, _validation_reason(exc)))
            continue
        if project is not None and entry.project != project:
            problems.append(ImportProblem(number, f"entry of project {entry.project!r}, not {project!r}"))
            continue
        if entry.id in seen:
            first_line, first = seen[entry.id]
            if first != entry:
                problems.append(
                    ImportProblem(number, f"{entry.id} already on line {first_line} with different content")
                )
            continue
        seen[entry.id] = (number, entry)
        entries.append(entry)
    return entries, problems


# -- I/O over FixStore ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Exported:
    """An export: its bytes, how many entries it holds, and how many malformed log lines it left out."""

    data: bytes
    entries: int
    malformed: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did, over all the projects it touched.

    ``changed``: ids the store wrote differently from the file (redaction by newer rules, or a
    ``supersedes`` the store's reconcile filled in); empty for a file exported by this store.
    """

    added: int
    already_present: int
    dropped: int  # removed by rotation to the store's cap
    changed: tuple[str, ...]
    projects: tuple[str, ...]
    forgotten: int = 0  # refused: ``forget`` deleted them from this store (``store.persist.forgotten``)


def export_log(store: FixStore, owner: str, project_key: str, fmt: ExportFormat) -> Exported:
    """The project's log as a markdown digest or as JSONL (lossless, log order).

    Raises InvalidKey, StoreUnavailable (from the store).
    """
    result = store.read(owner, project_key)
    if fmt == "jsonl":
        data = b"".join(jsonl_lines(result.entries))
    else:
        data = markdown_digest(
            result.entries,
            project=project_key,
            regressed=regressions(result.entries),
            superseded=supersession(result.entries),
            malformed=len(result.malformed),
        ).encode("utf-8")
    return Exported(data, len(result.entries), len(result.malformed))


def import_log(store: FixStore, owner: str, data: bytes, *, project: str | None = None) -> ImportResult:
    """Append the entries of a JSONL export to their projects' logs, ids kept; a second run adds nothing.

    Every line is validated first: on any problem ImportRefused (listing them) is raised and nothing is
    written. With ``project``, entries of other projects are problems. Raises InvalidKey,
    StoreUnavailable (from the store).
    """
    entries, problems = parse_jsonl(data, project=project)
    if problems:
        raise ImportRefused(problems)
    batches: dict[str, list[FixEntry]] = {}
    for entry in entries:
        batches.setdefault(entry.project, []).append(entry)
    added = present = dropped = forgotten = 0
    changed: list[str] = []
    for key, batch in batches.items():
        result = store.append(owner, key, batch)
        originals = {e.id: e for e in batch}
        added += len(result.added)
        present += len(result.duplicates)
        dropped += len(result.dropped)
        forgotten += len(result.forgotten)
        changed += [e.id for e in result.added if e != originals[e.id]]
    return ImportResult(added, present, dropped, tuple(changed), tuple(batches), forgotten)
