"""The labelled recall dataset of ``evals/recall/``: its schema, validation, and the entries it makes.

The dataset is plain TOML written by hand (see ``evals/README.md``): ``projects/*.toml`` each hold one
``[project]`` (owner, key, known commits, files present in the workspace) and its ``[[entry]]`` list;
``queries/*.toml`` hold ``[[query]]`` lists with optional ``[defaults]``. Entries are named by a readable
``label``; their real ids are ``entry_id(owner, project, "eval:" + label)``, so the store sees ordinary
content-hash ids. Timestamps are ``now - days_ago`` against a fixed ``EVAL_NOW``: nothing reads a clock.

``parse_dataset`` is pure (parsed TOML documents in, a validated ``Dataset`` out); ``load_dataset`` is the
thin file reader. Every problem (unknown field, unknown label, duplicate id, a positive without an
expected entry) raises ``DatasetError`` naming the file and the item.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from store.entry import FixEntry, Outcome, TestRun, entry_id

EVAL_NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z: the fixed "now" of every eval run (unix seconds)
DAY_SECONDS = 86_400.0

Kind = Literal["positive", "negative", "isolation"]
CATEGORY_KINDS: dict[str, Kind] = {
    "exact": "positive",  # the task restated closely
    "reworded": "positive",  # the same problem in other words
    "error": "positive",  # the query carries raw error lines
    "files": "positive",  # the query carries the files being edited
    "homonym": "positive",  # shares words with a decoy that means something else
    "superseded": "positive",  # the answer supersedes an older entry, which must not come back
    "regressed": "positive",  # the fix regressed later; both entries are the answer
    "stale": "positive",  # the answer's commit and files are gone (it must be marked, not dropped)
    "negative-generic": "negative",  # generic words ("fix the bug in the test")
    "negative-unrelated": "negative",  # a task the project never saw
    "negative-shared-words": "negative",  # shares words with entries, means something else
    "negative-error": "negative",  # raw error lines the project never had (same type, other message/test)
    "isolation-project": "isolation",  # the answer lives in another project
    "isolation-owner": "isolation",  # the answer lives under another owner (same project key)
}


class DatasetError(ValueError):
    """Raised when the dataset files are missing, malformed, or refer to unknown labels."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectSpec(_Strict):
    """One project of the dataset: whose it is, and what its workspace and history hold now."""

    owner: str = Field(min_length=1)
    key: str = Field(min_length=1)
    language: str = ""
    source: str = ""
    known_commits: tuple[str, ...] = ()  # empty: commits are not checked for this project
    workspace_files: tuple[str, ...] = ()  # empty: no workspace, files are not checked


class EntrySpec(_Strict):
    """One fix entry as written in the dataset (``label`` and ``days_ago`` instead of id and ts)."""

    label: str = Field(min_length=1)
    days_ago: float = Field(ge=0)
    task: str
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    tests: TestRun | None = None
    outcome: Outcome
    solution: str = ""
    tags: tuple[str, ...] = ()
    commit: str | None = None
    source: str = ""  # where a derived entry comes from (real-log path)
    note: str = ""  # what the entry is there to test


class QuerySpec(_Strict):
    """One labelled query: what an agent asks, and which entries are the answer."""

    id: str = Field(min_length=1)
    category: str
    owner: str = Field(min_length=1)
    project: str = Field(min_length=1)
    text: str
    files: tuple[str, ...] = ()  # "{workspace}" is replaced by the project's workspace directory
    errors: tuple[str, ...] = ()
    expected: tuple[str, ...] = ()  # grade 2: the answer
    related: tuple[str, ...] = ()  # grade 1: useful, not the answer
    forbidden: tuple[str, ...] = ()  # must never be returned (superseded)
    decoys: tuple[str, ...] = ()  # grade 0: share words, mean something else (documentation)
    regressed: tuple[str, ...] = ()  # when returned, must carry the regressed flag
    # Pins the query to one half of the eval (``evals.recall.metrics.assign_splits``). Queries added after
    # the weights were tuned are pinned to "held_out", which also leaves the other queries' halves as
    # they were; None: the half is assigned by hash.
    split: Literal["tune", "held_out"] | None = None
    note: str = ""

    @property
    def kind(self) -> Kind:
        """positive, negative or isolation (from the category)."""
        return CATEGORY_KINDS[self.category]

    def grade(self, label: str) -> int:
        """2 for an expected entry, 1 for a related one, else 0."""
        return 2 if label in self.expected else 1 if label in self.related else 0


@dataclass(frozen=True)
class ProjectData:
    """A project with its entries, in the order they are to be appended (oldest first)."""

    spec: ProjectSpec
    entries: tuple[EntrySpec, ...]
    path: str  # the file it came from (for messages)


@dataclass(frozen=True)
class EntryHome:
    """Where a labelled entry lives."""

    owner: str
    project: str
    label: str


@dataclass(frozen=True)
class Dataset:
    """The validated dataset: projects with entries, queries, and every entry id's origin."""

    projects: tuple[ProjectData, ...]
    queries: tuple[QuerySpec, ...]
    origins: Mapping[str, EntryHome]  # entry id -> where it lives

    def entry_count(self) -> int:
        """Total entries across projects."""
        return sum(len(p.entries) for p in self.projects)


def eval_entry_id(owner: str, project: str, label: str) -> str:
    """The id a labelled entry gets: the store's content hash over ``eval:<label>`` as event identity."""
    return entry_id(owner, project, "eval:" + label)


