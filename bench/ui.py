"""Benchmark: the web UI's pages, server render time at 200 projects of 500 entries each (one owner).

The data directory is made here: 200 project logs of 500 synthetic entries (``bench.store_bench``'s
generator, the project key and ids changed per project), written as the store writes its JSONL lines, and
100 dead letters in an embedded Redis. ``fixmem serve`` runs in its own process (the shipped wiring, with
``FIXMEM_API_OPS_TOKENS``); an httpx client with a Bearer token asks for each page: once cold (the first
request after start) and ``runs`` times warm. The server
time is what the UI's ``Server-Timing: app;dur=`` header says (from the request's arrival in the app to
its response, rendering included); the client's wall time over loopback is recorded beside it. Goal (the
web-UI issue): every page's server time <= 300 ms.

The logs are written as an older store left them: no summary files (``store.persist.summary_file``). A
first server is asked for the projects page once (``first_visit``: every log is parsed and summarized,
and the summary files written), then stopped; the measured server is a second process, whose cold
projects page reads the 200 summary files, as it would on a data directory the store wrote.

``python -m bench.ui [--runs N]`` writes ``bench/results/ui.json``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.common import percentile, run_main, serving
from bench.store_bench import make_entries
from store import entry_id
from store.paths import project_files
from store.persist.fixlog import encode_entry

RUNS = 30
PROJECTS = 200
ENTRIES = 500
LETTERS = 100
OWNER = "bench"
TOKEN = "bench-ui-token-0123456789"
OPS = "bench-ops-token-0123456789"
GOAL_MS = 300.0


def _project(i: int) -> str:
    return f"github.com/bench/project-{i:03d}"


def write_logs(data_dir: Path, projects: int = PROJECTS, entries: int = ENTRIES) -> None:
    """``projects`` logs of ``entries`` entries each, as JSONL lines in the store's layout."""
    template = make_entries(entries)
    for i in range(projects):
        key = _project(i)
        files = project_files(data_dir / "fix_memory", OWNER, key)
        files.directory.mkdir(parents=True, exist_ok=True)
        lines = [
            encode_entry(
                e.model_copy(
                    update={
                        "project": key,
                        "id": entry_id(OWNER, key, f"turn-{n}"),
                        "event_id": f"turn-{n}",
                        "ts": e.ts + i * 3600,
                    }
                )
            )
            for n, e in enumerate(template)
        ]
        files.log.write_bytes(b"".join(lines))


def dead_letters(redis_url: str) -> None:
    """``LETTERS`` dead letters, half with a JSON payload, half not."""
    import redis  # noqa: PLC0415

    from ingest import dead_letters as letters  # noqa: PLC0415
    from ingest.errors import DeadLetterReason  # noqa: PLC0415
    from ingest.keys import DEFAULT_DEAD_STREAM, DEFAULT_STREAM  # noqa: PLC0415

    client = redis.Redis.from_url(redis_url)
    with client.pipeline(transaction=True) as pipe:
        for i in range(LETTERS):
            payload = orjson.dumps({"v": 1, "task": f"letter {i}"}) if i % 2 else b"not json %d" % i
            fields = letters.fields_for(
                reason=DeadLetterReason.INVALID_FIELDS if i % 2 else DeadLetterReason.INVALID_JSON,
                error="bench", origin_stream=DEFAULT_STREAM, origin_id=f"{i}-0", payload=payload,
                consumer="bench", now=1.7e9,
            )  # fmt: skip
            letters.add(pipe, DEFAULT_DEAD_STREAM, fields, max_len=100_000)
        pipe.execute()


