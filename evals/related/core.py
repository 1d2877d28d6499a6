"""The related-fix evaluation's pure parts: data, synthesized turns, gold labels, queries, baselines, metrics.

Values in, values out; nothing here reads the clock or the network. ``evals.related.run`` drives the real
store with them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s  # type: ignore[import-untyped]

OWNER = "eval"
K = 5
WARMUP = 50  # the first commits of a window are only past fixes: a query needs some history
MIN_TASK_WORDS = 15  # a shorter message is no task description (kept as a past fix all the same)
JACCARD_FLOOR = 0.1  # the seed-style baseline answers only at or above this word-set Jaccard

DATA_DIR = Path(__file__).parent / "data"

# Files every kind of change touches: they relate nothing to nothing, so no gold label rests on them.
_BOOKKEEPING = re.compile(
    r"(^|/)(CHANGELOG[^/]*|CHANGES[^/]*|NEWS[^/]*|Cargo\.lock|go\.sum|package-lock\.json|pnpm-lock\.yaml|"
    r"yarn\.lock|uv\.lock|poetry\.lock)$",
    re.IGNORECASE,
)

# One passing test run per language, as the runner prints it.
TEST_RUNS: Mapping[str, tuple[str, str]] = {
    "rust": (
        "cargo test",
        "running 14 tests\n..............\ntest result: ok. 14 passed; 0 failed; 0 ignored; 0 measured; "
        "0 filtered out; finished in 0.92s",
    ),
    "go": ("go test ./...", "ok  \tpkg\t0.412s\nok  \tpkg/internal\t1.093s"),
    "python": ("pytest -q", "..........                                  [100%]\n10 passed in 1.84s"),
    "ts": ("pnpm test", "Executed 24 of 24 SUCCESS (1.2 secs / 0.9 secs)\n24 specs, 0 failures"),
}


@dataclass(frozen=True)
class Commit:
    sha: str
    ts: int
    title: str
    body: str
    files: tuple[str, ...]
    functions: tuple[str, ...]
    hunks: tuple[Mapping[str, Any], ...]

    @property
    def text(self) -> str:
        """The task text: the PR title and description as the harness would receive them."""
        return f"{self.title}\n\n{self.body}".strip()

    @property
    def is_task(self) -> bool:
        return len(self.text.split()) >= MIN_TASK_WORDS

    @property
    def gold_files(self) -> frozenset[str]:
        return frozenset(f for f in self.files if not _BOOKKEEPING.search(f))


@dataclass(frozen=True)
class Repo:
    name: str  # owner/name
    lang: str
    head: str
    commits: tuple[Commit, ...]  # oldest first
    header: Mapping[str, Any] = field(default_factory=dict)

    @property
    def project_key(self) -> str:
        return f"github.com/{self.name}"


def parse_repo(lines: Iterable[str]) -> Repo:
    """A repo from the JSON lines ``evals.related.build`` wrote: a header, then commits oldest first."""
    records = [json.loads(line) for line in lines if line.strip()]
    header, rows = records[0], records[1:]
    commits = tuple(
        Commit(
            sha=r["sha"],
            ts=int(r["ts"]),
            title=r["title"],
            body=r["body"],
            files=tuple(r["files"]),
            functions=tuple(r["functions"]),
            hunks=tuple(r["hunks"]),
        )
        for r in rows
    )
    return Repo(name=header["repo"], lang=header["lang"], head=header["head"], commits=commits, header=header)


def load_repos(data_dir: Path = DATA_DIR) -> list[Repo]:
    """Every ``*.jsonl.gz`` under ``data_dir``, sorted by name."""
    repos = []
    for path in sorted(data_dir.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            repos.append(parse_repo(fh))
    return repos


# --- the synthesized turn ----------------------------------------------------------------------------


def turn_event(repo: Repo, commit: Commit) -> dict[str, Any]:
    """A wire-format v1 turn: the PR text as the request, one edit per hunk, then one passing test run."""
    edits = [
        {
            "tool": "edit",
            "input": {"path": h["path"]},
            "output": "edited",
            "ok": True,
            "diff": "\n".join([f"--- a/{h['path']}", f"+++ b/{h['path']}", h["header"], *h["lines"]]),
        }
        for h in commit.hunks
    ]
    command, output = TEST_RUNS[repo.lang]
    return {
        "v": 1,
        "event_id": commit.sha,
        "ts": float(commit.ts),
        "owner": OWNER,
        "project_key": repo.project_key,
        "user_message": commit.text,
        "tool_events": [
            *edits,
            {"tool": "bash", "input": {"command": command}, "output": output, "exit_code": 0},
        ],
        "harness_meta": {"harness": "eval-related", "commit": commit.sha},
    }


# --- gold labels -------------------------------------------------------------------------------------


def related(query: Commit, earlier: Iterable[Commit]) -> tuple[frozenset[str], frozenset[str]]:
    """(shas that changed a same function, shas that changed a same file) among ``earlier``."""
    functions, files = set(query.functions), query.gold_files
    same_fn = frozenset(c.sha for c in earlier if functions.intersection(c.functions))
    same_file = frozenset(c.sha for c in earlier if files & c.gold_files)
    return same_fn, same_file | same_fn


def split_of(sha: str) -> str:
    """Tuning or held-out, fixed by a hash of the commit sha."""
    return "tune" if int(hashlib.sha256(sha.encode()).hexdigest()[:8], 16) % 2 == 0 else "held_out"


# --- text features -----------------------------------------------------------------------------------

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "no",
        "not",
        "of",
        "on",
        "or",
        "so",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "when",
        "which",
        "will",
        "with",
        "would",
        "can",
        "should",
        "could",
        "do",
        "does",
        "also",
        "than",
        "them",
        "been",
        "being",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "all",
        "any",
        "some",
        "more",
        "most",
        "other",
        "only",
        "same",
        "very",
        "just",
        "now",
        "after",
        "before",
        "about",
        "over",
        "under",
        "while",
        "where",
        "who",
        "what",
        "how",
        "why",
        "use",
        "used",
        "using",
        "via",
        "new",
        "add",
        "adds",
        "added",
    }
)
_WORD = re.compile(r"[a-z0-9_]+")
_IDENTIFIER = re.compile(
    r"`[^`\n]+`"  # a code span
    r"|\b[A-Za-z_]\w*\(\)"  # call()
    r"|\b[a-z]+_[a-z0-9_]+\b"  # snake_case
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"  # camelCase, PascalCase with an inner capital
    r"|\b\w+(?:/\w+)+\.\w+\b|\b\w+\.(?:py|rs|go|ts|js|toml|json)\b"  # a path or a file name
    r"|\b[a-z_]\w*\.[a-z_]\w*\.\w+\b"  # dotted.module.path
)


def words(text: str) -> frozenset[str]:
    """Lower-cased word set (``[a-z0-9_]+``, two characters or more, no stop words): Jaccard's words."""
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS)


