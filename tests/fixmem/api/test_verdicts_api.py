"""``POST /api/verdicts`` over real HTTP: the token's owner, the stream, field-named 422s, 401, 503."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from ingest import keys
from ingest.schema import VerdictEvent, parse_any
from tests.fixmem.api_server import ALICE, RunningApi, running_api

PROJECT = "github.com/acme/widgets"
SHA = "4f2a9c1e" * 5


@pytest.fixture
def api(redis_url: str, data_dir: Path) -> Iterator[RunningApi]:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as running:
        yield running


def _post(api: RunningApi, body: dict[str, Any], token: str | None = ALICE) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(api.url + "/api/verdicts", json=body, headers=headers, timeout=10)


def _published(client: redis.Redis) -> list[VerdictEvent]:
    events = [parse_any(fields[b"event"]) for _, fields in client.xrange(keys.DEFAULT_STREAM)]
    return [e for e in events if isinstance(e, VerdictEvent)]


def test_a_link_verdict_goes_to_the_stream_as_the_tokens_owner(
    api: RunningApi, redis_client: redis.Redis
) -> None:
    link = {"commit": SHA, "branch": "main", "tests": ["tests.test_calc::test_add"], "failed": []}
    answer = _post(api, {"project_key": PROJECT, "outcome": "fixed", "source": "ci", "link": link, "ts": 5.0})
    assert answer.status_code == 202, answer.text
    [event] = _published(redis_client)
    assert answer.json()["stream_id"]
    assert (event.owner, event.project_key, event.source, event.ts) == ("alice", PROJECT, "ci", 5.0)
    assert event.link is not None and event.link.commit == SHA and event.link.tests == link["tests"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"link": {"commit": "not-a-sha"}}, "link.commit"),
        ({"link": {"commit": SHA, "color": "red"}}, "link.color"),
        ({"link": {"commit": SHA}, "event_id": "ev-1"}, "link"),
        ({"outcome": "great"}, "outcome"),
        ({"owner": "bob"}, "owner"),
        ({}, "link"),
    ],
)
def test_a_refused_field_is_named(
    api: RunningApi, redis_client: redis.Redis, body: dict[str, Any], field: str
) -> None:
    full = {"project_key": PROJECT, "outcome": "partial", "source": "ci", **body}
    answer = _post(api, full)
    assert answer.status_code == 422 and field in answer.json()["detail"], answer.text
    assert _published(redis_client) == []


def test_no_token_is_401(api: RunningApi, redis_client: redis.Redis) -> None:
    body = {"project_key": PROJECT, "outcome": "fixed", "source": "ci", "link": {"commit": SHA}}
    assert _post(api, body, token=None).status_code == 401
    assert _post(api, body, token="not-a-token").status_code == 401
    assert _published(redis_client) == []


def test_without_redis_it_is_503(data_dir: Path) -> None:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_STORE_LOCK": "local"}) as running:
        answer = _post(
            running,
            {"project_key": PROJECT, "outcome": "fixed", "source": "ci", "entry_id": "fix-" + "0" * 16},
        )
    assert answer.status_code == 503 and "Redis" in orjson.loads(answer.content)["detail"]
