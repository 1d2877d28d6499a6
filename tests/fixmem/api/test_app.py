"""The HTTP API over real HTTP (uvicorn on a free port, httpx): auth, isolation, bounds, forget, ops."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
import redis

from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from store import FixEntry, TestRun, entry_id
from store.paths import project_files
from tests import configs
from tests.fixmem.api_server import ALICE, BOB, RunningApi, running_api
from tests.ingest.turns import turn

PROJECT = "github.com/acme/widgets"
OTHER = "github.com/acme/gadgets"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _entry(owner: str, project: str, n: int, task: str, *, outcome: str = "fixed") -> FixEntry:
    return FixEntry(
        id=entry_id(owner, project, f"ev-{n}"),
        ts=1_700_000_000.0 + n,
        project=project,
        task=task,
        files=[f"src/mod{n}.py"],
        symbols=[f"parse_mod{n}"],
        errors=[f"AssertionError: parse_mod{n} returned ['a,b']"],
        tests=None if outcome == "unverified" else TestRun(command="pytest -q", ok=outcome == "fixed"),
        outcome=outcome,  # type: ignore[arg-type]
        solution=f"split parse_mod{n} input on commas",
        tags=[outcome],
    )


@pytest.fixture
def api(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[RunningApi]:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as running:
        store = running.ctx.store
        store.append("alice", PROJECT, [
            _entry("alice", PROJECT, 1, "parse_mod1 should split on commas"),
            _entry("alice", PROJECT, 2, "csv export drops the header row", outcome="partial"),
            _entry("alice", PROJECT, 3, "rename the config loader", outcome="unverified"),
        ])  # fmt: skip
        store.append("bob", OTHER, [_entry("bob", OTHER, 9, "bob's own parser fix")])
        yield running


def _get(api: RunningApi, path: str, token: str | None, **params: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(api.url + path, params=params, headers=headers, timeout=10)


def _delete(api: RunningApi, entry: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.delete(f"{api.url}/api/fix-memory/{entry}", headers=headers, timeout=10)


ALICE_1 = entry_id("alice", PROJECT, "ev-1")


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {ALICE}"}, {"Authorization": "Bearer"}],
    ids=["none", "unknown", "basic-scheme", "empty"],
)
def test_no_or_bad_token_is_401_on_every_route(api: RunningApi, headers: dict[str, str]) -> None:
    calls = [
        ("GET", "/api/fix-memory", {"project_id": PROJECT, "q": "split"}),
        ("GET", "/api/fix-memory/stats", {"project_id": PROJECT}),
        ("DELETE", f"/api/fix-memory/{ALICE_1}", {}),
        ("GET", "/api/fix-memory", {"project_id": PROJECT, "q": "x", "k": 0}),  # 401 before 422
    ]
    for method, path, params in calls:
        response = httpx.request(method, api.url + path, params=params, headers=headers, timeout=10)
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json() == {"detail": "missing or unknown bearer token"}
    assert len(api.ctx.store.read("alice", PROJECT).entries) == 3  # nothing forgotten


def test_recall_returns_redacted_entries_and_the_prompt_block(api: RunningApi) -> None:
    response = _get(api, "/api/fix-memory", ALICE, project_id=PROJECT, q="parse_mod1 should split on commas")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["project"] == PROJECT
    assert body["recalled"][0]["entry"]["id"] == ALICE_1
    assert body["recalled"][0]["entry"] == api.ctx.store.read("alice", PROJECT).entries[0].model_dump(
        mode="json"
    )
    assert body["prompt_block"].startswith("Past fixes in this project")
    assert "parse_mod1 should split on commas" in body["prompt_block"]
    # workspace is the key when project_id is absent
    by_workspace = _get(
        api, "/api/fix-memory", ALICE, workspace=PROJECT, q="parse_mod1 should split on commas"
    )
    assert by_workspace.json()["recalled"] == body["recalled"]
    one = _get(api, "/api/fix-memory", ALICE, project_id=PROJECT, q="parse csv export config", k=1)
    assert len(one.json()["recalled"]) <= 1


def test_a_workspace_maps_to_the_key_its_events_carried(api: RunningApi, redis_client: redis.Redis) -> None:
    checkout = "/home/dev/widgets"  # alice's and bob's checkouts at the same path, of different projects
    events = [
        {**turn(1, owner="alice", project=PROJECT), "workspace": checkout},
        {**turn(2, owner="bob", project=OTHER), "workspace": checkout},
        {**turn(3, owner="alice", project="/srv/scratch"), "workspace": "/srv/scratch"},  # path = key
    ]
    publish_many(redis_client, events)
    assert redis_client.hget(keys.workspaces("alice"), checkout) is None
    stats = Consumer(redis_client, configs.consumer_config(read_block_ms=20)).run(burst=True)
    assert stats.enqueued == 3  # the consumer saw the events (no worker needed: the pairs are its own)
    query = {"q": "parse_mod1 should split on commas"}
    by_key = _get(api, "/api/fix-memory", ALICE, project_id=PROJECT, **query).json()
    by_workspace = _get(api, "/api/fix-memory", ALICE, workspace=checkout, **query)
    assert by_workspace.status_code == 200, by_workspace.text
    assert by_workspace.json() == by_key and by_key["project"] == PROJECT
    stats_by_workspace = _get(api, "/api/fix-memory/stats", ALICE, workspace=checkout)
    assert stats_by_workspace.json() == _get(api, "/api/fix-memory/stats", ALICE, project_id=PROJECT).json()
    bobs = _get(api, "/api/fix-memory", BOB, workspace=checkout, q="bob's own parser fix").json()
    assert bobs["project"] == OTHER and [r["entry"]["task"] for r in bobs["recalled"]] == [
        "bob's own parser fix"
    ]
    # a workspace no event named is the key itself: a log written before the rule stays reachable
    assert redis_client.hlen(keys.workspaces("alice")) == 1
    assert _get(api, "/api/fix-memory", ALICE, workspace="/home/dev/other", **query).status_code == 404
    assert _get(api, "/api/fix-memory", ALICE, workspace=PROJECT, **query).json() == by_key


def test_recall_abstains_with_an_empty_block(api: RunningApi) -> None:
    response = _get(api, "/api/fix-memory", ALICE, project_id=PROJECT, q="kubernetes ingress tls certificate")
    assert response.status_code == 200
    assert response.json()["recalled"] == []
    assert response.json()["prompt_block"] == ""


def test_another_owners_project_and_entry_are_404_like_missing_ones(api: RunningApi) -> None:
    missing = _get(api, "/api/fix-memory", BOB, project_id="github.com/acme/never", q="split on commas")
    theirs = _get(api, "/api/fix-memory", BOB, project_id=PROJECT, q="split on commas")
    assert missing.status_code == theirs.status_code == 404
    assert missing.json() == theirs.json() == {"detail": "no fix memory for this project"}
    assert dict(missing.headers).keys() == dict(theirs.headers).keys()
    missing_stats = _get(api, "/api/fix-memory/stats", BOB, project_id="github.com/acme/never")
    their_stats = _get(api, "/api/fix-memory/stats", BOB, workspace=PROJECT)
    assert missing_stats.status_code == their_stats.status_code == 404
    assert missing_stats.json() == their_stats.json()
    missing_entry = _delete(api, "fix-0000000000000000", BOB)
    their_entry = _delete(api, ALICE_1, BOB)
    assert missing_entry.status_code == their_entry.status_code == 404
    assert missing_entry.json() == their_entry.json() == {"detail": "no such entry"}
    assert ALICE_1 in {e.id for e in api.ctx.store.read("alice", PROJECT).entries}
    # and alice does not see bob's project either
    assert _get(api, "/api/fix-memory/stats", ALICE, project_id=OTHER).status_code == 404


@pytest.mark.parametrize(
    (
        "params",
        "field",
        "bound",
    ),  # the field and our bound, not pydantic's wording (which changes by release)
    [
        ({"project_id": PROJECT, "q": "x", "k": 0}, "k", "1"),
        ({"project_id": PROJECT, "q": "x", "k": 51}, "k", "50"),
        ({"project_id": PROJECT, "q": "x", "k": "five"}, "k", None),
        ({"project_id": PROJECT}, "q", None),
        ({"project_id": PROJECT, "q": ""}, "q", "1"),
        ({"project_id": PROJECT, "q": "x" * 4001}, "q", "4000"),
        ({"project_id": "p" * 4097, "q": "x"}, "project_id", "4096"),
        ({"workspace": "w" * 4097, "q": "x"}, "workspace", "4096"),
    ],
)
def test_out_of_bounds_input_is_422_naming_the_field_and_the_bound(
    api: RunningApi, params: dict[str, object], field: str, bound: str | None
) -> None:
    response = _get(api, "/api/fix-memory", ALICE, **params)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str)
    assert re.search(rf"(^|\W){re.escape(field)}: \S", detail), detail
    if bound is not None:
        assert re.search(rf"{re.escape(field)}: [^\n;]*\b{bound}\b", detail), detail


@pytest.mark.parametrize("params", [{"q": "x"}, {"project_id": "  ", "q": "x"}])
def test_a_recall_without_a_project_says_what_to_give(api: RunningApi, params: dict[str, object]) -> None:
    response = _get(api, "/api/fix-memory", ALICE, **params)
    assert response.status_code == 422, response.text
    assert "give project_id or workspace" in response.json()["detail"]


def test_forget_then_recall(api: RunningApi) -> None:
    query = {"project_id": PROJECT, "q": "parse_mod1 should split on commas"}
    before = _get(api, "/api/fix-memory", ALICE, **query).json()
    assert ALICE_1 in [r["entry"]["id"] for r in before["recalled"]]
    gone = _delete(api, ALICE_1, ALICE)
    assert gone.status_code == 200
    assert gone.json() == {"id": ALICE_1, "forgotten": True}
    after = _get(api, "/api/fix-memory", ALICE, **query).json()
    assert ALICE_1 not in [r["entry"]["id"] for r in after["recalled"]]
    assert "parse_mod1 should split on commas" not in after["prompt_block"]
    assert _delete(api, ALICE_1, ALICE).status_code == 404
    bad = _delete(api, "../../etc/passwd", ALICE)
    assert bad.status_code in (404, 422)  # the router may refuse the slashes before the pattern does
    malformed = _delete(api, "fix-XYZ", ALICE)
    assert malformed.status_code == 422
    assert "entry_id: String should match pattern" in malformed.json()["detail"]
    stats = _get(api, "/api/fix-memory/stats", ALICE, project_id=PROJECT).json()
    assert stats["total"] == 2


def test_stats_are_the_stores(api: RunningApi) -> None:
    response = _get(api, "/api/fix-memory/stats", ALICE, project_id=PROJECT)
    assert response.status_code == 200
    body = response.json()
    expected = api.ctx.store.stats("alice", PROJECT).to_dict()
    assert body == orjson.loads(orjson.dumps(expected))
    assert body["by_outcome"] == {"fixed": 1, "partial": 1, "unverified": 1}


def test_recall_output_is_redacted_even_for_a_secret_already_on_disk(api: RunningApi) -> None:
    # A line written around the store (an old version, a hand edit): recall must still not return it.
    raw = _entry("alice", PROJECT, 7, "deploy script fails to authenticate").model_dump(mode="json")
    raw["solution"] = f"export GITHUB_TOKEN={SECRET} before running deploy.sh"
    raw["errors"] = [f"fatal: could not read from https://x:{SECRET}@github.com/acme/widgets.git"]
    log = project_files(api.ctx.store.root, "alice", PROJECT).log
    with log.open("ab") as handle:
        handle.write(orjson.dumps(raw) + b"\n")
    response = _get(
        api, "/api/fix-memory", ALICE, project_id=PROJECT, q="deploy script fails to authenticate"
    )
    assert response.status_code == 200
    assert raw["id"] in [r["entry"]["id"] for r in response.json()["recalled"]]
    assert SECRET not in response.text
    assert SECRET[4:20] not in response.text
    stats = _get(api, "/api/fix-memory/stats", ALICE, project_id=PROJECT)
    assert SECRET not in stats.text


def test_ops_routes_and_a_live_metrics_scrape(api: RunningApi) -> None:
    assert httpx.get(api.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(api.url + "/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"redis": "ok", "data_dir": "ok"}}
    _get(api, "/api/fix-memory", ALICE, project_id=PROJECT, q="split on commas")
    scrape = httpx.get(api.url + "/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    assert "fixmem_recall_duration_seconds_count 1.0" in scrape.text
    assert "fixmem_redis_up 1.0" in scrape.text
    assert 'fixmem_api_requests_total{code="200",method="GET",route="/api/fix-memory"} 1.0' in scrape.text
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus); .ci/run installs it")
    done = subprocess.run(
        [promtool, "check", "metrics"], input=scrape.content, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def test_openapi_documents_the_routes_and_their_parameters(api: RunningApi) -> None:
    spec = httpx.get(api.url + "/openapi.json").json()
    recall = spec["paths"]["/api/fix-memory"]["get"]
    assert {p["name"] for p in recall["parameters"]} == {
        "workspace",
        "project_id",
        "q",
        "files",
        "weights",
        "reasons",
        "error",
        "k",
    }
    body = spec["paths"]["/api/fix-memory"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    posted = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[-1]]
    assert posted["properties"]["q"]["maxLength"] == 16_384
    k = next(p for p in recall["parameters"] if p["name"] == "k")
    assert (k["schema"]["minimum"], k["schema"]["maximum"], k["schema"]["default"]) == (1, 50, 5)
    stats = spec["paths"]["/api/fix-memory/stats"]["get"]
    assert {p["name"] for p in stats["parameters"]} == {"workspace", "project_id"}
    assert "delete" in spec["paths"]["/api/fix-memory/{entry_id}"]
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path in ("/healthz", "/readyz", "/metrics"):
        assert path in spec["paths"]


def test_readyz_is_503_naming_what_is_down(redis_client: redis.Redis, tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    env = {"FIXMEM_DATA_DIR": str(not_a_dir / "data"), "FIXMEM_REDIS_URL": "redis://127.0.0.1:1/0"}
    with running_api(env) as running:
        ready = httpx.get(running.url + "/readyz", timeout=30)
        assert ready.status_code == 503
        checks = ready.json()["checks"]
        assert checks["redis"].startswith("error:")
        assert checks["data_dir"].startswith("error:")
        assert "fixmem_redis_up 0.0" in httpx.get(running.url + "/metrics", timeout=30).text
        assert httpx.get(running.url + "/healthz").status_code == 200


def _post(api: RunningApi, token: str | None, body: object, **params: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(api.url + "/api/fix-memory", json=body, params=params, headers=headers, timeout=10)


# A whole issue text of the limit's length: the request, then a long log that repeats it.
LONG_TASK = ("parse_mod1 should split on commas\n\n" + "log: parse_mod1 should split on commas\n" * 500)[
    :16_384
]


def test_post_takes_a_whole_task_text_with_files_and_error(api: RunningApi) -> None:
    assert len(LONG_TASK) == 16_384
    response = _post(api, ALICE, {"project_id": PROJECT, "q": LONG_TASK, "k": 3})
    assert response.status_code == 200, response.text
    got = response.json()
    assert [r["entry"]["id"] for r in got["recalled"]][:1] == [ALICE_1]
    first = got["recalled"][0]
    assert first["tier"] in {"closely related", "possibly related"}
    assert "parse_mod1" in first["reasons"]["symbols"]
    with_files = _post(
        api, ALICE, {"project_id": PROJECT, "q": "split on commas", "files": ["src/mod1.py"],
                     "error": "AssertionError: parse_mod1 returned ['a,b']"},
    ).json()  # fmt: skip
    top = with_files["recalled"][0]
    assert top["entry"]["id"] == ALICE_1
    assert top["reasons"]["files"] == ["src/mod1.py"]
    assert top["reasons"]["error"] == "same error"
    assert top["tier"] == "closely related"


def test_get_takes_files_and_error_like_post(api: RunningApi) -> None:
    params = {"project_id": PROJECT, "q": "split on commas", "files": ["src/mod1.py"],
              "error": "AssertionError: parse_mod1 returned ['a,b']"}  # fmt: skip
    got = _get(api, "/api/fix-memory", ALICE, **params).json()
    posted = _post(api, ALICE, params).json()
    assert got == posted
    assert got["recalled"][0]["reasons"]["files"] == ["src/mod1.py"]


@pytest.mark.parametrize(
    ("body", "field", "bound"),  # the field and our bound, not pydantic's wording
    [
        ({"project_id": PROJECT, "q": "x" * 16_385}, "q", "16384"),
        ({"project_id": PROJECT, "q": "x", "files": ["a"] * 51}, "files", "50"),
        ({"project_id": PROJECT, "q": "x", "error": "e" * 4001}, "error", "4000"),
        ({"project_id": PROJECT, "q": "x", "k": 51}, "k", "50"),
        ({"project_id": PROJECT}, "q", None),
        ({"project_id": PROJECT, "q": "x", "surprise": 1}, "surprise", None),
    ],
)
def test_post_out_of_bounds_is_422_naming_the_field_and_the_bound(
    api: RunningApi, body: dict[str, object], field: str, bound: str | None
) -> None:
    response = _post(api, ALICE, body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert re.search(rf"(^|\W){re.escape(field)}: \S", detail), detail
    if bound is not None:
        assert re.search(rf"{re.escape(field)}: [^\n;]*\b{bound}\b", detail), detail
    assert "give project_id or workspace" in _post(api, ALICE, {"q": "x"}).json()["detail"]


def test_post_keeps_owners_apart(api: RunningApi) -> None:
    assert (
        _post(api, BOB, {"project_id": PROJECT, "q": "parse_mod1 should split on commas"}).status_code == 404
    )
    assert _post(api, None, {"project_id": PROJECT, "q": "parse_mod1"}).status_code == 401
    bob = _post(api, BOB, {"project_id": OTHER, "q": "bob's own parser fix"}).json()
    assert [(r["entry"]["id"], r["entry"]["project"]) for r in bob["recalled"]] == [
        (entry_id("bob", OTHER, "ev-9"), OTHER)
    ]  # his one fix, nothing of alice's project
