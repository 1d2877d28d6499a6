"""Error signatures: the error lines of tool outputs, found by shape and normalized so they compare.

Pure. ``find_errors`` reads one output and returns raw signatures in order of appearance; ``normalize_error``
is the documented normalization (versioned by ``EXTRACTOR_VERSION``):

1. ANSI colour codes go; whitespace collapses; the result is cut to 200 characters.
2. Paths become their workspace-relative form (``/home/u/app/src/x.py`` → ``src/x.py``) or ``<path>`` when
   outside the workspace; ``file:line:col``, ``, line N`` and ``(line,col)`` positions go.
3. Hex addresses become ``0x#``; other numbers become ``#`` unless part of an identifier or a code
   (``py311``, ``sha256``, ``E0308``, ``TS2345`` stay).

So ``ValueError: timeout after 30 seconds`` → ``ValueError: timeout after # seconds``. A line is an error
only by its shape (a traceback's last line, ``E   …``, ``FAILED id - …``, ``error[E0308]: …``,
``--- FAIL: …``, ``panic: …``, ``x.c:3:5: error: …`` …): ordinary output that contains the word "error"
is not an error signature.
"""

from __future__ import annotations

import bisect
import itertools
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_ABS_PATH = re.compile(r"""(?<![\w.:/-])(/(?:[\w.@+~-]+/)*[\w.@+~-]+)""")
_WIN_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\\\s:\"']+\\)*[^\\\s:\"']+")
_POSITION = re.compile(r"(\.[A-Za-z0-9]{1,8})(?::\d+){1,2}(?=[\s:),'\"]|$)|(\.[A-Za-z0-9]{1,8})\(\d+,\d+\)")
_PY_LINE = re.compile(r",? line \d+(?:, column \d+)?")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_#.])\d+(?:[.,]\d+)*(?![0-9_]|x#)")
_SPACE = re.compile(r"\s+")


def _relative_path(match: re.Match[str], workspace: str) -> str:
    path = match.group(1)
    root = workspace.rstrip("/")
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return "<path>"


def normalize_error(line: str, *, workspace: str | None = None, limit: int = 200) -> str:
    """The normalized form of one error line (see the module docstring for the rules)."""
    text = _ANSI.sub("", line) if "\x1b" in line else line
    text = _SPACE.sub(" ", text).strip()
    if ":" in text or "(" in text:
        text = _POSITION.sub(lambda m: m.group(1) or m.group(2), text)
    if "/" in text:
        text = _ABS_PATH.sub(lambda m: _relative_path(m, workspace or ""), text)
    if ":\\" in text:
        text = _WIN_PATH.sub("<path>", text)
    if " line " in text:
        text = _PY_LINE.sub("", text)
    if "0x" in text:
        text = _HEX.sub("0x#", text)
    text = _NUMBER.sub("#", text)
    text = _SPACE.sub(" ", text).strip()
    return text[:limit].rstrip()


