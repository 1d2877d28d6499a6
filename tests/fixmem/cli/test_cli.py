"""The ``fixmem`` command in-process: publish, status, dead-letters, recall/stats/forget, exit codes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fixmem.cli import main
from fixmem.errors import ExitCode
from fixmem.runtime.redis_server import free_port
from fixmem.settings import Settings
from fixmem.wiring import require_supported_version
from ingest import keys
from tests import signals
from tests.ingest.turns import turn, wire
from workers.locks import redis_lock_factory


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis, data_dir: Path) -> Path:
    for name in ("FIXMEM_REDIS_URL", "FIXMEM_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIXMEM_REDIS_URL", redis_url)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_READ_BLOCK_MS", "20")
    return data_dir


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    with signals.handlers_kept():
        yield


def test_publish_a_jsonl_file_reports_bad_lines(
    env: Path, tmp_path: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join([wire(turn(1)), b"{broken", b"", wire(turn(2)), b'{"v": 2}']) + b"\n")
    assert main(["publish", str(source)]) == ExitCode.DATA_ERROR
    out, err = capsys.readouterr()
    assert "published 2 events to fixmem:turns, refused 2" in out
    assert "line 2: invalid_json" in err and "line 5: unsupported_version" in err
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 2
    assert main(["publish", "--backfill", str(source)]) == ExitCode.DATA_ERROR
    assert redis_client.xlen(keys.DEFAULT_BACKFILL_STREAM) == 2


def test_status_text_and_json(
    env: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status"]) == 0
    text = capsys.readouterr().out
    assert "stream   fixmem:turns: 0 entries" in text
    assert "queue    fixmem-live: 0 queued" in text
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": wire(turn(1))})
    assert main(["ingest", "--burst"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    live, _ = status["streams"]
    assert (live["length"], live["pending"], live["lag"]) == (1, 0, 0)
    assert status["queues"][0] == {
        "name": "fixmem-live",
        "queued": 1,
        "started": 0,
        "scheduled": 0,
        "failed": 0,
    }
    assert status["counters"]["pipeline"]["events_enqueued"] == 1


def test_the_pipeline_from_the_command_line(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join(wire(turn(i)) for i in range(3)))
    assert main(["publish", str(source)]) == 0
    assert main(["ingest", "--burst"]) == 0
    assert main(["worker", "--burst"]) == 0
    capsys.readouterr()
    common = ["--owner", "alice", "--project", "github.com/acme/widgets"]
    assert main(["recall", "parse_mod1 should split on commas", *common]) == 0
    block = capsys.readouterr().out
    assert block.startswith("Past fixes in this project:") and "mod1" in block
    assert main(["recall", "--json", "parse_mod1 should split on commas", *common]) == 0
    recalled = json.loads(capsys.readouterr().out)["recalled"]
    first_id = recalled[0]["entry"]["id"]
    assert main(["stats", *common]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 3
    assert main(["forget", first_id, "--owner", "alice"]) == 0
    assert main(["forget", first_id, "--owner", "alice"]) == ExitCode.NOT_FOUND
    assert "no entry" in capsys.readouterr().err
    assert main(["stats", *common]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 2
    # without --project, the key of the checkout (its origin remote), from --workspace or the cwd
    checkout = tmp_path / "widgets"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n')
    assert main(["stats", "--owner", "alice", "--workspace", str(checkout)]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 2
    monkeypatch.chdir(checkout / ".git")
    assert main(["recall", "parse_mod2 should split on commas", "--owner", "alice"]) == 0
    assert "mod2" in capsys.readouterr().out


def test_dead_letters_show_clips_a_huge_payload_unless_full(
    env: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = b"{not json " + b"0123456789" * 500_000 + b" the end"  # 5 MB, as a harness once sent
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": payload})
    assert main(["ingest", "--burst"]) == 0
    [(letter_id, _)] = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    capsys.readouterr()
    assert main(["dead-letters", "show", letter_id.decode()]) == 0
    shown = capsys.readouterr().out
    assert len(shown) < 30_000
    assert '"payload_bytes": ' in shown and "{not json" in shown and shown.rstrip().endswith("the end")
    assert "characters left out: --full shows them all" in shown
    assert main(["dead-letters", "show", letter_id.decode(), "--full"]) == 0
    assert len(capsys.readouterr().out) > len(payload)


def test_dead_letters_list_show_replay_purge(
    env: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": b"{broken"})
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": wire(turn(1)) + b" "})  # valid: will replay
    big = turn(2)
    big["user_message"] = "x" * 3000
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": wire(big)})
    assert main(["ingest", "--burst"]) == 0  # all valid at the default size limit
    assert redis_client.xlen(keys.DEFAULT_DEAD_STREAM) == 1
    capsys.readouterr()
    assert main(["dead-letters", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1 and "invalid_json" in listed[0]
    letter_id = listed[0].split()[0]
    assert main(["dead-letters", "show", letter_id]) == 0
    shown = capsys.readouterr().out
    assert '"reason": "invalid_json"' in shown and "{broken" in shown
    assert main(["dead-letters", "show", "1-1"]) == ExitCode.NOT_FOUND
    assert main(["dead-letters", "replay", letter_id]) == ExitCode.DATA_ERROR  # still broken: kept
    assert "still invalid" in capsys.readouterr().err
    assert main(["dead-letters", "replay"]) == ExitCode.USAGE
    assert main(["dead-letters", "purge", "--all", "--yes"]) == 0
    assert redis_client.xlen(keys.DEFAULT_DEAD_STREAM) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["dead-letters", "show", "nope"],
        ["dead-letters", "show", "18446744073709551616-0"],  # past Redis's 64-bit milliseconds
        ["dead-letters", "replay", "1-1", "nope"],
        ["dead-letters", "purge", "nope"],
        ["dead-letters", "list", "--after", "1-x"],
    ],
)
def test_a_malformed_dead_letter_id_is_a_usage_error(
    env: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "not a dead-letter id" in err and "1700000000000-0" in err and "Traceback" not in err


def test_a_well_formed_absent_dead_letter_id_is_not_found(
    env: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    redis_client.xadd(keys.DEFAULT_DEAD_STREAM, {"reason": "invalid_json"}, id="5-0")
    for absent in ("5-1", "18446744073709551615-18446744073709551615"):
        assert main(["dead-letters", "show", absent]) == ExitCode.NOT_FOUND
        assert f"no dead letter {absent} in {keys.DEFAULT_DEAD_STREAM}" in capsys.readouterr().err
    assert main(["dead-letters", "show", "5-0"]) == 0


def test_unreachable_redis_is_one_line_with_the_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("FIXMEM_REDIS_URL", url)
    monkeypatch.setenv("FIXMEM_REDIS_TIMEOUT_SECONDS", "0.5")
    assert main(["status"]) == ExitCode.REDIS_UNAVAILABLE
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert url in err and "fixmem up" in err and "FIXMEM_REDIS_URL" in err


def test_no_redis_configured_and_none_running(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(tmp_path))
    assert main(["status"]) == ExitCode.REDIS_UNAVAILABLE
    assert (
        "FIXMEM_REDIS_URL is unset and no `fixmem up` has published a Redis for data dir"
        in capsys.readouterr().err
    )


def test_the_url_of_a_running_up_is_found(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(tmp_path))
    (tmp_path / "redis").mkdir()
    (tmp_path / "redis" / "url").write_text(redis_url + "\n")
    assert main(["status"]) == 0


def test_a_bad_setting_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FIXMEM_READ_COUNT", "lots")
    assert main(["status"]) == ExitCode.CONFIG_ERROR
    assert "FIXMEM_READ_COUNT" in capsys.readouterr().err


def test_ingest_burst_under_backpressure_says_why_it_stops(
    env: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    """No worker drains a queue over the threshold: ``ingest --burst`` exited 0 with the stream unread."""
    for i in range(5):
        redis_client.rpush(f"rq:queue:{keys.DEFAULT_LIVE_QUEUE}", f"placeholder-{i}")
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": wire(turn(1))})
    assert main(["ingest", "--burst", "--max-wait", "0.2"]) == ExitCode.TIMEOUT
    err = capsys.readouterr().err
    assert "stopped with entries left unread: queue fixmem-live holds 5 jobs (> 4, backpressure)" in err
    assert "start workers" in err
    redis_client.delete(f"rq:queue:{keys.DEFAULT_LIVE_QUEUE}")
    assert main(["ingest", "--burst", "--max-wait", "0.2"]) == ExitCode.OK
    assert redis_client.llen(f"rq:queue:{keys.DEFAULT_LIVE_QUEUE}") == 1


def test_import_and_forget_take_the_workers_project_lock(
    env: Path,
    tmp_path: Path,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fixmem import`` built its store by hand with flock alone while the workers (FIXMEM_STORE_LOCK=redis)
    held the project's Redis lease: both wrote the log at once (the test fails on the old code: checked)."""
    project = "github.com/acme/widgets"
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join(wire(turn(i)) for i in range(2)))
    assert main(["publish", str(source)]) == 0
    assert main(["ingest", "--burst"]) == 0
    assert main(["worker", "--burst"]) == 0
    dump = tmp_path / "export.jsonl"
    assert main(["export", "-p", project, "--format", "jsonl", "-o", str(dump), "--owner", "alice"]) == 0
    other = tmp_path / "other"
    monkeypatch.setenv("FIXMEM_LOCK_WAIT_SECONDS", "0.2")
    worker_lock = redis_lock_factory(redis_client, lease=30, wait=1)
    capsys.readouterr()
    with worker_lock("alice", project):  # a worker is writing this project
        assert main(["import", str(dump), "--owner", "alice", "--data-dir", str(other)]) == ExitCode.TIMEOUT
        assert "still held by another writer" in capsys.readouterr().err
        entry_id = json.loads(dump.read_text().splitlines()[0])["id"]
        assert main(["forget", entry_id, "--owner", "alice"]) == ExitCode.TIMEOUT
    assert not (other / "fix_memory").exists() or not any((other / "fix_memory").rglob("*.jsonl"))
    assert main(["import", str(dump), "--owner", "alice", "--data-dir", str(other)]) == 0
    assert "imported 2 entries" in capsys.readouterr().out
    assert main(["forget", entry_id, "--owner", "alice"]) == 0


