"""``fixmem impact``: does the memory help? Sessions with fix recall against the holdback sessions."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import click

from fixmem import service, wiring
from fixmem.cli.memory import require_project
from fixmem.cli.options import data_dir_option, load_settings, owner_option, require_owner
from fixmem.errors import CliError, ExitCode
from store.impact import HOLDBACK, MEASURES, MEMORY, ImpactReport
from store.paths import canonical_key

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
FIXES_SHOWN = 10  # the most shown fixes the text report lists (--json has them all)


def parse_since(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``2w`` or seconds, in seconds. Raises CliError (exit 2) otherwise."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise CliError(f"--since {text!r}: give a duration such as 30d, 12h, 90m or 2w", ExitCode.USAGE)
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def render(report: ImpactReport) -> str:
    """The report as the terminal shows it."""
    lines = [
        f"{'arm':<10} {'sessions':>8}  {'no entry':>8}  {'fixed':>7}  {'verdict-backed':>18}  "
        f"{'claimed':>7}  follow rate"
    ]
    for name in (MEMORY, HOLDBACK):
        a = report.arms[name]
        verdict = f"{_pct(a.ratio('verdict'))} of {a.verdict_sessions}"
        follow = f"{_pct(a.follow_rate)} of {a.shown} {'shown' if name == MEMORY else 'shadow'}"
        lines.append(
            f"{name:<10} {a.sessions:>8}  {a.no_entry:>8}  {_pct(a.ratio('outcome')):>7}  {verdict:>18}  "
            f"{_pct(a.ratio('claimed')):>7}  {follow}"
        )
    for measure in MEASURES:
        lift = report.lifts[measure]
        label = {"outcome": "lift", "verdict": "  verdicts", "claimed": "  claimed"}[measure]
        if lift is None:
            lines.append(
                f"{label:<10} - (an arm has no session{' with a verdict' if measure == 'verdict' else ''})"
            )
            continue
        verdict = "excludes 0" if lift.excludes_zero else "includes 0"
        lines.append(
            f"{label:<10} {lift.difference * 100:+.1f} points, 95% interval {lift.low * 100:+.1f} to "
            f"{lift.high * 100:+.1f} ({verdict})"
        )
    if report.needed is None:
        lines.append("power      - (needs sessions in both arms: set FIXMEM_HOLDBACK, e.g. 0.1)")
    else:
        more = max(0, report.needed - report.sessions)
        lines.append(
            f"power      a {report.effect * 100:.0f}-point lift needs {report.needed} sessions at this "
            f"holdback share ({more} more)"
        )
    if report.fixes:
        lines.append(f"{'fix':<21} {'injected':>8} {'shadow':>6} {'followed':>8} {'fixed when followed':>20}")
        for fix in report.fixes[:FIXES_SHOWN]:
            when = f"{fix.followed_fixed}/{fix.followed}" if fix.followed else "-"
            lines.append(f"{fix.entry_id:<21} {fix.injected:>8} {fix.shadow:>6} {fix.followed:>8} {when:>20}")
    return "\n".join(lines)


@click.command("impact")
@owner_option
@click.option("--project", default=None, help="One project key (default: every project of the owner).")
@click.option(
    "--since", default="30d", show_default=True, help="Sessions that ended this recently (30d, 12h, 2w)."
)
@click.option(
    "--effect", type=click.FloatRange(0.001, 1.0), default=0.10, show_default=True,
    help="The lift (absolute, 0..1) the power line sizes the measurement for.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@data_dir_option
def impact_command(
    *, owner: str | None, project: str | None, since: str, effect: float, as_json: bool, data_dir: Path | None
) -> None:
    """Does the memory help: sessions with fix recall against the holdback arm (FIXMEM_HOLDBACK)."""
    settings = load_settings(data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    window = parse_since(since)
    store = wiring.make_store(settings, None)
    if project and not store.sessions(owner, project):  # a project whose sessions made no entry yet
        require_project(store, owner, project)
    report = service.impact(store, owner, project=project, since=time.time() - window, effect=effect)
    if as_json:
        body = {
            "owner": owner,
            "project": canonical_key(project) if project else None,
            "since_seconds": window,
        }
        click.echo(json.dumps({**body, **report.to_dict()}))
        return
    where = f"project {canonical_key(project)}" if project else "every project"
    click.echo(f"impact     owner {owner}, {where}, sessions that ended in the last {since.strip()}")
    click.echo(render(report))
