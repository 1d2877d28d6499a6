"""The options several ``fixmem`` commands share, and their settings loader (nothing heavy imported)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from fixmem.settings import Settings

redis_url_option = click.option(
    "--redis-url", default=None, help="Redis URL (default: FIXMEM_REDIS_URL, else the running `fixmem up`)."
)
data_dir_option = click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="Data directory (FIXMEM_DATA_DIR)."
)
verbose_option = click.option("-v", "--verbose", is_flag=True, help="Log debug lines and RQ's per-job lines.")


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment with the given flag values on top (None: not given)."""
    return Settings.from_env(**overrides)
