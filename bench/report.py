"""The Markdown table of the suite's results, and its place in docs/benchmarks.md (between two markers).

Every row states the measured figure, its goal and whether it was met; a figure that is missing (its
benchmark did not run) says so. Nothing here measures: it reads ``bench/results/*.json``.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

from bench.throughput import speedups

BEGIN = "<!-- bench:begin (written by `python -m bench`; do not edit by hand) -->"
END = "<!-- bench:end -->"


FILES = {"extraction": "extraction_per_core", "backfill": "backfill_end_to_end"}  # as bench.suite writes them


def _load(results: Path, name: str) -> dict[str, Any] | None:
    """A benchmark's result, or None when it is missing or failed (``_failures`` lists those)."""
    path = results / f"{FILES.get(name, name)}.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("summary") else None


def _failures(results: Path) -> list[tuple[str, str]]:
    out = []
    names = ("throughput", "latency", "recall", "extraction", "backfill", "scaling", "startup", "hooks", "ui")
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads((results / f"{FILES.get(name, name)}.json").read_text())
            if data.get("error"):
                out.append((name, str(data["error"])))
    return out


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{value:,}" if isinstance(value, int) else str(value)
    return f"{text}{unit}"


def _met(flag: Any) -> str:
    return "yes" if flag is True else "**no**" if flag is False else "—"


def _versus(row: dict[str, Any]) -> str:
    """The speedup over one job per event on RQ's SimpleWorker, and beside it on RQ's forking Worker."""
    fork = (
        f"forking Worker {_fmt(row['baseline_fork_events_per_s'])}/s: {row['speedup_vs_fork']}x"
        if row["speedup_vs_fork"] is not None
        else "forking Worker not measured"
    )
    if row["speedup_vs_baseline"] is None:
        return f" (one job per event on SimpleWorker not measured with {row['workers']} worker(s); {fork})"
    return (
        f" = {row['speedup_vs_baseline']}x one-job-per-event on SimpleWorker "
        f"({_fmt(row['baseline_events_per_s'])}/s; {fork})"
    )


