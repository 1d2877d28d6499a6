"""The ``fixmem`` console script: the warm daemon answers recall/stats/projects/status as the local path.

Each run is a fresh interpreter calling ``fixmem.__main__.main`` (the console script's function), with a
real daemon process (``python -m fixmem.hooks.daemon``), real files and, for ``status``, a real Redis. A
run's imported modules say which path answered: the local path imports click, the fast path neither
click nor pydantic. The local answer is the oracle: the same run with the daemon off
(``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0``). No timings here (``bench/cli_fast.py`` measures them).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixmem.hooks.daemon_client import LOCK_NAME, SOCKET_NAME, daemon_running
from tests.configs import fix_store
from tests.polling import wait_for
from tests.store.factories import make_entry

OWNER, PROJECT = "alice", "github.com/acme/widgets"
DEADLINE_SECONDS = 60.0
ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, sys
from fixmem.__main__ import main
code = main(sys.argv[2:])
sys.stdout.flush()
sys.stderr.flush()
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


@dataclass(frozen=True)
class Ran:
    """One run of the console script: exit code, output, and the top-level modules it imported."""

    code: int
    stdout: str
    stderr: str
    modules: frozenset[str]

    @property
    def answer(self) -> tuple[int, str, str]:
        return self.code, self.stdout, self.stderr

    @property
    def local(self) -> bool:
        """Whether the click CLI answered in this process (else the daemon did)."""
        return "click" in self.modules


def run(tmp_path: Path, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> Ran:
    report = tmp_path / "probe.json"
    report.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), *argv],
        env=env, cwd=cwd or tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.exists(), done.stderr[-2000:]
    result = json.loads(report.read_text())
    modules = frozenset(m.split(".")[0] for m in result["modules"])
    return Ran(result["code"], done.stdout, done.stderr, modules)


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return {
        **clean,
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "60",  # a daemon a test left behind goes away on its own
        **extra,
    }


def local(env: dict[str, str]) -> dict[str, str]:
    return {**env, "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0"}  # the daemon off: never asked, never started


@pytest.fixture(autouse=True)
def _stop_daemons(tmp_path: Path) -> Iterator[None]:
    """Stop the recall daemons started under ``tmp_path`` (their pid is in the lock)."""
    yield
    for lock in tmp_path.rglob(LOCK_NAME):
        written = lock.read_text().split()
        if written and daemon_running(str(lock.parent)):
            os.kill(int(written[0]), signal.SIGTERM)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "widgets"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def seeded(data_dir: Path, workspace: Path) -> Path:
    """Three fixes of PROJECT and one of the workspace's own key (its path: no git checkout)."""
    store = fix_store(data_dir)
    store.append(
        OWNER,
        PROJECT,
        [
            make_entry(
                1,
                "fix ZeroDivisionError in apply_discount",
                files=["invoicer/totals.py"],
                errors=["ZeroDivisionError: division by zero"],
                project=PROJECT,
                solution="guard quantity == 0",
            ),
            make_entry(2, "parse_csv drops quoted commas", files=["src/csv_io.py"], project=PROJECT),
            make_entry(3, "login times out after 30 seconds", files=["src/auth.py"], project=PROJECT),
        ],
    )
    store.append(
        OWNER, str(workspace), [make_entry(4, "the export button crashes on unicode", project=str(workspace))]
    )
    return data_dir


def start_daemon(data_dir: Path) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen(
        [sys.executable, "-m", "fixmem.hooks.daemon", "--warm-cli"], env=environment(data_dir), cwd=ROOT
    )
    wait_for(lambda: (data_dir / "hooks" / SOCKET_NAME).exists(), DEADLINE_SECONDS, "the daemon's socket")
    return daemon


@pytest.fixture
def daemon(seeded: Path) -> Iterator[subprocess.Popen[bytes]]:
    running = start_daemon(seeded)
    yield running
    running.terminate()
    running.wait(timeout=DEADLINE_SECONDS)


