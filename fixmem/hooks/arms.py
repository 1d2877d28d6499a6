"""The impact measurement's session side: each agent session's arm, what it was shown, what it followed.

- ``arm_for``: a session's arm, ``memory`` or ``holdback``, from (owner, project, session id, salt) and
  the holdback share (``FIXMEM_HOLDBACK``, ``FIXMEM_HOLDBACK_SALT``). Deterministic (FNV-1a, 64 bits, no
  ``hashlib`` on the hook's path); the session keeps the arm it got at its first contact.
- ``note_shown``: the fixes chosen for the session, with the surface and tier. In a ``memory`` session
  they were injected; in a ``holdback`` session nothing is injected and they are the *shadow*: what would
  have been (the same recall, the same choice, the same budget).
- ``note_follows``: which shown fixes the agent followed. A follow is an action after the fix was shown:
  an edit (``Edit``/``Write``) of one of its files, or a failed command whose error the store matches to
  the fix's error signature (``Candidate.same_error``). Called before the event's own fixes are noted, so
  the call that showed a fix never follows it. The same rule for shadow fixes: follow rates compare.
- ``recall_record``: the session's record as the turn event carries it (``harness_meta.recall``).

Pure functions of the session state (``fixmem.hooks.session.SessionState``), standard library only:
the hook's fast path imports this module (``fixmem/hooks/config.py`` states the rules).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fixmem.hooks.reader import Candidate
    from fixmem.hooks.session import SessionState

MEMORY = "memory"
HOLDBACK = "holdback"
ARMS = (MEMORY, HOLDBACK)
CLOSE, POSSIBLE = "close", "possible"
POSSIBLE_HEADER = "Possibly related:"  # store.recall.prompt.POSSIBLE_HEADER (checked by a test)
MAX_SHOWN = 200  # fixes a session's record keeps (a runaway session stays a small file)
_FNV_OFFSET, _FNV_PRIME, _MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    """The 64-bit FNV-1a hash of ``data``."""
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value


def unit(owner: str, project: str, session_id: str, salt: str) -> float:
    """Where the session falls in [0, 1): its place in the assignment."""
    material = "\x00".join((owner, project, session_id, salt)).encode("utf-8", "surrogatepass")
    mixed = fnv1a64(material)
    mixed ^= mixed >> 29  # a final mix: FNV's high bits follow its last bytes too closely
    mixed = (mixed * 0xBF58476D1CE4E5B9) & _MASK
    mixed ^= mixed >> 32
    return mixed / float(1 << 64)


def arm_for(owner: str, project: str, session_id: str, *, share: float, salt: str = "") -> str:
    """``holdback`` for a ``share`` of sessions (0: none), else ``memory``. Pure, deterministic."""
    if not share > 0:
        return MEMORY
    return HOLDBACK if unit(owner, project, session_id, salt) < share else MEMORY


def with_arm(
    state: SessionState, owner: str, project: str, session_id: str, *, share: float, salt: str
) -> SessionState:
    """``state`` with its arm: the one it has, else ``arm_for`` now (its first contact). Pure."""
    if state.arm:
        return state
    return state.replace(arm=arm_for(owner, project, session_id, share=share, salt=salt))


def shown_of(
    candidates: Iterable[Candidate], chosen: Sequence[str]
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(id, tier, files) of the ``chosen`` candidates, for ``note_shown``."""
    by_id = {c.entry_id: c for c in candidates}
    return [(i, tier_of(by_id[i].line), by_id[i].files) for i in chosen if i in by_id]


def shown_block(
    state: SessionState, block: str, chosen: Sequence[str], trace: dict[str, object], *, found: bool
) -> str:
    """The block a call prints: ``block``, or nothing in a ``holdback`` session; ``trace`` (the hook's
    call log) says which, with the ids injected or shadowed."""
    trace["arm"] = state.arm
    if state.arm == HOLDBACK:
        trace["shadow"] = list(chosen)
        trace["result"] = "holdback session: no fix injected (the shadow recorded)"
        return ""
    trace["injected"] = list(chosen)
    if not block:
        trace["result"] = "injected already, or over the budget" if found else "no relevant fix"
    return block


def tier_of(line: str) -> str:
    """``possible`` for a line under the block's "Possibly related:" heading, else ``close``."""
    return POSSIBLE if line.startswith(POSSIBLE_HEADER) else CLOSE


def _same(path: str, files: Iterable[str]) -> bool:
    wanted = os.path.normpath(path)
    return any(os.path.normpath(f) == wanted for f in files)


def note_follows(
    state: SessionState, *, edited: str | None = None, same_error: Iterable[str] = ()
) -> SessionState:
    """``state`` with the shown fixes followed by this action added: an edit of ``edited`` (a path
    relative to the workspace) touching their files, or an error matched to their signature (the ids in
    ``same_error``). Pure."""
    matched = set(same_error)
    followed = list(state.followed)
    for entry_id, _surface, _tier, files in state.shown:
        if entry_id in followed:
            continue
        if entry_id in matched or (edited is not None and _same(edited, files)):
            followed.append(entry_id)
    return state if len(followed) == len(state.followed) else state.replace(followed=tuple(followed))


def note_shown(
    state: SessionState, chosen: Sequence[tuple[str, str, tuple[str, ...]]], surface: str
) -> SessionState:
    """``state`` with the ``chosen`` fixes (id, tier, files) shown on ``surface``. Pure."""
    known = {s[0] for s in state.shown}
    added = tuple((i, surface, tier, files) for i, tier, files in chosen if i not in known)
    return state.replace(shown=(*state.shown, *added)[:MAX_SHOWN]) if added else state


def recall_record(state: SessionState) -> dict[str, object] | None:
    """The session's record for ``harness_meta.recall``: its arm, the fixes injected (``memory``) or the
    shadow (``holdback``) with their surface and tier, and the ids followed; None before first contact."""
    if state.arm not in ARMS:
        return None
    shown = [{"id": i, "surface": s, "tier": t} for i, s, t, _files in state.shown]
    return {
        "arm": state.arm,
        "injected": shown if state.arm == MEMORY else [],
        "shadow": shown if state.arm == HOLDBACK else [],
        "followed": list(state.followed),
    }


def current_session_path(sessions_dir: str, owner: str, project: str) -> str:
    """The file naming the last agent session the Claude Code hook saw for (owner, project): how the MCP
    server, started by the same agent, learns the session it serves."""
    key = fnv1a64("\x00".join((owner, project)).encode("utf-8", "surrogatepass"))
    return os.path.join(sessions_dir, f"current-{key:016x}.txt")
