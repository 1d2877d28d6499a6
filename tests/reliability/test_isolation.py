"""Owner B cannot read, stat or forget owner A's entries — through the API, the library, the tool or the CLI.

Alice's fixes are stored; then Bob (and owners that look like Alice: ``Alice``, ``alice\\u200b``) asks for
them on every surface, by project key, by workspace, by entry id, and with path tricks. Each answer must
be the one a missing project or entry gets (404 with the same body; ``[]``; ``False``; exit 66), and
every file under the data directory must be byte-for-byte what it was. No token or a bad one is 401 on
every owner-scoped route. The route table is read from the app's OpenAPI document: a new ``/api`` route
without a case here fails the test.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from fixmem.api.app import create_app
from fixmem.cli import main
from fixmem.errors import ExitCode
from fixmem.mcp.tool import NOTHING_RELEVANT, ToolContext, auto_recall, recall_fixes
from fixmem.memory import FixMemory
from fixmem.settings import Settings
from tests.configs import fix_store
from tests.fixmem.api_server import RunningApi, serve
from tests.ingest.turns import turn

ALICE_TOKEN = "tok-alice-0123456789abcdef"
TOKENS = {
    "bob": "tok-bob-0123456789abcdef",
    "Alice": "tok-Alice-0123456789abcdef",  # owners are exact strings: another owner
    "alice\u200b": "tok-alicezw-0123456789abcdef",  # a zero-width space: another owner
}
QUERY = "parse_mod0 should split on commas"
PROJECT = "github.com/acme/payments"
MISSING_PROJECT = "github.com/acme/never-existed"
MISSING_ID = "fix-0123456789abcdef"


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def alice(data_dir: Path) -> dict[str, object]:
    """Alice's project with four entries (recorded through the library); its key, workspace and ids."""
    memory = FixMemory(data_dir, settings=Settings.from_env({"HOME": "/nonexistent"}))
    ids = []
    for i, kind in enumerate(("fixed", "unverified", "partial", "fixed")):
        event = turn(i, owner="alice", project=PROJECT, kind=kind, event_id=f"ev-iso-{i}")  # type: ignore[arg-type]
        entry = memory.record_from_turn(
            "alice",
            project_key=PROJECT,
            user_message=event["user_message"],
            tool_events=event["tool_events"],
            workspace=event["workspace"],
            event_id=event["event_id"],
        )
        assert entry is not None
        ids.append(entry.id)
    return {"project": PROJECT, "workspace": event["workspace"], "ids": ids}


