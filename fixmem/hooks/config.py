"""What the hooks read from the environment: a stdlib mirror of the few ``Settings`` fields they use.

``fixmem.settings`` loads pydantic (~100 ms), too slow for a hook that must answer within 150 ms, so the
hook reads its handful of ``FIXMEM_*`` variables here. ``Settings`` stays the source of the defaults:
``tests/fixmem/hooks/test_config.py`` checks that every default below equals the ``Settings`` one.
Rules of the hook's fast path (this module, ``claude_code``, ``session``, ``reader``, ``http``,
``daemon_client``): import ``os``, ``json``, ``socket``, ``fcntl``, ``time`` and nothing heavier — no
``dataclasses`` (``inspect``: ~20 ms), ``typing``, ``pathlib``, ``urllib``, ``hashlib`` or ``getpass``
(~50 ms of CPU together on the bench machine, ``python -X importtime``); ``bench/hooks.py`` records the
modules a hook loads.
"""

from __future__ import annotations

import os

from fixmem.identity import resolve_data_dir, resolve_owner

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "FIXMEM_"
# Mirrors of Settings defaults (checked by a test).
DEFAULT_PROMPT_BUDGET_TOKENS = 600  # Settings.fix_memory_prompt_budget_tokens (fixmem.limits)
DEFAULT_SESSION_BUDGET_TOKENS = 2000  # Settings.hook_session_budget_tokens
DEFAULT_HOOK_TIMEOUT_SECONDS = 0.5  # Settings.hook_timeout_seconds: one recall, then give up
DEFAULT_DAEMON_IDLE_SECONDS = 1800.0  # Settings.hook_daemon_idle_seconds (0: no daemon, recall in-process)
DEFAULT_COLD_WAIT_SECONDS = 5.0  # Settings.hook_cold_wait_seconds: a prompt waits for a starting daemon
DEFAULT_STREAM = "fixmem:turns"  # Settings.stream (ingest.keys.DEFAULT_STREAM)
DEFAULT_ROTATION_CAP = 500  # Settings.rotation_cap: entries a project keeps when the hook writes locally
DEFAULT_ROTATION_SLACK = 50  # Settings.rotation_slack: lines past the cap an append may leave
DEFAULT_K = 5  # fixmem.limits.DEFAULT_K
DEFAULT_HOLDBACK = 0.0  # Settings.holdback: the share of agent sessions held back from fix recall (0: off)
DEFAULT_HOLDBACK_SALT = ""  # Settings.holdback_salt: change it to draw a new assignment
MAX_HOLDBACK = 0.5  # Settings.holdback's bound
DEFAULT_LEARN_FROM_USE = False  # Settings.learn_from_use: recall weighs each fix by how it was used
DEFAULT_MEANING = False  # Settings.meaning: the meaning signal at task start (the optional extra)
DEFAULT_LOCALIZE = (
    True  # Settings.localize: task-start recall weighs the files the task names in the checkout
)


def read_token(path: str | None) -> str | None:
    """The token in the file ``path`` (its first line, stripped), None when unset, unreadable or empty."""
    if not path:
        return None
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            token = handle.readline().strip()
    except OSError:
        return None
    return token or None


def _truthy(raw: str) -> bool:
    return raw.strip().lower() not in {"0", "false", "no", "off"}