def _rows(results: Path) -> list[tuple[str, str, str, str]]:
    """(benchmark, measured, goal, met) rows."""
    rows: list[tuple[str, str, str, str]] = []
    t = _load(results, "throughput")
    if t:
        for row in (speedups(run, t["baselines"]) for run in t["runs"]):
            rows.append(
                (
                    f"1. Throughput, {row['workers']} worker(s), {_fmt(row['events'])} events",
                    f"{_fmt(row['events_per_s'])} events/s{_versus(row)}; {row['events_per_job']} events/job",
                    ">= 10,000/s; >= 30x one-job-per-event (SimpleWorker)",
                    f"{_met(row['events_per_s'] >= 10_000)}; "
                    + _met(None if row["speedup_vs_baseline"] is None else row["speedup_vs_baseline"] >= 30),
                )
            )
    lat = _load(results, "latency")
    if lat:
        s = lat["summary"]
        rate = _fmt(s["offered_events_per_s"])
        for key, label, goal in (
            ("alone", "alone", "p99 <= 1 s"),
            ("during_backfill", "during a backfill", "live p99 <= 1 s"),
        ):
            r = s[key]
            p99 = (
                f"p99 {_fmt(r['probe_p99_ms'], ' ms')}"
                if r["probe_p99_ms"] is not None
                else f"p99 >= {_fmt(r['probe_p99_at_least_ms'], ' ms')} "
                f"({r['probe_never_seen']} probes not on disk "
                f"{_fmt(r.get('drain_seconds', 30))} s after the window)"
            )
            extra = f"; {_fmt(r['backfill_events'])} backfill events" if "backfill_events" in r else ""
            rows.append(
                (
                    f"2. Latency at {rate} events/s offered, {label}",
                    f"p50 {_fmt(r['probe_p50_ms'], ' ms')}, {p99}{extra}",
                    goal,
                    _met(s[f"goal_met_{key}"]),
                )
            )
    rec = _load(results, "recall")
    if rec:
        for row in rec["summary"]["rows"]:
            rows.append(
                (
                    f"3. Recall, {row['entries']} entries",
                    f"cold p50 {_fmt(row['cold_p50_ms'])} / p99 {_fmt(row['cold_p99_ms'])} ms; "
                    f"warm p50 {_fmt(row['warm_p50_ms'])} / p99 {_fmt(row['warm_p99_ms'])} ms "
                    f"(CPU {_fmt(row['warm_cpu_p50_ms'])} / {_fmt(row['warm_cpu_p99_ms'])}); "
                    f"HTTP p50 {_fmt(row['http_p50_ms'])} / p99 {_fmt(row['http_p99_ms'])} ms",
                    "warm p50 <= 1 ms, p99 <= 5 ms" if row["entries"] == 500 else "",
                    _met(rec["summary"]["goal_met"]) if row["entries"] == 500 else "",
                )
            )
    ext = _load(results, "extraction")
    if ext:
        s = ext["summary"]
        rows.append(
            (
                "4. Extraction, per core (CPU time)",
                f"{_fmt(s['issue_turn_20_events_50kb_events_per_s'])} events/s on 20-event/50 KB turns; "
                f"{_fmt(s['generator_mix_events_per_s'])} events/s on the corpus-shaped mix",
                ">= 5,000/s",
                _met(s["goal_met"]),
            )
        )
    bf = _load(results, "backfill")
    if bf:
        s = bf["summary"]
        rows.append(
            (
                "5. Backfill, shared corpus end to end",
                f"{_fmt(s['trajectories_per_s'])} trajectories/s ({_fmt(s['events_per_s'])} events/s, "
                f"{_fmt(s['mb_per_s'])} MB/s)",
                ">= 200/s",
                _met(s["goal_met"]),
            )
        )
    if t:
        for key, roles in t["summary"]["peak_rss_mb"].items():
            rows.append(
                (
                    f"6. Peak RSS during 1 ({key.replace('_', ' ')})",
                    ", ".join(f"{role} {_fmt(mb, ' MiB')}" for role, mb in sorted(roles.items())),
                    "",
                    "",
                )
            )
    sc = _load(results, "scaling")
    if sc:
        table = sc["summary"]["table"]
        best = max(((w, b, v) for w, row in table.items() for b, v in row.items()), key=lambda x: x[2])
        rows.append(
            (
                "7. Scaling (1/2/4 workers x 1/10/100/500 events/job)",
                f"best {_fmt(best[2])} events/s ({best[0].replace('_', ' ')}, {best[1].replace('_', ' ')}); "
                "see the table below and `bench/results/scaling.png`",
                "",
                "",
            )
        )
    st = _load(results, "startup")
    if st:
        for name, row in st["summary"]["rows"].items():
            rows.append(
                (
                    f"8. Start-up, `fixmem {st['commands'][name]}`"
                    if name in ("version", "help")
                    else f"8. Start-up, `fixmem {name}`",
                    f"p50 {_fmt(row['p50_ms'], ' ms')} / p95 {_fmt(row['p95_ms'], ' ms')} "
                    f"(CPU p50 {_fmt(row['cpu_p50_ms'], ' ms')})",
                    f"p50 <= {_fmt(row['goal_p50_ms'], ' ms')}",
                    _met(row["goal_met"]),
                )
            )
    hk = _load(results, "hooks")
    if hk:
        rows += _hook_rows(hk["summary"])
        for mode, row in hk["summary"]["adapter_per_turn"].items():
            rows.append(
                (
                    f"9. `fixmem.harness` per turn, {mode}",
                    f"p50 {_fmt(row['p50_ms'], ' ms')} / p99 {_fmt(row['p99_ms'], ' ms')}",
                    "",
                    "",
                )
            )
    ui = _load(results, "ui")
    if ui:
        rows += _ui_rows(ui)
    return rows


