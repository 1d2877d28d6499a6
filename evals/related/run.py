"""The related-fix evaluation's runner: replay each repository's commits in time order through the real
extractor into a real store, and ask fixmem, BM25 and the seed-style Jaccard the same queries.

At commit ``i`` of a repository (after ``WARMUP``), every query class of that commit is asked of the
entries of commits ``0 .. i-1`` only; then commit ``i``'s entry is appended. ``now`` is the commit's time.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals.related.core import (
    OWNER,
    WARMUP,
    Commit,
    K,
    Repo,
    Tally,
    bm25_rank,
    error_line,
    has_identifier,
    jaccard_rank,
    related,
    shares_rare_word,
    split_of,
    turn_event,
    words,
)
from ingest.schema import validate_event
from store import DEFAULT_WEIGHTS, FixEntry, FixStore, RankingWeights
from store.meaning import Meaning
from workers.extraction import Limits, extract

SYSTEMS = ("fixmem", "fixmem_close", "bm25", "jaccard", "fixmem_no_floor")
# Diagnostic, not a system: fixmem's own ranking with no floor, i.e. what its relevance floor hides.
NO_FLOOR = replace(DEFAULT_WEIGHTS, floor=0.0)
SHA_CHARS = 10
RARE_DF = 2  # a word in this many earlier entries or fewer is rare


@dataclass(frozen=True)
class Query:
    repo: str
    sha: str  # the commit whose task this is (for off-topic: the commit whose store is asked)
    cls: str  # start | one_line | mid_files | mid_error | off_topic
    text: str
    files: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    source: str = ""  # off-topic: repo@sha the text comes from


# The entries a project keeps, as the pipeline runs it (``Settings.rotation_cap``; a test keeps them equal).
ROTATION_CAP = 500


def entry_text(entry: FixEntry) -> str:
    """What the baselines index of an entry: task, solution, files, symbols, errors."""
    return "\n".join(
        [entry.task, entry.solution, " ".join(entry.files), " ".join(entry.symbols), *entry.errors]
    )


def queries_for(repo: Repo, commit: Commit, others: Sequence[Repo], position: int) -> list[Query]:
    """The queries a task commit makes: full text, title, files known, error known, an off-topic probe."""
    out = [
        Query(repo.name, commit.sha, "start", commit.text),
        Query(repo.name, commit.sha, "one_line", commit.title),
        Query(repo.name, commit.sha, "mid_files", commit.text, files=commit.files),
    ]
    if (err := error_line(commit.body)) is not None:
        out.append(Query(repo.name, commit.sha, "mid_error", commit.text, errors=(err,)))
    if others and position % 2 == 0:  # every other task commit hosts a probe from another repository
        other = others[(position // 2) % len(others)]
        tasks = [c for c in other.commits if c.is_task]
        probe = tasks[(position * 7919) % len(tasks)]
        out.append(
            Query(
                repo.name, commit.sha, "off_topic", probe.text, source=f"{other.name}@{probe.sha[:SHA_CHARS]}"
            )
        )
    return out


def known_item(
    repo: Repo, commit: Commit, earlier: Sequence[Commit], word_sets: Sequence[frozenset[str]], position: int
) -> list[Query]:
    """Every third task commit asks for one earlier fix by that fix's title with its rare words removed
    (words in at most ``RARE_DF`` earlier entries): the known item, without the words that single it out.
    """
    tasks = [i for i, c in enumerate(earlier) if c.is_task]
    if position % 3 != 1 or not tasks:
        return []
    target = earlier[tasks[(position * 31) % len(tasks)]]
    df: dict[str, int] = defaultdict(int)
    for ws in word_sets:
        for w in ws:
            df[w] += 1
    kept = [token for token in target.title.split() if not any(df[w] <= RARE_DF for w in words(token))]
    if len(words(" ".join(kept))) < 3:
        return []
    return [Query(repo.name, commit.sha, "known_item", " ".join(kept), source=target.sha)]


def replay(
    repo: Repo,
    others: Sequence[Repo],
    workdir: Path,
    limit: int | None = None,
    warmup: int = WARMUP,
    *,
    meaning: Meaning | None = None,
) -> list[dict[str, Any]]:
    """Every query of one repository, with what each system returned, in time order (fixmem with the
    meaning signal when ``meaning`` is given: ``evals.related.meaning``)."""
    now = [0.0]
    # learning from use off: the figures stay comparable across runs (the replay carries no sessions anyway)
    store = FixStore(
        workdir / repo.name.replace("/", "__"),
        cap=ROTATION_CAP,
        clock=lambda: now[0],
        learn_from_use=False,
        meaning=meaning,
    )
    earlier: list[Commit] = []
    texts: list[str] = []
    word_sets: list[frozenset[str]] = []
    records: list[dict[str, Any]] = []
    commits = repo.commits[:limit] if limit else repo.commits
    for position, commit in enumerate(commits):
        now[0] = float(commit.ts)
        if position >= warmup and commit.is_task and earlier:
            same_fn, same_file = related(commit, earlier)
            gold_texts = [t for c, t in zip(earlier, texts, strict=True) if c.sha in same_file]
            other_texts = [t for c, t in zip(earlier, texts, strict=True) if c.sha not in same_file]
            attrs = {
                "identifiers": has_identifier(commit.text),
                "rare_word": shares_rare_word(commit.text, gold_texts, other_texts),
            }
            known = known_item(repo, commit, earlier, word_sets, position)
            for query in [*queries_for(repo, commit, others, position), *known]:
                gold_fn, gold_file = {
                    "off_topic": (frozenset[str](), frozenset[str]()),
                    "known_item": (frozenset({query.source}), frozenset({query.source})),
                }.get(query.cls, (same_fn, same_file))
                records.append(
                    {
                        "repo": repo.name,
                        "sha": commit.sha[:SHA_CHARS],
                        "split": split_of(commit.sha),
                        "class": query.cls,
                        "source": (query.source[:SHA_CHARS] if query.cls == "known_item" else query.source)
                        or None,
                        "identifiers": attrs["identifiers"],
                        "rare_word": attrs["rare_word"],
                        "same_function": sorted(s[:SHA_CHARS] for s in gold_fn),
                        "same_file": sorted(s[:SHA_CHARS] for s in gold_file),
                        "results": ask(
                            store, repo, query, commit, earlier=earlier, texts=texts, word_sets=word_sets
                        ),
                    }
                )
        extracted = extract(validate_event(turn_event(repo, commit)), enabled=True, limits=Limits())
        if extracted.entry is None:
            continue
        store.append(OWNER, repo.project_key, [extracted.entry])
        earlier.append(commit)
        texts.append(entry_text(extracted.entry))
        word_sets.append(words(texts[-1]))
    return records


def ask(
    store: FixStore,
    repo: Repo,
    query: Query,
    commit: Commit,
    *,
    earlier: Sequence[Commit],
    texts: Sequence[str],
    word_sets: Sequence[frozenset[str]],
) -> dict[str, list[list[Any]]]:
    """Each system's top ``K`` for one query: ``[sha, score]`` pairs, best first."""

    def recall(weights: RankingWeights = DEFAULT_WEIGHTS) -> list[list[Any]]:
        recalled = store.recall(
            OWNER,
            repo.project_key,
            query.text,
            files=list(query.files) or None,
            errors=list(query.errors) or None,
            k=K,
            now=float(commit.ts),
            weights=weights,
        )
        return [[(r.entry.event_id or "?")[:SHA_CHARS], round(r.score, 4), r.tier] for r in recalled]

    # BM25 and Jaccard get what fixmem gets, as words: the task text plus the file names and the error.
    flat = "\n".join([query.text, " ".join(query.files), *query.errors])
    fixmem = recall()
    return {
        "fixmem": [[sha, score] for sha, score, _ in fixmem],
        # fixmem's answer cut to its "closely related" tier (the rest is "possibly related")
        "fixmem_close": [[sha, score] for sha, score, tier in fixmem if tier == "closely related"],
        "bm25": [[earlier[i].sha[:SHA_CHARS], round(s, 4)] for i, s in bm25_rank(texts, flat)],
        "jaccard": [[earlier[i].sha[:SHA_CHARS], round(s, 4)] for i, s in jaccard_rank(word_sets, flat)],
        "fixmem_no_floor": [[sha, score] for sha, score, _ in recall(NO_FLOOR)],
    }