def same_answer(tmp_path: Path, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> Ran:
    """Run ``argv`` through the daemon and locally: the answers must be equal; returns the fast run."""
    expected = run(tmp_path, argv, local(env), cwd)
    fast = run(tmp_path, argv, env, cwd)
    assert expected.local, "the oracle did not run locally"
    assert not fast.local and "pydantic" not in fast.modules, f"{argv}: answered locally: {fast.stderr}"
    assert fast.answer == expected.answer, argv
    return fast


CASES = [
    (["recall", "--project", PROJECT, "apply_discount raises ZeroDivisionError"], 0, "apply_discount"),
    (["recall", "--project", PROJECT, "--json", "--file", "src/csv_io.py", "parse_csv commas"], 0, "csv_io"),
    (["recall", "--project", PROJECT, "add a verbose flag"], 0, "(no relevant past fix)"),
    (["recall", "--project", "github.com/acme/widgetz", "login"], 66, "github.com/acme/widgets"),
    (["recall", "-k", "0", "login"], 2, "Invalid value for '-k'"),
    (["stats", "--project", PROJECT], 0, '"total": 3'),
    (["stats", "--project", PROJECT, "--json"], 0, '"total": 3'),
    (["projects"], 0, PROJECT),
    (["projects", "--json"], 0, PROJECT),
    (["projects", "--owner", "nobody"], 0, "has no project"),
]


@pytest.mark.parametrize(("argv", "code", "shown"), CASES, ids=[" ".join(c[0][:2]) for c in CASES])
@pytest.mark.usefixtures("daemon")
def test_the_daemon_answers_as_the_local_path(
    tmp_path: Path, seeded: Path, argv: list[str], code: int, shown: str
) -> None:
    fast = same_answer(tmp_path, argv, environment(seeded))
    assert fast.code == code
    assert shown in fast.stdout + fast.stderr


@pytest.mark.usefixtures("daemon")
@pytest.mark.parametrize("argv", [["status"], ["status", "--json"]])
def test_status_answers_as_the_local_path(
    tmp_path: Path, seeded: Path, redis_url: str, argv: list[str]
) -> None:
    fast = same_answer(tmp_path, argv, environment(seeded, FIXMEM_REDIS_URL=redis_url))
    assert fast.code == 0 and redis_url in fast.stdout and "fixmem:turns" in fast.stdout


@pytest.mark.usefixtures("daemon")
def test_the_project_is_the_callers_working_directory(tmp_path: Path, seeded: Path, workspace: Path) -> None:
    fast = same_answer(tmp_path, ["recall", "export button crashes"], environment(seeded), cwd=workspace)
    assert "export button" in fast.stdout


@pytest.mark.usefixtures("daemon")
def test_the_callers_environment_decides_not_the_daemons(tmp_path: Path, seeded: Path) -> None:
    env = environment(seeded, FIXMEM_OWNER="bob", FIXMEM_FIX_MEMORY_PROMPT_BUDGET_TOKENS="60")
    assert "owner 'bob' has no project" in same_answer(tmp_path, ["projects"], env).stderr
    env["FIXMEM_OWNER"] = OWNER  # the daemon started with the default budget: the caller's is smaller
    argv = ["recall", "--project", PROJECT, "apply_discount ZeroDivisionError parse_csv login"]
    short = same_answer(tmp_path, argv, env).stdout
    assert len(short) < len(same_answer(tmp_path, argv, environment(seeded)).stdout)


@pytest.mark.usefixtures("daemon")
def test_the_data_dir_flag_picks_the_daemon(tmp_path: Path, seeded: Path) -> None:
    env = environment(tmp_path / "elsewhere")  # the flag wins over FIXMEM_DATA_DIR, relative to the cwd
    fast = same_answer(tmp_path, ["projects", "--data-dir", seeded.name], env, cwd=seeded.parent)
    assert PROJECT in fast.stdout
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.usefixtures("daemon")
@pytest.mark.parametrize(
    "argv", [["schema"], ["recall", "--help"], ["recall", "--project", PROJECT, "-"], ["--version"]]
)
def test_other_commands_help_and_stdin_run_locally(tmp_path: Path, seeded: Path, argv: list[str]) -> None:
    ran = run(tmp_path, argv, environment(seeded))
    assert ran.local and ran.code == 0, ran.stderr


def test_with_no_daemon_it_answers_locally_and_starts_one(tmp_path: Path, seeded: Path) -> None:
    argv = ["recall", "--project", PROJECT, "login times out"]
    env = environment(seeded)
    expected = run(tmp_path, argv, local(env))
    assert not (seeded / "hooks").exists()  # the daemon off starts nothing
    cold = run(tmp_path, argv, env)
    assert cold.local and cold.answer == expected.answer
    wait_for(lambda: (seeded / "hooks" / SOCKET_NAME).exists(), DEADLINE_SECONDS, "the daemon it started")
    warm = run(tmp_path, argv, env)
    assert not warm.local and warm.answer == expected.answer


def test_a_missing_data_dir_starts_no_daemon(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    ran = run(tmp_path, ["projects"], environment(missing))
    assert ran.local and ran.answer == run(tmp_path, ["projects"], local(environment(missing))).answer
    assert not missing.exists()


def test_a_daemon_that_refuses_is_answered_locally(tmp_path: Path, seeded: Path) -> None:
    """An older daemon (no ``cli`` requests) or a broken one: the local path answers, the log says why."""
    hooks = seeded / "hooks"
    hooks.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(hooks / SOCKET_NAME))
    server.listen(1)

    def refuse() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1 << 20)
            conn.sendall(b'{"ok":false,"error":"KeyError: \'q\'"}\n')

    thread = threading.Thread(target=refuse, daemon=True)
    thread.start()
    try:
        argv = ["stats", "--project", PROJECT]
        ran = run(tmp_path, argv, environment(seeded))
        thread.join(DEADLINE_SECONDS)
    finally:
        server.close()
    assert ran.local and ran.answer == run(tmp_path, argv, local(environment(seeded))).answer
    assert "cli stats: ValueError: the daemon refused: KeyError" in (hooks / "hook.log").read_text()


def test_the_installed_script_names_itself_in_usage_errors(tmp_path: Path, seeded: Path) -> None:
    script = Path(sys.executable).with_name("fixmem")
    if not script.is_file():
        pytest.skip("no installed fixmem script beside this interpreter")
    start_daemon(seeded)
    env = environment(seeded)
    argv = [str(script), "recall", "-k", "0", "login"]
    fast = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    slow = subprocess.run(argv, env=local(env), capture_output=True, text=True, timeout=120, check=False)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert fast.returncode == 2 and "Usage: fixmem recall [OPTIONS] QUERY" in fast.stderr
