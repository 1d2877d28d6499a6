"""Derive the related-fix dataset from a fetched git snapshot: one JSON line per commit.

    python -m evals.related.build --git-dir /work/.mirror/astral-sh+uv/repo --repo astral-sh/uv \\
        --lang rust --window 300 > evals/related/data/astral-sh__uv.jsonl   (then gzip -n)

Per commit of a contiguous window of the newest non-merge commits (oldest first in the output): the sha,
the commit time, the message as a task text (trailers such as Signed-off-by / Change-Id and GitHub's
``* commit`` lists dropped), the files it changed, the functions it changed (``path::Name``: the innermost
definition around each changed line of the post-image, found with Python's ``ast`` or a per-language
regex finder, not git's hunk header), and its hunks cut to a few lines each (what the synthesized turn's
edits carry). Commits that change more than ``MAX_FILES`` files (mass renames, dependency sweeps) are
left out, counted in the header line. Nothing of the snapshot but these derived values is kept.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_FILES = 40  # a commit that changes more files is no single task
MAX_HUNKS = 8  # hunks kept per commit (the synthesized edits)
MAX_HUNK_LINES = 14  # lines kept per hunk after its header: context up to the first change, then changes

_TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|change-id|reviewed-on|reviewed-by|luci-trybot-result|auto-submit|"
    r"commit-queue|trybot-result|run-trybot|trybot-bypass|cr-commit-position|acked-by|tested-by|"
    r"reported-by|suggested-by|helped-by)\s*:",
    re.IGNORECASE,
)
_PR_NUMBER = re.compile(r"\s*\(#\d+\)\s*$")
_SQUASH_ITEM = re.compile(r"^\* \S")  # GitHub's squash body: "* first commit\n\n* second commit"

LANG_EXTS = {
    "python": (".py", ".pyi"),
    "rust": (".rs",),
    "go": (".go",),
    "ts": (".ts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"),
}


def clean_message(message: str) -> tuple[str, str]:
    """(title, body) of a commit message: trailers, squash commit lists, separators and the PR number gone."""
    lines = message.strip().splitlines()
    if not lines:
        return "", ""
    title = _PR_NUMBER.sub("", lines[0]).strip()
    body: list[str] = []
    for line in lines[1:]:
        stripped = line.strip()
        if _TRAILER.match(stripped) or re.fullmatch(r"-{3,}", stripped) or _SQUASH_ITEM.match(line):
            continue
        body.append(line.rstrip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()
    return title, text


# --- diffs ---------------------------------------------------------------------------------------------


@dataclass
class Hunk:
    header: str  # the "@@ -a,b +c,d @@ context" line
    lines: list[str]  # the hunk's body lines (" ", "+", "-" prefixed)
    new_start: int


@dataclass
class FileDiff:
    path: str
    deleted: bool = False
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def parse_diff(text: str) -> list[FileDiff]:
    """The files of a ``git show --format= -U3 --no-renames`` diff, with their hunks."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            match = re.match(r"diff --git a/(.*) b/(.*)$", line)
            current = FileDiff(path=match.group(2) if match else line.split()[-1][2:])
            files.append(current)
        elif current is None:
            continue
        elif line.startswith("deleted file mode"):
            current.deleted = True
        elif line.startswith("Binary files "):
            current.binary = True
        elif (match := _HUNK.match(line)) is not None:
            current.hunks.append(Hunk(header=line, lines=[], new_start=int(match.group(1))))
        elif current.hunks and line[:1] in {" ", "+", "-", "\\"} and not line.startswith(("+++ ", "--- ")):
            current.hunks[-1].lines.append(line)
    return files


def changed_new_lines(hunk: Hunk) -> list[int]:
    """Post-image line numbers of a hunk's changes (a deletion counts at the line that follows it)."""
    out: list[int] = []
    line_no = hunk.new_start
    for line in hunk.lines:
        tag = line[:1]
        if tag == "+":
            out.append(line_no)
            line_no += 1
        elif tag == "-":
            out.append(line_no)
        elif tag == " ":
            line_no += 1
    return out


