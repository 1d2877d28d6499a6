"""What the hooks read from the environment: a stdlib mirror of the few ``Settings`` fields they use.

``fixmem.settings`` loads pydantic (~100 ms), too slow for a hook that must answer within 150 ms, so the
hook reads its handful of ``FIXMEM_*`` variables here. ``Settings`` stays the source of the defaults:
``tests/fixmem/hooks/test_config.py`` checks that every default below equals the ``Settings`` one.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "FIXMEM_"
# Mirrors of Settings defaults (checked by a test).
DEFAULT_PROMPT_BUDGET_TOKENS = 600  # Settings.fix_memory_prompt_budget_tokens
DEFAULT_SESSION_BUDGET_TOKENS = 2000  # Settings.hook_session_budget_tokens
DEFAULT_HOOK_TIMEOUT_SECONDS = 0.5  # Settings.hook_timeout_seconds: one HTTP recall, then give up
DEFAULT_STREAM = "fixmem:turns"  # Settings.stream (ingest.keys.DEFAULT_STREAM)
DEFAULT_ROTATION_CAP = 500  # Settings.rotation_cap: entries a project keeps when the hook writes locally
DEFAULT_K = 5


def default_data_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fixmem``, else ``~/.local/share/fixmem`` (as ``fixmem.settings``)."""
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", str(Path.home()))) / ".local" / "share"
    return base / "fixmem"


def login_name(env: Mapping[str, str]) -> str:
    """The user's login name ("" when none can be found)."""
    try:
        return env.get("USER") or env.get("LOGNAME") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's anonymous uid)
        return ""


def _truthy(raw: str) -> bool:
    return raw.strip().lower() not in {"0", "false", "no", "off"}


@dataclass(frozen=True)
class HookConfig:
    """The hook's settings. ``remote`` when both the API URL and a token are set."""

    data_dir: Path
    owner: str
    project: str | None = None
    api_url: str | None = None
    api_token: str | None = None
    redis_url: str | None = None
    stream: str = DEFAULT_STREAM
    prompt_budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS
    session_budget_tokens: int = DEFAULT_SESSION_BUDGET_TOKENS
    timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS
    rotation_cap: int = DEFAULT_ROTATION_CAP
    enabled: bool = True
    k: int = DEFAULT_K

    @property
    def remote(self) -> bool:
        return bool(self.api_url and self.api_token)

    @property
    def hooks_dir(self) -> Path:
        """Where the hooks keep their state, log and counters."""
        return self.data_dir / "hooks"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HookConfig:
        """The config of ``env`` (default ``os.environ``); a malformed number falls back to its default."""
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            raw = env.get(PREFIX + name)
            return raw.strip() if raw and raw.strip() else None

        def number(name: str, default: float) -> float:
            raw = get(name)
            try:
                return float(raw) if raw is not None else default
            except ValueError:
                return default

        data_dir = Path(get("DATA_DIR") or default_data_dir(env)).expanduser()
        return cls(
            data_dir=data_dir,
            owner=get("OWNER") or login_name(env),
            project=get("PROJECT"),
            api_url=(get("API_URL") or "").rstrip("/") or None,
            api_token=get("API_TOKEN"),
            redis_url=get("REDIS_URL"),
            stream=get("STREAM") or DEFAULT_STREAM,
            prompt_budget_tokens=int(number("FIX_MEMORY_PROMPT_BUDGET_TOKENS", DEFAULT_PROMPT_BUDGET_TOKENS)),
            session_budget_tokens=int(number("HOOK_SESSION_BUDGET_TOKENS", DEFAULT_SESSION_BUDGET_TOKENS)),
            timeout_seconds=number("HOOK_TIMEOUT_SECONDS", DEFAULT_HOOK_TIMEOUT_SECONDS),
            rotation_cap=int(number("ROTATION_CAP", DEFAULT_ROTATION_CAP)),
            enabled=_truthy(get("FIX_MEMORY_ENABLED") or "1")
            and _truthy(get("FIX_MEMORY_AUTO_RECALL") or "1"),
        )
