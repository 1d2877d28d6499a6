"""The ``fixmem hook``, ``fixmem install`` and ``fixmem uninstall`` commands (click shells)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from fixmem.errors import CliError, ExitCode

HARNESSES = ("claude-code",)


@click.command("hook")
@click.argument("harness", type=click.Choice(HARNESSES))
@click.option(
    "--check",
    is_flag=True,
    help="Do not answer a hook: say what the installed hook would do now (owner, project, where it reads, "
    "whether that answers, its last calls). Exit 1 when something is wrong.",
)
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --check: the project (default: the current directory).",
)
def hook_command(harness: str, check: bool, project_dir: Path | None) -> None:
    """Answer one agent hook: the payload on stdin, the context to add on stdout; never fails the agent."""
    if check:
        report_hook(project_dir or Path.cwd())
        return
    from fixmem.hooks import claude_code  # noqa: PLC0415

    claude_code.main([])


def report_hook(project_dir: Path) -> None:
    """Print what the installed Claude Code hook would do for ``project_dir``; exit 1 on a problem."""
    from fixmem.hooks.check import check  # noqa: PLC0415

    report = check(project_dir.resolve(), os.environ, Path(os.path.expanduser("~")))
    click.echo(report.render(), nl=False)
    if report.problems:
        raise click.exceptions.Exit(int(ExitCode.FAILURE))


def _scope_options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--user", "scope", flag_value="user", help="~/.claude/settings.json (every project)."
    )(func)
    func = click.option(
        "--project",
        "scope",
        flag_value="project",
        default=True,
        help="<project>/.claude/settings.local.json, per machine (the default).",
    )(func)
    func = click.option(
        "--project-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The project (default: the current directory).",
    )(func)
    func = click.option("--dry-run", is_flag=True, help="Print the diff; change nothing.")(func)
    return func


def _changes(
    scope: str, project_dir: Path, *, install: bool, shared: bool, dry_run: bool
) -> list[tuple[Path, dict[str, Any], dict[str, Any], bool]]:
    """(file, before, after, ours installed there) of every settings file of ``scope``: ours merged into
    the target file, removed from the other. Raises InstallError."""
    from fixmem.hooks import install as setup  # noqa: PLC0415

    home = Path(os.path.expanduser("~"))
    target = setup.settings_path(scope, project_dir, home, shared=shared) if install else None
    command = setup.SHARED_COMMAND
    if install and not shared:
        token_file = setup.token_file_for(os.environ, write=not dry_run)
        command = setup.hook_command(setup.pinned(os.environ, token_file))
    out = []
    for path in setup.settings_paths(scope, project_dir, home):
        before = setup.load(path)
        into = path == target
        out.append((path, before, setup.merged(before, command) if into else setup.removed(before), into))
    return out


def _run(scope: str, project_dir: Path | None, dry_run: bool, *, install: bool, shared: bool = False) -> None:
    from fixmem.hooks import install as setup  # noqa: PLC0415

    if shared and scope == "user":
        raise CliError("--shared names the project's .claude/settings.json: not with --user", ExitCode.USAGE)
    try:
        changes = _changes(scope, project_dir or Path.cwd(), install=install, shared=shared, dry_run=dry_run)
        for path, before, after, into in changes:
            if after == before:
                if into or path.exists():
                    click.echo(f"{path}: nothing to change")
                continue
            click.echo(setup.diff(path, before, after), nl=False)
            if not dry_run:
                setup.apply(path, after)
                click.echo(f"{'installed in' if into else 'removed from'} {path}")
    except setup.InstallError as exc:
        raise CliError(str(exc), ExitCode.CONFIG_ERROR) from exc


@click.command("install")
@click.argument("harness", type=click.Choice(HARNESSES))
@_scope_options
@click.option(
    "--shared",
    is_flag=True,
    help="Write the project's .claude/settings.json (committed): `fixmem-hook` from PATH, nothing pinned.",
)
def install_command(harness: str, scope: str, project_dir: Path | None, dry_run: bool, shared: bool) -> None:
    """Add fixmem's hooks to Claude Code's settings (idempotent; your other hooks are kept). By default
    in .claude/settings.local.json, pinned to this owner, data dir, API URL, token file and Redis URL."""
    _run(scope, project_dir, dry_run, install=True, shared=shared)


@click.command("uninstall")
@click.argument("harness", type=click.Choice(HARNESSES))
@_scope_options
def uninstall_command(harness: str, scope: str, project_dir: Path | None, dry_run: bool) -> None:
    """Remove fixmem's hooks (only ours) from Claude Code's settings. Both project files are cleaned."""
    _run(scope, project_dir, dry_run, install=False)