def test_every_setting_is_in_the_settings_reference() -> None:
    """The settings table (docs/reference/settings.md, once the README's) lists every field of ``Settings``
    (it had lost the backfill, memory and API ones) and no variable that is not one."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "reference" / "settings.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `FIXMEM_")]
    listed = {name for row in rows for name in re.findall(r"`(FIXMEM_[A-Z0-9_]+)`", row.split("|")[1])}
    assert listed == {"FIXMEM_" + name.upper() for name in Settings.model_fields}
    compared = 0
    for (
        row
    ) in rows:  # a row's numbers are its settings' defaults, in order ("16 MiB", "your login name": not)
        cells = row.split("|")
        names = re.findall(r"`FIXMEM_([A-Z0-9_]+)`", cells[1])
        shown = [cell.strip() for cell in cells[2].split(",")]
        for name, text in zip(names, shown if len(shown) == len(names) else [], strict=False):
            default = Settings.model_fields[name.lower()].default
            if re.fullmatch(r"\d+(\.\d+)?", text) and not isinstance(default, bool):
                assert float(text) == default, (
                    f"the settings page says FIXMEM_{name} defaults to {text}, Settings {default}"
                )
                compared += 1
    assert compared >= 30


@pytest.mark.usefixtures("redis_reports_6_0")
@pytest.mark.parametrize("command", [["ingest", "--burst"], ["worker", "--burst"]])
def test_ingest_and_worker_refuse_a_redis_older_than_6_2(
    command: list[str], env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs and decision 0012 say ``ingest`` and ``worker`` check the version too, not only ``up``."""
    assert main(command) == ExitCode.REDIS_UNAVAILABLE
    assert "is version 6.0.16: fixmem needs Redis >= 6.2" in capsys.readouterr().err


def test_a_redis_whose_info_is_disabled_is_let_through_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class NoInfo:
        def info(self, section: str) -> dict[str, str]:
            raise redis.exceptions.ResponseError("unknown command 'INFO'")

    require_supported_version(NoInfo(), "redis://managed")  # type: ignore[arg-type]
    assert "cannot read the version of the Redis at redis://managed" in caplog.text
