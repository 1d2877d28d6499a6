"""``/docs`` and ``/redoc`` work offline: their HTML references only this server's URLs, and those answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
import redis

from ingest.schema_doc import turn_event_json_schema, verdict_event_json_schema
from tests.fixmem.api_server import RunningApi, running_api

_URL_ATTR = re.compile(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""")


@pytest.fixture
def api(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[RunningApi]:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as running:
        yield running


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_their_assets_from_this_server(api: RunningApi, page: str) -> None:
    """Failed on the old code: /docs loaded swagger-ui-bundle.js and its CSS from cdn.jsdelivr.net."""
    html = httpx.get(api.url + page, timeout=10)
    assert html.status_code == 200
    urls = _URL_ATTR.findall(html.text)
    assert any(u.endswith(".js") for u in urls), urls  # the page does load a script: the check is not empty
    for url in urls:
        assert not re.match(r"^(https?:)?//", url), f"{page} references {url}: not served offline"
        assert httpx.get(urljoin(api.url + page, url), timeout=10).status_code == 200, url


def test_the_turn_event_schema_is_served_without_a_token(api: RunningApi) -> None:
    """Failed on the old code: no such route (404)."""
    response = httpx.get(api.url + "/schema/turn-event.json", timeout=10)
    assert response.status_code == 200
    assert response.json() == turn_event_json_schema()
    verdict = httpx.get(api.url + "/schema/verdict-event.json", timeout=10)
    assert verdict.status_code == 200 and verdict.json() == verdict_event_json_schema()