def _pages(projects: int, entries: int) -> dict[str, tuple[str, str, dict[str, Any]]]:
    key = _project(projects // 2)
    one = entry_id(OWNER, key, f"turn-{entries // 2}")
    task = "the checkout times out and the cart returns 500 after login"
    return {
        "login": ("GET", "/ui/login", {}),
        "projects": ("GET", "/ui/projects", {}),
        "entries": ("GET", "/ui/entries", {"project": key}),
        "entries_filtered": ("GET", "/ui/entries", {"project": key, "outcome": "fixed", "q": "checkout"}),
        "entries_page_5": ("GET", "/ui/entries", {"project": key, "page": "5"}),
        "entry": ("GET", f"/ui/entry/{one}", {"project": key}),
        "search_form": ("GET", "/ui/search", {}),
        "search": ("POST", "/ui/search", {"project": key, "q": task, "error": "KeyError: 'user_id'"}),
        "review": ("GET", "/ui/review", {"project": key}),
        "pipeline": ("GET", "/ui/pipeline", {}),
    }


def _timed(client: httpx.Client, method: str, path: str, values: dict[str, Any]) -> tuple[float, float]:
    """The client's wall time and the server's (its ``Server-Timing: app;dur=``), in seconds."""
    started = time.perf_counter()
    response = client.get(path, params=values) if method == "GET" else client.post(path, data=values)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")
    server = float(response.headers["server-timing"].partition("dur=")[2]) / 1000
    return elapsed, server


def run(runs: int, *, projects: int = PROJECTS, entries: int = ENTRIES) -> dict[str, Any]:
    """The result's body (``python -m bench.ui``, and ``python -m bench ui`` with its sizes)."""
    from fixmem.runtime.redis_server import EmbeddedRedis  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        started = time.monotonic()
        write_logs(data_dir, projects, entries)
        written = time.monotonic() - started
        (Path(tmp) / "redis").mkdir()
        with EmbeddedRedis(Path(tmp) / "redis", appendonly=False) as server:
            dead_letters(server.url)
            extra = {"FIXMEM_REDIS_URL": server.url, "FIXMEM_API_OPS_TOKENS": f"{OPS}:ops"}
            headers = {"Authorization": f"Bearer {OPS}"}  # the owner's and the operator's token
            pages = _pages(projects, entries)
            with (
                serving(data_dir, f"{OPS}:{OWNER}", extra) as base,
                httpx.Client(base_url=base, headers=headers, timeout=300) as client,
            ):
                first_visit = _timed(client, *pages["projects"])
            with (
                serving(data_dir, f"{OPS}:{OWNER}", extra) as base,
                httpx.Client(base_url=base, headers=headers, timeout=120) as client,
            ):
                cold = {name: _timed(client, *spec) for name, spec in pages.items()}
                warm = {n: [_timed(client, *spec) for _ in range(runs)] for n, spec in pages.items()}

    def ms(value: float) -> float:
        return round(value * 1000, 1)

    server = {name: [s for _, s in values] for name, values in warm.items()}
    client = {name: [c for c, _ in values] for name, values in warm.items()}
    rows = {
        name: {
            "cold_server_ms": ms(cold[name][1]),
            "server_p50_ms": ms(percentile(server[name], 50)),
            "server_p95_ms": ms(percentile(server[name], 95)),
            "server_max_ms": ms(max(server[name])),
            "client_p50_ms": ms(percentile(client[name], 50)),
            "client_p95_ms": ms(percentile(client[name], 95)),
            "goal_ms": GOAL_MS,
            "goal_met": percentile(server[name], 95) * 1000 <= GOAL_MS,
        }
        for name in pages
    }
    return {
        "sizes": {"runs": runs, "projects": projects, "entries": entries, "letters": LETTERS},
        "pages": {name: f"{m} {p}" for name, (m, p, _) in pages.items()},
        "setup_seconds": round(written, 1),
        "samples_server_ms": {name: [ms(s) for s in values] for name, values in server.items()},
        "samples_client_ms": {name: [ms(c) for c in values] for name, values in client.items()},
        "summary": {
            "rows": rows,
            "goal": f"every page's server time p95 <= {GOAL_MS:.0f} ms, warm",
            "goal_met": all(r["goal_met"] for r in rows.values()),
            "cold_goal_met": all(r["cold_server_ms"] <= GOAL_MS for r in rows.values()),
            "first_visit_server_ms": ms(first_visit[1]),
            "first_visit": "projects page on logs an older store wrote (no summary files): each log parsed",
        },
    }


main = run_main(
    "ui", __doc__, run, runs=RUNS, what="page", projects=PROJECTS, entries=ENTRIES, letters=LETTERS
)
"""Run the benchmark, print its summary, write ``bench/results/ui.json``."""


if __name__ == "__main__":
    main()
