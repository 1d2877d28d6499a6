"""``fixmem serve`` (HTTP API and /metrics), ``fixmem tool-schema``, ``fixmem mcp`` (the tool over MCP)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

import click

from fixmem import wiring
from fixmem.api.auth import TokenConfigError
from fixmem.cli.options import (
    data_dir_option,
    load_settings,
    owner_option,
    redis_url_option,
    require_owner,
    verbose_option,
)
from fixmem.errors import CliError, ExitCode
from fixmem.mcp.tool import SCHEMA_FORMATS, SchemaFormat, ToolContext, tool_schema
from fixmem.runtime import logs
from fixmem.settings import Settings


@click.command("serve")
@click.option(
    "--host",
    default=None,
    help=f"Interface to listen on (FIXMEM_API_HOST, {Settings.model_fields['api_host'].default}).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help=f"Port (FIXMEM_API_PORT, {Settings.model_fields['api_port'].default}).",
)
@click.option("--fd", type=click.IntRange(0), default=None, hidden=True)  # `up`: a listening socket to serve
@click.option("--parent-pid", type=int, default=None, hidden=True)
@redis_url_option
@data_dir_option
@verbose_option
def serve_command(
    *,
    host: str | None,
    port: int | None,
    fd: int | None,
    parent_pid: int | None,
    redis_url: str | None,
    data_dir: Path | None,
    verbose: bool,
) -> None:
    """Serve the HTTP API (recall, stats, forget per token owner) and /metrics for Prometheus.

    Tokens: FIXMEM_API_TOKENS="token1:alice,token2:bob" and/or FIXMEM_API_TOKENS_FILE (token:owner lines).
    """
    from fixmem.api.server import PortUnavailable, build_context, run  # noqa: PLC0415 - the web stack only here

    settings = load_settings(redis_url=redis_url, data_dir=data_dir, api_host=host, api_port=port)
    logs.configure("api", verbose=verbose)
    try:
        ctx = build_context(settings)
    except TokenConfigError as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc
    try:
        run(ctx, host=settings.api_host, port=settings.api_port, parent_pid=parent_pid, fd=fd)
    except PortUnavailable as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc


@click.command("tool-schema")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(SCHEMA_FORMATS),
    default="openai",
    show_default=True,
    help="openai: a Chat Completions `tools` item; anthropic: a Messages API tool; mcp: a tools/list item.",
)
def tool_schema_command(fmt: str) -> None:
    """Print the recall_fixes tool definition as JSON."""
    click.echo(json.dumps(tool_schema(cast(SchemaFormat, fmt)), indent=2))


@click.command("mcp")
@owner_option
@click.option(
    "--project",
    default=None,
    help="Project key (FIXMEM_PROJECT; default: the workspace's origin remote as host/owner/repo, else "
    "its path).",
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The agent's checkout (FIXMEM_WORKSPACE; default: the current directory).",
)
@data_dir_option
@verbose_option
def mcp_command(
    *, owner: str | None, project: str | None, workspace: Path | None, data_dir: Path | None, verbose: bool
) -> None:
    """Serve the recall_fixes tool over MCP on stdin/stdout (add it to your agent's MCP servers)."""
    from fixmem.mcp.server import run_stdio  # noqa: PLC0415 - load the MCP SDK only here

    settings = load_settings(data_dir=data_dir, owner=owner, project=project, workspace=workspace)
    logs.configure("mcp", verbose=verbose)  # stderr: stdout is the protocol
    ctx, line = mcp_context(settings, cwd=os.getcwd())
    click.echo(line, err=True)
    run_stdio(ctx)


def mcp_context(settings: Settings, *, cwd: str) -> tuple[ToolContext, str]:
    """The tool's context for ``settings`` (whose memory, which project, which checkout) and the line
    ``fixmem mcp`` prints about it at start. Raises CliError (exit 2) when no owner is known."""
    from ingest.workspaces import resolve_workspace  # noqa: PLC0415

    who = require_owner(settings)
    cwd = str(Path(cwd).absolute())
    key = settings.project_key()
    where, why = resolve_workspace(
        key, given=settings.workspace, cwd=cwd, recorded=lambda: _recorded_workspaces(settings, who, key)
    )
    store = wiring.make_store(settings, None)  # reads only: no lock (Redis only to find the workspace)
    ctx = ToolContext.from_settings(settings, store, owner=who, project_key=key, workspace=where)
    return ctx, start_line(who, key, len(store.read(who, key).entries), where, why)


def start_line(owner: str, project: str, fixes: int, workspace: str | None, why: str) -> str:
    """What ``fixmem mcp`` prints on stderr at start: whose memory, which project, which checkout."""
    where = f"workspace {workspace} ({why})" if workspace else f"workspace {why}"
    return f"fixmem mcp: owner {owner}, project {project} ({fixes} fixes), {where}"


def _recorded_workspaces(settings: Settings, owner: str, project: str) -> list[str]:
    """The workspaces the owner's events of ``project`` came from, when a Redis is configured or running."""
    from ingest.workspaces import workspaces_of  # noqa: PLC0415

    if wiring.resolve_redis_url(settings) is None:
        return []
    return workspaces_of(wiring.redis_client(settings), owner, project)
