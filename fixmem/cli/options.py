"""The options several ``fixmem`` commands share, and their settings loader (nothing heavy imported)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings

redis_url_option = click.option(
    "--redis-url", default=None, help="Redis URL (default: FIXMEM_REDIS_URL, else the running `fixmem up`)."
)
data_dir_option = click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="Data directory (FIXMEM_DATA_DIR)."
)
verbose_option = click.option("-v", "--verbose", is_flag=True, help="Log debug lines and RQ's per-job lines.")
owner_option = click.option(
    "--owner", default=None, help="Whose memory (default: FIXMEM_OWNER, else your login name)."
)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment with the given flag values on top (None: not given)."""
    return Settings.from_env(**overrides)


def require_owner(settings: Settings) -> str:
    """``settings.owner`` (``--owner``, else ``FIXMEM_OWNER``, else the login name).

    Raises CliError (exit 2) when there is none: this uid has no login name and neither was given.
    """
    if not settings.owner:
        raise CliError("cannot tell whose memory: pass --owner or set FIXMEM_OWNER", ExitCode.USAGE)
    return settings.owner