class HookConfig:
    """The hook's settings (read-only by convention). ``remote`` when both the API URL and a token are
    set (``FIXMEM_API_TOKEN``, else the file ``FIXMEM_API_TOKEN_FILE``, which ``fixmem install`` pins).
    ``data_dir`` is a path string (``pathlib`` is not imported on the hook's path)."""

    __slots__ = (
        "api_token",
        "api_url",
        "cold_wait_seconds",
        "daemon_idle_seconds",
        "data_dir",
        "enabled",
        "holdback",
        "holdback_salt",
        "k",
        "learn_from_use",
        "localize",
        "meaning",
        "owner",
        "project",
        "prompt_budget_tokens",
        "redis_url",
        "rotation_cap",
        "rotation_slack",
        "session_budget_tokens",
        "stream",
        "timeout_seconds",
    )

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        owner: str,
        *,
        project: str | None = None,
        api_url: str | None = None,
        api_token: str | None = None,
        redis_url: str | None = None,
        stream: str = DEFAULT_STREAM,
        prompt_budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS,
        session_budget_tokens: int = DEFAULT_SESSION_BUDGET_TOKENS,
        timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS,
        daemon_idle_seconds: float = DEFAULT_DAEMON_IDLE_SECONDS,
        cold_wait_seconds: float = DEFAULT_COLD_WAIT_SECONDS,
        rotation_cap: int = DEFAULT_ROTATION_CAP,
        rotation_slack: int = DEFAULT_ROTATION_SLACK,
        enabled: bool = True,
        k: int = DEFAULT_K,
        holdback: float = DEFAULT_HOLDBACK,
        holdback_salt: str = DEFAULT_HOLDBACK_SALT,
        learn_from_use: bool = DEFAULT_LEARN_FROM_USE,
        meaning: bool = DEFAULT_MEANING,
        localize: bool = DEFAULT_LOCALIZE,
    ) -> None:
        self.data_dir = os.fspath(data_dir)
        self.owner, self.project = owner, project
        self.api_url, self.api_token, self.redis_url, self.stream = api_url, api_token, redis_url, stream
        self.prompt_budget_tokens, self.session_budget_tokens = prompt_budget_tokens, session_budget_tokens
        self.timeout_seconds = timeout_seconds
        self.daemon_idle_seconds, self.cold_wait_seconds = daemon_idle_seconds, cold_wait_seconds
        self.rotation_cap, self.rotation_slack = rotation_cap, rotation_slack
        self.enabled, self.k = enabled, k
        self.holdback, self.holdback_salt = holdback, holdback_salt
        self.learn_from_use = learn_from_use
        self.meaning, self.localize = meaning, localize

    def __repr__(self) -> str:
        shown = {name: getattr(self, name) for name in self.__slots__ if name != "api_token"}
        return f"HookConfig({shown})"

    @property
    def remote(self) -> bool:
        return bool(self.api_url and self.api_token)

    @property
    def hooks_dir(self) -> str:
        """Where the hooks keep their state, log, counters and the recall daemon's socket."""
        return os.path.join(self.data_dir, "hooks")

    @property
    def localize_dir(self) -> str:
        """Where the checkouts' indexes are cached (``fixmem.runtime.localize``)."""
        return os.path.join(self.data_dir, "hooks", "localize")

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

        return cls(
            resolve_data_dir(None, env),
            resolve_owner(None, env),
            project=get("PROJECT"),
            api_url=(get("API_URL") or "").rstrip("/") or None,
            api_token=get("API_TOKEN") or read_token(get("API_TOKEN_FILE")),
            redis_url=get("REDIS_URL"),
            stream=get("STREAM") or DEFAULT_STREAM,
            prompt_budget_tokens=int(number("FIX_MEMORY_PROMPT_BUDGET_TOKENS", DEFAULT_PROMPT_BUDGET_TOKENS)),
            session_budget_tokens=int(number("HOOK_SESSION_BUDGET_TOKENS", DEFAULT_SESSION_BUDGET_TOKENS)),
            timeout_seconds=number("HOOK_TIMEOUT_SECONDS", DEFAULT_HOOK_TIMEOUT_SECONDS),
            daemon_idle_seconds=number("HOOK_DAEMON_IDLE_SECONDS", DEFAULT_DAEMON_IDLE_SECONDS),
            cold_wait_seconds=number("HOOK_COLD_WAIT_SECONDS", DEFAULT_COLD_WAIT_SECONDS),
            rotation_cap=int(number("ROTATION_CAP", DEFAULT_ROTATION_CAP)),
            rotation_slack=int(number("ROTATION_SLACK", DEFAULT_ROTATION_SLACK)),
            enabled=_truthy(get("FIX_MEMORY_ENABLED") or "1")
            and _truthy(get("FIX_MEMORY_AUTO_RECALL") or "1"),
            holdback=_share(number("HOLDBACK", DEFAULT_HOLDBACK)),
            holdback_salt=env.get(PREFIX + "HOLDBACK_SALT") or DEFAULT_HOLDBACK_SALT,
            learn_from_use=_truthy(get("LEARN_FROM_USE") or ("1" if DEFAULT_LEARN_FROM_USE else "0")),
            meaning=_truthy(get("MEANING") or ("1" if DEFAULT_MEANING else "0")),
            localize=_truthy(get("LOCALIZE") or ("1" if DEFAULT_LOCALIZE else "0")),
        )


def _share(value: float) -> float:
    """A holdback share out of [0, MAX_HOLDBACK] (or not a number) is the default: no holdback, as
    ``Settings`` refuses it (the hook never fails an agent on a setting)."""
    return value if 0.0 <= value <= MAX_HOLDBACK else DEFAULT_HOLDBACK
