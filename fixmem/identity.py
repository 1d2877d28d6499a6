"""Whose memory, which project and where it is kept: ``resolve_owner``, ``resolve_project`` and
``resolve_data_dir``, the one rule of every surface.

The CLI, the Python API, the HTTP API's generated token, the MCP tool and the agent hooks all ask here,
so that one shell never means two owners (``LOGNAME=alice USER=bob`` once made the hook read bob's
memory and ``fixmem recall`` alice's). Standard library only, and only ``os`` at import time: the hooks'
fast path imports this module (``fixmem/hooks/config.py`` states that path's rules).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hooks import this module)
if TYPE_CHECKING:
    from collections.abc import Mapping

OWNER_VARIABLES = ("FIXMEM_OWNER", "LOGNAME", "USER")  # in this order, after an explicit value
PROJECT_VARIABLE = "FIXMEM_PROJECT"
DATA_DIR_VARIABLE = "FIXMEM_DATA_DIR"


def uid_login_name() -> str:
    """The login name of this process's uid in the password database ("" when it has none: a container's
    anonymous uid)."""
    try:
        import pwd  # noqa: PLC0415 - only when no variable names the owner

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return ""


def resolve_owner(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Whose memory: ``explicit`` (a ``--owner`` flag), else ``FIXMEM_OWNER``, else ``LOGNAME``, else
    ``USER``, else the uid's login name; "" when none of them names one. ``env``: default ``os.environ``."""
    if explicit and explicit.strip():
        return explicit.strip()
    env = os.environ if env is None else env
    for name in OWNER_VARIABLES:
        value = (env.get(name) or "").strip()
        if value:
            return value
    return uid_login_name()


def default_data_dir(env: Mapping[str, str] | None = None) -> str:
    """``$XDG_DATA_HOME/fixmem``, else ``$HOME/.local/share/fixmem`` (no ``HOME``: the uid's home)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_DATA_HOME")
    base = xdg or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "fixmem")


def resolve_data_dir(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> str:
    """Where the memory is kept: ``explicit`` (a ``--data-dir`` flag), else ``FIXMEM_DATA_DIR``, else
    ``default_data_dir``; ``~`` expanded, a relative path left relative. ``env``: default ``os.environ``."""
    env = os.environ if env is None else env
    given = os.fspath(explicit).strip() if explicit is not None else ""
    given = given or (env.get(DATA_DIR_VARIABLE) or "").strip()
    return os.path.expanduser(given or default_data_dir(env))


def hook_spool_dir(data_dir: str | os.PathLike[str]) -> str:
    """Where the Claude Code Stop publisher keeps the turns Redis did not take (``ingest.spool``), under
    the data directory: the hooks send them on their next prompt, ``fixmem up`` when it starts."""
    return os.path.join(os.fspath(data_dir), "hooks", "spool")


def resolve_project(
    explicit: str | None = None, *, workspace: str | None = None, env: Mapping[str, str] | None = None
) -> str:
    """Which project: ``explicit`` (a ``--project`` flag), else ``FIXMEM_PROJECT``, else the key of
    ``workspace`` (default: the current directory): its origin remote as ``host/owner/repo``, else its
    absolute path (``ingest.project_key.project_key_for``, imported only then)."""
    if explicit and explicit.strip():
        return explicit
    env = os.environ if env is None else env
    given = (env.get(PROJECT_VARIABLE) or "").strip()
    if given:
        return given
    from ingest.project_key import project_key_for  # noqa: PLC0415 - re and pathlib: only when needed

    return project_key_for(os.fspath(workspace) if workspace else os.getcwd())
