"""One recall: the same question through every surface gives the same ranked (id, score, tier) list, and
the same prompt block where the surface prints one (``fixmem.service.recall`` behind each of them).

Surfaces: the Python API (``FixMemory``), the ``recall_fixes`` tool (MCP's handler), the HTTP API (real
HTTP), ``fixmem recall --json``, the hooks' in-process reader (what the recall daemon runs) and the
Claude Code prompt hook in a fresh session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from fixmem import service
from fixmem.cli import main
from fixmem.hooks import claude_code
from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import LocalReader, Query
from fixmem.mcp.tool import ToolContext, recall_fixes
from fixmem.memory import FixMemory
from fixmem.settings import Settings
from store import Recalled
from tests.configs import fix_store
from tests.fixmem.api_server import ALICE, running_api
from tests.store.factories import make_entry

OWNER, PROJECT = "alice", "github.com/acme/widgets"
QUESTIONS = [
    "apply_discount raises ZeroDivisionError when the quantity is 0",
    "the csv parser drops quoted commas",
    "fix something in the login flow and the settings page",
]

Ranked = list[tuple[str, float, str]]


@pytest.fixture
def seeded(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fixes of PROJECT, some alike (so ranks, scores and tiers differ); the environment names them."""
    tasks = [
        (
            "fix ZeroDivisionError in apply_discount",
            "invoicer/totals.py",
            "ZeroDivisionError: division by zero",
        ),
        ("apply_discount rounds the total wrongly", "invoicer/totals.py", ""),
        ("parse_csv drops quoted commas", "src/csv_io.py", "AssertionError: quoted commas"),
        ("login times out after 30 seconds", "src/auth.py", ""),
        ("add a dark theme to the settings page", "ui/theme.css", ""),
        ("the csv export drops the header row", "src/csv_io.py", ""),
    ]
    entries = [
        make_entry(n, task, files=[path], errors=[error] if error else [], project=PROJECT, owner=OWNER)
        for n, (task, path, error) in enumerate(tasks)
    ]
    fix_store(data_dir).append(OWNER, PROJECT, entries)
    for name, value in {
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_STORE_LOCK": "local",
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    monkeypatch.delenv("FIXMEM_API_URL", raising=False)
    return data_dir


def _ranked(items: list[Recalled]) -> Ranked:
    return [(r.entry.id, r.score, r.tier) for r in items]


def _from_json(items: list[dict[str, Any]]) -> Ranked:
    return [(item["entry"]["id"], item["score"], item["tier"]) for item in items]


def _tool_ranked(fixes: list[dict[str, Any]]) -> Ranked:
    return [(f["entry"]["id"], f["score"], f["tier"]) for f in fixes]


def test_every_surface_gives_the_same_ranking_and_block(
    seeded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_env()
    store = fix_store(seeded)
    memory = FixMemory(settings=settings)
    tool = ToolContext.from_settings(settings, store, owner=OWNER, project_key=PROJECT, workspace=None)
    reader = LocalReader(HookConfig.from_env())
    served = {"FIXMEM_DATA_DIR": str(seeded), "FIXMEM_STORE_LOCK": "local"}
    with running_api(served) as api:
        for n, question in enumerate(QUESTIONS):
            reference = service.recall(store, OWNER, PROJECT, service.Question(question), now=1.8e9)
            expected = reference.ranked()
            assert expected, question  # the question finds something: the comparisons below mean something

            library = memory.recall(OWNER, PROJECT, question)
            assert [(i, tier) for i, _, tier in _ranked(library)] == [(i, t) for i, _, t in expected]

            result = recall_fixes(tool, {"query": question})
            assert _tool_ranked(result.fixes) == _ranked(library)
            assert result.prompt_block == memory.prompt_block(library)

            got = httpx.get(
                f"{api.url}/api/fix-memory",
                params={"project_id": PROJECT, "q": question},
                headers={"Authorization": f"Bearer {ALICE}"},
                timeout=10,
            ).json()
            assert _from_json(got["recalled"]) == _ranked(library)
            assert got["prompt_block"] == result.prompt_block

            assert main(["recall", "--json", question]) == 0
            printed = json.loads(capsys.readouterr().out)
            assert _from_json(printed["recalled"]) == _ranked(library)
            assert printed["prompt_block"] == result.prompt_block

            candidates = reader.candidates(PROJECT, Query(question))
            assert [c.entry_id for c in candidates] == [i for i, _, _ in _ranked(library)]
            entry_lines = [line for c in candidates for line in c.line.splitlines() if line.startswith("- ")]
            assert entry_lines == [line for line in result.prompt_block.splitlines() if line.startswith("- ")]

            body = {
                "session_id": f"fresh-{n}",
                "transcript_path": "/t/s.jsonl",
                "cwd": str(tmp_path),
                "hook_event_name": "UserPromptSubmit",
                "prompt": question,
            }
            out = claude_code.run(json.dumps(body).encode())
            assert out, question
            assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == result.prompt_block