@pytest.fixture
def api(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[RunningApi]:
    from fixmem.api.server import build_context  # noqa: PLC0415

    tokens = ",".join([f"{ALICE_TOKEN}:alice", *(f"{t}:{o}" for o, t in TOKENS.items())])
    settings = Settings.from_env(
        {"FIXMEM_API_TOKENS": tokens, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}
    )
    with serve(build_context(settings)) as running:
        yield running


def _call(api: RunningApi, method: str, path: str, token: str | None, **params: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return _send(api, method, path, headers, params)


def _send(
    api: RunningApi, method: str, path: str, headers: dict[str, str], params: dict[str, object]
) -> httpx.Response:
    """A request with ``params`` in the query string, or as the JSON body of a POST."""
    if method == "POST":
        return httpx.request(method, api.url + path, json=params, headers=headers, timeout=10)
    return httpx.request(method, api.url + path, params=params, headers=headers, timeout=10)


def _cases(
    project: str, workspace: str, entry: str
) -> dict[tuple[str, str], list[tuple[str, dict[str, object]]]]:
    """For each owner-scoped route: (path, params) asking for Alice's data, by every spelling."""
    tricks = [project, f"./{project}", f"{project}/", f"../alice/{project}", f"/../{project}"]
    return {
        ("GET", "/api/fix-memory"): [
            *[("/api/fix-memory", {"project_id": key, "q": QUERY}) for key in tricks],
            ("/api/fix-memory", {"workspace": project, "q": QUERY}),
            ("/api/fix-memory", {"workspace": workspace, "q": QUERY}),
            ("/api/fix-memory", {"workspace": "x", "project_id": project, "q": QUERY, "k": 50}),
        ],
        ("POST", "/api/fix-memory"): [
            *[("/api/fix-memory", {"project_id": key, "q": QUERY}) for key in tricks],
            ("/api/fix-memory", {"workspace": project, "q": QUERY}),
            ("/api/fix-memory", {"workspace": workspace, "q": QUERY, "files": ["src/a.py"], "k": 50}),
        ],
        ("GET", "/api/fix-memory/stats"): [
            *[("/api/fix-memory/stats", {"project_id": key}) for key in tricks],
            ("/api/fix-memory/stats", {"workspace": project}),
        ],
        ("DELETE", "/api/fix-memory/{entry_id}"): [(f"/api/fix-memory/{entry}", {})],
    }


def _missing(method: str, path: str) -> tuple[str, dict[str, object]]:
    if path.startswith("/api/fix-memory/{"):
        return f"/api/fix-memory/{MISSING_ID}", {}
    params: dict[str, object] = {"project_id": MISSING_PROJECT}
    if path == "/api/fix-memory":
        params["q"] = QUERY
    return path, params


def test_every_api_route_is_owner_scoped(api: RunningApi, alice: dict[str, object], data_dir: Path) -> None:
    project, workspace, ids = str(alice["project"]), str(alice["workspace"]), list(alice["ids"])  # type: ignore[call-overload]
    cases = _cases(project, workspace, ids[0])
    paths = create_app(api.ctx).openapi()["paths"]
    routes = {(m.upper(), p) for p, ops in paths.items() if p.startswith("/api/") for m in ops}
    listings = {("GET", "/api/projects")}  # answer the token's own data only: checked below, not 404
    writes = {("POST", "/api/verdicts")}  # stamped with the token's owner: checked below
    assert routes == set(cases) | listings | writes, (
        f"owner-scoped routes without an isolation case: {routes - set(cases)}"
    )

    before = _snapshot(data_dir)
    asked = 0
    for (method, route), calls in cases.items():
        missing_path, missing_params = _missing(method, route)
        for owner, token in TOKENS.items():
            expected = _call(api, method, missing_path, token, **missing_params)
            assert expected.status_code == 404
            for path, params in calls:
                got = _call(api, method, path, token, **params)
                asked += 1
                assert got.status_code == 404, (owner, method, path, params, got.text)
                assert got.json() == expected.json()
                assert project not in got.text and all(i not in got.text for i in ids)
        for path, params in calls[:1]:  # no token, a bad one, another scheme: 401 before anything else
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {ALICE_TOKEN}"}):
                got = _send(api, method, path, headers, params)
                assert got.status_code == 401, (method, path, headers)
                assert got.headers.get("www-authenticate") == "Bearer"
    for token in TOKENS.values():  # the listing of another owner never holds Alice's projects
        got = _call(api, "GET", "/api/projects", token)
        assert got.status_code == 200 and got.json() == {"projects": []}, got.text
    assert _call(api, "GET", "/api/projects", None).status_code == 401
    _verdicts_are_the_posters_own(api, project, ids[0])
    assert _snapshot(data_dir) == before, "another owner's request changed Alice's files"

    # Positive controls: Alice sees, stats and forgets her own.
    assert _call(api, "GET", "/api/fix-memory", ALICE_TOKEN, project_id=project, q=QUERY).json()["recalled"]
    assert _call(api, "GET", "/api/fix-memory/stats", ALICE_TOKEN, project_id=project).json()["total"] == 4
    assert [p["project"] for p in _call(api, "GET", "/api/projects", ALICE_TOKEN).json()["projects"]] == [
        project
    ]
    assert _call(api, "DELETE", f"/api/fix-memory/{ids[-1]}", ALICE_TOKEN).status_code == 200
    print(f"\n{asked} cross-owner API requests: all 404 like a missing one, 0 bytes changed")


def _verdicts_are_the_posters_own(api: RunningApi, project: str, entry: str) -> None:
    """A verdict posted with another owner's token on Alice's entry is that owner's verdict (it can only
    judge their own entries); naming Alice as the owner is refused; no token is 401."""
    client = redis.Redis.from_url(api.ctx.settings.redis_url or "")
    body = {"entry_id": entry, "project_key": project, "outcome": "partial", "source": "review", "ts": 1.0}
    for owner, token in TOKENS.items():
        before = client.xlen(api.ctx.settings.stream)
        got = _call(api, "POST", "/api/verdicts", token, **body)
        assert got.status_code == 202, got.text
        [(_, fields)] = client.xrevrange(api.ctx.settings.stream, count=1)
        assert client.xlen(api.ctx.settings.stream) == before + 1
        assert json.loads(fields[b"event"])["owner"] == owner
        refused = _call(api, "POST", "/api/verdicts", token, **body, owner="alice")
        assert refused.status_code == 422, refused.text
    assert _call(api, "POST", "/api/verdicts", None, **body).status_code == 401


def test_ops_routes_leak_no_owner_data(api: RunningApi, alice: dict[str, object]) -> None:
    project, ids = str(alice["project"]), list(alice["ids"])  # type: ignore[call-overload]
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"):
        body = httpx.get(api.url + path, timeout=10).text
        assert project not in body and "alice" not in body and all(i not in body for i in ids), path


def test_the_library_and_the_tool_are_owner_scoped(alice: dict[str, object], data_dir: Path) -> None:
    project, ids = str(alice["project"]), list(alice["ids"])  # type: ignore[call-overload]
    before = _snapshot(data_dir)
    memory = FixMemory(data_dir, settings=Settings.from_env({"HOME": "/nonexistent"}))
    store = fix_store(data_dir)
    for owner in TOKENS:
        assert memory.recall(owner, project, QUERY) == []
        assert memory.stats(owner, project)["total"] == 0
        assert all(memory.forget(owner, i) is False for i in ids)
        assert store.read(owner, project).entries == []
        assert store.projects(owner) == [] and store.project_stats(owner) == []
        assert store.lineage(owner, project, ids[0]) == []
        ctx = ToolContext(store=store, owner=owner, project_key=project, workspace=str(alice["workspace"]))
        result = recall_fixes(ctx, {"query": QUERY, "files": ["src/mod0.py"], "k": 50})
        assert (result.text, result.fixes) == (NOTHING_RELEVANT, [])
        assert auto_recall(ctx, QUERY, files=["src/mod0.py"]) == ""
    assert _snapshot(data_dir) == before
    assert memory.recall("alice", project, QUERY)  # positive control


def test_the_cli_is_owner_scoped(
    alice: dict[str, object],
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project, ids = str(alice["project"]), list(alice["ids"])  # type: ignore[call-overload]
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_STORE_LOCK", "local")
    before = _snapshot(data_dir)
    for owner in TOKENS:
        assert main(["recall", QUERY, "--owner", owner, "--project", project, "--json"]) == ExitCode.NOT_FOUND
        assert main(["stats", "--owner", owner, "--project", project, "--json"]) == ExitCode.NOT_FOUND
        captured = capsys.readouterr()
        assert captured.out == "" and f"owner {owner!r} has no project" in captured.err  # alice's not named
        for entry in ids:
            assert main(["forget", entry, "--owner", owner]) == ExitCode.NOT_FOUND
    capsys.readouterr()
    assert _snapshot(data_dir) == before
    assert main(["recall", QUERY, "--owner", "alice", "--project", project, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recalled"]  # positive control