# --- the report --------------------------------------------------------------------------------------

ROWS: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
    ("start", "task start: full task text", lambda q: q["class"] == "start"),
    (
        "start_ids",
        "  ... naming code (identifiers, paths)",
        lambda q: q["class"] == "start" and q["identifiers"],
    ),
    ("start_no_ids", "  ... naming no code", lambda q: q["class"] == "start" and not q["identifiers"]),
    (
        "start_rare",
        "  ... sharing a rare word with an answer",
        lambda q: q["class"] == "start" and q["rare_word"],
    ),
    (
        "start_no_rare",
        "  ... with an answer but no rare shared word",
        lambda q: q["class"] == "start" and bool(q["same_file"]) and not q["rare_word"],
    ),
    ("one_line", "one-line request (title only)", lambda q: q["class"] == "one_line"),
    ("mid_files", "mid-task: text + files being edited", lambda q: q["class"] == "mid_files"),
    ("mid_error", "mid-task: text + an error from the task", lambda q: q["class"] == "mid_error"),
    ("off_topic", "off-topic: another repo's task", lambda q: q["class"] == "off_topic"),
    ("known_item", "known item: its title, rare words removed", lambda q: q["class"] == "known_item"),
]


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """split -> row -> system -> tally, for the splits 'tune', 'held_out' and 'all'."""
    cells: dict[tuple[str, str, str], Tally] = defaultdict(Tally)
    for record in records:
        same_fn = frozenset(record["same_function"])
        same_file = frozenset(record["same_file"])
        for row, _, matches in ROWS:
            if not matches(record):
                continue
            for split in (record["split"], "all"):
                for system in SYSTEMS:
                    returned = [sha for sha, _ in record["results"][system]]
                    cells[(split, row, system)].add(returned, same_fn, same_file)
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for split in ("tune", "held_out", "all"):
        out[split] = {
            row: {system: cells[(split, row, system)].as_dict() for system in SYSTEMS} for row, _, _ in ROWS
        }
    return out


def evaluate(
    repos: Sequence[Repo], limit: int | None = None, meaning: Meaning | None = None
) -> dict[str, Any]:
    """The whole run: per-query records, the summary, and what the data was."""
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fixmem-eval-related-") as tmp:
        for repo in repos:
            others = [r for r in repos if r.name != repo.name]
            records.extend(replay(repo, others, Path(tmp), limit, meaning=meaning))
    return {
        "k": K,
        "warmup": WARMUP,
        "repos": [
            {
                "repo": r.name,
                "lang": r.lang,
                "head": r.head,
                "commits": len(r.commits[:limit] if limit else r.commits),
                "tasks": sum(1 for c in (r.commits[:limit] if limit else r.commits)[WARMUP:] if c.is_task),
                "dropped_over_max_files": r.header.get("dropped_over_max_files"),
            }
            for r in repos
        ],
        "summary": summarize(records),
        "queries": records,
    }
