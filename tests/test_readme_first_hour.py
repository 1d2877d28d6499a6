"""The README's first-hour steps, run exactly as written: ``fixmem up`` (terminal 1), then the ``export``
line it prints, the ``XADD`` with the bundled ``redis-cli``, the ``curl`` with the printed token and
``fixmem recall`` (terminal 2). The commands are read from between the README's markers, so the README
and this test cannot drift. Failed on the old code: ``up`` made a token for owner ``demo`` only, so the
``curl`` of alice's turn answered 401 (and there was no ``export`` line to take the URL and token from)."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"<!-- first-hour: (terminal \d) -->\s*```sh\n(.*?)```\s*<!-- /first-hour -->", re.S)


def readme_steps() -> dict[str, list[str]]:
    """The README's first-hour code blocks: terminal name -> its command lines (blank lines dropped)."""
    blocks = {name: [line for line in body.splitlines() if line.strip()] for name, body in _BLOCK.findall(
        (ROOT / "README.md").read_text()
    )}  # fmt: skip
    assert set(blocks) == {"terminal 1", "terminal 2"}, "the README's first-hour markers moved"
    return blocks


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for raw in stream:  # type: ignore[attr-defined]
        into.put(raw.decode(errors="replace"))


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _until(what: str, script: str, env: dict[str, str], done: re.Pattern[str], seconds: float = 90) -> str:
    """Run ``script`` until it exits 0 with ``done`` in its output (the worker batches the turn)."""
    deadline = time.monotonic() + seconds
    while True:
        ran = _bash(script, env)
        if ran.returncode == 0 and done.search(ran.stdout):
            return ran.stdout
        assert time.monotonic() < deadline, f"{what}: rc {ran.returncode}\n{ran.stdout}\n{ran.stderr}"
        time.sleep(0.5)


@pytest.mark.slow
def test_the_readme_first_hour_works_as_written(tmp_path: Path) -> None:
    steps = readme_steps()
    first, second = steps["terminal 1"], steps["terminal 2"]
    assert first[0] == "pip install -e ."  # the suite runs in that install already
    bin_dir = str(Path(sys.executable).parent)  # the venv's `fixmem`, as after `pip install` in it
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    clean["PATH"] = bin_dir + os.pathsep + clean.get("PATH", "")
    # Terminal 1: a fresh user (no data yet) whose default data directory is under tmp_path; one worker and
    # any free API port, to be light on a shared machine.
    up_env = clean | {"XDG_DATA_HOME": str(tmp_path / "xdg"), "FIXMEM_WORKERS": "1", "FIXMEM_API_PORT": "0"}
    up = subprocess.Popen(
        ["bash", "-c", "\n".join(first[1:])],
        cwd=tmp_path, env=up_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    out: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(up.stdout, out), daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any(line.startswith("running:") for line in seen):
            assert up.poll() is None, "".join(seen)
            assert time.monotonic() < deadline, "".join(seen)
            try:
                seen.append(out.get(timeout=1))
            except queue.Empty:
                continue
        exports = next(line for line in seen if line.startswith("shell ")).split(None, 1)[1].strip()
        assert exports.startswith("export ") and "TOKEN=" in exports, exports
        # Terminal 2: a new shell with nothing but the pasted export line.
        xadd, curl, recall = second
        assert "XADD" in xadd and curl.startswith("curl ") and recall.startswith("fixmem recall ")
        published = _bash(f"{exports}\n{xadd}", clean)
        assert published.returncode == 0 and re.fullmatch(r"\d+-\d+\n", published.stdout), published
        answer = _until(
            "curl", f"{exports}\n{curl}", clean, re.compile(r'"prompt_block":"Past fixes in this')
        )
        assert "src/csv_import.py" in answer
        # the first `fixmem recall` starts the data dir's recall daemon: gone 20 s after the test, not 30 min
        second_env = clean | {"FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "20"}
        block = _until(
            "fixmem recall", f"{exports}\n{recall}", second_env, re.compile(r"^Past fixes in this project")
        )
        assert "parse_row splits quoted commas" in block and "src/csv_import.py" in block
    finally:
        os.killpg(up.pid, signal.SIGINT)  # Ctrl-C in terminal 1
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
    assert up.returncode == 0
