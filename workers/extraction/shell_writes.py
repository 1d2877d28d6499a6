"""What a shell command line does to files: writes, creations, deletions, reverts and applied patches.

Pure. Input: the command text and the working directory it starts in. Output: ``FileOp``s in execution
order (paths raw, each with the directory it was written from) and the directory the line ends in.
Recognized writers: stdout redirections of content (``>``, ``>>``; not stderr, not both streams, not a
build's or test run's report: those are logs, see ``_command_ops``), ``tee``, ``sed -i``, ``perl -i``, ``cp``,
``mv``, ``install``, ``touch``, ``rm``, ``git rm|mv|checkout --|restore``, ``git apply`` / ``patch`` (with
the patch's files, from a heredoc, a here-string, a ``<`` file or a patch file written earlier in the turn),
``python`` code (``-c`` or a heredoc) that calls ``open(…, "w")`` or ``Path(…).write_text``, and
SWE-agent's ``create FILE``. Everything else writes nothing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workers.extraction.diffs import parse_patch
from workers.extraction.limits import WordSet
from workers.extraction.pyscript import python_file_effects
from workers.extraction.shell import Command, parse_commands
from workers.extraction.testruns import runner_of

_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?$")
_SED_IN_PLACE = re.compile(r"^-[nEsrzu]*i")
_FORCE = re.compile(r"^-[a-zA-Z]*f")
# Every writer below needs one of these in its command line (a cheap first test, false hits are fine).
_MAY_WRITE = WordSet(
    (
        ">",
        "sed",
        "perl",
        "tee",
        "cp",
        "mv",
        "install",
        "touch",
        "rm",
        "unlink",
        "git",
        "patch",
        "python",
        "pypy",
        "create",
        "sh",
        "cd",
        "pushd",
        "ed ",
        "ex ",
        "./",
    )
)
_MAX_DEPTH = 2  # a script that runs a script that runs a script: the third is not read
# Commands whose output is a report of building, checking, testing or installing, never a file's content:
# a file such a command's output is redirected to (``make > build.log``, ``pytest | tee t.log``) is a log.
# ``None``: whatever the subcommand; else the subcommands (first argument) that report. ``run`` is not
# one (``go run ./cmd/gen > gen.go`` writes code).
_REPORTERS: dict[str, frozenset[str] | None] = {
    "make": None, "gmake": None, "ninja": None, "tsc": None, "mypy": None, "ruff": None, "flake8": None,
    "pylint": None, "eslint": None, "mvn": None, "mvnw": None, "gradle": None, "gradlew": None,
    "cmake": frozenset({"--build"}),
    "cargo": frozenset({"build", "check", "clippy", "test", "bench", "nextest", "install", "doc"}),
    "go": frozenset({"build", "vet", "test", "install", "get"}),
    "npm": frozenset({"install", "i", "ci", "test", "t", "audit"}),
    "pnpm": frozenset({"install", "i", "add", "test", "t"}),
    "yarn": frozenset({"install", "add", "test"}),
    "bun": frozenset({"install", "i", "add", "test"}),
    "pip": frozenset({"install", "uninstall", "download", "wheel"}),
    "pip3": frozenset({"install", "uninstall", "download", "wheel"}),
    "dotnet": frozenset({"build", "test", "restore"}),
}  # fmt: skip
# ``npm run <script>`` reports when the script builds, lints or tests (others may generate a file).
_REPORTING_SCRIPTS = frozenset({"build", "test", "lint", "check", "typecheck"})
_SED_VALUE_FLAGS = {"-e", "--expression", "-f", "--file", "-l", "--line-length"}
_PERL_VALUE_FLAGS = {"-e", "-E", "-M", "-m", "-I", "-x"}


@dataclass(frozen=True)
class FileOp:
    """One effect on one file. ``kind``: create | write | output (written by a program without being read:
    see ``pyscript``) | delete | discard (``rm -f``: deleted if it was there) | revert | stash | unstash."""

    kind: str
    path: str
    cwd: str | None = None


@dataclass
class ShellEffects:
    """The file effects of one command line and the working directory it leaves."""

    ops: list[FileOp] = field(default_factory=list)
    cwd: str | None = None
    contents: dict[str, str] = field(default_factory=dict)  # files written whole from a heredoc


def _positionals(args: list[str], value_flags: set[str]) -> list[str]:
    out: list[str] = []
    skip = False
    only_positional = False
    for arg in args:
        if skip:
            skip = False
        elif only_positional or not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg == "--":
            only_positional = True
        elif arg in value_flags:
            skip = True
    return out


def sed_files(args: list[str]) -> list[str]:
    in_place = any(a == "-i" or a.startswith(("-i", "--in-place")) or _SED_IN_PLACE.match(a) for a in args)
    if not in_place:
        return []
    has_script_flag = any(
        a in {"-e", "--expression", "-f", "--file"} or a.startswith("--expression=") for a in args
    )
    files: list[str] = []
    skip = False
    script_seen = has_script_flag
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in _SED_VALUE_FLAGS:
            skip = True
        elif arg == "-i" and index + 1 < len(args) and args[index + 1] == "":
            skip = True  # BSD sed: -i '' (empty backup suffix)
        elif arg.startswith("-") and arg != "-":
            continue
        elif not script_seen:
            script_seen = True
        elif arg:
            files.append(arg)
    return files


def _perl_files(args: list[str]) -> list[str]:
    if not any(re.match(r"^-[a-zA-Z]*i", a) for a in args):
        return []
    files: list[str] = []
    skip = False
    script_seen = any(a in {"-e", "-E"} or re.match(r"^-[a-zA-Z]*[eE]$", a) for a in args)
    for arg in args:
        if skip:
            skip = False
        elif arg in _PERL_VALUE_FLAGS or re.match(r"^-[a-zA-Z]*[eE]$", arg):
            skip = True
        elif arg.startswith("-"):
            continue
        elif not script_seen:
            script_seen = True
        else:
            files.append(arg)
    return files


def _python_ops(code: str, argv: Sequence[str], cwd: str | None, named: Sequence[str] = ()) -> list[FileOp]:
    """The effects of Python code; a program's output is an edit when the command that runs it names the
    file (``python3 fix.py src/a.py``, ``python3 fix.py < src/a.py``)."""
    return [
        FileOp("write" if kind == "output" and path in named else kind, path, cwd)
        for kind, path in python_file_effects(code, argv)
    ]


def _script_ops(
    program: str, args: list[str], contents: dict[str, str], cwd: str | None, named: Sequence[str] = ()
) -> list[FileOp]:
    """What running a script the turn wrote earlier does: ``python3 fix.py a.py``, ``bash edit.sh``,
    ``./fix.py``. Python scripts are read by ``pyscript``, shell scripts by ``shell_effects``."""
    if _PYTHON.match(program):
        flags = {"-u", "-B", "-O", "-OO", "-s", "-S", "-E", "-I", "-q"}
        rest = [a for a in args if a not in flags]
        if not rest or rest[0].startswith("-"):
            return []
        script, script_args, kind = rest[0], rest[1:], "python"
    elif program in {"bash", "sh", "zsh"}:
        rest = [a for a in args if a not in {"-e", "-x", "-ex", "-xe", "-u", "-eu"}]
        if not rest or rest[0].startswith("-"):
            return []
        script, script_args, kind = rest[0], rest[1:], "shell"
    else:
        script, script_args = program, args
        kind = "python" if program.endswith(".py") else "shell"
    body = contents.get(_join(cwd, script))
    if body is None:
        return []
    if kind == "python":
        return _python_ops(body, script_args, cwd, [*script_args, *named])
    return shell_effects(body, cwd, contents, depth=1).ops


def _patch_text(cmd: Command, args: list[str], contents: Mapping[str, str], cwd: str | None) -> str:
    if cmd.stdin:
        return cmd.stdin
    candidates = [t for op, t in cmd.redirects if op == "<"]
    candidates += [a for a in args if not a.startswith("-")]
    if "-i" in args and args.index("-i") + 1 < len(args):
        candidates.append(args[args.index("-i") + 1])
    for candidate in candidates:
        key = _join(cwd, candidate)
        if key in contents:
            return contents[key]
    return ""


def _join(cwd: str | None, path: str) -> str:
    return posixpath.normpath(posixpath.join(cwd, path)) if cwd and not path.startswith("/") else path


def _cp_mv_targets(args: list[str]) -> tuple[list[str], str | None]:
    target_dir = None
    if "-t" in args and args.index("-t") + 1 < len(args):
        target_dir = args[args.index("-t") + 1]
    positionals = _positionals(args, {"-t", "-S", "--suffix", "-m", "--mode", "-o", "-g"})
    if target_dir is not None:
        return positionals, target_dir
    if len(positionals) < 2:
        return [], None
    *sources, dest = positionals
    if len(sources) > 1 or dest.endswith("/") or dest in {".", ".."}:
        return sources, dest
    return sources, None if dest is None else "\x00" + dest


def _copy_ops(kind_src: str | None, args: list[str], cwd: str | None) -> list[FileOp]:
    sources, dest = _cp_mv_targets(args)
    ops: list[FileOp] = []
    for src in sources:
        if kind_src:
            ops.append(FileOp(kind_src, src, cwd))
    if dest is None:
        return ops
    if dest.startswith("\x00"):
        ops.append(FileOp("create", dest[1:], cwd))
    else:
        ops.extend(
            FileOp("create", posixpath.join(dest, posixpath.basename(s.rstrip("/"))), cwd) for s in sources
        )
    return ops


def _git_ops(args: list[str], cmd: Command, contents: Mapping[str, str], cwd: str | None) -> list[FileOp]:
    sub = args[0] if args else ""
    rest = args[1:]
    if sub == "rm":
        return [FileOp("delete", p, cwd) for p in _positionals(rest, set())]
    if sub == "mv":
        return _copy_ops("delete", rest, cwd)
    if sub == "checkout" and "--" in rest:
        return [FileOp("revert", p, cwd) for p in rest[rest.index("--") + 1 :]]
    if sub == "checkout" and not {"-b", "-B", "--orphan"} & set(rest):
        # ``git checkout f.py``: a path, or a branch; reverting a path the turn never touched is a no-op
        return [FileOp("revert", p, cwd) for p in _positionals(rest, set()) if "." in p or "/" in p]
    if sub == "restore" and ("--staged" not in rest or "--worktree" in rest):
        return [FileOp("revert", p, cwd) for p in _positionals(rest, {"-s", "--source"})]
    if sub == "reset" and "--hard" in rest:
        return [FileOp("stash", ".", cwd)]  # tracked changes dropped: a stash never popped
    if sub == "stash":
        action = rest[0] if rest else "push"
        if action in {"push", "save"} or (action.startswith("-") and action not in {"-h", "--help"}):
            return [FileOp("stash", ".", cwd)]
        if action in {"pop", "apply"}:
            return [FileOp("unstash", ".", cwd)]
        return []
    if sub == "apply" and not {"--check", "--stat", "--numstat", "--summary"} & set(rest):
        return _patch_ops(_patch_text(cmd, rest, contents, cwd), cwd)
    return []


def _patch_ops(text: str, cwd: str | None) -> list[FileOp]:
    ops: list[FileOp] = []
    for diff in parse_patch(text):
        if diff.old_path and diff.status == "renamed":
            ops.append(FileOp("delete", diff.old_path, cwd))
        kind = {"added": "create", "deleted": "delete"}.get(diff.status, "write")
        ops.append(FileOp(kind, diff.path, cwd))
    return ops


def reports(cmd: Command) -> bool:
    """Whether a command's output is a report (a build, check, test run or install): ``_REPORTERS``."""
    if not cmd.words:
        return False
    program, args = cmd.words[0].rsplit("/", 1)[-1], cmd.words[1:]
    if _PYTHON.match(program) and args[:1] == ("-m",) and len(args) > 1:  # python -m pip|mypy|ruff …
        program, args = args[1], args[2:]
    if program in {"npm", "pnpm", "yarn", "bun"} and args[:1] in (("run",), ("run-script",)):
        return bool(args[1:2]) and args[1] in _REPORTING_SCRIPTS
    if program in _REPORTERS:
        subcommands = _REPORTERS[program]
        return subcommands is None or bool(args and args[0] in subcommands)
    return runner_of(cmd) is not None


