"""Where the review queue's approved notes go (the queue itself is ``store.notes.review``).

An approved note is written as ``fixmem notes promote`` writes it, to ``.fixmem/memory.md`` of the
workspace configured for the project: the server's ``FIXMEM_WORKSPACE`` (else its current directory)
when that checkout's project key is the project's (or ``FIXMEM_PROJECT`` names it beside
``FIXMEM_WORKSPACE``) and the viewer is the server's owner (``FIXMEM_OWNER``). The server never
writes into a path an event merely named: another owner's events could name any directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from fixmem.settings import Settings


def configured_workspace(
    settings: Settings, owner: str, project: str, *, key_of: Callable[[str], str], cwd: str | None = None
) -> Path | None:
    """The checkout approved notes of ``project`` go to, or None (then they are offered as a download).

    See the module docstring: the server's configured workspace (else its current directory) when its key
    (``key_of``: ``ingest.project_key.project_key_for``) is ``project`` and ``owner`` is the server's.
    """
    if settings.owner is None or owner != settings.owner:
        return None
    where = settings.workspace if settings.workspace is not None else Path(cwd or os.getcwd())
    if not where.is_dir():
        return None
    if settings.workspace is not None and settings.project == project:  # configured together
        return where.resolve()
    try:
        key = key_of(str(where))
    except (OSError, ValueError):
        return None
    return where.resolve() if key == project else None
