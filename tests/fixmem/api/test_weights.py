"""Files with weights over real HTTP: a weight of 1 is a known file, bad weights are a readable 422."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.fixmem.api_server import ALICE, RunningApi, running_api
from tests.fixmem.test_weights import PROJECT, one_fix


@pytest.fixture
def api(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[RunningApi]:
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as running:
        running.ctx.store.append("alice", PROJECT, [one_fix()])
        yield running


def _post(api: RunningApi, body: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ALICE}"}
    return httpx.post(api.url + "/api/fix-memory", json=body, headers=headers, timeout=10)


def _get(api: RunningApi, **params: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ALICE}"}
    return httpx.get(api.url + "/api/fix-memory", params=params, headers=headers, timeout=10)


def test_a_weight_of_one_is_a_known_file_on_get_and_post(api: RunningApi) -> None:
    plain = {"project_id": PROJECT, "q": "split on commas", "files": ["src/mod1.py"]}
    weighed = {**plain, "weights": [1.0]}
    expected = _post(api, plain).json()
    assert expected["recalled"][0]["reasons"]["files"] == ["src/mod1.py"]
    assert _post(api, weighed).json() == expected
    assert _get(api, **weighed).json() == expected


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"files": ["a.py"], "weights": [0]}, "weights.0: Input should be greater than 0"),
        ({"files": ["a.py"], "weights": [1.5]}, "weights.0: Input should be less than or equal to 1"),
        ({"files": ["a.py"], "weights": [0.5, 0.5]}, "2 weights for 1 files"),
        ({"files": ["a.py", "b.py"], "weights": [0.5]}, "1 weights for 2 files"),
        ({"files": ["a.py"], "weights": ["sure"]}, "weights.0: Input should be a valid number"),
        ({"files": ["a.py"], "reasons": ["named"]}, "reasons without weights"),
        ({"files": ["a.py"], "weights": [0.5], "reasons": ["a", "b"]}, "2 reasons for 1 files"),
        (
            {"files": ["a.py"], "weights": [0.5], "reasons": ["two\nlines"]},
            "the reason of a.py is not one line",
        ),
        ({"files": ["a.py"], "weights": [0.5], "reasons": ["x" * 301]}, "at most 300 characters"),
    ],
)
def test_bad_weights_are_a_readable_422(api: RunningApi, extra: dict[str, object], said: str) -> None:
    body = {"project_id": PROJECT, "q": "split on commas", **extra}
    for response in (_post(api, body), _get(api, **body)):
        assert response.status_code == 422, response.text
        assert said in response.json()["detail"], response.text


def test_a_weight_under_one_is_recalled_as_where_the_task_was_localized(api: RunningApi) -> None:
    body = {"project_id": PROJECT, "q": "split on commas", "files": ["src/mod1.py"], "weights": [0.8]}
    got = _post(api, body).json()
    assert got["recalled"][0]["reasons"]["localized"].startswith("touched src/mod1.py, where the task was")
    assert "the client localized the task here" in got["prompt_block"]
    plain = _post(api, {"project_id": PROJECT, "q": "split on commas"}).json()
    assert not plain["recalled"][0]["reasons"].get("localized")


def test_the_clients_reason_is_what_recall_says_of_a_localized_file(api: RunningApi) -> None:
    why = "`split_commas` is defined there"
    body = {"project_id": PROJECT, "q": "split on commas", "files": ["src/mod1.py"], "weights": [0.8]}
    for got in (_post(api, {**body, "reasons": [why]}).json(), _get(api, **body, reasons=[why]).json()):
        assert (
            got["recalled"][0]["reasons"]["localized"]
            == f"touched src/mod1.py, where the task was localized: {why}"
        )
        assert why in got["prompt_block"] and "the client localized the task here" not in got["prompt_block"]
    blank = _post(api, {**body, "reasons": [" "]}).json()  # an empty reason: the default
    assert "the client localized the task here" in blank["prompt_block"]
