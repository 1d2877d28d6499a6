"""``fixmem doctor``: check the owner's fix logs, and with ``--fix`` repair them (``FixStore.repair``);
then, when the current directory's Claude Code settings hold fixmem's hook, what that hook would do now
(``fixmem.hooks.check``, as ``fixmem hook claude-code --check``), else the state of the current checkout's
index that task-start recall localizes in (``fixmem.runtime.localize.state``).

What it checks in the logs: lines out of time order whose stored ``supersedes`` the store decides again on
every read (a late replay, or a log written before supersession went by the turns' time:
``store.lineage``). ``--fix`` rewrites each such log in time order with the decided links, under the same
lock the workers take; what recall answers does not change.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from fixmem import wiring
from fixmem.cli.options import data_dir_option, load_settings, owner_option, require_owner
from fixmem.errors import ExitCode
from store.paths import canonical_key


@click.command("doctor")
@owner_option
@click.option("--project", default=None, help="Only this project key (default: every project of the owner).")
@click.option("--fix", "fix", is_flag=True, help="Repair what is found (one atomic rewrite per log).")
@data_dir_option
def doctor_command(*, owner: str | None, project: str | None, fix: bool, data_dir: Path | None) -> None:
    """Check the owner's fix logs (lineages out of time order); --fix repairs them."""
    settings = load_settings(data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    store = wiring.make_store(settings, None)
    keys = [project] if project is not None else store.projects(owner)
    pending = 0
    for key in keys:
        found = store.repair(owner, key, check=not fix)
        name = canonical_key(key)
        if not found.needed:
            click.echo(f"ok      {name}")
            continue
        what = f"{found.moved} lines out of time order, {found.relinked} supersedes links to rewrite"
        if found.written:
            click.echo(f"fixed   {name}: {what}")
        else:
            pending += 1
            click.echo(f"needs   {name}: {what} (run `fixmem doctor --fix`)")
    if not keys:
        click.echo(f"no project for owner {owner!r} in {store.root}")
    problems = _hook_problems(Path.cwd())
    if problems is None:
        problems = _index_problems(settings.data_dir, settings.localize)
    if problems or pending:
        raise click.exceptions.Exit(int(ExitCode.FAILURE))


def _hook_problems(project_dir: Path) -> int | None:
    """Print what the installed Claude Code hook would do; its problems (None: no hook installed here)."""
    from fixmem.hooks.check import check, installed_commands  # noqa: PLC0415

    home = Path(os.path.expanduser("~"))
    if not installed_commands(project_dir, home):
        return None
    report = check(project_dir, os.environ, home)
    click.echo("\nhook claude-code (as `fixmem hook claude-code --check`):")
    click.echo(report.render(), nl=False)
    return len(report.problems)


def _index_problems(data_dir: Path, enabled: bool) -> int:
    """Print the state of the current checkout's index (cached where the hooks keep it); 1 on a problem."""
    from fixmem.runtime.localize.state import index_state  # noqa: PLC0415

    state = index_state(str(data_dir / "hooks" / "localize"), os.getcwd(), enabled=enabled, now=time.time())
    click.echo(f"\nlocalize   {state.text}")
    return int(state.problem)
