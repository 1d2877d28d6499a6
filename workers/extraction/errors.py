"""Error signatures of tool outputs: the error lines, found by shape. Pure.

``find_errors`` reads one output and returns raw signatures in order of appearance; ``add_signature``
keeps the longer of two overlapping ones. The runner formats, the normalization a signature is stored in
(``normalize_error``) and its type (``error_type``) are ``store.errorsig``'s, shared with recall. A line
is an error only by its shape (a traceback's last line, ``E   …``, ``FAILED id - …``, ``error[E0308]: …``,
``--- FAIL: …``, ``panic: …``, ``x.c:3:5: error: …`` …): ordinary output that contains the word "error"
is not an error signature.
"""

from __future__ import annotations

import re

from store.errorsig import (
    ANSI,
    C_ERROR,
    CMD_NOT_FOUND,
    EXC_NAME,
    GO_COMPILE,
    GO_FAIL,
    JEST_TITLE,
    PYTEST_E_BLOCK,
    PYTEST_SHORT,
    RUST_ERROR,
    RUST_PANIC,
    TS_CODE,
    UNITTEST,
)

# Shapes only finding reads (the runner formats recall reads too are ``store.errorsig``'s).
_PY_EXC_LINE = re.compile(
    rf"^({EXC_NAME}|StopIteration|KeyboardInterrupt|SystemExit|AssertionError)(?::\s.*)?$"
)
_TRACEBACK = "Traceback (most recent call last):"
_JS_ERROR = re.compile(rf"^\s*(?:Uncaught )?((?:{EXC_NAME}|Error)(?: \[[A-Z_]+\])?: .+)$")
_MAVEN_FAIL = re.compile(r"^\[ERROR\]\s+(?:Failures|Errors):\s*$|^\[ERROR\]\s+([\w.$]+[.#]\w+:\d+ .+)$")
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
# (C speed) rather than a regex alternation, which costs per character of output
# (docs/decisions/0008-extraction.md, "Throughput goal not reached").
_ANCHOR_WORDS = ("rror", "ERROR", "Exception", "FAIL", "Fail", "panic", "fatal", "●", "not found",
                 "No such file", ".go:", "\nE  ")  # fmt: skip
_MAX_ANCHOR_HITS = 20_000


def _candidate_lines(text: str) -> list[int]:
    """Indexes of the lines that hold an anchor word, ascending."""
    positions: list[int] = [0] if text.startswith("E  ") else []
    for word in _ANCHOR_WORDS:
        at = text.find(word)
        while at != -1 and len(positions) < _MAX_ANCHOR_HITS:
            positions.append(at + 1 if word[0] == "\n" else at)
            at = text.find(word, at + 1)
    if not positions:
        return []
    indexes: list[int] = []  # a position's line index is the count of newlines before it (C speed)
    line, last = 0, 0
    for position in sorted(positions):
        line += text.count("\n", last, position)
        last = position
        if not indexes or indexes[-1] != line:
            indexes.append(line)
    return indexes


