"""One frozen, typed settings object, built at the entrypoint from an environment mapping.

Nothing here reads ``os.environ`` at import time: call ``Settings.from_env()`` (tests pass their own
mapping). Every field maps to ``FIXMEM_<FIELD NAME IN UPPER CASE>``; CLI flags override fields through
``Settings.with_overrides``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV_PREFIX = "FIXMEM_"


def default_data_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fixmem``, else ``~/.local/share/fixmem``."""
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", str(Path.home()))) / ".local" / "share"
    return base / "fixmem"


class SettingsError(ValueError):
    """Raised when an environment variable or flag holds a value of the wrong form."""


class Settings(BaseModel):
    """Everything configurable, in one place. Durations are seconds unless the name says otherwise."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Where things live
    data_dir: Path = Field(default=Path("~/.local/share/fixmem"))
    redis_url: str | None = None  # None: `fixmem up` starts an embedded redis-server

    # Wire contract
    stream: str = "fixmem:turns"
    max_event_bytes: int = Field(default=1 << 20, ge=1024)

    # The memory itself
    fix_memory_enabled: bool = True
    fix_memory_prompt_budget_tokens: int = Field(default=600, ge=50, le=20_000)
    fix_memory_auto_recall: bool = True
    rotation_cap: int = Field(default=500, ge=1)
    notes_ceiling: int = Field(default=40, ge=0)  # notes of .fixmem/memory.md that reach the prompt

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``env`` (default ``os.environ``) and keyword overrides.

        Raises SettingsError naming the variable when a value does not parse.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {"data_dir": default_data_dir(env)}
        for name in cls.model_fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            settings = cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{ENV_PREFIX}{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
            )
            raise SettingsError(problems) from exc
        return settings.model_copy(update={"data_dir": settings.data_dir.expanduser()})

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with the given fields replaced (``None`` values are ignored), validated again."""
        values = self.model_dump()
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return type(self).model_validate(values)
        except ValidationError as exc:
            raise SettingsError(str(exc)) from exc
