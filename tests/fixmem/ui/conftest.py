"""A real fixmem server for the web UI tests: uvicorn on a free port, a real Redis, real fix logs.

Alice owns two projects (one with an entry whose task is an XSS probe, a fix that did not hold, and
enough entries for two pages), Bob owns one; ``OPS`` is an operator's token; the dead-letter stream holds
one letter whose payload is a valid event (a replay publishes it again) and one that is not JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
import redis

from ingest import dead_letters
from ingest.errors import DeadLetterReason
from store import FixEntry, TestRun, entry_id
from tests.fixmem.api_server import ALICE, BOB, RunningApi, running_api
from tests.ingest.turns import turn

OPS = "tok-ops-9a8b7c6d5e4f3a2b"
PROJECT = "github.com/acme/widgets"
SECOND = "github.com/acme/tools"
BOBS = "github.com/bob/secret-garden"
XSS_TASK = "fix <script>alert('xss')</script> and <img src=x onerror=alert(1)> in the parser"
BOB_TASK = "bob's private fix of the garden gate"
DAY = 86_400.0
T0 = 1_760_000_000.0


def make_entry(
    owner: str, project: str, n: int, task: str, *, outcome: str = "fixed", **extra: object
) -> FixEntry:
    """A fix entry of ``owner``'s ``project`` (day ``n`` after ``T0``)."""
    return FixEntry.model_validate(
        {
            "id": entry_id(owner, project, f"ev-{n}"),
            "ts": T0 + n * DAY,
            "project": project,
            "task": task,
            "files": [f"src/mod{n}.py"],
            "symbols": [f"parse_mod{n}"],
            "errors": [f"ValueError: mod{n} could not parse the row"],
            "tests": None if outcome == "unverified" else TestRun(command="pytest -q", ok=outcome == "fixed"),
            "outcome": outcome,
            "solution": f"split the input of parse_mod{n} on commas",
            "tags": [outcome],
            "commit": "abc1234",
            "event_id": f"ev-{n}",
            **extra,
        }
    )


def alice_entries() -> list[FixEntry]:
    """60 entries (two pages), an XSS probe, a fix that did not hold (a review suggestion), extra fields."""
    outcomes = ["fixed", "partial", "unverified"]
    found = [
        make_entry(
            "alice",
            PROJECT,
            n,
            f"widget task {n}: parse_mod{n} drops the last column",
            outcome=outcomes[n % 3],
        )
        for n in range(1, 58)
    ]
    found.append(make_entry("alice", PROJECT, 58, XSS_TASK))
    shared = {"errors": ["KeyError: 'delimiter' in load_csv"], "files": ["src/csv_loader.py"]}
    found.append(
        make_entry(
            "alice", PROJECT, 59, "csv loader crashes on a missing delimiter",
            changes=["src/csv_loader.py: default the delimiter to ','"], outcome_source="tests",
            **shared,
        )
    )  # fmt: skip
    found.append(
        make_entry("alice", PROJECT, 60, "csv loader crashes again on tabs", outcome="partial", **shared)
    )
    return found


@dataclass(frozen=True)
class Ui:
    """The served UI: its base URL, the API context behind it, the Redis client."""

    url: str
    api: RunningApi
    redis: redis.Redis

    def client(self, token: str | None = None) -> httpx.Client:
        """A client logged in with ``token`` through the login form (None: not logged in)."""
        client = httpx.Client(base_url=self.url, follow_redirects=False, timeout=20)
        if token is not None:
            login(client, token)
        return client


def login(client: httpx.Client, token: str) -> httpx.Response:
    """Log in through the form: GET it (nonce cookie), POST the token."""
    page = client.get("/ui/login")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce is not None, page.text
    return client.post("/ui/login", data={"token": token, "nonce": nonce.group(1), "next": "/ui/projects"})


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


VALID_LETTER_TURN = turn(7, owner="alice", project=SECOND, kind="fixed", event_id="dead-then-replayed")


@pytest.fixture
def ui(redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Iterator[Ui]:
    env = {
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_REDIS_URL": redis_url,
        "FIXMEM_API_TOKENS": f"{ALICE}:alice,{BOB}:bob",
        "FIXMEM_API_OPS_TOKENS": f"{OPS}:oncall",
        "FIXMEM_OWNER": "nobody-here",
    }
    with running_api(env) as api:
        store = api.ctx.store
        store.append("alice", PROJECT, alice_entries())
        store.append("alice", SECOND, [make_entry("alice", SECOND, 3, "tools: the cli help is cut")])
        store.append("bob", BOBS, [make_entry("bob", BOBS, 1, BOB_TASK)])
        settings = api.ctx.settings
        with redis_client.pipeline(transaction=True) as pipe:
            for payload, reason in [
                (orjson.dumps(VALID_LETTER_TURN), DeadLetterReason.PROCESSING_FAILED),
                (b'{"v": 1, "task": <script>alert(2)</script>', DeadLetterReason.INVALID_JSON),
            ]:
                fields = dead_letters.fields_for(
                    reason=reason, error="refused in a test", origin_stream=settings.stream,
                    origin_id="1-0", payload=payload, consumer="c1", now=T0,
                )  # fmt: skip
                dead_letters.add(pipe, settings.dead_stream, fields, max_len=1000)
            pipe.execute()
        yield Ui(api.url, api, redis_client)


__all__ = ["ALICE", "BOB", "OPS"]
