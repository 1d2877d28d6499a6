"""Localization through the real recall daemon and hooks: text only while the checkout's index is cold or
building, localized once it is warm; a remote reader localizes on this side and sends files with weights."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from fixmem.hooks import claude_code
from fixmem.hooks.config import HookConfig
from fixmem.hooks.daemon_client import DaemonReader, localized_by_daemon
from fixmem.hooks.harness import Harness
from fixmem.hooks.reader import LocalReader, Query, RemoteReader
from fixmem.hooks.session import read_counters
from fixmem.runtime.localize.checkout import build_lock, checkout_of, index_path, root_dir
from tests.fixmem.hooks.conftest import PROJECT
from tests.fixmem.hooks.test_daemon import env_for, payload, wait_for
from tests.fixmem.runtime.localize.checkout_repo import make_checkout

TASK = "apply_discount raises for a zero quantity on the invoice page"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "widgets")


def test_the_daemon_answers_text_only_while_cold_and_localized_once_warm(seeded: Path, repo: Path) -> None:
    config = HookConfig.from_env(env_for(seeded))
    text_only = LocalReader(config).candidates(PROJECT, Query(TASK))
    reader = DaemonReader(config, wait_cold=True)
    assert reader.candidates(PROJECT, Query(TASK, checkout=str(repo))) == text_only  # cold: at once, text
    wait_for(lambda: localized_by_daemon(config, str(repo), TASK), "the daemon's index of the checkout")
    (path, weight, why), *_ = localized_by_daemon(config, str(repo), TASK)
    assert path == "invoicer/totals.py" and 0 < weight <= 1 and "apply_discount" in why
    warm = reader.candidates(PROJECT, Query(TASK, checkout=str(repo)))
    assert warm and "invoicer/totals.py" in warm[0].files
    assert "where the task was localized" in warm[0].line  # the reason says where and why
    assert not any("localized" in c.line for c in text_only)
    off = HookConfig.from_env(env_for(seeded, FIXMEM_LOCALIZE="0"))
    assert DaemonReader(off).candidates(PROJECT, Query(TASK, checkout=str(repo))) == text_only


def test_the_harness_localizes_in_its_workspace_once_the_index_is_warm(seeded: Path, repo: Path) -> None:
    harness = Harness.from_env(env_for(seeded), workspace=str(repo / "web"))
    text_only = LocalReader(harness.config).candidates(PROJECT, Query(TASK))
    assert harness.reader.candidates(PROJECT, Query(TASK, checkout=harness.workspace)) == text_only  # cold
    wait_for(
        lambda: harness.reader.candidates(PROJECT, Query(TASK, checkout=harness.workspace)) != text_only,
        "the harness's index of its workspace",
    )  # the index is built in a child of this process and loaded in a thread
    block = harness.before_task(TASK)
    assert "touched invoicer/totals.py, where the task was localized" in block


def test_the_prompt_hook_answers_while_the_index_builds(seeded: Path, repo: Path) -> None:
    env = env_for(seeded)
    config = HookConfig.from_env(env)
    found = checkout_of(str(repo))
    assert found is not None
    prompt = payload("UserPromptSubmit", cwd=str(repo), prompt=TASK)
    with build_lock(config.localize_dir, found.root):  # a build of this checkout runs (another process's)
        first = json.loads(claude_code.run(prompt, env))
        assert "apply_discount" in first["hookSpecificOutput"]["additionalContext"]  # text only, in time
        assert localized_by_daemon(config, str(repo), TASK) is None  # still cold: nothing waited for
    wait_for(lambda: localized_by_daemon(config, str(repo), TASK), "the index once the lock is free")
    assert "localize" not in read_counters(seeded / "hooks")  # no failure logged


class _Capture(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        answer = json.dumps({"recalled": [], "prompt_block": ""}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Capture)
    _Capture.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", _Capture.bodies
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_reader_sends_the_files_it_localized_with_their_weights(
    capture: tuple[str, list[dict[str, Any]]], repo: Path
) -> None:
    url, bodies = capture
    why = "`apply_discount` is defined there\n(and named)"
    guesses = {str(repo): [("invoicer/totals.py", 0.8, why), ("src/known.py", 0.5, "")]}
    reader = RemoteReader(url, "t", timeout=10, k=5, localizer=lambda where, text: guesses[where])
    reader.candidates(PROJECT, Query(TASK, ("src/known.py",), checkout=str(repo)))
    reader.candidates(PROJECT, Query(TASK, ("src/known.py",)))  # no checkout: nothing localized
    assert bodies[0]["files"] == ["src/known.py", "invoicer/totals.py"]
    assert bodies[0]["weights"] == [1.0, 0.8]  # a known file stays known
    assert bodies[0]["reasons"] == ["", "`apply_discount` is defined there (and named)"]  # on one line
    assert "checkout" not in bodies[0]  # the server never sees the checkout's path
    assert (
        bodies[1]["files"] == ["src/known.py"] and "weights" not in bodies[1] and "reasons" not in bodies[1]
    )


def test_a_remote_hook_localizes_through_the_daemon_and_sends_weights(
    capture: tuple[str, list[dict[str, Any]]], seeded: Path, repo: Path
) -> None:
    url, bodies = capture
    env = env_for(seeded, FIXMEM_API_URL=url, FIXMEM_API_TOKEN="t")
    prompt = payload("UserPromptSubmit", cwd=str(repo), prompt=TASK)
    claude_code.run(prompt, env)  # no daemon: one is started, this prompt goes text only
    assert "weights" not in bodies[0]
    config = HookConfig.from_env(env)
    wait_for(lambda: localized_by_daemon(config, str(repo), TASK), "the daemon's index of the checkout")
    claude_code.run(payload("UserPromptSubmit", cwd=str(repo), prompt=TASK, session_id="d-2"), env)
    assert bodies[-1]["files"][0] == "invoicer/totals.py" and 0 < bodies[-1]["weights"][0] < 1
    assert "apply_discount" in bodies[-1]["reasons"][0]  # the daemon's reason, for the server to show


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
def test_session_start_has_the_daemon_build_the_checkouts_index(
    seeded: Path, repo: Path, remote: bool
) -> None:
    extra = {"FIXMEM_API_URL": "http://127.0.0.1:9", "FIXMEM_API_TOKEN": "t"} if remote else {}
    env = env_for(seeded, **extra)
    config = HookConfig.from_env(env)
    found = checkout_of(str(repo))
    assert found is not None
    assert claude_code.run(payload("SessionStart", cwd=str(repo), source="startup"), env) == ""
    wait_for(
        lambda: Path(index_path(config.localize_dir, found)).exists(), "the index SessionStart asked for"
    )
    off = env_for(seeded, FIXMEM_LOCALIZE="0", **extra)
    other = make_checkout(repo.parent / "other")
    claude_code.run(payload("SessionStart", cwd=str(other), source="startup"), off)
    assert not Path(root_dir(config.localize_dir, str(other))).exists()  # switched off: nothing built
