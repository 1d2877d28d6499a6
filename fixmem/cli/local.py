"""``fixmem down`` and ``fixmem token``: the local install ``fixmem up`` keeps in its data directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fixmem.cli.options import data_dir_option, load_settings
from fixmem.errors import CliError, ExitCode
from fixmem.runtime.down import stop_up
from fixmem.runtime.tokens import (
    Kind,
    TokenStoreError,
    list_tokens,
    new_token,
    revoke,
    tokens_path,
)


@click.command("down")
@click.option(
    "--timeout", type=click.FloatRange(min=0), default=60.0, show_default=True,
    help="Seconds `up` has to stop after SIGTERM before it gets SIGKILL.",
)  # fmt: skip
@data_dir_option
def down_command(*, timeout: float, data_dir: Path | None) -> None:
    """Stop the `fixmem up` of a data directory and any Redis of it that survives."""
    settings = load_settings(data_dir=data_dir)
    out = sys.stdout
    try:
        stopped = stop_up(settings.data_dir, out, timeout)
    except RuntimeError as exc:
        raise CliError(f"fixmem down: {exc}", ExitCode.FAILURE) from exc
    if not stopped:
        click.echo(f"down       nothing runs with data dir {settings.data_dir}")


@click.group("token")
def token_group() -> None:
    """List, mint or revoke the API tokens `fixmem up` keeps in its data directory."""


def _configured_note(data_dir: Path) -> None:
    settings = load_settings(data_dir=data_dir)
    if settings.api_tokens is not None or settings.api_tokens_file is not None:
        click.echo(
            "note: FIXMEM_API_TOKENS / FIXMEM_API_TOKENS_FILE are set: `fixmem up` serves those, not these",
            err=True,
        )


def _data_dir(data_dir: Path | None) -> Path:
    return load_settings(data_dir=data_dir).data_dir


@token_group.command("list")
@data_dir_option
def token_list(*, data_dir: Path | None) -> None:
    """Show each token's kind, name and fingerprint (never the token)."""
    where = _data_dir(data_dir)
    try:
        rows = list_tokens(where)
    except TokenStoreError as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc
    if not rows:
        click.echo(f"no tokens in {where} (`fixmem up` makes them, `fixmem token new` mints one)")
    for row in rows:
        click.echo(f"{row.kind:<9} {row.fingerprint}  {row.name}")
    _configured_note(where)


@token_group.command("new")
@click.option(
    "--owner", "name", required=True, help="Whose token (the owner; an operator's name with --operator)."
)
@click.option("--operator", is_flag=True, help="An operator's token (the web UI's Pipeline page).")
@data_dir_option
def token_new(*, name: str, operator: bool, data_dir: Path | None) -> None:
    """Mint a token and print it (the only time it is shown); a running `up` takes it at once."""
    where = _data_dir(data_dir)
    kind: Kind = "operator" if operator else "owner"
    try:
        token = new_token(where, kind, name)
    except TokenStoreError as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc
    click.echo(token)
    click.echo(f"({kind} {name}, saved in {tokens_path(where, kind)})", err=True)
    _configured_note(where)


@token_group.command("revoke")
@click.argument("fingerprint", required=False)
@click.option("--owner", "name", default=None, help="Revoke every token of this name instead.")
@click.option("--operator", is_flag=True, help="With --owner: only operators' tokens.")
@data_dir_option
def token_revoke(*, fingerprint: str | None, name: str | None, operator: bool, data_dir: Path | None) -> None:
    """Revoke the token whose fingerprint starts with FINGERPRINT, or every token of --owner."""
    if (fingerprint is None) == (name is None):
        raise CliError("give a FINGERPRINT (see `fixmem token list`) or --owner, not both", ExitCode.USAGE)
    where = _data_dir(data_dir)
    kind: Kind | None = "operator" if operator else None
    try:
        removed = revoke(where, prefix=fingerprint, name=name, kind=kind)
    except TokenStoreError as exc:
        raise CliError(str(exc), ExitCode.NOT_FOUND) from exc
    for row in removed:
        click.echo(f"revoked   {row.kind:<9} {row.fingerprint}  {row.name}")
