"""A forgiving POSIX-shell reader: command text in, simple commands (argv, redirections, heredocs) out.

Pure, and it never raises: agents write unbalanced quotes, half heredocs and stray operators, and the
reader then does the best it can with what it has. It understands quoting, backslash escapes, comments,
``$(…)`` and backticks (kept inside words), operators (``&& || ; | & ( )`` and newlines), redirections
with file descriptors (``> >> 2> &> <``), and heredocs (``<<EOF``, ``<<-'EOF'``), whose bodies are attached
to the command they feed. ``unwrap`` strips prefixes that run another command (``sudo``, ``env X=1``,
``timeout 60``, ``uv run`` …) so callers see the real program.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

_OPERATORS = (
    "&>>",
    "<<-",
    "<<<",
    "&&",
    "||",
    ";;",
    ">>",
    ">|",
    "<<",
    "&>",
    ">&",
    "|&",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
)
_SEPARATORS = {";", "&&", "||", "|", "&", "|&", "\n", "(", ")", ";;"}
_REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<", "<<<", ">&", "<<", "<<-"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SPECIAL = re.compile(r"[\\'\"$`#;&|()<>\n]")
_PLAIN = re.compile(r"[^\s\\'\"$`#;&|()<>]+")  # a run of characters with no meaning to the shell


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    body: str = ""


@dataclass
class Command:
    """One simple command: its words, its redirections (op, target) and the separator that ended it."""

    argv: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    stdin: str | None = None  # heredoc or here-string body fed to the command
    separator: str = ""  # what followed: ";", "&&", "||", "|", "\n" or "" at the end
    words: tuple[str, ...] = ()  # ``argv`` unwrapped (see ``unwrap``), set by the parser

    @property
    def piped(self) -> bool:
        """Whether this command's output goes into a pipe (its exit status is not the line's)."""
        return self.separator in {"|", "|&"}


def _read_quoted(text: str, i: int) -> tuple[str, int]:
    """Body of the double-quoted string starting at ``text[i] == '"'``, and the index after it."""
    out: list[str] = []
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    return "".join(out), i


def _read_balanced(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index after the bracket that closes the one at ``text[i]`` (quotes respected), or the end."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ch != "`":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        if c == open_ch and (open_ch != close_ch or depth == 0):
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth <= 0:
                return i + 1
        i += 1
    return i


def _extend(word: list[str] | None, parts: list[str]) -> list[str]:
    if word is None:
        return parts
    word.extend(parts)
    return word


def shell_tokens(text: str) -> list[str | _Heredoc | tuple[str]]:
    """Words (str), operators (1-tuples) and heredoc bodies; never raises."""
    tokens: list[str | _Heredoc | tuple[str]] = []
    pending: list[_Heredoc] = []
    word: list[str] | None = None
    i, n = 0, len(text)

    def flush() -> None:
        nonlocal word
        if word is not None:
            tokens.append("".join(word))
            word = None

    while i < n:
        c = text[i]
        if c in " \t\r":
            flush()
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            word = _extend(word, [text[i + 1 : i + 2]])
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            word = _extend(word, [text[i + 1 : end]])
            i = end + 1
        elif c == '"':
            body, i = _read_quoted(text, i)
            word = _extend(word, [body])
        elif c == "$" and text[i + 1 : i + 2] == "(":
            end = _read_balanced(text, i + 1, "(", ")")
            word = _extend(word, [text[i:end]])
            i = end
        elif c == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end + 1
            word = _extend(word, [text[i:end]])
            i = end
        elif c == "#" and word is None:
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "\n":
            flush()
            tokens.append(("\n",))
            i += 1
            for doc in pending:
                i = _read_heredoc_body(text, i, doc)
            pending.clear()
        elif c in ";&|()<>":
            op = next(o for o in _OPERATORS if text.startswith(o, i))
            length = len(op)
            if op in {">", ">>", ">&", "<", ">|"} and word is not None and "".join(word).isdigit():
                fd = "".join(word)
                word = None
                op = fd + op  # ``2>&1``: the operator is ``2>&``, ``1`` its target
            flush()
            tokens.append((op,))
            i += length
            if op in {"<<", "<<-"}:
                i, doc = _read_heredoc_delimiter(text, i, strip_tabs=op == "<<-")
                tokens.append(doc)
                pending.append(doc)
        else:
            plain = _PLAIN.match(text, i)
            end = plain.end() if plain else i + 1
            word = _extend(word, [text[i:end]])
            i = end
    flush()
    return tokens


def _read_heredoc_delimiter(text: str, i: int, *, strip_tabs: bool) -> tuple[int, _Heredoc]:
    while i < len(text) and text[i] in " \t":
        i += 1
    match = re.match(r"""(?:'([^'\n]*)'|"([^"\n]*)"|\\?([^\s;&|<>()]+))""", text[i:])
    if not match:
        return i, _Heredoc(delimiter="", strip_tabs=strip_tabs)
    delimiter = next(g for g in match.groups() if g is not None)
    return i + match.end(), _Heredoc(delimiter=delimiter, strip_tabs=strip_tabs)


