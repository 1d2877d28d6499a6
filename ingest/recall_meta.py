"""``harness_meta.recall``: what fix recall did in the turn's agent session, for the impact measurement.

The hooks and the harness adapter (``fixmem.hooks.arms``) keep it per session and the Stop publisher puts
it in each turn it publishes: the session's arm (``memory``: fixes injected; ``holdback``: none, the
measurement's control), the fixes injected with the surface and tier, in a holdback session the *shadow*
(the fixes that would have been injected), and the ids the agent *followed* (edited one of the fix's files,
or met its error signature, after it was shown). Never part of the turn's id (``schema._NOT_IDENTITY``): the
same turn published with a longer record is the same turn. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_SHOWN = 200  # fixes one session's record lists (fixmem.hooks.arms.MAX_SHOWN)
ENTRY_ID = r"^fix-[0-9a-f]{16}$"
Arm = Literal["memory", "holdback"]


class RecallShown(BaseModel):
    """One fix shown (or, in a holdback session, that would have been): its entry id, surface and tier."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(pattern=ENTRY_ID, description="The fix's entry id (`fix-` + 16 hex).")
    surface: str = Field(
        default="", max_length=32, description="Where: `claude-code`, `harness`, `mcp` (the tool)."
    )
    tier: str = Field(default="", max_length=16, description="`close` or `possible`: the block's section.")


class RecallMeta(BaseModel):
    """The session's impact record as of this turn (it only grows during a session)."""

    model_config = ConfigDict(extra="ignore")

    arm: Arm = Field(description="The session's arm, assigned at its first contact with fixmem.")
    injected: list[RecallShown] = Field(
        default_factory=list, max_length=MAX_SHOWN, description="Fixes injected (a `memory` session)."
    )
    shadow: list[RecallShown] = Field(
        default_factory=list,
        max_length=MAX_SHOWN,
        description="Fixes that would have been injected (a `holdback` session).",
    )
    followed: list[str] = Field(
        default_factory=list,
        max_length=MAX_SHOWN,
        description="Ids of injected or shadow fixes the agent followed: after they were shown it edited "
        "one of their files or met their error signature.",
    )
