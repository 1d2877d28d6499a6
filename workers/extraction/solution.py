"""The entry's deterministic one-line solution and its tags.

Pure. Solution: ``changed auth.py, session.py; tests: 3 passed`` plus the first sentence of the last round
text, cut to the limit. Tags: languages (from file extensions), the test runner, error type names
(``ValueError``, ``E0308``, ``TS2345``) and the outcome; deduplicated, in that order.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from store.entry import Outcome, TestRun
from store.errorsig import error_type

LANGUAGES: dict[str, str] = {
    "py": "python",
    "pyi": "python",
    "pyx": "python",
    "ipynb": "python",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "tsx": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "kt": "kotlin",
    "kts": "kotlin",
    "cs": "csharp",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "rb": "ruby",
    "php": "php",
    "swift": "swift",
    "scala": "scala",
    "sh": "shell",
    "bash": "shell",
    "pony": "pony",
    "ex": "elixir",
    "exs": "elixir",
    "erl": "erlang",
    "hs": "haskell",
    "lua": "lua",
    "vue": "vue",
    "svelte": "svelte",
    "css": "css",
    "scss": "css",
    "html": "html",
    "sql": "sql",
    "dart": "dart",
    "zig": "zig",
    "m": "objc",
    "mm": "objc",
    "r": "r",
    "jl": "julia",
    "pl": "perl",
}
_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.DOTALL)


def languages(files: Sequence[str]) -> list[str]:
    """Languages of the files, by extension, in first-seen order."""
    found: list[str] = []
    for path in files:
        language = LANGUAGES.get(posixpath.splitext(path)[1].lstrip(".").lower())
        if language and language not in found:
            found.append(language)
    return found


def first_sentence(text: str) -> str:
    """The first sentence (or first line) of a text, whitespace collapsed."""
    text = text.strip()
    if not text:
        return ""
    first_line = text.split("\n\n", 1)[0]
    match = _SENTENCE.match(first_line)
    sentence = match.group(1) if match else first_line
    return " ".join(sentence.split())


def solution_text(files: Sequence[str], tests: TestRun | None, round_texts: Sequence[str], limit: int) -> str:
    """``changed a.py, b.py; tests: <summary>`` + the last round text's first sentence, <= ``limit``."""
    names = list(dict.fromkeys(posixpath.basename(p) for p in files))
    shown = ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")
    parts = [f"changed {shown}"] if shown else []
    if tests is not None:
        verdict = tests.summary or ("passed" if tests.ok else "failed")
        parts.append(f"tests: {verdict}")
    text = "; ".join(parts)
    last = next((t for t in reversed(round_texts) if t.strip()), "")
    sentence = first_sentence(last)
    if sentence:
        text = f"{text}. {sentence}" if text else sentence
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def tags_for(files: Sequence[str], runner: str | None, errors: Sequence[str], outcome: Outcome) -> list[str]:
    """Languages, test runner, error types and outcome, deduplicated."""
    tags = languages(files)
    if runner:
        tags.append(runner)
    for signature in errors:
        kind = error_type(signature)
        if kind:
            tags.append(kind)
    tags.append(outcome)
    return list(dict.fromkeys(tags))