def _read_heredoc_body(text: str, i: int, doc: _Heredoc) -> int:
    """Fill ``doc.body`` from ``text[i:]`` up to its delimiter line; returns the index after it."""
    lines: list[str] = []
    while i < len(text):
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        line = text[i:end]
        i = end + 1
        probe = line.lstrip("\t") if doc.strip_tabs else line
        if probe.rstrip() == doc.delimiter and doc.delimiter:
            break
        lines.append(probe)
    doc.body = "\n".join(lines) + ("\n" if lines else "")
    return i


def parse_commands(text: str) -> tuple[Command, ...]:
    """The simple commands of a command line, in order; never raises. Cached: treat them as read-only."""
    if len(text) > _CACHE_MAX_CHARS:
        return _parse_commands(text)
    return _parse_cached(text)


_CACHE_MAX_CHARS = 4096


def _parse_commands(text: str) -> tuple[Command, ...]:
    if not _SPECIAL.search(text):  # the common case: plain words, nothing for the shell to interpret
        argv = text.split()
        return (Command(argv=argv, words=tuple(unwrap(argv))),) if argv else ()
    commands: list[Command] = []
    current = Command()
    tokens = shell_tokens(text)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, tuple):
            op = token[0]
            bare = op.lstrip("0123456789")
            if op in _SEPARATORS:
                current.separator = op
                if current.argv or current.redirects:
                    commands.append(current)
                current = Command()
            elif bare in _REDIRECTS and i + 1 < len(tokens):
                target = tokens[i + 1]
                if isinstance(target, _Heredoc):
                    current.stdin = target.body
                elif isinstance(target, str):
                    if bare == "<<<":
                        current.stdin = target
                    else:
                        current.redirects.append((op, target))
                if not isinstance(
                    target, tuple
                ):  # an operator is no target: a ``|`` after it still separates
                    i += 1
        elif isinstance(token, str):
            current.argv.append(token)
        i += 1
    if current.argv or current.redirects:
        commands.append(current)
    for command in commands:
        command.words = tuple(unwrap(command.argv))
    return tuple(commands)


_parse_cached = functools.lru_cache(maxsize=2048)(_parse_commands)


_WRAPPERS = {"sudo", "nohup", "time", "command", "exec", "builtin", "stdbuf", "nice", "ionice", "chronic"}
_RUNNERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
}


def unwrap(argv: list[str]) -> list[str]:
    """``argv`` without environment assignments and wrapper programs that just run the rest."""
    words = list(argv)
    for _ in range(8):
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
        if not words:
            return words
        head = words[0].rsplit("/", 1)[-1]
        if head in _WRAPPERS or head == "env":
            words.pop(0)
            while words and (words[0].startswith("-") or _ASSIGNMENT.match(words[0])):
                flag = words.pop(0)
                if flag in {"-n", "-u", "-C", "-S", "-c", "--adjustment"} and words:
                    words.pop(0)
        elif head == "timeout":
            words.pop(0)
            while words and words[0].startswith("-"):
                flag = words.pop(0)
                if flag in {"-s", "-k", "--signal", "--kill-after"} and words:
                    words.pop(0)
            if words:
                words.pop(0)  # the duration
        elif len(words) > 1 and (head, words[1]) in _RUNNERS:
            words = words[2:]
        elif head in {"npx", "bunx", "pnpx"}:
            words = [w for w in words[1:] if w not in {"--yes", "-y", "--no-install"}]
        else:
            return words
    return words


_READ_ONLY = {
    "cat",
    "nl",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "find",
    "ls",
    "tree",
    "wc",
    "echo",
    "printf",
    "pwd",
    "cd",
    "pushd",
    "popd",
    "file",
    "stat",
    "sort",
    "uniq",
    "cut",
    "tr",
    "xxd",
    "od",
    "which",
    "type",
    "true",
    "clear",
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "find_file",
    "search_file",
    "search_dir",
    "view",
    "awk",
    "diff",
    "realpath",
    "dirname",
    "basename",
    "du",
    "df",
    "env",
    "printenv",
    "date",
    "column",
    "fold",
    "fmt",
    "jq",
    "yq",
    "bat",
    "sed",
    "git",
}
_GIT_READS = {"diff", "log", "show", "status", "blame", "grep", "ls-files", "branch", "rev-parse", "remote"}


def reads_only(text: str) -> bool:
    """Whether every command of a line only prints files or metadata (its output is file content).

    ``sed`` counts as a reader unless it edits in place; ``git`` only for its read sub-commands.
    """
    commands = parse_commands(text)
    if not commands:
        return False
    for cmd in commands:
        argv = cmd.words
        if not argv:
            continue
        program = argv[0].rsplit("/", 1)[-1]
        if program not in _READ_ONLY:
            return False
        if program == "sed" and any(a.startswith(("-i", "--in-place")) for a in argv[1:]):
            return False
        if program == "git" and not (set(argv[1:3]) & _GIT_READS):
            return False
    return True