def _prints_a_patch(cmd: Command) -> bool:
    """Whether the command prints a patch (``git diff``/``show``/``format-patch --stdout``, ``diff``): a
    file its stdout goes to (``git diff > fix.patch``) is that program's output, not an edit target."""
    argv = list(cmd.words)
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    if program == "diff":
        return True
    sub = [a for a in argv[1:] if not a.startswith("-")][:1]
    return program == "git" and sub in (["diff"], ["show"], ["format-patch"])


# ``cp a.py a.py.bak``: a safety copy the agent can restore from, not a file of the fix.
_BACKUP_SUFFIX = re.compile(r"(?:\.(?:bak|backup|orig|old|save|saved|copy)\d*|~)$", re.IGNORECASE)


def _backups(ops: list[FileOp], args: list[str]) -> list[FileOp]:
    """Copies named as backups of their source (``cp f f.bak``, ``f.orig``, ``f~``) are program outputs."""
    sources = {posixpath.basename(a.rstrip("/")) for a in _positionals(args, set())}
    return [
        FileOp("output", op.path, op.cwd)
        if op.kind == "create"
        and (name := posixpath.basename(op.path))
        and _BACKUP_SUFFIX.search(name)
        and any(name.startswith(src) and name != src for src in sources)
        else op
        for op in ops
    ]