def cut_hunk(hunk: Hunk) -> list[str]:
    """At most ``MAX_HUNK_LINES`` body lines: the context before the first change, then the changes."""
    first = next((i for i, line in enumerate(hunk.lines) if line[:1] in {"+", "-"}), 0)
    return hunk.lines[max(0, first - 3) : max(0, first - 3) + MAX_HUNK_LINES]


# --- definition finders ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Definition:
    name: str
    start: int  # 1-based, inclusive
    end: int


def python_definitions(source: str) -> list[Definition]:
    """Functions and classes with their line spans, methods qualified by their class (``Cls.meth``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return regex_definitions(source, "python")
    out: list[Definition] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append(Definition(name, start, child.end_lineno or child.lineno))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


_DEF_PATTERNS: dict[str, list[re.Pattern[str]]] = {
    "python": [re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")],
    "rust": [
        re.compile(
            r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
            r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_]\w*)"
        ),
        re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod)\s+([A-Za-z_]\w*)"),
    ],
    "go": [
        re.compile(
            r"^()func\s+(?:\(\s*(?:\w+\s+)?\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*)?([A-Za-z_]\w*)"
        ),
        re.compile(r"^()type\s+([A-Za-z_]\w*)"),
    ],
    "ts": [
        re.compile(
            r"^(\s*)(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)"
        ),
        re.compile(
            r"^(\s*)(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|enum)\s+"
            r"([A-Za-z_$][\w$]*)"
        ),
        re.compile(
            r"^(\s*)(?:export\s+)?(?:const|let)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?"
            r"(?:function\b|\([^)]*\)\s*(?::\s*[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"
        ),
        re.compile(
            r"^(\s+)(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*"
            r"(?!(?:if|for|while|switch|catch|return|function|new|else|do|typeof)\b)([A-Za-z_$][\w$]*)\s*"
            r"(?:<[^>]*>)?\([^;]*\)\s*(?::\s*[^;{]+)?\{\s*$"
        ),
    ],
}


def regex_definitions(source: str, lang: str) -> list[Definition]:
    """Definitions found by the language's regexes; a definition ends at the first later line at its own
    indentation or less that closes it (``}``) or, failing that, just before the next such definition.
    Formatted code (rustfmt, gofmt, prettier) puts the closing brace at the definition's indentation.
    """
    lines = source.splitlines()
    starts: list[tuple[int, int, str]] = []  # (line index, indent, name)
    for i, line in enumerate(lines):
        for pattern in _DEF_PATTERNS[lang]:
            match = pattern.match(line)
            if match is None:
                continue
            groups = [g for g in match.groups()[1:] if g]
            # a Go method is Recv.Name
            name = f"{groups[0]}.{groups[1]}" if lang == "go" and len(groups) == 2 else groups[-1]
            starts.append((i, len(match.group(1).expandtabs(4)), name))
            break
    out: list[Definition] = []
    for n, (i, indent, name) in enumerate(starts):
        end = len(lines) - 1
        if lang == "python":
            for j in range(i + 1, len(lines)):
                text = lines[j]
                if text.strip() and len(text) - len(text.lstrip()) <= indent:
                    end = j - 1
                    break
        else:
            found = False
            for j in range(i + 1, len(lines)):
                text = lines[j]
                stripped = text.strip()
                if not stripped:
                    continue
                this_indent = len(text.expandtabs(4)) - len(text.expandtabs(4).lstrip())
                if this_indent == indent and stripped.startswith(("}", ")")):
                    end, found = j, True
                    break
                if this_indent < indent:
                    end, found = j - 1, True
                    break
            if not found:
                later = [s for s in starts[n + 1 :] if s[1] <= indent]
                end = later[0][0] - 1 if later else len(lines) - 1
            if lines[i].rstrip().endswith(";"):  # a declaration without a body
                end = i
        out.append(Definition(name, i + 1, end + 1))
    return out


def definitions(source: str, lang: str) -> list[Definition]:
    return python_definitions(source) if lang == "python" else regex_definitions(source, lang)


def innermost(defs: Sequence[Definition], line: int) -> str | None:
    """The name of the smallest definition whose span holds ``line``."""
    holding = [d for d in defs if d.start <= line <= d.end]
    if not holding:
        return None
    return min(holding, key=lambda d: (d.end - d.start, -d.start)).name


def changed_functions(path: str, source: str, hunks: Sequence[Hunk], lang: str) -> list[str]:
    """``path::Name`` of every definition holding a changed line of the post-image, in first-met order."""
    if not path.endswith(LANG_EXTS[lang]):
        return []
    defs = definitions(source, lang)
    out: list[str] = []
    for hunk in hunks:
        for line in changed_new_lines(hunk):
            name = innermost(defs, line)
            if name is not None and f"{path}::{name}" not in out:
                out.append(f"{path}::{name}")
    return out


# --- git -----------------------------------------------------------------------------------------------


class Blobs:
    """``git cat-file --batch`` kept open: file contents at a commit, fast."""

    def __init__(self, git_dir: str) -> None:
        self._proc = subprocess.Popen(
            ["git", "--git-dir", git_dir, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, rev: str, path: str) -> str | None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(f"{rev}:{path}\n".encode())
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode().split()
        if len(header) < 3 or header[1] == "missing":
            return None
        size = int(header[2])
        data = self._proc.stdout.read(size + 1)[:size]
        if b"\x00" in data[:8000]:
            return None
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait()


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True, errors="replace"
    ).stdout


def commits(git_dir: str, rev: str, window: int) -> list[tuple[str, int, str]]:
    """(sha, commit time, message) of the ``window`` newest non-merge first-parent commits, oldest first."""
    raw = git(
        git_dir, "log", "--no-merges", "--first-parent", f"-n{window}", "--format=%H%x00%ct%x00%B%x1e", rev
    )
    out = []
    for chunk in raw.split("\x1e"):
        record = chunk.strip("\n")
        if not record:
            continue
        sha, ts, message = record.split("\x00", 2)
        out.append((sha, int(ts), message))
    return out[::-1]


def derive(git_dir: str, repo: str, lang: str, rev: str, window: int) -> Iterator[dict[str, Any]]:
    """The header record, then one record per kept commit, oldest first."""
    listed = commits(git_dir, rev, window)
    blobs = Blobs(git_dir)
    kept: list[dict[str, Any]] = []
    too_big = 0
    try:
        for sha, ts, message in listed:
            diff = parse_diff(git(git_dir, "show", "--format=", "-U3", "--no-renames", "--no-color", sha))
            if not diff or len(diff) > MAX_FILES:
                too_big += 1
                continue
            functions: list[str] = []
            hunks: list[dict[str, Any]] = []
            for fd in diff:
                if fd.binary:
                    continue
                if not fd.deleted and fd.path.endswith(LANG_EXTS[lang]):
                    source = blobs.read(sha, fd.path)
                    if source is not None:
                        functions.extend(changed_functions(fd.path, source, fd.hunks, lang))
                for hunk in fd.hunks:
                    if len(hunks) < MAX_HUNKS:
                        hunks.append({"path": fd.path, "header": hunk.header, "lines": cut_hunk(hunk)})
            title, body = clean_message(message)
            kept.append(
                {
                    "sha": sha,
                    "ts": ts,
                    "title": title,
                    "body": body,
                    "files": [fd.path for fd in diff],
                    "functions": functions,
                    "hunks": hunks,
                }
            )
    finally:
        blobs.close()
    head = listed[-1][0] if listed else ""
    yield {
        "repo": repo,
        "lang": lang,
        "head": head,
        "window": window,
        "listed": len(listed),
        "kept": len(kept),
        "dropped_over_max_files": too_big,
        "max_files": MAX_FILES,
    }
    yield from kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--lang", required=True, choices=sorted(LANG_EXTS))
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--window", type=int, default=300)
    args = parser.parse_args(argv)
    for record in derive(args.git_dir, args.repo, args.lang, args.rev, args.window):
        sys.stdout.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