# --- shapes -----------------------------------------------------------------------------------------
_EXC_NAME = r"(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)"
_PY_EXC_LINE = re.compile(
    rf"^({_EXC_NAME}|StopIteration|KeyboardInterrupt|SystemExit|AssertionError)(?::\s.*)?$"
)
_TRACEBACK = "Traceback (most recent call last):"
_PYTEST_E = re.compile(r"^E {2,}(\S.*)$")
_PYTEST_SHORT = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+(?: - .+)?|\S+\.py - .+)$")
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)")
_JS_ERROR = re.compile(rf"^\s*(?:Uncaught )?((?:{_EXC_NAME}|Error)(?: \[[A-Z_]+\])?: .+)$")
_JEST_BULLET = re.compile(r"^\s*● (?!Console\b)(.+›.+|[^:]+)$")
_TS_ERROR = re.compile(r"\berror (TS\d+): (.+)$")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_PANIC = re.compile(r"^panic: (.+)$")
_GO_COMPILE = re.compile(r"^(\S+\.go):\d+(?::\d+)?: (.+)$")
_RUST_ERROR = re.compile(r"^(error(?:\[E\d{4}\])?: .+)$")
_RUST_PANIC = re.compile(
    r"^thread '([^']+)'(?: \(\d+\))? panicked at (?:'(.+)', )?([^\s:]+(?::\d+)*):?\s*(.*)$"
)
_JAVA_EXC = re.compile(r"^(Exception in thread \"[^\"]+\" .+)$")
_MAVEN_FAIL = re.compile(r"^\[ERROR\]\s+(?:Failures|Errors):\s*$|^\[ERROR\]\s+([\w.$]+[.#]\w+:\d+ .+)$")
_C_ERROR = re.compile(r"^(\S+?\.\w+):\d+(?::\d+)?: (?:fatal )?error: (.+)$")
_CMD_NOT_FOUND = re.compile(r"^(?:\S*sh: (?:line \d+: |\d+: )?)?(\S+): (?:command not found|not found)$")
_NO_SUCH_FILE = re.compile(r"^(.+): (?:can't open file .+?: \[Errno 2\] )?No such file or directory$")
_PY_NO_SUCH = re.compile(r"^(\S+: can't open file .+: \[Errno 2\] No such file or directory)$")
_NODE_ASSERT = re.compile(r"^\s+error: (?:'(.+)'|([|>]-?))$")
_EXTRA = (  # one-line failure shapes of other runners: rspec, phpunit, dotnet, gradle, ctest
    re.compile(r"^Failure/Error: (.+)$"),
    re.compile(r"^(Failed asserting that .+)$"),
    re.compile(r"^(Failed \S+) \[[\d.]+ m?s\]$"),
    re.compile(r"^(\S+ > \S.*) FAILED$"),
    re.compile(r"^\d+ - (\S+ \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\))$"),
)
_NOISE = ("error: test failed", "error: could not compile", "error: test run failed", "error: Recipe `")
_MAKE_ERROR = re.compile(r"^make(?:\[\d+\])?: \*\*\* .+ Error \d+$")
_GENERIC_ERROR = re.compile(r"^(?:Error|ERROR|error|fatal): (.{3,})$")


def _python_tracebacks(lines: list[str], out: list[tuple[int, str]]) -> None:
    """The exception line ending each ``Traceback`` block (chained causes each yield their own)."""
    for index, line in enumerate(lines):
        if line.strip() != _TRACEBACK:
            continue
        indent = len(line) - len(line.lstrip())
        for j in range(index + 1, min(len(lines), index + 400)):
            candidate = lines[j]
            stripped = candidate.strip()
            if not stripped:
                continue
            if len(candidate) - len(candidate.lstrip()) > indent or stripped.startswith(("File ", "^", "~")):
                continue
            if _PY_EXC_LINE.match(stripped):
                out.append((j, stripped))
            break


# Every shape below contains one of these words; lines holding none are never read. Found with str.find
# (C speed) rather than a regex alternation, which costs ~50 ns per character of output.
_ANCHOR_WORDS = ("rror", "ERROR", "Exception", "FAIL", "Fail", "panic", "fatal", "●", "not found",
                 "No such file", ".go:", "\nE  ")  # fmt: skip
_MAX_ANCHOR_HITS = 20_000


def _candidate_lines(text: str, lines: list[str]) -> list[int]:
    """Indexes of the lines that hold an anchor word, ascending."""
    positions: list[int] = [0] if text.startswith("E  ") else []
    for word in _ANCHOR_WORDS:
        at = text.find(word)
        while at != -1 and len(positions) < _MAX_ANCHOR_HITS:
            positions.append(at + 1 if word[0] == "\n" else at)
            at = text.find(word, at + 1)
    if not positions:
        return []
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    return sorted({bisect.bisect_right(starts, p) - 1 for p in positions})


