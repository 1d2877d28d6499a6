"""The entry's deterministic one-line solution and its tags.

Pure. Solution: ``changed auth.py, session.py; tests: 3 passed`` plus the agent's own explanation: the
first sentence that is not chatter (``is_chatter``: plans to run, look or submit, status reports,
courtesy, questions, command and code echoes; ``THOUGHT:`` markers removed) in the latest of the last
three round texts that has one; none when they hold only chatter. Cut to the limit.

Tags: languages (from file extensions), the test runner, error type names (``ValueError``, ``E0308``,
``TS2345``) and the outcome; deduplicated, in that order.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from store.entry import Outcome, TestRun
from store.errorsig import error_type
from store.redact import might_hold_secret, redact

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
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
_LIST_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_MARKER = re.compile(r"^(?:THOUGHT|DISCUSSION|Thought|Reasoning|Plan|Action)\s*:\s*|^(?:[-*•]|\d+[.)])\s+")
# Chatter: what the agent is about to do or just ran, how sure it is, courtesy; not what changed or why.
_SUBMIT = re.compile(
    r"\bsubmit(?:ting|ted|s)?\b|\bready to (?:submit|finish)|task is (?:now )?complete", re.I
)
_COURTESY = re.compile(
    r"^(?:great|certainly|sure|okay|ok|perfect|excellent|oh no|thank you|thanks|i apologi[sz]e|sorry|"
    r"done|wait|hmm|alright|please)\b",
    re.I,
)
_INTENT = re.compile(
    r"^(?:(?:now|next|first|then|finally|so|ok(?:ay)?|great),?\s+)*"
    r"(?:let'?s|let me|i'?ll|i will|i'm going to|i am going to|we'?ll|we will|"
    r"we should|i should|i need to|we need to|i must|i can|we can|"
    r"before \w+ing|to (?:ensure|verify|make sure|start|check|confirm|address|implement)|re-read|verify|run|"
    r"running|checking|testing|looking|searching|verifying|trying)\b",
    re.I,
)
# A planned step that is itself the change (``Let's add the missing colon``) explains; one that runs, looks
# or cleans up does not.
_CHANGE_VERB = re.compile(
    r"\b(?:add(?:ing)?|updat(?:e|ing)|modify(?:ing)?|chang(?:e|ing)|replac(?:e|ing)|implement(?:ing)?|"
    r"fix(?:ing)?|correct(?:ing)?|rewrit(?:e|ing)|convert(?:ing)?|"
    r"pass(?:ing)? (?:a|an|the)|make the (?:necessary )?changes?|"
    r"handl(?:e|ing)|wrap(?:ping)?|guard(?:ing)?|catch(?:ing)?|round(?:ing)?|mov(?:e|ing)|renam(?:e|ing))\b",
    re.I,
)
_NOT_A_CHANGE = re.compile(
    r"\b(?:run|rerun|re-run|test|check|verify|look|open|find|search|view|inspect|examine|see|try|install|"
    r"remove|delete|clean|confirm|double[- ]check|make sure|ensure|reproduce|build|compile|start|proceed|"
    r"locate|first)\b|\bagain\b",
    re.I,
)
_STATUS = re.compile(
    r"\b(?:tests? (?:passed|pass|ran|fail(?:ed)?)|all (?:the )?(?:existing )?tests|ran successfully|"
    r"runs? successfully|works? as expected|looks? (?:correct|good|right|fine)|is correct|"
    r"(?:i am|i'm) (?:confident|sure|done)|successfully (?:removed|deleted|applied|ran)|has been removed|"
    r"no longer needed|the output (?:shows|indicates|is|was|has)|it seems (?:that )?the .*(?:fail|not |still|"
    r"doesn't|does not|available|missing)|(?:is|are) still failing|no changes? (?:are |is )?needed|"
    r"don'?t need to make|have been successfully applied|has been (?:successfully )?implemented|"
    r"\bcould not be verified|gives me confidence|is exactly what|everything looks|"
    r"it (?:seems|appears) there was|^this (?:suggests|indicates|means|should fix)|(?:is|are) now working|"
    r"is located in)",
    re.I,
)
_ONLY_A_FILE = re.compile(r"\b(?:modify|change|edit|update|open) (?:the )?`[^`]+`(?: file)?\.?$", re.I)
_CODE = re.compile(
    r"^(?:\$ |>>> |def |class |return\b|try:|except\b|import |from \S+ import|if .*:$|for .*:$|"
    r"(?:pytest|python3?|pip|git|npm|make|cmake|cd|ls|cat|grep|sed)\s)|^[^\s]+$|^[\w.\[\]'\"]+\s*=\s*\S"
)


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


def sentences(text: str, *, list_items: bool = True) -> list[str]:
    """The sentences of a text, line by line, whitespace collapsed, list and ``THOUGHT:`` markers removed;
    without the lines of bulleted or numbered lists when ``list_items`` is false."""
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("```") or (not list_items and _LIST_ITEM.match(line)):
            continue
        for piece in _SPLIT.split(_LIST_ITEM.sub("", line, count=1)):
            flat = _MARKER.sub("", " ".join(piece.split()))
            if flat:
                out.append(flat)
    return out


def is_chatter(sentence: str) -> bool:
    """Whether a sentence of the agent's text says nothing about what changed or why: a plan to run, look
    or submit, a status report (tests passed, script ran, looks good), courtesy, a question, a header
    ending in ":", a command or code echo. A planned step that is the change itself is not chatter."""
    text = _MARKER.sub("", sentence.strip())
    words = text.split()
    if len(words) < 3 or text.endswith("?") or _CODE.match(text) or _COURTESY.match(text):
        return True
    if _SUBMIT.search(text) or _STATUS.search(text):
        return True
    if (text.endswith(":") and len(words) <= 5) or _ONLY_A_FILE.search(text):
        return True
    if _INTENT.match(text) or text.endswith(":"):
        change = _CHANGE_VERB.search(text)
        return change is None or bool(_NOT_A_CHANGE.search(text[: change.start()]))
    return False


_MIN_WORDS = 5  # a shorter sentence (a list item, "Only these two.") explains nothing on its own


def _same(text: str) -> str:
    return text


def redact_each(texts: Sequence[str]) -> list[str]:
    """``redact`` of each text, with one anchor scan for all of them (none holds one: returned as they are).
    Same result as redacting each: an anchor in one text is an anchor in the joined text."""
    if not might_hold_secret("\n".join(texts)):
        return list(texts)
    return [redact(text) for text in texts]


def explanation(
    round_texts: Sequence[str], *, look_back: int = 3, clean: Callable[[str], str] = _same
) -> str:
    """The first sentence of ``_MIN_WORDS`` words or more, outside lists, that explains (``not is_chatter``),
    in the latest of the last ``look_back`` round texts that has one; "" when they hold only chatter.
    ``clean`` (e.g. redaction) is applied to a text only when it is read: the latest one usually answers."""
    recent = [t for t in round_texts if t.strip()][-look_back:]
    for raw in reversed(recent):
        kept = next(
            (
                s
                for s in sentences(clean(raw), list_items=False)
                if len(s.split()) >= _MIN_WORDS and not is_chatter(s)
            ),
            "",
        )
        if kept:
            return kept
    return ""


def solution_text(
    files: Sequence[str],
    tests: TestRun | None,
    round_texts: Sequence[str],
    limit: int,
    clean: Callable[[str], str] = _same,
) -> str:
    """``changed a.py, b.py; tests: <summary>`` + the agent's explanation (``explanation``; ``clean`` is
    applied to the round texts it reads), <= ``limit``."""
    names = list(dict.fromkeys(posixpath.basename(p) for p in files))
    shown = ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")
    parts = [f"changed {shown}"] if shown else []
    if tests is not None:
        verdict = tests.summary or ("passed" if tests.ok else "failed")
        parts.append(f"tests: {verdict}")
    text = "; ".join(parts)
    sentence = explanation(round_texts, clean=clean)
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