def has_identifier(text: str) -> bool:
    """Whether a task text names code: a code span, ``call()``, snake_case, camelCase, a path or file."""
    return _IDENTIFIER.search(text) is not None


def shares_rare_word(query: str, gold: Sequence[str], others: Sequence[str]) -> bool:
    """Whether the query holds a word that some gold entry's text has and no other earlier entry has."""
    in_gold = words(query) & frozenset().union(*(words(t) for t in gold)) if gold else frozenset()
    if not in_gold:
        return False
    elsewhere: set[str] = set()
    for text in others:
        elsewhere |= words(text) & in_gold
    return bool(in_gold - elsewhere)


_ERROR_LINE = re.compile(
    r"\b(?:error(?:\[\w+\])?|panic|fatal|FAIL|[A-Z]\w*(?:Error|Exception)|Error)\s*:\s+\S"
    r"|^\s*Traceback \(most recent call last\)|thread '[^']*' panicked"
)


def error_line(text: str) -> str | None:
    """The first line of a task text that reads like an error message, if any."""
    for line in text.splitlines():
        if _ERROR_LINE.search(line) and len(line.strip()) >= 12:
            return line.strip()[:300]
    return None


# --- baselines ---------------------------------------------------------------------------------------


def bm25_tokens(texts: Sequence[str]) -> list[list[str]]:
    """bm25s's own tokenizer (lower case, ``\\b\\w\\w+\\b``, English stop words), as token lists."""
    out = bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)
    return [list(tokens) for tokens in out]


def bm25_rank(corpus: Sequence[str], query: str, k: int = K) -> list[tuple[int, float]]:
    """Okapi BM25 (bm25s, Lucene IDF, k1 1.5, b 0.75): the top ``k`` corpus indexes with a score above 0."""
    if not corpus:
        return []
    tokens = bm25_tokens([*corpus, query])
    retriever = bm25s.BM25()
    retriever.index(tokens[:-1], show_progress=False)
    if not tokens[-1]:
        return []
    docs, scores = retriever.retrieve([tokens[-1]], k=min(k, len(corpus)), show_progress=False)
    return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def jaccard_rank(
    corpus: Sequence[frozenset[str]], query: str, k: int = K, floor: float = JACCARD_FLOOR
) -> list[tuple[int, float]]:
    """Seed-style recall: IDF-free Jaccard of word sets, the top ``k`` at or above ``floor``."""
    q = words(query)
    if not q:
        return []
    scored = [(i, len(q & d) / len(q | d)) for i, d in enumerate(corpus)]
    kept = [(i, s) for i, s in scored if s >= floor]
    kept.sort(key=lambda item: (-item[1], -item[0]))
    return kept[:k]


# --- metrics -----------------------------------------------------------------------------------------


@dataclass
class Tally:
    """One (class, split, system) cell."""

    queries: int = 0
    with_fn: int = 0  # queries with a past fix that changed a same function
    hit_fn: int = 0  # ... one of which is in the top k
    with_file: int = 0  # queries with a past fix that changed a same file
    hit_file: int = 0
    returned: int = 0  # fixes returned, over all queries
    relevant: int = 0  # ... that changed a file the task's own fix changed
    unrelated: int = 0  # queries with no related past fix
    quiet: int = 0  # ... that got nothing back
    answered: int = 0  # queries that got anything back

    def add(self, returned: Sequence[str], same_fn: frozenset[str], same_file: frozenset[str]) -> None:
        self.queries += 1
        self.returned += len(returned)
        self.relevant += sum(1 for sha in returned if sha in same_file)
        self.answered += bool(returned)
        if same_fn:
            self.with_fn += 1
            self.hit_fn += any(sha in same_fn for sha in returned)
        if same_file:
            self.with_file += 1
            self.hit_file += any(sha in same_file for sha in returned)
        else:
            self.unrelated += 1
            self.quiet += not returned

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.__dict__)
        out["precision"] = round(self.relevant / self.returned, 3) if self.returned else None
        out["quiet_rate"] = round(self.quiet / self.unrelated, 3) if self.unrelated else None
        out["returned_per_query"] = round(self.returned / self.queries, 2) if self.queries else None
        return out


def write_section(path: Path, begin: str, end: str, body: str) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` of the document at ``path`` with
    ``body`` (the generated parts of README and docs). Raises ValueError when a marker is missing."""
    text = path.read_text(encoding="utf-8")
    start, stop = text.index(begin) + len(begin), text.index(end)
    path.write_text(text[:start] + "\n" + body + "\n" + text[stop:], encoding="utf-8")
