"""One frozen, typed settings object, built at the entrypoint from an environment mapping.

Nothing here reads ``os.environ`` at import time: call ``Settings.from_env()`` (tests pass their own
mapping). Every field maps to ``FIXMEM_<FIELD NAME IN UPPER CASE>``; CLI flags override fields through
``Settings.with_overrides``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from fixmem import identity
from fixmem.identity import resolve_owner, resolve_project
from fixmem.limits import DEFAULT_PROMPT_BUDGET_TOKENS
from ingest import keys
from ingest.schema import DEFAULT_MAX_EVENT_BYTES

ENV_PREFIX = "FIXMEM_"


def default_data_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fixmem``, else ``~/.local/share/fixmem`` (``fixmem.identity``'s one rule)."""
    return Path(identity.default_data_dir(env))


class SettingsError(ValueError):
    """Raised when an environment variable or flag holds a value of the wrong form."""


class Settings(BaseModel):
    """Everything configurable, in one place. Durations are seconds unless the name says otherwise."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Where things live
    data_dir: Path = Field(default=Path("~/.local/share/fixmem"))
    redis_url: str | None = None  # None: `fixmem up` starts an embedded redis-server

    # Wire contract
    stream: str = keys.DEFAULT_STREAM
    max_event_bytes: int = Field(default=DEFAULT_MAX_EVENT_BYTES, ge=1024)  # the publishers' limit too

    # Pipeline: streams, consumer, queues, workers. Key defaults live in ingest/keys.py.
    backfill_stream: str = keys.DEFAULT_BACKFILL_STREAM  # replayed turns; read after live ones
    dead_stream: str = keys.DEFAULT_DEAD_STREAM
    dead_stream_max_len: int = Field(default=100_000, ge=100)  # approximate cap on kept dead letters
    group: str = keys.DEFAULT_GROUP  # consumer group
    consumer_name: str | None = None  # None: the host name (stable across restarts)
    live_queue: str = keys.DEFAULT_LIVE_QUEUE
    backfill_queue: str = keys.DEFAULT_BACKFILL_QUEUE
    read_count: int = Field(default=500, ge=1, le=10_000)  # entries per XREADGROUP
    read_block_ms: int = Field(default=1000, ge=1, le=1000)
    batch_max_events: int = Field(default=5000, ge=1)  # entries gathered per cycle when there is a backlog
    job_max_events: int = Field(default=2000, ge=1)  # most events per RQ job (a big project's share is cut)
    job_pack_events: int = Field(default=100, ge=1)  # small projects of a cycle share a job up to this
    job_max_bytes: int = Field(default=16 << 20, ge=1 << 20)
    claim_idle_seconds: float = Field(default=20.0, gt=0)  # pending this long on a consumer: reclaim
    claim_interval_seconds: float = Field(default=5.0, gt=0)
    max_deliveries: int = Field(default=5, ge=1)  # delivered more often than this: dead-lettered
    stream_max_len: int = Field(default=1_000_000, ge=1000)  # hard cap; trimming past it is counted
    trim_interval_seconds: float = Field(default=5.0, gt=0)
    # Stop reading while a queue holds more jobs: ~2 per worker, so events wait in the stream and the next
    # read takes them all (bigger jobs); a long queue kept jobs at a few events each and made latency the
    # queue's length (the A/B: docs/performance.md, "Measured in the pipeline, and one setting changed").
    backpressure_jobs: int = Field(default=4, ge=1)
    burst_max_wait_seconds: float = Field(default=60.0, gt=0)  # `ingest --burst` gives up on a stuck queue
    workers: int = Field(default=2, ge=0, le=256)  # worker processes started by `fixmem up`
    job_timeout_seconds: int = Field(default=300, ge=1)
    job_retries: int = Field(default=8, ge=0)  # on errors, with backoff 1, 4, 16, … 600 s
    heartbeat_seconds: float = Field(default=3.0, gt=0)  # running jobs refresh their lease this often
    job_lease_seconds: int = Field(default=15, ge=2)  # a job whose lease lapses is abandoned
    reap_interval_seconds: float = Field(default=5.0, gt=0)  # workers look for abandoned jobs this often
    stuck_seconds: float = Field(default=10.0, gt=0)  # dequeued but not started this long: requeued
    max_abandons: int = Field(default=10, ge=1)  # a batch whose worker died this often: failed registry
    store_lock: Literal["redis", "local"] = "redis"  # redis: lease lock per project (multi-host safe)
    lock_lease_seconds: float = Field(default=10.0, gt=0)  # renewed every third while held
    lock_wait_seconds: float = Field(default=60.0, gt=0)
    redis_timeout_seconds: float = Field(default=5.0, gt=0)  # socket timeouts of clients we create

    # Backfill: `fixmem backfill` publishes to backfill_stream, within these limits
    backfill_rate: float = Field(default=500.0, ge=0)  # events/s; 0: no limit
    backfill_max_backlog: int = Field(default=50, ge=1)  # this run's events the consumer has not read yet
    backfill_max_queued_jobs: int = Field(default=20, ge=1)  # backfill jobs waiting for a worker
    backfill_wait_seconds: float = Field(default=600.0, ge=0)  # how long to wait for the entries
    backfill_job_max_events: int = Field(default=25, ge=1)  # events per backfill job (jobs span projects)
    backfill_parse_processes: int = Field(default=0, ge=0, le=64)  # 0: one per CPU, at most 4
    backfill_nice: int = Field(default=10, ge=0, le=19)  # `fixmem backfill` lowers its CPU priority by this

    # Whose memory and which project the commands mean (`--owner`, `--project`, `--workspace` override)
    # from_env: fixmem.identity.resolve_owner (FIXMEM_OWNER, LOGNAME, USER, the uid's login name); None: the
    # commands that need one ask for it
    owner: str | None = None
    project: str | None = None  # None: the key of the workspace (its origin remote, else its path)
    workspace: Path | None = None  # None: the current directory

    # The memory itself
    fix_memory_enabled: bool = True
    fix_memory_prompt_budget_tokens: int = Field(default=DEFAULT_PROMPT_BUDGET_TOKENS, ge=50, le=20_000)
    fix_memory_auto_recall: bool = True
    rotation_cap: int = Field(default=500, ge=1)
    # Lines past the cap an append may leave on disk (readers rotate); the log is rewritten once it would
    # hold more than cap + slack: at the cap, a rewrite per 51 appends, not one each (bench/slack_ab.py)
    rotation_slack: int = Field(default=50, ge=0)
    # A verdict (CI, benchmark, review …) that arrives before its turn's entry waits this long, then is
    # dropped (counted `expired`); also how long ids rotation dropped are remembered to drop their verdicts.
    verdict_hold_seconds: float = Field(default=7 * 86400.0, gt=0)
    # Metrics by agent: the first N harness (and model) names seen fleet-wide get a label; later ones: other
    metrics_label_cap: int = Field(default=20, ge=1, le=1000)
    notes_ceiling: int = Field(default=40, ge=0)  # notes of .fixmem/memory.md that reach the prompt
    # The impact measurement (docs/operations.md): this share of agent sessions gets no fix recall (the
    # holdback arm; notes stay on), assigned per session from (owner, project, session id, salt). 0: off.
    holdback: float = Field(default=0.0, ge=0.0, le=0.5)
    holdback_salt: str = ""
    # A memory that learns from use (docs/operations.md): recall multiplies each fix's strength by how it
    # fared when injected (0.5 to 1.5: never followed sinks, followed and fixed rises); false: off.
    learn_from_use: bool = False  # measured: +1.2% task-start precision (decision 0060): opt in
    # The meaning signal (the optional `meaning` extra, store.meaning): a task-start recall that finds
    # nothing over the floor may answer with the fixes just under it whose request means the same. Needs
    # `pip install 'fixmem[meaning]'`; without it recall stays text only. Measured: +2 of 144 held-out
    # task-start hits at the same precision, 2 of 48 fewer quiet (decision 0062): opt in.
    meaning: bool = False
    # Localization at task start (fixmem.runtime.localize): recall for a task's first prompt also weighs
    # the files of the agent's checkout that the task names (symbols, paths, strings), from an index of
    # the checkout built in a child of the recall daemon and cached under <data_dir>/hooks/localize/;
    # false: text only.
    localize: bool = True

    # HTTP API and metrics: `fixmem serve`, also started by `fixmem up`
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8765, ge=0, le=65535)
    api_tokens: SecretStr | None = None  # bearer tokens -> owners: "token1:alice,token2:bob"
    api_tokens_file: Path | None = None  # the same, one "token:owner" a line ('#' comments)
    api_ops_tokens: SecretStr | None = None  # tokens of operators -> names: the web UI's pipeline page
    api_ops_tokens_file: Path | None = None  # the same, one "token:name" a line
    # The web UI's login form: a client address with this many failed logins in the window gets 429
    ui_login_max_failures: int = Field(default=10, ge=1)
    ui_login_window_seconds: float = Field(default=60.0, gt=0)

    # `fixmem eval`
    eval_dataset: Path | None = None  # None: the labelled dataset shipped with evals.recall
    # Agent hooks (fixmem/hooks: read by a stdlib mirror, fixmem.hooks.config, checked by a test)
    api_url: str | None = None  # with api_token: hooks recall through this API instead of the data dir
    api_token: SecretStr | None = None  # the bearer token hooks present (it names the owner)
    hook_session_budget_tokens: int = Field(default=2000, ge=0)  # injected per agent session, at most
    hook_timeout_seconds: float = Field(default=0.5, gt=0)  # one recall through the API, then give up
    hook_daemon_idle_seconds: float = Field(default=1800.0, ge=0)  # the local recall daemon's life; 0: none
    hook_cold_wait_seconds: float = Field(default=5.0, ge=0)  # a prompt hook waits for a starting daemon

    @model_validator(mode="after")
    def _leases_outlive_heartbeats(self) -> Settings:
        if self.heartbeat_seconds * 2 > self.job_lease_seconds:
            raise ValueError("heartbeat_seconds must be at most half of job_lease_seconds")
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``env`` (default ``os.environ``) and keyword overrides.

        Raises SettingsError naming the variable when a value does not parse.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["owner"] = resolve_owner(overrides.get("owner"), env) or None
        values["data_dir"] = identity.resolve_data_dir(overrides.get("data_dir"), env)  # the hooks' rule
        try:
            settings = cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{ENV_PREFIX}{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
            )
            raise SettingsError(problems) from exc
        return settings

    def project_key(self, workspace: str | os.PathLike[str] | None = None) -> str:
        """The project meant: the ``project`` setting (``--project``, ``FIXMEM_PROJECT``), else the key of
        ``workspace`` (default: the ``workspace`` setting, else the current directory); see
        ``fixmem.identity.resolve_project``."""
        where = workspace if workspace is not None else self.workspace
        return resolve_project(self.project, workspace=os.fspath(where) if where else None, env={})

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with the given fields replaced (``None`` values are ignored), validated again."""
        values = self.model_dump()
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return type(self).model_validate(values)
        except ValidationError as exc:
            raise SettingsError(str(exc)) from exc