def _output_is_content(cmd: Command) -> bool:
    """Whether a file the command's stdout is redirected to gets content (``cat … > a.py``, ``python
    gen.py > t.py``), not a log: no stderr goes with it (``2>&1``) and the command reports nothing."""
    return not any(op.lstrip("0123456789") == ">&" and target == "1" for op, target in cmd.redirects) and (
        not reports(cmd)
    )


def _command_ops(
    cmd: Command,
    contents: dict[str, str],
    cwd: str | None,
    *,
    reading_a_report: bool = False,
    depth: int = 0,
) -> list[FileOp]:
    """The file effects of one simple command. Redirections write a file only when stdout goes there
    and carries content (``_output_is_content``): stderr (``2>``), both streams (``&>``, ``>&``,
    ``> f 2>&1``) and a report's output are logs, and so is ``tee`` reading a report
    (``reading_a_report``: ``pytest 2>&1 | tee t.log``). A file a turn only logs to is no fix file."""
    argv = list(cmd.words)
    ops: list[FileOp] = []
    content: bool | None = None  # asked only when stdout goes to a file (most commands have no redirect)
    for op, target in cmd.redirects:
        bare, fd = op.lstrip("0123456789"), op[: len(op) - len(op.lstrip("0123456789"))]
        if bare not in {">", ">|", ">>"} or fd not in {"", "1"}:
            continue
        if content is None:
            content = _output_is_content(cmd)
        if content:
            kind = "output" if _prints_a_patch(cmd) else "write" if bare == ">>" else "create"
            ops.append(FileOp(kind, target, cwd))
            if bare in {">", ">|"} and cmd.stdin is not None and argv[:1] == ["cat"]:
                contents[_join(cwd, target)] = cmd.stdin
    if not argv:
        return ops
    program, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    if program == "tee" and reading_a_report:
        return ops
    if program == "tee":
        kind = "write" if {"-a", "--append"} & set(args) else "create"
        ops.extend(FileOp(kind, p, cwd) for p in _positionals(args, set()))
        if cmd.stdin is not None and kind == "create":
            for p in _positionals(args, set()):
                contents[_join(cwd, p)] = cmd.stdin
    elif program in {"sed", "gsed"}:
        ops.extend(FileOp("write", p, cwd) for p in sed_files(args))
    elif program == "perl":
        ops.extend(FileOp("write", p, cwd) for p in _perl_files(args))
    elif program in {"cp", "install"}:
        ops.extend(_backups(_copy_ops(None, args, cwd), args))
    elif program == "mv":
        ops.extend(_copy_ops("delete", args, cwd))
    elif program == "touch":
        ops.extend(FileOp("create", p, cwd) for p in _positionals(args, {"-d", "-r", "-t"}))
    elif program in {"rm", "unlink"}:
        forced = any(_FORCE.match(a) or a == "--force" for a in args)
        ops.extend(FileOp("discard" if forced else "delete", p, cwd) for p in _positionals(args, set()))
    elif program == "git":
        git_args = list(args)
        while git_args and git_args[0].startswith("-"):
            flag = git_args.pop(0)
            if flag in {"-C", "-c"} and git_args:
                git_args.pop(0)
        ops.extend(_git_ops(git_args, cmd, contents, cwd))
    elif program == "patch" and "--dry-run" not in args:
        ops.extend(_patch_ops(_patch_text(cmd, args, contents, cwd), cwd))
    elif program == "create" and len(args) == 1:
        ops.append(FileOp("create", args[0], cwd))
    elif program in {"ed", "ex"}:
        ops.extend(FileOp("write", p, cwd) for p in _positionals(args, {"-p"})[:1])
    elif _PYTHON.match(program):
        named = [t for op, t in cmd.redirects if op == "<"]
        if "-c" in args and args.index("-c") + 1 < len(args):
            at = args.index("-c")
            ops.extend(_python_ops(args[at + 1], args[at + 2 :], cwd, [*args[at + 2 :], *named]))
        elif (not args or args[0] == "-") and cmd.stdin:
            ops.extend(_python_ops(cmd.stdin, args[1:], cwd, args[1:]))
        elif depth < _MAX_DEPTH and contents and args and args[0] != "-m":
            ops.extend(_script_ops(program, args, contents, cwd, named))
    elif program in {"bash", "sh", "zsh"} and "-c" in args and args.index("-c") + 1 < len(args):
        nested = shell_effects(args[args.index("-c") + 1], cwd, contents, depth=depth + 1)
        ops.extend(nested.ops)
    elif contents and depth < _MAX_DEPTH and (program in {"bash", "sh", "zsh"} or argv[0].startswith("./")):
        ops.extend(_script_ops(program if program in {"bash", "sh", "zsh"} else argv[0], args, contents, cwd))
    return ops


