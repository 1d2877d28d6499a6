"""Planted secrets go through the real pipeline and come out nowhere: not on disk, not from any read path.

A corpus of secrets of every documented shape (AWS key id and secret, GitHub classic and fine-grained,
OpenAI, Anthropic, Slack token and webhook, JWT, bearer header, URL credentials, private key) is planted
in every place a turn carries text: the user message, a shell command, a tool output, a failing test's
error lines, an edit, the agent's last words, the harness's test command, and the project key and
workspace (a CI remote such as ``https://gitlab-ci-token:…@gitlab…``). The turns go through the consumer
and a real worker process; then the whole data directory (file contents and names) and the worker's log
are searched for each secret, and every read path — the HTTP API (recall, stats), the tool, auto-recall,
the library, the CLI (recall, stats, export) — is asked about every planted turn. Found: 0.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from fixmem import wiring
from fixmem.api.server import build_context
from fixmem.cli import main
from fixmem.mcp.tool import ToolContext, auto_recall, recall_fixes
from fixmem.memory import FixMemory
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from tests.configs import fix_store
from tests.fixmem.api_server import serve
from tests.ingest.turns import turn
from tests.reliability.corpus import Item
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.reliability.publisher import publish_all

OWNER, TOKEN = "alice", "tok-alice-secrets-0123456789"
rng = random.Random(8)


def _r(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "/+"


@dataclass(frozen=True)
class Secret:
    """A planted secret: its kind, the text as it appears in a turn, and the part that must never leak."""

    kind: str
    text: str
    body: str  # the random part: finding any 12 characters of it is a leak


SHAPES: dict[str, tuple[str, int, str]] = {  # kind: (alphabet, length of the random body, template)
    "aws_access_key_id": (UPPER, 16, "AKIA{b}"),
    "aws_secret_access_key": (B64, 40, "aws_secret_access_key = {b}"),
    "github_classic": (ALNUM, 36, "ghp_{b}"),
    "github_fine_grained": (ALNUM, 79, "github_pat_11A{b}"),
    "openai": (ALNUM, 48, "sk-proj-{b}"),
    "anthropic": (ALNUM, 93, "sk-ant-api03-{b}-AA"),
    "slack_token": (ALNUM, 24, "xoxb-2410-9632-{b}"),
    "slack_webhook": (ALNUM, 24, "https://hooks.slack.com/services/T0/B0/{b}"),
    "jwt": (ALNUM, 50, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{b}"),  # the body's dot is added below
    "bearer_header": (ALNUM + "._-", 40, "Authorization: Bearer {b}"),
    "url_credentials": (ALNUM, 24, "https://deploy:{b}@git.example.com/acme/app.git"),
    "private_key": (
        B64,
        64,
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{b}\n-----END OPENSSH PRIVATE KEY-----",
    ),
}
KINDS = tuple(SHAPES)


def _secret(kind: str) -> Secret:
    alphabet, length, template = SHAPES[kind]
    body = _r(alphabet, length)
    if kind == "jwt":
        body = body[:20] + "." + body[20:]
    return Secret(kind, template.format(b=body), body)


PLACES = ("user_message", "command", "output", "error", "edit", "last_words", "test_command", "project_key")


def _planted(n: int, secret: Secret, place: str) -> dict[str, Any]:
    """Turn ``n`` (a failing test, an edit, a passing test) with ``secret`` planted at ``place``."""
    event = turn(n, owner=OWNER, project=f"github.com/acme/vault{n % 4}", event_id=f"ev-secret-{n}")
    tools = event["tool_events"]
    s = secret.text
    if place == "user_message":
        event["user_message"] += f"\nuse this: {s}"
    elif place == "command":
        tools[0]["input"]["command"] = f"export TOKEN='{s}' && curl -H 'X-Key: {s}' ci/x && " + str(
            tools[0]["input"]["command"]
        )
    elif place == "output":
        tools[0]["output"] += f"\nenv: CONFIG={s}\n"
    elif place == "error":
        tools[0]["output"] = tools[0]["output"].replace(
            "E       AssertionError",
            f"E       requests.exceptions.HTTPError: 401 for {s}\nE       AssertionError",
        )
    elif place == "edit":
        tools[1]["input"]["new_str"] = f"API = '{s}'\nreturn text.split(',')"
    elif place == "last_words":
        event["round_texts"] = [f"Fixed it; I used the credential {s} to reach the registry."]
    elif place == "test_command":
        event["harness_meta"]["tests"] = {
            "command": f"TOKEN={s} pytest -q",
            "ok": True,
            "summary": "3 passed",
        }
    elif place == "project_key":
        event["project_key"] = event["workspace"] = f"https://ci:{s}@gitlab.example.com/acme/vault{n}.git"
    return event


def corpus() -> Iterator[tuple[Secret, str, dict[str, Any]]]:
    """Every kind of secret at every place, as a turn."""
    n = 0
    for kind in KINDS:
        for place in PLACES:
            if (kind, place) == ("private_key", "project_key"):
                continue  # a multi-line key is no project key: the event is refused (control characters)
            secret = _secret(kind)
            yield secret, place, _planted(n, secret, place)
            n += 1


def _found(text: str, secrets: list[Secret]) -> set[int]:
    """The indices of the secrets any 12-character window of whose body appears in ``text``."""
    found = set()
    for n, secret in enumerate(secrets):
        windows = {secret.body[i : i + 12] for i in range(0, max(1, len(secret.body) - 11), 6)}
        if any(w in text for w in windows):
            found.add(n)
    return found


def _leaks(text: str, secrets: list[Secret]) -> list[str]:
    """The kinds of the secrets found in ``text``."""
    return [secrets[n].kind for n in sorted(_found(text, secrets))]


def test_planted_secrets_are_stored_nowhere_and_returned_by_nothing(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    planted = list(corpus())
    secrets = [s for s, _, _ in planted]
    settings = Settings.from_env(
        {
            "FIXMEM_REDIS_URL": redis_url,
            "FIXMEM_DATA_DIR": str(data_dir),
            "FIXMEM_API_TOKENS": f"{TOKEN}:{OWNER}",
        }
    )
    publish_all(redis_client, [Item("secret", {b"event": orjson.dumps(e)}, "entry") for _, _, e in planted])
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
    with fleet(redis_url, data_dir, tmp_path / "logs", workers=1, consumers=0, settings=FAST) as running:
        wait_for(lambda: redis_client.keys("fixmem:batch:*") == [], 120, "the turns to be processed")
        worker_log = running.log_text()
    events = redis_client.hgetall("fixmem:metrics:events")
    assert int(events.get(b"recorded", 0)) == len(planted), (events, worker_log[-3000:])

    # 1. Nothing on disk: every file's bytes and every path under the data directory.
    on_disk = {str(p.relative_to(data_dir)): _leaks(p.read_bytes().decode("utf-8", "replace"), secrets)
               for p in data_dir.rglob("*") if p.is_file()}  # fmt: skip
    on_disk["(file names)"] = _leaks("\n".join(str(p) for p in data_dir.rglob("*")), secrets)
    on_disk["(worker log)"] = _leaks(worker_log, secrets)
    leaked = {where: kinds for where, kinds in on_disk.items() if kinds}

    # 2. Nothing from any read path, asked about every planted turn.
    answers: list[str] = []
    store = fix_store(data_dir)
    memory = FixMemory(data_dir, settings=settings)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_STORE_LOCK", "local")
    projects = sorted({e["project_key"] for _, _, e in planted})
    with serve(build_context(settings)) as api:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for project in projects:
            query = {"project_id": project, "q": "parse should split on commas test fails", "k": 50}
            answers.append(
                httpx.get(api.url + "/api/fix-memory", params=query, headers=headers, timeout=10).text
            )
            stats = {"project_id": project}
            answers.append(
                httpx.get(api.url + "/api/fix-memory/stats", params=stats, headers=headers, timeout=10).text
            )
            ctx = ToolContext(store=store, owner=OWNER, project_key=project)
            answers.append(json.dumps(recall_fixes(ctx, {"query": "split on commas", "k": 50}).to_json()))
            answers.append(auto_recall(ctx, "parse should split on commas", files=["src/mod1.py"]))
            recalled = memory.recall(OWNER, project, "parse should split on commas", k=50)
            answers.append(memory.prompt_block(recalled) + json.dumps([r.to_dict() for r in recalled]))
            for argv in (
                [
                    "recall",
                    "split on commas test fails",
                    "--owner",
                    OWNER,
                    "--project",
                    project,
                    "--json",
                    "-k",
                    "50",
                ],
                ["stats", "--owner", OWNER, "--project", project, "--json"],
                ["export", "--owner", OWNER, "--project", project, "--format", "jsonl"],
                ["export", "--owner", OWNER, "--project", project],
            ):
                main(argv)
                out, err = capsys.readouterr()
                answers.append(out + err)
    returned = sorted({k for text in answers for k in _leaks(text, secrets)})
    recalled_entries = sum(text.count('"id":"fix-') for text in answers[0::9])  # the API's recall answers
    assert len(on_disk) - 2 > 0  # the store's files were there to search
    assert recalled_entries > 0  # the read paths did return the planted turns' entries
    assert leaked == {}, leaked
    assert returned == [], returned


@pytest.mark.chaos
@pytest.mark.timeout(1800)
def test_chaos_secrets_in_the_embedded_redis_files(tmp_path: Path) -> None:
    """The same turns with ``fixmem up``'s layout: the embedded Redis keeps its AOF under the data directory.

    What fixmem writes stays clean (asserted). Redis's own files are measured, not promised: the raw
    events pass through the stream and the batch hashes, so their secrets are in the AOF until the stream
    is trimmed and the AOF rewritten (dead letters keep theirs, for replay).
    """
    data_dir = tmp_path / "data"
    server = EmbeddedRedis(data_dir=data_dir / "redis", appendonly=True)
    url = server.start()
    client = redis.Redis.from_url(url, socket_timeout=10)
    planted = list(corpus())
    secrets = [s for s, _, _ in planted]
    settings = Settings.from_env({"FIXMEM_REDIS_URL": url, "FIXMEM_DATA_DIR": str(data_dir)})
    try:
        publish_all(client, [Item("secret", {b"event": orjson.dumps(e)}, "entry") for _, _, e in planted])
        consumer = Consumer(client, wiring.consumer_config(settings))
        consumer.run(burst=True)
        with fleet(url, data_dir, tmp_path / "logs", workers=1, consumers=0, settings=FAST):
            wait_for(lambda: client.keys("fixmem:batch:*") == [], 120, "the turns to be processed")
        redis_dir = data_dir / "redis"

        def in_redis_files() -> set[int]:
            text = "".join(
                p.read_bytes().decode("utf-8", "replace") for p in redis_dir.rglob("*") if p.is_file()
            )
            return _found(text, secrets)

        # the raw events went through the AOF (appendfsync everysec): the check sees them there
        wait_for(lambda: len(in_redis_files()) == len(secrets), 30, "the events' secrets in the AOF")
        consumer.trim()  # what the consumer does every few seconds
        client.bgrewriteaof()
        wait_for(lambda: client.info("persistence")["aof_rewrite_in_progress"] == 0, 60, "the AOF rewrite")
        after = in_redis_files()

        def payloads(stream: str) -> str:
            return "".join(v.decode("utf-8", "replace") for _, f in client.xrange(stream) for v in f.values())

        kept_for_replay = _found(payloads(keys.DEFAULT_DEAD_STREAM), secrets)
        # XTRIM MINID ~ removes whole stream nodes only: a partly acked node stays until the next trim
        left_in_stream = _found(payloads(keys.DEFAULT_STREAM), secrets)
        batches_left = client.keys("fixmem:batch:*")
    finally:
        client.close()
        server.stop()
    ours = [p for p in data_dir.rglob("*") if p.is_file() and "redis" not in p.relative_to(data_dir).parts]
    leaked = {str(p): k for p in ours if (k := _leaks(p.read_bytes().decode("utf-8", "replace"), secrets))}
    assert batches_left == []
    # after trim and rewrite, only payloads kept on purpose (dead letters, untrimmed stream entries) hold them
    assert after <= kept_for_replay | left_in_stream, sorted(after - kept_for_replay - left_in_stream)
    assert len(left_in_stream) < len(secrets)  # the trim did remove processed entries
    assert leaked == {}
