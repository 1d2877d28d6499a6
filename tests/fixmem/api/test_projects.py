"""``GET /api/projects``: the token owner's projects, and nobody else's (over real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.fixmem.api_server import ALICE, BOB, RunningApi, running_api
from tests.store.factories import make_entry

WIDGETS = "github.com/acme/widgets"
GADGETS = "github.com/acme/gadgets"


@pytest.fixture
def api(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[RunningApi]:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as running:
        store = running.ctx.store
        store.append("alice", WIDGETS, [
            make_entry(1, project=WIDGETS, ts=100.0),
            make_entry(2, project=WIDGETS, outcome="partial", ts=300.0),
        ])  # fmt: skip
        store.append("alice", GADGETS, [make_entry(3, project=GADGETS, outcome="unverified", ts=200.0)])
        store.append("bob", "bob/secret-project", [make_entry(4, owner="bob", project="bob/secret-project")])
        yield running


def _projects(api: RunningApi, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(api.url + "/api/projects", headers=headers, timeout=10)


def test_projects_lists_the_token_owners_projects_with_their_stats(api: RunningApi) -> None:
    """Failed on the old code: no such route (404)."""
    response = _projects(api, ALICE)
    assert response.status_code == 200, response.text
    listed = response.json()["projects"]
    assert [(p["project"], p["total"], p["oldest_ts"], p["newest_ts"]) for p in listed] == [
        (GADGETS, 1, 200.0, 200.0),
        (WIDGETS, 2, 100.0, 300.0),
    ]
    assert listed[1]["by_outcome"] == {"fixed": 1, "partial": 1, "unverified": 0}
    assert listed[1]["ratios"] == {"fixed": 0.5, "partial": 0.5, "unverified": 0.0}
    assert "secret-project" not in response.text  # bob's projects are not alice's
    assert [p["project"] for p in _projects(api, BOB).json()["projects"]] == ["bob/secret-project"]
    assert _projects(api, None).status_code == 401
    assert _projects(api, "nope").status_code == 401
