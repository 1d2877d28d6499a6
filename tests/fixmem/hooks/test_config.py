"""The hooks' stdlib config mirrors ``Settings``: same defaults, same variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixmem import limits
from fixmem.hooks import config, reader, session
from fixmem.settings import Settings
from store import fit_query
from store.recall import prompt


def test_the_hook_defaults_are_the_settings_defaults() -> None:
    fields = Settings.model_fields
    assert fields["fix_memory_prompt_budget_tokens"].default == config.DEFAULT_PROMPT_BUDGET_TOKENS
    assert fields["hook_session_budget_tokens"].default == config.DEFAULT_SESSION_BUDGET_TOKENS
    assert fields["hook_timeout_seconds"].default == config.DEFAULT_HOOK_TIMEOUT_SECONDS
    assert fields["hook_daemon_idle_seconds"].default == config.DEFAULT_DAEMON_IDLE_SECONDS
    assert fields["hook_cold_wait_seconds"].default == config.DEFAULT_COLD_WAIT_SECONDS
    assert fields["stream"].default == config.DEFAULT_STREAM
    assert fields["rotation_cap"].default == config.DEFAULT_ROTATION_CAP
    assert fields["rotation_slack"].default == config.DEFAULT_ROTATION_SLACK
    assert fields["holdback"].default == config.DEFAULT_HOLDBACK
    assert fields["holdback_salt"].default == config.DEFAULT_HOLDBACK_SALT
    assert fields["learn_from_use"].default == config.DEFAULT_LEARN_FROM_USE
    assert fields["meaning"].default == config.DEFAULT_MEANING
    assert fields["localize"].default == config.DEFAULT_LOCALIZE
    assert Settings(holdback=config.MAX_HOLDBACK).holdback == config.MAX_HOLDBACK  # the same bound
    assert (config.DEFAULT_K, config.DEFAULT_PROMPT_BUDGET_TOKENS) == (
        limits.DEFAULT_K,
        limits.DEFAULT_PROMPT_BUDGET_TOKENS,
    )
    assert session.HEADER == prompt.HEADER and session.BYTES_PER_TOKEN == prompt.BYTES_PER_TOKEN


def test_the_hook_reads_the_settings_variables(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "FIXMEM_OWNER": "bob",
        "FIXMEM_PROJECT": "github.com/acme/w",
        "FIXMEM_API_URL": "http://h:1/",
        "FIXMEM_API_TOKEN": "tok",
        "FIXMEM_HOOK_SESSION_BUDGET_TOKENS": "900",
        "FIXMEM_HOOK_TIMEOUT_SECONDS": "nonsense",
    }
    got = config.HookConfig.from_env(env)
    assert Path(got.data_dir) == Settings.from_env({"HOME": str(tmp_path)}).data_dir
    assert (got.owner, got.project, got.api_url, got.remote) == (
        "bob",
        "github.com/acme/w",
        "http://h:1",
        True,
    )
    assert got.session_budget_tokens == 900
    assert got.timeout_seconds == config.DEFAULT_HOOK_TIMEOUT_SECONDS  # malformed: the default
    assert config.HookConfig.from_env({**env, "FIXMEM_HOLDBACK": "0.1"}).holdback == 0.1
    for bad in ("0.9", "-1", "nan", "x"):  # out of Settings' bounds: no holdback, never a failed hook
        assert config.HookConfig.from_env({**env, "FIXMEM_HOLDBACK": bad}).holdback == 0.0
    assert got.learn_from_use is False  # off unless switched on, as in Settings
    for on in ("1", "true", "on"):
        assert config.HookConfig.from_env({**env, "FIXMEM_LEARN_FROM_USE": on}).learn_from_use is True
        assert Settings.from_env({"HOME": str(tmp_path), "FIXMEM_LEARN_FROM_USE": on}).learn_from_use is True
    for off in ("0", "false", "off"):
        assert config.HookConfig.from_env({**env, "FIXMEM_LEARN_FROM_USE": off}).learn_from_use is False
        assert (
            Settings.from_env({"HOME": str(tmp_path), "FIXMEM_LEARN_FROM_USE": off}).learn_from_use is False
        )
    assert config.HookConfig.from_env({"HOME": str(tmp_path), "USER": "carol"}).owner == "carol"
    assert got.meaning is False  # the meaning signal: off unless switched on, as in Settings
    assert config.HookConfig.from_env({**env, "FIXMEM_MEANING": "1"}).meaning is True
    assert Settings.from_env({"HOME": str(tmp_path), "FIXMEM_MEANING": "1"}).meaning is True
    assert got.localize is True  # localization: on unless switched off, as in Settings
    assert config.HookConfig.from_env({**env, "FIXMEM_LOCALIZE": "0"}).localize is False
    assert Settings.from_env({"HOME": str(tmp_path), "FIXMEM_LOCALIZE": "0"}).localize is False


def test_the_hook_asks_within_the_api_bounds() -> None:
    assert (reader.MAX_QUERY_CHARS, reader.MAX_PATH_CHARS, reader.MAX_FILES, reader.MAX_REASON_CHARS) == (
        limits.MAX_QUERY_CHARS,
        limits.MAX_PATH_CHARS,
        limits.MAX_FILES,
        limits.MAX_REASON_CHARS,
    )
    long_task = "fix the parser\n" + "prose " * 5000 + '\n  File "src/p.py", line 3\nValueError: bad'
    body = reader.Query(long_task, files=("", "x" * 2000, "src/p.py")).to_json()
    assert body["q"] == fit_query(long_task, limits.MAX_QUERY_CHARS)  # as the CLI and the MCP tool fit it
    assert body["files"] == ["src/p.py"]  # what the API would refuse is not sent


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HOME": "/h"}, "/h/.local/share/fixmem"),
        ({"HOME": "/h", "XDG_DATA_HOME": "/x"}, "/x/fixmem"),
        ({"HOME": "/h", "FIXMEM_DATA_DIR": "/d"}, "/d"),
        ({"HOME": "/h", "FIXMEM_DATA_DIR": " /d "}, "/d"),
        ({"HOME": "/h", "FIXMEM_DATA_DIR": "   ", "XDG_DATA_HOME": "/x"}, "/x/fixmem"),
        ({"HOME": "/h", "FIXMEM_DATA_DIR": "~/mem"}, str(Path("~/mem").expanduser())),
        ({"HOME": "/h", "FIXMEM_DATA_DIR": "rel/dir"}, "rel/dir"),
    ],
)
def test_the_hook_and_the_settings_find_the_same_data_dir(env: dict[str, str], expected: str) -> None:
    """One rule (``fixmem.identity.resolve_data_dir``): the hooks, the settings and the CLI's fast path."""
    assert config.HookConfig.from_env(env).data_dir == expected
    assert Settings.from_env(env).data_dir == Path(expected)
    assert Settings.from_env(env, data_dir=Path("/flag")).data_dir == Path("/flag")
