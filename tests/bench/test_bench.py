"""The benchmark suite's own code: the generator, the statistics, the report, and a --quick smoke run.

No timing is asserted here (figures live in bench/results/); these tests check that the suite runs and
that what it reports is computed right.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.common import histogram_quantile, percentile, summary_ms
from bench.corpus import DEFAULT_SHAPE, QUANTILES, quantiles
from bench.generator import TurnGenerator, _sample
from bench.hotpath_ab import compare
from bench.report import BEGIN, END, embed, markdown
from bench.suite import Params
from bench.throughput import sized, speedups
from fixmem.cli import main
from ingest.schema import parse_event
from workers.extraction import extract

ROOT = Path(__file__).resolve().parents[2]


def test_generator_is_deterministic_and_makes_valid_distinct_events() -> None:
    a, b = TurnGenerator(3), TurnGenerator(3)
    wires = [a.wire(i) for i in range(60)]
    assert wires == [b.wire(i) for i in range(60)]
    assert wires != [TurnGenerator(4).wire(i) for i in range(60)]
    events = [parse_event(w) for w in wires]
    assert len({e.event_id for e in events}) == 60
    assert {e.harness_meta.harness for e in events} >= {
        "mini-swe-agent",
        "swe-agent",
        "openhands",
        "claude-code",
    }


def test_generated_turns_follow_the_measured_shape() -> None:
    gen = TurnGenerator(7)
    events = [parse_event(gen.wire(i)) for i in range(400)]
    extracted = [extract(e).entry for e in events]
    entries = [x for x in extracted if x is not None]
    no_file = 1 - len(entries) / len(events)
    tested = sum(1 for x in entries if x.tests is not None) / len(events)
    tools = quantiles([float(len(e.tool_events)) for e in events])
    assert abs(no_file - DEFAULT_SHAPE.share_turns_no_file) < 0.06
    assert abs(tested - DEFAULT_SHAPE.share_turns_with_tests) < 0.06
    assert abs(tools[3] - DEFAULT_SHAPE.tool_events_per_turn[3]) <= 2  # the median
    assert all(len(x.files) <= 2 for x in entries)  # 1 or 2 fix files, scratch files excluded
    assert not any("reproduce.py" in x.files for x in entries)


@pytest.mark.parametrize("u_table", [(0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0)])
def test_sampling_stays_within_the_table(u_table: tuple[float, ...]) -> None:
    rng = random.Random(1)
    draws = [_sample(rng, u_table) for _ in range(2000)]
    assert min(draws) >= u_table[0] and max(draws) <= u_table[-1]
    assert abs(sorted(draws)[1000] - u_table[QUANTILES.index(50)]) < 3


@pytest.mark.parametrize(
    ("buckets", "q", "expected"),
    [
        ([(1.0, 0), (2.0, 10)], 0.5, 1.5),  # all in (1, 2]: halfway
        ([(1.0, 10), (2.0, 10)], 0.99, 0.99),  # in the first bucket, from 0
        ([(0.1, 50), (1.0, 100)], 0.5, 0.1),
        ([(0.1, 50), (1.0, 100)], 0.75, 0.55),
        ([(1.0, 0)], 0.5, None),  # empty
    ],
)
def test_histogram_quantile_interpolates_like_prometheus(
    buckets: list[tuple[float, int]], q: float, expected: float | None
) -> None:
    got = histogram_quantile(buckets, q)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_percentiles_and_summary() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 99) == 5.0
    s = summary_ms([0.001, 0.002, 0.003])
    assert s["count"] == 3 and s["p50_ms"] == 2.0 and s["max_ms"] == 3.0


@pytest.mark.parametrize(
    ("rate", "seconds", "expected"),
    [
        (200.0, 30.0, 6_000),  # about 30 s of work at the rate
        (10.0, 30.0, 5_000),  # never below the floor
        (10_000.0, 30.0, 50_000),  # never more than the events there are
    ],
)
def test_a_sized_run_takes_about_the_seconds_asked(rate: float, seconds: float, expected: int) -> None:
    assert sized(rate, seconds, least=5_000, most=50_000) == expected


def test_the_full_suite_keeps_the_issue_n_and_caps_only_the_small_batch_cells() -> None:
    full = Params()
    assert full.events >= 50_000  # N >= 50,000 for benchmark 1's main configuration (its goal)
    caps = dict(full.scaling_events_by_batch)
    assert set(caps) == {1, 10} and all(n < full.scaling_events for n in caps.values())
    assert full.latency_seconds == 60.0 and full.latency_rate == 1_000.0


def test_report_states_misses_and_embeds_between_markers(tmp_path: Path) -> None:
    (tmp_path / "extraction_per_core.json").write_text(json.dumps({
        "machine": {"cpus": 2, "cpu": "x", "python": "3.11", "load_average_1m_at_start": 0.5},
        "summary": {"issue_turn_20_events_50kb_events_per_s": 812.0, "generator_mix_events_per_s": 1500.0,
                    "goal_met": False},
    }))  # fmt: skip
    table = markdown(tmp_path)
    assert "812 events/s" in table and "**no**" in table and "load average 0.5" in table
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Performance\n{BEGIN}\nold\n{END}\ntail\n")
    embed(readme, table)
    text = readme.read_text()
    assert "old" not in text and "812 events/s" in text and text.endswith(f"{END}\ntail\n")


def test_report_has_a_row_per_ui_page_with_cold_and_warm_server_time(tmp_path: Path) -> None:
    row = {
        "cold_server_ms": 53.3,
        "server_p50_ms": 9.1,
        "server_p95_ms": 10.8,
        "goal_ms": 300.0,
        "goal_met": True,
    }
    slow = {**row, "cold_server_ms": 400.0}
    (tmp_path / "ui.json").write_text(json.dumps({
        "machine": {"cpus": 2, "cpu": "x", "python": "3.11", "load_average_1m_at_start": 5.0,
                    "load_average_1m_at_end": 6.0},
        "sizes": {"projects": 200, "entries": 500},
        "pages": {"projects": "GET /ui/projects", "entry": "GET /ui/entry/fix-0123456789abcdef"},
        "summary": {"rows": {"projects": row, "entry": slow}, "first_visit_server_ms": 4329.3},
    }))  # fmt: skip
    lines = markdown(tmp_path).splitlines()
    assert (
        "| 10. Web UI, `GET /ui/projects` (projects) | server time cold 53.3 ms; warm p50 9.1 / p95 10.8 ms "
        "(200 projects x 500 entries; load 5.0–6.0) | cold and p95 <= 300 ms | yes |"
    ) in lines
    assert any(line.startswith("| 10. Web UI, `GET /ui/entry/<id>`") and "**no**" in line for line in lines)
    assert any("without summary files" in line and "4,329 ms" in line for line in lines)


def _run(workers: int, events_per_s: float) -> dict[str, object]:
    return {"workers": workers, "events": 1000, "events_per_s": events_per_s, "events_per_job": 90.0,
            "cpu_ms_per_event_all_processes": 2.0}  # fmt: skip


def test_the_baseline_is_simpleworker_with_as_many_workers_and_forking_worker_is_beside_it() -> None:
    baselines = [
        {"worker": "SimpleWorker", "workers": 2, "events_per_s": 100.0},
        {"worker": "Worker (fork per job)", "workers": 2, "events_per_s": 25.0},
        {"worker": "SimpleWorker", "workers": 1, "events_per_s": 60.0},
    ]
    two = speedups(_run(2, 700.0), baselines)
    assert (two["baseline_events_per_s"], two["speedup_vs_baseline"]) == (100.0, 7.0)
    assert (two["baseline_fork_events_per_s"], two["speedup_vs_fork"]) == (25.0, 28.0)
    one = speedups(_run(1, 600.0), baselines)
    assert (one["speedup_vs_baseline"], one["speedup_vs_fork"]) == (10.0, None)


def test_report_names_the_baseline_and_says_when_one_is_missing(tmp_path: Path) -> None:
    (tmp_path / "throughput.json").write_text(json.dumps({
        "machine": {"cpus": 2, "cpu": "x", "python": "3.11", "load_average_1m_at_start": 0.5},
        "versions": {"fixmem": "abc"},
        "runs": [_run(1, 600.0), _run(2, 700.0)],
        "baselines": [{"worker": "SimpleWorker", "workers": 2, "events_per_s": 100.0},
                      {"worker": "Worker (fork per job)", "workers": 2, "events_per_s": 25.0}],
        "summary": {"peak_rss_mb": {}},
    }))  # fmt: skip
    table = markdown(tmp_path)
    assert (
        "700 events/s = 7.0x one-job-per-event on SimpleWorker (100/s; forking Worker 25/s: 28.0x)" in table
    )
    assert "600 events/s (one job per event on SimpleWorker not measured with 1 worker(s)" in table


def test_fixmem_bench_passes_its_arguments_to_the_suite(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    assert "python -m bench" in capfd.readouterr().out
    assert main(["bench", "nosuchbench"]) == 2


@pytest.mark.slow
def test_quick_run_writes_results_and_the_summary(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "extraction", "recall", "startup", "hooks", "ui",
         "--results", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("extraction_per_core", "recall"):
        result = orjson.loads((tmp_path / f"{name}.json").read_bytes())
        assert {"machine", "versions", "parameters", "summary", "generator"} <= set(result)
        assert result["machine"]["load_average_1m_at_start"] >= 0
    recall = orjson.loads((tmp_path / "recall.json").read_bytes())
    assert [r["entries"] for r in recall["summary"]["rows"]] == [50, 500]
    assert all(r["http_p50_ms"] > 0 for r in recall["summary"]["rows"])
    startup = orjson.loads((tmp_path / "startup.json").read_bytes())
    assert set(startup["summary"]["rows"]) == {"version", "help", "recall", "status"}
    assert all(len(samples) == 2 for samples in startup["samples_ms"].values())
    hooks = orjson.loads((tmp_path / "hooks.json").read_bytes())
    assert set(hooks["summary"]["rows"]) == {"local", "local_in_process", "remote", "remote_site"}
    assert all(e["runs"] == 3 for row in hooks["summary"]["rows"].values() for e in row["by_event"].values())
    assert hooks["summary"]["imports"]["remote"]["heavy"] == []
    summary = (tmp_path / "SUMMARY.md").read_text()
    assert "9. Hook `remote`, UserPromptSubmit (500 entries)" in summary
    assert "3. Recall, 500 entries" in summary and "4. Extraction" in summary
    assert "8. Start-up, `fixmem status`" in summary
    ui = orjson.loads((tmp_path / "ui.json").read_bytes())
    assert ui["sizes"]["projects"] == 3 and all(len(v) == 2 for v in ui["samples_server_ms"].values())
    assert "10. Web UI, `GET /ui/projects` (projects)" in summary


def _ab_row(events_per_s: float, worker_ms: float) -> dict[str, object]:
    return {
        "events_per_s": events_per_s,
        "cpu_ms_per_event": {"consumer": 0.1, "worker": worker_ms, "redis": 0.1},
        "cpu_ms_per_event_all": 0.2 + worker_ms,
        "redis_info_cpu_ms_per_event": 0.1,
    }


def test_hotpath_ab_compares_medians_ranges_and_paired_changes() -> None:
    old = [_ab_row(1000.0, 1.0), _ab_row(900.0, 1.1), _ab_row(1100.0, 0.9)]
    new = [_ab_row(750.0, 1.3), _ab_row(650.0, 1.4), _ab_row(800.0, 1.2)]
    summary = compare(old, new)
    worker = summary["cpu_ms_per_event.worker"]
    assert (worker["old_median"], worker["new_median"]) == (1.0, 1.3)
    assert worker["old_range"] == [0.9, 1.1] and worker["new_range"] == [1.2, 1.4]
    assert worker["change"] == 0.3 and worker["paired_changes"] == [0.3, 0.2727, 0.3333]
    assert worker["beyond_spread"]  # every pair slower, and 30% > the widest spread (0.2 / 1.0)
    speed = summary["events_per_s"]
    assert speed["change"] == -0.25 and speed["beyond_spread"]
    same = summary["cpu_ms_per_event.consumer"]
    assert same["change"] == 0.0 and not same["beyond_spread"]  # no change is never beyond the spread


def test_hotpath_ab_a_change_inside_the_spread_is_not_beyond_it() -> None:
    old = [_ab_row(1000.0, 1.0), _ab_row(1000.0, 1.5)]
    new = [_ab_row(1000.0, 1.1), _ab_row(1000.0, 1.6)]
    worker = compare(old, new)["cpu_ms_per_event.worker"]
    assert all(p > 0 for p in worker["paired_changes"])
    assert not worker["beyond_spread"]  # +8.7% of the median, but the runs spread by 40%


def test_worker_stages_times_every_stage_and_puts_the_functions_back() -> None:
    from bench import worker_stages  # noqa: PLC0415
    from workers import jobs  # noqa: PLC0415

    before = jobs.extract
    summary = worker_stages.measure(events=30, projects=10, warm=10, batch=10)
    assert jobs.extract is before
    stages = summary["stages_cpu_ms_per_event"]
    assert set(stages) == {s for s, _, _ in worker_stages.STAGES}
    assert summary["stage_calls"]["decide/extract"] == 30 and stages["append"] > 0
    assert summary["run_batch_cpu_ms_per_event"] >= stages["append"]


def test_latency_ab_summarizes_each_sides_windows() -> None:
    from bench.latency_ab import summarize  # noqa: PLC0415

    runs = {
        "old": [
            {"probe_p50_ms": 100.0, "probe_p99_ms": 900.0},
            {"probe_p50_ms": 300.0, "probe_p99_ms": 1500.0},
        ],
        "new": [
            {"probe_p50_ms": 200.0, "probe_p99_ms": None},
            {"probe_p50_ms": 50.0, "probe_p99_ms": 1000.0},
        ],
    }
    summary = summarize(runs)
    assert summary["old"] == {
        "probe_p50_ms_median": 200.0, "probe_p99_ms_median": 1200.0, "probe_p99_ms": [900.0, 1500.0],
        "runs_meeting_goal": 1,
    }  # fmt: skip
    assert summary["new"]["probe_p99_ms_median"] == 1000.0 and summary["new"]["runs_meeting_goal"] == 1


def test_worker_regression_runs_this_tree_and_compares_it_with_itself(tmp_path: Path) -> None:
    from bench import worker_regression as wr  # noqa: PLC0415
    from bench.hotpath_ab import turn4k  # noqa: PLC0415

    events_file = tmp_path / "events.jsonl"
    events_file.write_bytes(b"\n".join(turn4k(i, 5) for i in range(40)))
    root = str(Path(wr.__file__).resolve().parent.parent)
    run = wr.run_tree(sys.executable, root, events_file, 10, tmp_path, "this")
    side = wr.per_event(run, 30)
    assert side["tree"] == root and side["jobs"] >= 1 and side["python_calls_per_event"] > 0
    assert {"run_batch", "extraction", "extraction/summarize_changes", "append"} <= set(
        side["steps_cumulative_ms_per_event"]
    )
    rows = wr.compare(side, side, 30, top=5)
    assert len(rows) == 5 and all(row["own_ms_delta"] == 0 for row in rows)
    alone = wr.extraction_tree(sys.executable, root, events_file, 1)
    assert (
        alone["python_calls_per_event"] > 0
        and "summarize_changes" in alone["profiled_cumulative_ms_per_event"]
    )
