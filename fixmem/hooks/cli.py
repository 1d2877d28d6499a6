"""The ``fixmem hook``, ``fixmem install`` and ``fixmem uninstall`` commands (click shells)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from fixmem.errors import CliError, ExitCode

HARNESSES = ("claude-code",)


@click.command("hook")
@click.argument("harness", type=click.Choice(HARNESSES))
def hook_command(harness: str) -> None:
    """Answer one agent hook: the payload on stdin, the context to add on stdout; never fails the agent."""
    from fixmem.hooks import claude_code  # noqa: PLC0415

    claude_code.main([])


def _scope_options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--user", "scope", flag_value="user", help="~/.claude/settings.json (every project)."
    )(func)
    func = click.option(
        "--project",
        "scope",
        flag_value="project",
        default=True,
        help="<project>/.claude/settings.json (the default).",
    )(func)
    func = click.option(
        "--project-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The project (default: the current directory).",
    )(func)
    func = click.option("--dry-run", is_flag=True, help="Print the diff; change nothing.")(func)
    return func


def _run(harness: str, scope: str, project_dir: Path | None, dry_run: bool, *, install: bool) -> None:
    from fixmem.hooks import install as setup  # noqa: PLC0415

    path = setup.settings_path(scope, project_dir or Path.cwd(), Path(os.path.expanduser("~")))
    try:
        before = setup.load(path)
        after = setup.merged(before, setup.hook_command()) if install else setup.removed(before)
        change = setup.diff(path, before, after) if after != before else ""
        if not change:
            click.echo(f"{path}: nothing to change")
            return
        click.echo(change, nl=False)
        if not dry_run:
            setup.apply(path, after)
            click.echo(f"{'installed in' if install else 'removed from'} {path}")
    except setup.InstallError as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc


@click.command("install")
@click.argument("harness", type=click.Choice(HARNESSES))
@_scope_options
def install_command(harness: str, scope: str, project_dir: Path | None, dry_run: bool) -> None:
    """Add fixmem's hooks to Claude Code's settings (idempotent; your other hooks are kept)."""
    _run(harness, scope, project_dir, dry_run, install=True)


@click.command("uninstall")
@click.argument("harness", type=click.Choice(HARNESSES))
@_scope_options
def uninstall_command(harness: str, scope: str, project_dir: Path | None, dry_run: bool) -> None:
    """Remove fixmem's hooks (only ours) from Claude Code's settings."""
    _run(harness, scope, project_dir, dry_run, install=False)