def find_errors(text: str) -> list[str]:
    """Raw error signatures of one tool output, in order of appearance (not yet normalized)."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    if _TRACEBACK in text:
        _python_tracebacks(lines, found)
    taken = {index for index, _ in found}
    last_e = -2
    for index in _candidate_lines(text):
        if index in taken:
            continue
        line = lines[index].rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        pytest_e = PYTEST_E_BLOCK.match(line)
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
    if stripped.startswith(("FAILED ", "ERROR ")) and (match := PYTEST_SHORT.match(stripped)):
        return match.group(1) if " - " in match.group(1) else stripped
    if stripped.startswith(("FAIL: ", "ERROR: ")) and (match := UNITTEST.match(stripped)):
        return stripped.split(" ", 1)[0] + f" {match.group(1)} ({match.group(2)})"
    if "error TS" in stripped and (match := TS_CODE.search(stripped)):
        return f"error {match.group(1)}: {match.group(2)}"
    if "--- FAIL" in line and (match := GO_FAIL.match(line)):
        return f"--- FAIL: {match.group(1)}"
    if stripped.startswith("panic: "):
        return stripped
    if stripped.startswith("thread '") and (match := RUST_PANIC.match(stripped)):
        message = match.group(2) or match.group(5)
        if not message and index + 1 < len(lines):
            message = lines[index + 1].strip()
        return f"thread '{match.group(1)}' panicked at {match.group(3)}{match.group(4)}: {message}".rstrip(
            ": "
        )
    if "error:" in stripped and (match := C_ERROR.match(stripped)):
        return f"{match.group(1)}: error: {match.group(2)}"
    if ".go:" in stripped and (match := GO_COMPILE.match(stripped)):
        return f"{match.group(1)}: {match.group(2)}"
    if "error:" in line and (match := _NODE_ASSERT.match(line)):
        if match.group(1):
            return match.group(1)
        following = next((s.strip() for s in lines[index + 1 : index + 4] if s.strip()), "")
        return following or None
    if stripped.startswith("error") and RUST_ERROR.match(stripped):
        if stripped.startswith(_NOISE):
            return None
        return stripped
    if stripped.startswith("Exception in thread"):
        return stripped
    if stripped.startswith("[ERROR]") and (match := _MAVEN_FAIL.match(stripped)) and match.group(1):
        return match.group(1)
    if "not found" in stripped and (match := CMD_NOT_FOUND.match(stripped)):
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
    if "●" in line and (match := JEST_TITLE.match(line)):
        return f"● {match.group(1).strip()}"
    if stripped.startswith(("Error:", "ERROR:", "error:", "fatal:")) and _GENERIC_ERROR.match(stripped):
        return stripped
    return None


# The environment, not the code: a missing program (``pytest: command not found``, ``bash: ./ponyc: No such
# file or directory``), a missing Makefile or make target, a failed package install.
_ENVIRONMENT = re.compile(
    r": command not found$|^make(?:\[\d+\])?: \*\*\* No (?:rule to make target|targets specified)|"
    r"No targets specified and no makefile found|^(?:GNU)?[Mm]akefile:? .*No such file or directory|"
    r"^g?make(?:\[\d+\])?: .*[Mm]akefile.*No such file|"
    r"^\S*sh: (?:line \d+: )?\S+: No such file or directory$|"
    r"Could not find a version that satisfies|No matching distribution found|"
    r"Failed building wheel|Could not build wheels|subprocess-exited-with-error|Failed to build installable|"
    r"^E: (?:Unable to locate package|Could not open lock file|Package '.+' has no installation candidate)|"
    r"^npm ERR! (?:code E404|404 )|Could not install packages due to|ResolutionImpossible|"
    r"externally-managed-environment|No module named '?(?:pip|setuptools|wheel)'?$",
    re.IGNORECASE,
)
# Commands whose output is the environment's: package installs.
_INSTALLERS = {
    "pip": {"install", "download", "wheel"},
    "pip3": {"install", "download", "wheel"},
    "uv": {"pip", "add", "sync"},
    "conda": {"install", "create"},
    "mamba": {"install", "create"},
    "apt": {"install", "update"},
    "apt-get": {"install", "update"},
    "apk": {"add"},
    "yum": {"install"},
    "dnf": {"install"},
    "brew": {"install"},
    "npm": {"install", "i", "ci"},
    "yarn": {"install", "add"},
    "pnpm": {"install", "i", "add"},
    "gem": {"install"},
    "cargo": {"install"},
    "go": {"get", "install"},
    "poetry": {"install", "add"},
}


# Each alternative of ``_ENVIRONMENT`` holds one of these, lowercased: an ASCII signature with none of them
# cannot match, so the case-blind search (~8 us a signature, at every position) is skipped for it. Outside
# ASCII, case-blind matching folds more than ``str.lower`` does (``ſ`` is ``s``), so the search always runs.
_ENVIRONMENT_WORDS = (
    "command not found", "make", "no such file", "could not", "no matching", "failed", "subprocess-exited",
    "unable to locate", "installation candidate", "npm err", "resolutionimpossible", "externally-managed",
    "no module named",
)  # fmt: skip


def is_environment_noise(signature: str) -> bool:
    """Whether an error signature is the environment's (a missing program or Makefile, a failed package
    install), not the code's: it is no error signature of the fix."""
    if signature.isascii():
        lowered = signature.lower()
        for word in _ENVIRONMENT_WORDS:  # a loop, not any(...): no generator frame per signature
            if word in lowered:
                break
        else:
            return False
    return bool(_ENVIRONMENT.search(signature))


def installs(argv: list[str]) -> bool:
    """Whether a simple command installs packages (``pip install``, ``python -m pip install``, ``apt-get
    install``, ``npm ci`` …): its output is the environment's."""
    words = [w for w in argv if not w.startswith("-")]
    if words[:1] and re.match(r"^(?:python|pypy)[\d.]*$", words[0].rsplit("/", 1)[-1]):
        words = [w for w in argv[1:] if w != "-m" and not w.startswith("-")]
    if words[:1] == ["sudo"]:
        words = words[1:]
    if len(words) < 2:
        return False
    return words[1] in _INSTALLERS.get(words[0].rsplit("/", 1)[-1], set())


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