def shell_effects(
    text: str, cwd: str | None = None, contents: dict[str, str] | None = None, *, depth: int = 0
) -> ShellEffects:
    """The file effects of a command line, in order; ``contents`` carries files written whole from a
    heredoc across calls (a script written now and run later); ``depth`` bounds scripts running scripts."""
    effects = ShellEffects(cwd=cwd, contents={} if contents is None else contents)
    if not _MAY_WRITE.found_in(text):  # `ls`, `grep …`, `pytest -q`: nothing to parse
        return effects
    previous: Command | None = None
    for cmd in parse_commands(text):
        argv = list(cmd.words)
        after, previous = previous, cmd
        if argv[:1] in (["cd"], ["pushd"]):
            target = next((a for a in argv[1:] if not a.startswith("-")), None)
            if target and not any(c in target for c in "$`~*"):
                effects.cwd = _join(effects.cwd, target) if effects.cwd or target.startswith("/") else None
            continue
        reading_a_report = after is not None and after.piped and reports(after)
        effects.ops.extend(
            _command_ops(cmd, effects.contents, effects.cwd, reading_a_report=reading_a_report, depth=depth)
        )
    return effects


def python_effects(code: str, cwd: str | None = None) -> list[FileOp]:
    """Files a Python cell writes (``open(…, "w")``, ``Path(…).write_text``) or edits through
    OpenHands agent skills (``edit_file_by_replace``, ``insert_content_at_line``, ``append_file``,
    ``create_file``)."""
    ops = _python_ops(code, (), cwd)
    for match in re.finditer(
        r"""\b(edit_file_by_replace|insert_content_at_line|append_file|create_file|edit_file)\(\s*"""
        r"""(?:file_name\s*=\s*)?(['"])([^'"\n]+)\2""",
        code,
    ):
        ops.append(FileOp("create" if match.group(1) == "create_file" else "write", match.group(3), cwd))
    return ops
