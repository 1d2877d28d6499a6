"""Settings are the one source of defaults: the library configurations take every value from them, and the
owner has one rule in every command."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import redis

from fixmem import wiring
from fixmem.cli import main
from fixmem.errors import ExitCode
from fixmem.settings import Settings
from ingest.consumer import ConsumerConfig
from store import FixStore
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry
from workers.jobs import WorkerContext
from workers.worker import WorkerOptions

# The fields of each library configuration that are not settings: given by the composition root (or left to a
# default that no setting repeats). A new field that is neither fails here, so it is named for what it is.
NOT_SETTINGS = {
    ConsumerConfig: {"routes", "consumer", "job_function"},
    WorkerOptions: {"queues", "name"},
    WorkerContext: {"client", "store", "limits", "name", "clock"},
}


def changed(settings: Settings, names: frozenset[str]) -> Settings:
    """``settings`` with every field of ``names`` set to a value unlike its default (still valid)."""
    values: dict[str, Any] = {}
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool):
            values[name] = not value
        elif isinstance(value, int | float):
            values[name] = value * 2 if name != "read_block_ms" else value // 2
        elif isinstance(value, str):
            values[name] = value + "-changed"
    return settings.with_overrides(**values)


@pytest.mark.parametrize("config", list(NOT_SETTINGS), ids=lambda c: c.__name__)
def test_each_library_config_field_is_a_setting_or_named_as_none(config: type) -> None:
    names = {f.name for f in dataclasses.fields(config)}
    assert names - wiring.setting_fields(config) == NOT_SETTINGS[config]


def test_the_wiring_takes_every_setting_a_config_names(redis_client: redis.Redis, data_dir: Path) -> None:
    """Built from settings whose every relevant value differs from its default, the consumer, worker and
    job configurations hold those values (a default copied into the library or the wiring would not)."""
    every = (
        wiring.setting_fields(ConsumerConfig)
        | wiring.setting_fields(WorkerOptions)
        | wiring.setting_fields(WorkerContext)
    )
    custom = changed(Settings(data_dir=data_dir), every)
    built = [
        wiring.consumer_config(custom, name="c"),
        wiring.worker_options(custom),
        wiring.worker_context(custom, redis_client, store=FixStore(data_dir, cap=custom.rotation_cap)),
    ]
    for config in built:
        names = wiring.setting_fields(type(config))
        assert names, type(config)
        assert {n: getattr(config, n) for n in names} == {n: getattr(custom, n) for n in names}
        assert all(getattr(config, n) != getattr(Settings(), n) for n in names)


def test_a_library_config_refuses_a_missing_value() -> None:
    with pytest.raises(TypeError, match="routes"):
        wiring.from_settings(ConsumerConfig, Settings(), consumer="c")


def test_owner_comes_from_the_environment_else_the_login_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env({"FIXMEM_OWNER": "alice"}).owner == "alice"
    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "bob")
    assert Settings.from_env({}).owner == "bob"

    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "")  # uid 12345 has no passwd entry
    assert Settings.from_env({}).owner is None
    assert Settings.from_env({}, owner="carol").owner == "carol"


@pytest.fixture
def alice_log(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> str:
    """A data dir where alice has one fix in PROJECT; the environment names no owner."""
    entry = make_entry(1)
    fix_store(data_dir).append(OWNER, PROJECT, [entry])
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    for name in ("FIXMEM_OWNER", "LOGNAME", "USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    monkeypatch.setenv("FIXMEM_STORE_LOCK", "local")
    return entry.id


def test_recall_stats_and_forget_take_the_owner_from_the_settings(
    alice_log: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--owner`` was required by recall/stats/forget and defaulted to the login name elsewhere: now it is
    the flag, else FIXMEM_OWNER, else the login name, in every command."""
    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "alice")
    assert main(["stats", "--project", PROJECT, "--json"]) == 0
    assert '"total": 1' in capsys.readouterr().out
    monkeypatch.setenv("FIXMEM_OWNER", "bob")  # the setting wins over the login name
    assert main(["stats", "--project", PROJECT, "--json"]) == ExitCode.NOT_FOUND  # bob has no such project
    assert "owner 'bob' has no project" in capsys.readouterr().err
    assert main(["stats", "--project", PROJECT, "--json", "--owner", "alice"]) == 0  # the flag wins over both
    assert '"total": 1' in capsys.readouterr().out
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    assert main(["recall", "--project", PROJECT, "--json", "anything at all"]) == 0
    assert main(["forget", alice_log]) == 0
    assert f"forgot {alice_log}" in capsys.readouterr().out


def test_with_no_owner_known_the_commands_ask_for_one(
    alice_log: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "")  # uid 12345 has no passwd entry
    for argv in (
        ["stats", "--project", PROJECT],
        ["recall", "--project", PROJECT, "q"],
        ["forget", alice_log],
    ):
        assert main(argv) == ExitCode.USAGE
        assert "pass --owner or set FIXMEM_OWNER" in capsys.readouterr().err


def test_the_eval_dataset_is_a_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FIXMEM_EVAL_DATASET", str(tmp_path))
    assert main(["eval"]) == ExitCode.DATA_ERROR
    assert "no *.toml files" in capsys.readouterr().err