def to_fix_entry(project: ProjectSpec, spec: EntrySpec, now: float) -> FixEntry:
    """The ``FixEntry`` extraction would have written for ``spec`` (``ts = now - days_ago``)."""
    return FixEntry(
        id=eval_entry_id(project.owner, project.key, spec.label),
        ts=now - spec.days_ago * DAY_SECONDS,
        project=project.key,
        task=spec.task,
        files=list(spec.files),
        symbols=list(spec.symbols),
        errors=list(spec.errors),
        tests=spec.tests,
        outcome=spec.outcome,
        solution=spec.solution,
        tags=list(spec.tags),
        commit=spec.commit,
        event_id="eval:" + spec.label,
        extractor="eval-dataset",
        supersedes=None,
    )


def _validated(model: type[BaseModel], raw: Any, where: str) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise DatasetError(f"{where}: {exc}") from exc


def _parse_project(doc: Mapping[str, Any], where: str) -> ProjectData:
    unknown = set(doc) - {"project", "entry"}
    if unknown or "project" not in doc:
        raise DatasetError(f"{where}: expected [project] and [[entry]] tables, found {sorted(doc)}")
    spec: ProjectSpec = _validated(ProjectSpec, doc["project"], f"{where} [project]")
    entries = tuple(
        _validated(EntrySpec, raw, f"{where} entry #{i + 1}") for i, raw in enumerate(doc.get("entry", []))
    )
    ordered = tuple(sorted(entries, key=lambda e: (-e.days_ago, e.label)))
    return ProjectData(spec, ordered, where)


def _parse_queries(doc: Mapping[str, Any], where: str) -> list[QuerySpec]:
    unknown = set(doc) - {"defaults", "query"}
    if unknown:
        raise DatasetError(f"{where}: unknown top-level tables {sorted(unknown)}")
    defaults = dict(doc.get("defaults", {}))
    queries: list[QuerySpec] = []
    for i, raw in enumerate(doc.get("query", [])):
        query: QuerySpec = _validated(QuerySpec, {**defaults, **raw}, f"{where} query #{i + 1}")
        queries.append(query)
    return queries


def _check_query(query: QuerySpec, labels: Mapping[str, EntryHome], where: str) -> None:
    if query.category not in CATEGORY_KINDS:
        raise DatasetError(f"{where}: query {query.id}: unknown category {query.category!r}")
    named = (*query.expected, *query.related, *query.forbidden, *query.decoys, *query.regressed)
    for label in named:
        origin = labels.get(label)
        if origin is None:
            raise DatasetError(f"{where}: query {query.id}: unknown entry label {label!r}")
        if (origin.owner, origin.project) != (query.owner, query.project):
            raise DatasetError(f"{where}: query {query.id}: {label!r} lives in another project")
    if query.kind == "positive" and not query.expected:
        raise DatasetError(f"{where}: query {query.id}: a {query.category} query needs expected entries")
    if query.kind != "positive" and (query.expected or query.related):
        raise DatasetError(f"{where}: query {query.id}: a {query.category} query must expect nothing")
    if not set(query.regressed) <= set(query.expected) | set(query.related):
        raise DatasetError(f"{where}: query {query.id}: regressed entries must be expected or related")


def parse_dataset(
    project_docs: Sequence[tuple[str, Mapping[str, Any]]],
    query_docs: Sequence[tuple[str, Mapping[str, Any]]],
) -> Dataset:
    """Validate parsed TOML documents, each given as ``(name, document)``. Pure.

    Raises DatasetError on any schema problem, duplicate label/query id/project, or unknown label.
    """
    projects = [_parse_project(doc, name) for name, doc in project_docs]
    seen_projects: set[tuple[str, str]] = set()
    workspaces = {(p.spec.owner, p.spec.key) for p in projects if p.spec.workspace_files}
    labels: dict[str, EntryHome] = {}
    origins: dict[str, EntryHome] = {}
    for project in projects:
        owner, key = project.spec.owner, project.spec.key
        if (owner, key) in seen_projects:
            raise DatasetError(f"{project.path}: project ({owner!r}, {key!r}) is defined twice")
        seen_projects.add((owner, key))
        for entry in project.entries:
            if entry.label in labels:
                raise DatasetError(f"{project.path}: entry label {entry.label!r} is used twice")
            origin = EntryHome(owner, key, entry.label)
            labels[entry.label] = origin
            origins[eval_entry_id(owner, key, entry.label)] = origin
    queries: list[QuerySpec] = []
    seen_ids: set[str] = set()
    for name, doc in query_docs:
        for query in _parse_queries(doc, name):
            if query.id in seen_ids:
                raise DatasetError(f"{name}: query id {query.id!r} is used twice")
            seen_ids.add(query.id)
            if (query.owner, query.project) not in seen_projects:
                raise DatasetError(
                    f"{name}: query {query.id}: no project ({query.owner!r}, {query.project!r})"
                )
            if (
                any("{workspace}" in f for f in query.files)
                and (query.owner, query.project) not in workspaces
            ):
                raise DatasetError(f"{name}: query {query.id}: uses {{workspace}} but the project has none")
            _check_query(query, labels, name)
            queries.append(query)
    return Dataset(tuple(projects), tuple(queries), origins)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def load_dataset(root: Path) -> Dataset:
    """Read ``root/projects/*.toml`` and ``root/queries/*.toml`` (sorted by name) and validate them.

    Raises DatasetError when a directory is missing or empty or any file is invalid.
    """
    docs: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for part in ("projects", "queries"):
        folder = root / part
        files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        if not files:
            raise DatasetError(f"{folder}: no *.toml files (is --dataset the evals/recall directory?)")
        docs[part] = [(f"{part}/{f.name}", _read_toml(f)) for f in files]
    return parse_dataset(docs["projects"], docs["queries"])
