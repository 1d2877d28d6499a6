"""One owner for one shell: every surface asks ``fixmem.identity.resolve_owner``.

With ``LOGNAME=alice USER=bob`` and no ``FIXMEM_OWNER``, ``fixmem hook claude-code`` once read bob's
memory (the hooks read ``USER`` first) while ``fixmem recall`` read alice's (``getpass``: ``LOGNAME``
first). Each candidate owner here has one fix naming them; each surface must recall the same one.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import httpx
import pytest

from fixmem import identity
from fixmem.cli import main
from fixmem.cli.api import mcp_context
from fixmem.hooks import claude_code
from fixmem.hooks.harness import Harness
from fixmem.mcp.tool import recall_fixes
from fixmem.memory import FixMemory
from fixmem.runtime.api_child import api_child
from fixmem.settings import Settings
from tests.configs import fix_store
from tests.fixmem.api_server import running_api
from tests.store.factories import make_entry

PROJECT = "github.com/acme/widgets"
UID_NAME = "dave"  # what the password database says in this test
OWNERS = ("carol", "alice", "bob", UID_NAME)
QUERY = "the parser crashes on an empty line"
COMBINATIONS = [
    {name: value for name, value in zip(("FIXMEM_OWNER", "LOGNAME", "USER"), values, strict=True) if value}
    for values in itertools.product(("carol", None), ("alice", None), ("bob", None))
]


def _expected(env: dict[str, str], flag: str | None = None) -> str:
    return flag or env.get("FIXMEM_OWNER") or env.get("LOGNAME") or env.get("USER") or UID_NAME


@pytest.fixture
def memories(data_dir: Path) -> Path:
    """One fix per candidate owner in PROJECT, its task naming the owner."""
    store = fix_store(data_dir)
    for n, owner in enumerate(OWNERS):
        store.append(
            owner, PROJECT, [make_entry(n, f"{QUERY} ({owner}'s fix)", owner=owner, project=PROJECT)]
        )
    return data_dir


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, memories: Path) -> pytest.MonkeyPatch:
    """A shell with none of the owner variables set, the data dir and project named, no Redis."""
    for name in (
        "FIXMEM_OWNER",
        "LOGNAME",
        "USER",
        "LNAME",
        "USERNAME",
        "FIXMEM_REDIS_URL",
        "FIXMEM_API_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(identity, "uid_login_name", lambda: UID_NAME)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(memories))
    monkeypatch.setenv("FIXMEM_PROJECT", PROJECT)
    monkeypatch.setenv("FIXMEM_STORE_LOCK", "local")
    monkeypatch.setenv("FIXMEM_HOOK_DAEMON_IDLE_SECONDS", "0")  # the hook recalls in-process here
    return monkeypatch


def _whose(text: str) -> set[str]:
    return {owner for owner in OWNERS if f"({owner}'s fix)" in text}


def _cli(capsys: pytest.CaptureFixture[str], *flags: str) -> set[str]:
    assert main(["recall", "--json", *flags, QUERY]) == 0
    return _whose(capsys.readouterr().out)


def _hook(tmp_path: Path) -> set[str]:
    body = {
        "session_id": f"s-{len(list(tmp_path.iterdir()))}",  # a fresh session each time
        "transcript_path": "/t/s.jsonl",
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": QUERY,
    }
    out = claude_code.run(json.dumps(body).encode(), dict(os.environ))
    return _whose(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else set()


def _python_api(tmp_path: Path) -> set[str]:
    harness = Harness.from_env(workspace=str(tmp_path), session=f"py-{len(list(tmp_path.iterdir()))}")
    memory = FixMemory()
    assert memory.settings.owner is not None
    library = memory.prompt_block(memory.recall(memory.settings.owner, PROJECT, QUERY))
    assert _whose(library) == _whose(harness.before_task(QUERY))
    return _whose(library)


def _http() -> set[str]:
    child = api_child(Settings.from_env(), "redis://127.0.0.1:1")  # the token `fixmem up` makes for you
    token = next(iter(child.tokens.values()))  # the first: yours; the demo owner's follows
    served = {
        k: child.spec.env[k] for k in ("FIXMEM_API_TOKENS_FILE", "FIXMEM_DATA_DIR", "FIXMEM_STORE_LOCK")
    }
    with running_api(served) as api:
        got = httpx.get(
            f"{api.url}/api/fix-memory",
            params={"project_id": PROJECT, "q": QUERY},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
    assert got.status_code == 200, got.text
    return _whose(got.json()["prompt_block"])


def _tool(tmp_path: Path) -> set[str]:
    ctx, _ = mcp_context(Settings.from_env(), cwd=str(tmp_path))
    return _whose(recall_fixes(ctx, {"query": QUERY}).text)


@pytest.mark.parametrize("env", COMBINATIONS, ids=lambda env: "+".join(env) or "none")
def test_every_surface_means_the_same_owner(
    env: dict[str, str], shell: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in env.items():
        shell.setenv(name, value)
    work = tmp_path / "work"
    work.mkdir()
    expected = {_expected(env)}
    assert identity.resolve_owner() == _expected(env)
    assert _cli(capsys) == expected
    assert _hook(work) == expected
    assert _python_api(work) == expected
    assert _tool(work) == expected
    assert _http() == expected


def test_the_flag_wins_over_every_variable(
    shell: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {"FIXMEM_OWNER": "carol", "LOGNAME": "alice", "USER": "bob"}.items():
        shell.setenv(name, value)
    assert identity.resolve_owner("dave") == "dave"
    assert _cli(capsys, "--owner", "dave") == {"dave"}


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        ("p/flag", {"FIXMEM_PROJECT": "p/env"}, "p/flag"),
        (None, {"FIXMEM_PROJECT": "p/env"}, "p/env"),
        (None, {"FIXMEM_PROJECT": "  "}, "WORKSPACE"),
        (None, {}, "WORKSPACE"),
    ],
)
def test_the_project_is_the_flag_then_the_variable_then_the_workspace(
    tmp_path: Path, explicit: str | None, env: dict[str, str], expected: str
) -> None:
    want = str(tmp_path) if expected == "WORKSPACE" else expected
    assert identity.resolve_project(explicit, workspace=str(tmp_path), env=env) == want
    assert Settings.from_env({**env, "HOME": str(tmp_path)}, project=explicit).project_key(tmp_path) == want
