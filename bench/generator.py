"""A seeded generator of realistic turn events, shaped like the real agent logs (``bench.corpus``).

``TurnGenerator(seed).turn(i)`` is the ``i``-th event (a wire-format v1 dict), ``wire(i)`` its JSON bytes;
the same (seed, i) always gives the same event, and each event is built on its own (no shared state), so
any slice of the sequence can be made in any order.

What a turn is made of (every distribution comes from ``Shape``, measured on the shared corpus):

- the number of tool events: drawn from the measured quantiles (median 5, p90 31, up to 49);
- a workflow like the agents' own: look around (``ls``, ``grep -rn``, ``find``, ``cat``/``nl``/view of a
  file), reproduce (a heredoc ``reproduce.py`` and its traceback), edit (``str_replace_editor``, Claude
  Code ``Edit``, ``sed -i`` or ``cat <<EOF >``), run the tests (REAL runner output captured in
  ``tests/fixtures/runners``: pytest, jest, ``go test``, ``cargo test``), print the final ``git diff``;
- output sizes per tool family drawn from the measured quantiles (reads: median 415 chars, p90 20 KB);
  the text is real: slices of this repository's own source as listings and grep hits, real runner output;
- the share of turns that run tests (18 %) and whose last run fails (25 % of those), of failing tool
  events (~23 %), of turns that touch no file (14 %), and files per entry (1: 89 %, 2: 11 %);
- four harness dialects (mini-swe-agent's bash-only, SWE-agent/OpenHands ``str_replace_editor``, OpenHands
  ``run_ipython``, Claude Code ``Bash``/``Edit``/``Read``), one per owner;
- ``round_texts`` sized so the event's wire bytes per tool event match the corpus (inputs + thoughts).

Projects: ``projects`` project keys over ``owners`` owners, each project with its own language
(Python 60 %, TypeScript 20 %, Go 10 %, Rust 10 %) and module names, so file paths repeat within a project
as they do in real repositories. Nothing here is random at import time; no clock, no I/O but reading the
fixture and source texts once.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from bench.corpus import DEFAULT_SHAPE, QUANTILES, Shape

ROOT = Path(__file__).resolve().parent.parent
RUNNERS = ROOT / "tests" / "fixtures" / "runners"
SOURCES = ("store", "workers/extraction", "ingest", "fixmem")
BASE_TS = 1_732_450_000.0

_LANGUAGES = (("python", 6), ("typescript", 2), ("go", 1), ("rust", 1))
_RUNNERS = {  # language -> (command template, failing outputs, passing outputs)
    "python": (
        "python -m pytest -q tests/test_{mod}.py",
        ("pytest-fail", "pytest-q-fail", "pytest-chained", "unittest-fail"),
        ("pytest-pass", "unittest-pass"),
    ),
    "typescript": ("npx jest src/{mod}.test.ts", ("jest-fail", "vitest-fail"), ("jest-pass",)),
    "go": ("go test ./pkg/{mod}/...", ("go-test-fail", "go-test-v-fail"), ("go-test-pass",)),
    "rust": ("cargo test {mod}", ("cargo-test-fail",), ("cargo-test-pass",)),
}
_EXT = {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}
_MODULES = (
    "auth",
    "session",
    "cache",
    "router",
    "parser",
    "billing",
    "invoice",
    "upload",
    "export",
    "config",
    "scheduler",
    "webhook",
    "mailer",
    "search",
    "metrics",
    "storage",
    "client",
    "server",
    "queue",
    "models",
    "views",
    "forms",
    "utils",
    "settings",
    "middleware",
    "serializers",
    "migrations",
    "tasks",
    "signals",
    "admin",
    "permissions",
    "pagination",
    "validators",
    "filters",
    "handlers",
    "loader",
    "encoder",
    "pool",
)
_SYMPTOMS = (
    "raises KeyError on a missing field",
    "times out after 30 seconds",
    "returns 500 on empty input",
    "drops the last row",
    "double counts retries",
    "ignores the configured locale",
    "fails on unicode file names",
    "leaks a file handle",
    "crashes when the list is empty",
    "rejects valid tokens",
    "writes a truncated file",
    "loses the cursor on reconnect",
)
_ERRORS = (
    "KeyError: 'user_id'",
    "ValueError: invalid literal for int() with base 10: 'x{k}'",
    "TypeError: 'NoneType' object is not subscriptable",
    "AttributeError: 'dict' object has no attribute 'id'",
    "TimeoutError: operation timed out after {k} seconds",
    "IndexError: list index out of range",
    "AssertionError: assert {k} == {j}",
    "ZeroDivisionError: division by zero",
)
# Share of the middle (shell) steps that fail, so that with the failing test runs ~23 % of all tool events
# fail, as in the corpus.
FAILING_FILL_SHARE = 0.33
# The corpus' non-output bytes per tool event include JSON escaping and keys; thoughts sized at this share
# of them bring the generated wire size to the corpus' (checked by ``bench.generator`` self-test figures).
ROUND_TEXT_SCALE = 0.6
_DIALECTS = ("mini-swe-agent", "swe-agent", "openhands", "claude-code")


def _sample(rng: random.Random, table: tuple[float, ...]) -> float:
    """A draw from a distribution given by its values at ``QUANTILES`` (inverse CDF, linear)."""
    u = rng.random() * 100
    i = min(bisect.bisect_right(QUANTILES, u), len(QUANTILES) - 1)
    q0, q1 = QUANTILES[i - 1], QUANTILES[i]
    v0, v1 = table[i - 1], table[i]
    return v0 + (v1 - v0) * (u - q0) / (q1 - q0)


@dataclass(frozen=True)
class Project:
    """One generated project: owner, key, workspace, language and the dialect its harness speaks."""

    owner: str
    key: str
    workspace: str
    language: str
    dialect: str


class _Texts:
    """The real text the generator slices: this repository's source lines and the runner outputs."""

    @cached_property
    def _files(self) -> list[tuple[str, list[str]]]:
        found = []
        for folder in SOURCES:
            for path in sorted((ROOT / folder).rglob("*.py")):
                found.append(
                    (path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8").splitlines())
                )
        return found

    @cached_property
    def source_lines(self) -> list[str]:
        return [line for _, lines in self._files for line in lines]

    @cached_property
    def definitions(self) -> list[int]:
        """Indexes of source lines that open a Python definition (edits start there)."""
        return [i for i, line in enumerate(self.source_lines) if line.lstrip().startswith(("def ", "class "))]

    @cached_property
    def prose(self) -> str:
        """Docstring-ish prose: the source's comment and docstring lines joined."""
        kept = [
            s.strip().lstrip("#").strip() for s in self.source_lines if s.strip().startswith(("#", '"""'))
        ]
        return " ".join(s for s in kept if s)

    @cached_property
    def _bodies(self) -> dict[str, tuple[str, list[int]]]:
        """Whole texts to slice (with each line's start offset): plain, ``cat -n`` numbered, grep hits."""
        plain = [line for _, lines in self._files for line in lines]
        numbered = [f"{n + 1:6}\t{line}" for _, lines in self._files for n, line in enumerate(lines)]
        grep = [
            f"{name}:{n + 1}:{line.strip()}"
            for name, lines in self._files
            for n, line in enumerate(lines)
            if line.strip()
        ]
        out = {}
        for kind, lines in (("plain", plain), ("numbered", numbered), ("grep", grep)):
            starts = [0]
            for line in lines:
                starts.append(starts[-1] + len(line) + 1)
            out[kind] = ("\n".join(lines), starts[:-1])
        return out

    @cached_property
    def _runners(self) -> dict[str, str]:
        return {p.stem: p.read_text(encoding="utf-8") for p in RUNNERS.glob("*.txt")}

    def runner(self, name: str) -> str:
        return self._runners[name]

    def _slice(self, kind: str, rng: random.Random, chars: int) -> str:
        text, starts = self._bodies[kind]
        start = starts[rng.randrange(len(starts))]
        if start + chars > len(text):
            start = max(0, len(text) - chars)
        return text[start : start + chars]

    def listing(self, rng: random.Random, chars: int, *, numbered: bool) -> str:
        """About ``chars`` characters of consecutive source lines (``cat -n`` style when ``numbered``)."""
        return self._slice("numbered" if numbered else "plain", rng, chars)

    def grep(self, rng: random.Random, chars: int) -> str:
        """``grep -rn`` hits over this repository's source: ``path:line:text``, about ``chars`` characters."""
        return self._slice("grep", rng, chars)


TEXTS = _Texts()


class TurnGenerator:
    """Realistic turn events, ``turn(i)`` for i = 0, 1, …; see the module docstring."""

    def __init__(
        self, seed: int = 7, *, projects: int = 50, owners: int = 5, shape: Shape = DEFAULT_SHAPE
    ) -> None:
        """``projects`` project keys spread over ``owners`` owners; ``shape``: the distributions."""
        self.seed = seed
        self.shape = shape
        self.projects = [self._project(p, owners) for p in range(projects)]

    def _project(self, p: int, owners: int) -> Project:
        rng = random.Random(self.seed * 7919 + p)
        language = rng.choices([lang for lang, _ in _LANGUAGES], [w for _, w in _LANGUAGES])[0]
        owner = f"team{p % owners}"
        name = f"{rng.choice(_MODULES)}-{rng.choice(['service', 'api', 'app', 'lib', 'worker'])}-{p}"
        return Project(
            owner=owner,
            key=f"github.com/{owner}/{name}",
            workspace=f"/home/{owner}/src/{name}",
            language=language,
            dialect=_DIALECTS[(p // owners + p) % len(_DIALECTS)],
        )

    def wire(self, i: int) -> bytes:
        """The ``i``-th event as JSON bytes (what a harness XADDs)."""
        return orjson.dumps(self.turn(i))

    def wires(self, start: int, stop: int) -> Iterator[bytes]:
        """Events ``start`` … ``stop - 1`` as JSON bytes."""
        for i in range(start, stop):
            yield self.wire(i)

    def turn(self, i: int, *, project: Project | None = None) -> dict[str, Any]:
        """The ``i``-th event (a v1 turn-event dict); ``project`` overrides the project it belongs to."""
        rng = random.Random(self.seed * 1_000_003 + i)
        project = project or self.projects[rng.randrange(len(self.projects))]
        return _Turn(rng, self.shape, project, i).build()


class _Turn:
    """Builds one turn: a workflow of tool events in a harness dialect."""

    def __init__(self, rng: random.Random, shape: Shape, project: Project, i: int) -> None:
        self.rng, self.shape, self.project, self.i = rng, shape, project, i
        ext = _EXT[project.language]
        base = {
            "python": "src/app/{m}.py",
            "typescript": "src/{m}.ts",
            "go": "pkg/{m}/{m}.go",
            "rust": "src/{m}.rs",
        }[project.language]
        mods = rng.sample(_MODULES, 3)
        self.mod = mods[0]
        self.files = [base.format(m=m) for m in mods]
        self.ext = ext
        self.events: list[dict[str, Any]] = []
        self.texts: list[str] = []
        k, j = rng.randrange(2, 99), rng.randrange(2, 99)
        self.error = rng.choice(_ERRORS).format(k=k, j=j)

    # -- sizes and dialect -------------------------------------------------------------------------

    def size(self, family: str) -> int:
        return int(_sample(self.rng, self.shape.output_chars_by_family.get(family, (0.0,) * len(QUANTILES))))

    def abs(self, path: str) -> str:
        return f"{self.project.workspace}/{path}"

    def shell(self, command: str, output: str, exit_code: int = 0) -> None:
        tool = {"claude-code": "Bash", "openhands": "execute_bash"}.get(self.project.dialect, "bash")
        self.events.append(
            {"tool": tool, "input": {"command": command}, "output": output, "exit_code": exit_code}
        )

    # -- steps -------------------------------------------------------------------------------------

    def look(self) -> None:
        """An exploration step: listing, grep, find, cat / view / Read of a file."""
        rng, dialect = self.rng, self.project.dialect
        kind = rng.random()
        if kind < 0.35 and dialect != "mini-swe-agent":
            path = self.abs(rng.choice(self.files))
            text = TEXTS.listing(rng, max(60, self.size("read")), numbered=True)
            if dialect == "claude-code":
                self.events.append({"tool": "Read", "input": {"file_path": path}, "output": text})
            else:
                tool = "str_replace_editor" if dialect == "swe-agent" else "str_replace_based_edit_tool"
                self.events.append({"tool": tool, "input": {"command": "view", "path": path}, "output": text})
        elif kind < 0.55:
            text = TEXTS.grep(rng, self.size("shell"))
            self.shell(
                f"grep -rn '{self.mod}' {self.files[0].split('/')[0]} | head -80", text, 0 if text else 1
            )
        elif kind < 0.7:
            self.shell(
                f"find . -name '*{self.mod}*' -not -path './.git/*'", "\n".join(f"./{f}" for f in self.files)
            )
        else:
            path = rng.choice(self.files)
            cmd = rng.choice([f"cat {path}", f"nl -ba {path} | sed -n '1,200p'", f"sed -n '20,120p' {path}"])
            self.shell(cmd, TEXTS.listing(rng, self.size("shell"), numbered=cmd.startswith("nl")))

    def reproduce(self) -> None:
        """A scratch script written with a heredoc, run (a traceback), later deleted."""
        code = f"from app.{self.mod} import handle\nprint(handle({{'id': {self.i}}}))\n"
        self.shell(f"cat <<'EOF' > reproduce.py\n{code}EOF", "")
        trace = (
            'Traceback (most recent call last):\n  File "/tmp/reproduce.py", line 2, in <module>\n'
            f"    print(handle({{'id': {self.i}}}))\n"
            f'  File "{self.abs(self.files[0])}", line {self.i % 400 + 3}, '
            f"in handle\n    return payload['user_id']\n{self.error}\n"
        )
        self.shell("python reproduce.py", trace, 1)

    def python_cell(self) -> None:
        code = f"import subprocess\nprint(open('{self.files[0]}').read()[:2000])"
        self.events.append(
            {
                "tool": "run_ipython",
                "input": {"code": code},
                "output": TEXTS.listing(self.rng, self.size("python"), numbered=False),
            }
        )

    def other(self) -> None:
        self.events.append(
            {
                "tool": "finish",
                "input": {"message": "Done; see the summary."},
                "output": TEXTS.prose[: self.size("other")],
            }
        )

    def failing_command(self) -> None:
        rng = self.rng
        if rng.random() < 0.5:
            self.shell(f"grep -rn 'no_such_symbol_{self.i}' .", "", 1)
        else:
            self.shell(
                "python -c 'import app; app.main()'",
                f'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n{self.error}\n',
                1,
            )

    def edit(self, path: str) -> None:
        """One edit of ``path`` in the project's dialect (structured tool or shell)."""
        rng, dialect = self.rng, self.project.dialect
        lines = TEXTS.source_lines
        at = rng.choice(TEXTS.definitions)
        old = "\n".join(lines[at : at + 4])
        new = old + f"\n        # fixed: {self.mod} {self.i}"
        out_size = self.size("edit")
        if dialect == "mini-swe-agent" or (dialect == "swe-agent" and rng.random() < 0.3):
            if rng.random() < 0.6:
                self.shell(f"sed -i 's/timeout = 30/timeout = {self.i % 90 + 31}/' {path}", "")
            else:
                self.shell(f"cat <<'EOF' > {path}\n{new}\nEOF", "")
        elif dialect == "claude-code":
            self.events.append(
                {
                    "tool": "Edit",
                    "input": {"file_path": self.abs(path), "old_string": old, "new_string": new},
                    "output": f"The file {self.abs(path)} has been updated. "
                    + TEXTS.listing(rng, out_size, numbered=True),
                }
            )
        else:
            tool = "str_replace_editor" if dialect == "swe-agent" else "str_replace_based_edit_tool"
            self.events.append(
                {
                    "tool": tool,
                    "input": {
                        "command": "str_replace",
                        "path": self.abs(path),
                        "old_str": old,
                        "new_str": new,
                    },
                    "output": f"The file {self.abs(path)} has been edited. Here's the result of "
                    "running `cat -n` on a snippet:\n" + TEXTS.listing(rng, out_size, numbered=True),
                }
            )

    def test_run(self, ok: bool) -> None:
        command, failing, passing = _RUNNERS[self.project.language]
        text = TEXTS.runner(self.rng.choice(passing if ok else failing))
        want = self.size("shell")
        if want > len(text):  # a bigger run: more progress lines before the summary
            padding = "\n".join(f"tests/test_{self.mod}.py::test_case_{n} PASSED" for n in range(want // 40))
            text = padding + "\n" + text
        self.shell(command.format(mod=self.mod), text, 0 if ok else 1)

    def final_diff(self, paths: list[str]) -> None:
        hunks = []
        for n, path in enumerate(paths):
            line = self.i % 300 + 10 + n
            hunks.append(
                f"diff --git a/{path} b/{path}\nindex 3f2a1b0..9c4d2e1 100644\n--- a/{path}\n+++ b/{path}\n"
                f"@@ -{line},6 +{line},7 @@ def handle(payload):\n     data = load(payload)\n"
                "-    return payload['user_id']\n+    return payload.get('user_id')\n"
                f"+    # fixed: {self.mod} {self.i}\n     \n     \n"
            )
        self.shell("git diff", "".join(hunks))

    # -- the turn ----------------------------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        rng, shape = self.rng, self.shape
        n = max(1, round(_sample(rng, shape.tool_events_per_turn)))
        with_tests = rng.random() < shape.share_turns_with_tests
        last_ok = rng.random() >= shape.share_test_turns_failing
        touches = rng.random() >= shape.share_turns_no_file
        nfiles = 2 if rng.random() < shape.files_per_entry.get(2, 0.0) else 1
        paths = self.files[:nfiles]
        # The fixed skeleton, then exploration / extra edits / failures to fill up to n tool events.
        head: list[Any] = [self.look]
        if with_tests:
            head.append(lambda: self.test_run(False))
        edits = [lambda p=p: self.edit(p) for p in paths] if touches else []
        tail: list[Any] = []
        if with_tests:
            tail.append(lambda: self.test_run(last_ok))
        if touches and rng.random() < 0.4:
            tail.append(lambda: self.final_diff(paths))
        budget = n - len(head) - len(edits) - len(tail)  # tool events left for the middle
        middle: list[Any] = []
        families = list(shape.family_share)
        weights = list(shape.family_share.values())
        scratch = False
        while budget > 0:
            family = rng.choices(families, weights)[0]
            if family == "edit" and touches:
                middle.append(lambda: self.edit(rng.choice(paths)))
            elif family == "python":
                middle.append(self.python_cell)
            elif family == "other":
                middle.append(self.other)
            elif rng.random() < FAILING_FILL_SHARE:
                if budget >= 3 and not scratch and rng.random() < 0.4:  # write, run, and later rm
                    scratch = True
                    middle.append(self.reproduce)
                    budget -= 2
                else:
                    middle.append(self.failing_command)
            else:
                middle.append(self.look)
            budget -= 1
        cut = len(middle) // 2
        for step in [*head, *middle[:cut], *edits, *middle[cut:]]:
            step()
        if scratch:  # scratch goes before the final test run and diff, as the agents do
            self.shell("rm reproduce.py", "")
        for step in tail:
            step()
        events = self.events
        return {
            "v": 1,
            "event_id": f"gen-{self.i}",
            "ts": BASE_TS + self.i,
            "owner": self.project.owner,
            "project_key": self.project.key,
            "workspace": self.project.workspace,
            "user_message": f"The {self.mod} module {rng.choice(_SYMPTOMS)}: {self.error}. Please fix it.",
            "tool_events": events,
            "harness_meta": {"harness": self.project.dialect, "model": "bench-model", "turn": self.i},
            "round_texts": self._round_texts(events),
        }

    def _round_texts(self, events: list[dict[str, Any]]) -> list[str]:
        """One thought per tool event, sized so the non-output bytes per event match the corpus."""
        prose = TEXTS.prose
        texts = []
        for event in events:
            other = _sample(self.rng, self.shape.other_bytes_per_tool_event)
            want = int(other * ROUND_TEXT_SCALE) - sum(len(str(v)) for v in event["input"].values())
            start = self.rng.randrange(max(1, len(prose) - 9000))
            texts.append(prose[start : start + max(40, want - 60)])
        if events:
            texts[-1] = (
                f"Fixed the {self.mod} bug: it no longer {self.error.split(':')[0]}s. " + texts[-1][:200]
            )
        return texts
