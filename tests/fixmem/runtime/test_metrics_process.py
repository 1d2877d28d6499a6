"""``/metrics`` of the API: ``fixmem_build_info``, the process collector, and no ``*_created`` series."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.fixmem.api_server import running_api


def test_metrics_have_build_info_and_process_series_and_no_created(
    redis_url: str, redis_client: redis.Redis, data_dir: Path
) -> None:
    """Failed on the old code: no fixmem_build_info, no process_* series, and
    fixmem_api_requests_created / fixmem_recall_duration_seconds_created were exported."""
    with running_api({"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url}) as api:
        httpx.get(api.url + "/healthz", timeout=10)  # one request counted
        text = httpx.get(api.url + "/metrics", timeout=10).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    (build,) = families["fixmem_build_info"].samples
    assert build.name == "fixmem_build_info" and build.value == 1.0
    assert build.labels["version"] == "0.1.0" and re.fullmatch(r"3\.\d+\.\d+", build.labels["python"])
    assert {"process_cpu_seconds", "process_start_time_seconds", "process_resident_memory_bytes"} <= set(
        families
    )
    assert (
        "fixmem_entries" in families and "fixmem_api_requests" in families
    )  # fleet and own series still there
    assert not [line for line in text.splitlines() if "_created" in line.split("{")[0].split(" ")[0]]