def find_errors(text: str) -> list[str]:
    """Raw error signatures of one tool output, in order of appearance (not yet normalized)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    if _TRACEBACK in text:
        _python_tracebacks(lines, found)
    taken = {index for index, _ in found}
    last_e = -2
    for index in _candidate_lines(text, lines):
        if index in taken:
            continue
        line = lines[index].rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        pytest_e = _PYTEST_E.match(line)
        if pytest_e:
            if last_e != index - 1:  # the first line of each block of E lines
                found.append((index, pytest_e.group(1)))
            last_e = index
            continue
        signature = _match_line(line, stripped, lines, index)
        if signature:
            found.append((index, signature))
    found.sort(key=lambda item: item[0])
    return [signature for _, signature in found]


def _match_line(line: str, stripped: str, lines: list[str], index: int) -> str | None:
    """The signature a single line carries, if its shape is an error's."""
    match: re.Match[str] | None
    if stripped.startswith(("FAILED ", "ERROR ")) and (match := _PYTEST_SHORT.match(stripped)):
        return match.group(1) if " - " in match.group(1) else stripped
    if stripped.startswith(("FAIL: ", "ERROR: ")) and (match := _UNITTEST.match(stripped)):
        return stripped.split(" ", 1)[0] + f" {match.group(1)} ({match.group(2)})"
    if "error TS" in stripped and (match := _TS_ERROR.search(stripped)):
        return f"error {match.group(1)}: {match.group(2)}"
    if "--- FAIL" in line and (match := _GO_FAIL.match(line)):
        return f"--- FAIL: {match.group(1)}"
    if stripped.startswith("panic: "):
        return stripped
    if stripped.startswith("thread '") and (match := _RUST_PANIC.match(stripped)):
        message = match.group(2) or match.group(4)
        if not message and index + 1 < len(lines):
            message = lines[index + 1].strip()
        return f"thread '{match.group(1)}' panicked at {match.group(3)}: {message}".rstrip(": ")
    if "error:" in stripped and (match := _C_ERROR.match(stripped)):
        return f"{match.group(1)}: error: {match.group(2)}"
    if ".go:" in stripped and (match := _GO_COMPILE.match(stripped)):
        return f"{match.group(1)}: {match.group(2)}"
    if "error:" in line and (match := _NODE_ASSERT.match(line)):
        if match.group(1):
            return match.group(1)
        following = next((s.strip() for s in lines[index + 1 : index + 4] if s.strip()), "")
        return following or None
    if stripped.startswith("error") and _RUST_ERROR.match(stripped):
        if stripped.startswith(_NOISE):
            return None
        return stripped
    if stripped.startswith("Exception in thread"):
        return stripped
    if stripped.startswith("[ERROR]") and (match := _MAVEN_FAIL.match(stripped)) and match.group(1):
        return match.group(1)
    if "not found" in stripped and (match := _CMD_NOT_FOUND.match(stripped)):
        return f"{match.group(1)}: command not found"
    if "No such file" in stripped and (_PY_NO_SUCH.match(stripped) or _NO_SUCH_FILE.match(stripped)):
        return stripped
    for pattern in _EXTRA if "Fail" in stripped or "FAIL" in stripped else ():
        if match := pattern.match(stripped):
            return match.group(1) if pattern.groups else stripped
    if ": " in line and (match := _JS_ERROR.match(line)):
        text = match.group(1)
        if line.startswith((" ", "\t")) and not text.startswith(
            ("AssertionError", "TypeError", "ReferenceError")
        ):
            return None
        return text
    if "●" in line and (match := _JEST_BULLET.match(line)):
        return f"● {match.group(1).strip()}"
    if stripped.startswith(("Error:", "ERROR:", "error:", "fatal:")) and _GENERIC_ERROR.match(stripped):
        return stripped
    return None


def add_signature(kept: list[str], candidate: str, limit: int) -> None:
    """Add ``candidate`` unless it repeats a kept one; a longer form replaces a shorter one in place."""
    if not candidate:
        return
    for index, existing in enumerate(kept):
        if candidate == existing or candidate in existing:
            return
        if existing in candidate:
            kept[index] = candidate
            return
    if len(kept) < limit:
        kept.append(candidate)


def error_type(signature: str) -> str | None:
    """The error's type name or code (``ValueError``, ``E0308``, ``TS2345``) when it has one."""
    if match := re.search(r"\b(E\d{4}|TS\d+)\b", signature):
        return match.group(1)
    if match := re.search(rf"(?:^|[\s-])({_EXC_NAME})\b", signature):
        return match.group(1).rsplit(".", 1)[-1]
    if signature.startswith("panic:") or "panicked at" in signature:
        return "panic"
    return None