def _ui_rows(ui: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """A row per web UI page: server time cold and warm, then the projects page with no summary files."""
    summary, sizes = ui["summary"], ui.get("sizes") or ui.get("parameters", {})
    load = ui["machine"]
    scale = f"{_fmt(sizes.get('projects'))} projects x {_fmt(sizes.get('entries'))} entries"
    rows = []
    for name, row in summary["rows"].items():
        met = row["goal_met"] and row["cold_server_ms"] <= row["goal_ms"]
        rows.append(
            (
                f"10. Web UI, `{re.sub(r'fix-[0-9a-f]{16}', '<id>', ui['pages'][name])}` "
                f"({name.replace('_', ' ')})",
                f"server time cold {_fmt(row['cold_server_ms'], ' ms')}; warm p50 "
                f"{_fmt(row['server_p50_ms'])} / p95 {_fmt(row['server_p95_ms'], ' ms')} ({scale}; load "
                f"{load['load_average_1m_at_start']}–{load.get('load_average_1m_at_end', '?')})",
                f"cold and p95 <= {_fmt(row['goal_ms'], ' ms')}",
                _met(met),
            )
        )
    if summary.get("first_visit_server_ms") is not None:
        rows.append(
            (
                "10. Web UI, `GET /ui/projects`, logs without summary files (an older store's data)",
                f"server time {_fmt(summary['first_visit_server_ms'], ' ms')} once: every log parsed and "
                "summarized, the summary files written",
                "",
                "",
            )
        )
    return rows


def _hook_rows(summary: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Per event kind for the installed hook (local, remote); all events for the comparison modes."""
    rows = []
    goal = f"p99 <= {_fmt(summary['goal_p99_ms'], ' ms')}"
    for name, mode in summary["rows"].items():
        load = mode["load_average_1m"]
        parts = mode["by_event"].items() if name in {"local", "remote"} else [("all events", mode["all"])]
        for kind, row in parts:
            extra = (
                f"; daemon CPU {_fmt(mode['daemon_cpu_ms_per_request'], ' ms')}/request"
                if (name == "local" and kind == "UserPromptSubmit")
                else ""
            )
            rows.append(
                (
                    f"9. Hook `{name.replace('_', ' ')}`, {kind} (500 entries)",
                    f"p50 {_fmt(row['p50_ms'], ' ms')} / p99 {_fmt(row['p99_ms'], ' ms')} "
                    f"(CPU p50 {_fmt(row['cpu_p50_ms'], ' ms')} / p99 {_fmt(row['cpu_p99_ms'], ' ms')}; "
                    f"{row['runs']} runs, load {load['before']}–{load['after']}{extra})",
                    goal,
                    _met(row["goal_met"]),
                )
            )
    for kind, row in summary.get("cold_start_local", {}).items():
        rows.append(
            (
                f"9. Hook `local`, {kind}, no daemon yet (cold start)",
                f"p50 {_fmt(row['p50_ms'], ' ms')} / max {_fmt(row['max_ms'], ' ms')}; "
                f"injected in {row['answered_runs']} of {row['runs']} "
                "(a prompt with nothing relevant injects nothing; a cold tool hook never does, by design)",
                "",
                "",
            )
        )
    return rows


def scaling_table(results: Path) -> str:
    """The scaling grid as a Markdown table (events/s), or an empty string."""
    sc = _load(results, "scaling")
    if not sc:
        return ""
    table: dict[str, dict[str, float]] = sc["summary"]["table"]
    batches = list(next(iter(table.values())))
    lines = [
        "| workers \\ events per job | " + " | ".join(b.removeprefix("batch_") for b in batches) + " |",
        "|---|" + "---:|" * len(batches),
    ]
    for workers, row in table.items():
        lines.append(
            f"| {workers.removesuffix('_workers')} | " + " | ".join(_fmt(row[b]) for b in batches) + " |"
        )
    return "\n".join(lines) + "\n"


def markdown(results: Path, *, suite_seconds: float | None = None) -> str:
    """The results table (and the scaling grid) as Markdown."""
    machine = next(
        (d["machine"] for n in ("throughput", "latency", "extraction", "recall") if (d := _load(results, n))),
        None,
    )
    lines = ["| benchmark | measured | goal | met |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _rows(results)]
    lines += [f"| {name} | **failed**: {error[:200]} | | **no** |" for name, error in _failures(results)]
    out = "\n".join(lines) + "\n"
    grid = scaling_table(results)
    if grid:
        out += "\nScaling, events/s (publish → entry on disk):\n\n" + grid
    if machine:
        out += (
            f"\nMeasured on {machine['cpus']} CPUs ({machine['cpu']}), Python {machine['python']}, "
            "load average "
            f"{machine['load_average_1m_at_start']} at the start of the first benchmark"
        )
        out += f"; the whole suite took {suite_seconds / 60:.1f} min.\n" if suite_seconds else ".\n"
        out += "".join(f"{note}\n" for note in _other_runs(results, machine))
    return out


def _other_runs(results: Path, machine: dict[str, Any]) -> list[str]:
    """A line for each result written by another run (another version or CPU) than the main one."""
    main = next(
        (d for n in ("throughput", "latency", "extraction", "recall") if (d := _load(results, n))), None
    )
    version = (main or {}).get("versions", {}).get("fixmem")
    notes = []
    for name in ("throughput", "latency", "recall", "extraction", "backfill", "scaling", "startup", "ui"):
        data = _load(results, name)
        if not data:
            continue
        theirs = data.get("versions", {}).get("fixmem")
        cpu = data.get("machine", {}).get("cpu")
        if theirs != version or cpu != machine["cpu"]:
            notes.append(f"`{name}` is from another run: fixmem {theirs} on {cpu}.")
    return notes


def embed(readme: Path, table: str) -> None:
    """Replace what is between the markers in ``readme`` with ``table`` (markers must be present)."""
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        return
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")
