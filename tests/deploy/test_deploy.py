"""deploy/: Prometheus config, rules and their unit tests (promtool), dashboard, compose, Kubernetes, Docker.

promtool comes from Debian's ``prometheus`` package (``.ci/run`` installs it); without it the promtool
checks skip with a message and the structural checks still run. Every command a deployment file runs
must be a real ``fixmem`` subcommand whose options parse, and every ``FIXMEM_*`` variable a real setting.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from fixmem.api.app import router
from fixmem.cli import cli
from fixmem.runtime.impact_metrics import impact_families
from fixmem.runtime.metrics import api_metrics, fleet_families, scrape_client
from fixmem.runtime.verified_metrics import verified_families
from fixmem.settings import ENV_PREFIX, Settings
from store.impact import SessionOutcome
from store.impact import report as impact_report
from tests.fixmem.runtime.test_metrics import SOURCE, _registry, _snapshot

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
FIXMEM_SERVICES = ("ingest", "worker", "api")


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip(
            "promtool is not installed: apt-get install prometheus (.ci/run does); skipping this check"
        )
    return path


def _promtool_ok(*args: str, cwd: Path = PROMETHEUS) -> str:
    done = subprocess.run([_promtool(), *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _resolve(argv: list[str]) -> click.Command:
    """The subcommand ``argv`` names, its options parsed as the real CLI parses them (no callback runs)."""
    assert argv, "empty command"
    ctx = click.Context(cli, info_name="fixmem")
    name, *rest = argv
    command = cli.get_command(ctx, name)
    assert command is not None, f"`fixmem {name}` is not a subcommand (from {argv})"
    with command.make_context(name, rest, parent=ctx):
        pass
    return command


def _check_env(names: list[str], where: str) -> None:
    fields = {ENV_PREFIX + f.upper() for f in Settings.model_fields}
    for name in names:
        if name.startswith(ENV_PREFIX):
            assert name in fields, f"{where}: {name} is not a setting"


# -- Prometheus ------------------------------------------------------------------------------------------


def test_prometheus_config_is_valid() -> None:
    out = _promtool_ok("check", "config", "prometheus.yml")
    assert "SUCCESS" in out


def test_rules_are_valid() -> None:
    out = _promtool_ok("check", "rules", "rules.yml")
    assert "SUCCESS" in out


def test_rules_unit_tests_pass() -> None:
    out = _promtool_ok("test", "rules", "rules_test.yml")
    assert "SUCCESS" in out


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_every_alert_the_issue_names_exists_and_has_a_unit_test() -> None:
    alerts = {r["alert"] for r in _rules() if "alert" in r}
    assert alerts >= {
        "FixmemStreamLagGrowing",
        "FixmemDeadLetters",
        "FixmemPartialRatioRising",
        "FixmemNoEntriesWhileEventsArrive",
        "FixmemRedisDown",
    }
    tests = yaml.safe_load((PROMETHEUS / "rules_test.yml").read_text())["tests"]
    tested = {a["alertname"] for t in tests for a in t.get("alert_rule_test", []) if a.get("exp_alerts")}
    assert tested >= alerts - {"FixmemApiDown"}  # `up` is Prometheus' own


def test_windowed_ratios_come_from_counters_never_from_averaged_ratios() -> None:
    recorded = {r["record"]: r["expr"] for r in _rules() if "record" in r}
    assert "fixmem:entries:ratio_rate1h" in recorded
    for name, expr in recorded.items():
        assert "fixmem_outcome_ratio" not in expr, name
        if name.startswith("fixmem:entries:rate"):
            assert "rate(fixmem_entries_total[" in expr


def _exposed_names() -> set[str]:
    """Sample names the API exposes: fleet families (a sample snapshot) and the process's own."""
    api = api_metrics(scrape_client("redis://127.0.0.1:1/0", timeout=0.2), SOURCE)  # + fixmem_redis_up
    api.requests.labels("GET", "/healthz", "200").inc()  # a labelled counter shows once it has a child
    down = api.registry
    fleet = _registry(fleet_families(_snapshot({"fixed": 1}, last=1.0)))
    sample = [
        SessionOutcome("s1", "p", arm, 1.0, True, True, True, ("f",), ("f",))
        for arm in ("memory", "holdback")
    ]
    impact = _registry(impact_families(impact_report(sample)))
    verified = _registry(verified_families([]))
    texts = [generate_latest(r) for r in (fleet, down, impact, verified)]
    names = set()
    for text in texts:
        for family in text_string_to_metric_families(text.decode()):
            names.add(family.name)
            names.update(s.name for s in family.samples)
    return names


_METRIC = re.compile(r'(?<!["\w])(fixmem[a-z0-9_:]*)')  # a name, not a quoted label value


def test_rules_reference_only_metrics_that_exist() -> None:
    exposed = _exposed_names()
    recorded = {r["record"] for r in _rules() if "record" in r}
    for rule in _rules():
        for name in _METRIC.findall(rule["expr"]):
            assert name in exposed | recorded, f"{rule.get('record') or rule.get('alert')}: unknown {name}"


def test_prometheus_scrapes_the_api_port_compose_serves() -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["rules.yml"]
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    api = yaml.safe_load((DEPLOY / "compose.yml").read_text())["services"]["api"]
    port = api["command"][api["command"].index("--port") + 1]
    assert job["static_configs"][0]["targets"] == [f"api:{port}"]


# -- Grafana ------------------------------------------------------------------------------------------------


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DEPLOY / "grafana" / "dashboards" / "fixmem.json").read_text())
    return data


# The panels ops need, by a part of their title, and the metrics (or recorded series) each one's queries use.
OPS_PANELS = {
    "outcome ratios over time": {"fixmem:entries:ratio_rate1h", "fixmem:entries:ratio_rate1d"},
    "events per second by result": {"fixmem:events:rate5m"},
    "stream lag and pending": {"fixmem_stream_lag_entries", "fixmem_stream_pending_entries"},
    "dead letters kept": {"fixmem_dead_letters_stored"},
    "latency quantiles": {
        "fixmem:event_to_entry_seconds:p50_5m", "fixmem:event_to_entry_seconds:p95_5m",
        "fixmem:event_to_entry_seconds:p99_5m", "fixmem:batch_duration_seconds:p95_5m",
        "fixmem:recall_duration_seconds:p50_5m", "fixmem:recall_duration_seconds:p95_5m",
    },
    "agent tests vs verdicts": {"fixmem:entries:rate1d", "fixmem:verdicts:rate1d"},
    "verdict overturn ratio": {
        "fixmem:verdict_overturn:ratio_rate1d", "fixmem:verdict_overturns:rate1d", "fixmem:verdicts:rate1d",
    },
    "outcome ratio by harness": {"fixmem:harness_entries:ratio_rate1d"},
    "outcome ratio by model": {"fixmem:model_entries:ratio_rate1d"},
    "impact: lift of fix recall": {"fixmem_impact_lift_ratio"},
    "fixed ratio: claimed vs verified": {"fixmem:fixed_claimed:ratio", "fixmem:fixed_verified:ratio"},
    "verdict coverage": {"fixmem:verdict_coverage:ratio"},
    "impact: sessions and follow ratio": {
        "fixmem_impact_sessions", "fixmem_impact_follow_ratio", "fixmem_impact_no_entry_ratio",
    },
}  # fmt: skip


@pytest.mark.parametrize("title", sorted(OPS_PANELS))
def test_dashboard_has_the_panels_ops_need(title: str) -> None:
    (panel,) = [p for p in _dashboard()["panels"] if title in p["title"].lower()]
    queried = {name for t in panel["targets"] for name in _METRIC.findall(t["expr"])}
    assert queried == OPS_PANELS[title], panel["title"]


def test_dashboard_queries_parse_and_use_known_metrics(tmp_path: Path) -> None:
    exposed = _exposed_names() | {r["record"] for r in _rules() if "record" in r}
    exprs = [t["expr"] for p in _dashboard()["panels"] for t in p["targets"]]
    assert exprs
    for expr in exprs:
        for name in _METRIC.findall(expr):
            assert name in exposed, f"dashboard query uses unknown {name}: {expr}"
    # promtool parses PromQL: check each query as a recording rule.
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"q:{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules))
    _promtool_ok("check", "rules", str(path))


def test_grafana_provisioning_points_at_the_dashboards() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    mounts = compose["services"]["grafana"]["volumes"]
    assert "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in mounts
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/fixmem.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    datasource = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    for panel in _dashboard()["panels"]:
        assert panel["datasource"]["uid"] == uid


# -- compose ------------------------------------------------------------------------------------------------


def test_compose_runs_real_subcommands_with_real_settings() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    services = compose["services"]
    assert set(services) >= {"redis", "ingest", "worker", "api", "prometheus", "grafana"}
    expected = {"ingest": "ingest", "worker": "worker", "api": "serve"}
    for name in FIXMEM_SERVICES:
        command = services[name]["command"]
        assert _resolve(command).name == expected[name], name
        _check_env(list(services[name]["environment"]), f"compose service {name}")
        assert "fixmem-data:/data" in services[name]["volumes"]
        assert services[name]["environment"]["FIXMEM_DATA_DIR"] == "/data"
    assert services["worker"]["deploy"]["replicas"] == 2


def test_compose_redis_keeps_every_acknowledged_event() -> None:
    redis_cmd = yaml.safe_load((DEPLOY / "compose.yml").read_text())["services"]["redis"]["command"]
    text = " ".join(redis_cmd)
    assert "--appendonly yes" in text
    assert "--appendfsync everysec" in text
    assert "--maxmemory-policy noeviction" in text


# -- Kubernetes ---------------------------------------------------------------------------------------------


def _k8s() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    objects = {}
    for resource in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / "k8s" / resource).read_text()):
            objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def test_k8s_deployments_run_real_subcommands() -> None:
    objects = _k8s()
    config = objects[("ConfigMap", "fixmem")]["data"]
    _check_env(list(config), "ConfigMap fixmem")
    expected = {"ingest": "ingest", "worker": "worker", "api": "serve"}
    for role in FIXMEM_SERVICES:
        deployment = objects[("Deployment", f"fixmem-{role}")]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert _resolve(container["args"]).name == expected[role]
        _check_env([e["name"] for e in container.get("env", [])], f"Deployment fixmem-{role}")
        assert deployment["spec"]["selector"]["matchLabels"].items() <= (
            deployment["spec"]["template"]["metadata"]["labels"].items()
        )
        if role != "ingest":
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            assert mounts["data"] == config["FIXMEM_DATA_DIR"]
    assert objects[("Deployment", "fixmem-worker")]["spec"]["replicas"] >= 2


def test_k8s_data_volume_is_read_write_many_with_redis_locks() -> None:
    objects = _k8s()
    assert objects[("PersistentVolumeClaim", "fixmem-data")]["spec"]["accessModes"] == ["ReadWriteMany"]
    assert objects[("ConfigMap", "fixmem")]["data"]["FIXMEM_STORE_LOCK"] == "redis"
    assert "flock" in (DEPLOY / "k8s" / "pvc.yaml").read_text()  # the locking caveat is written down


def test_k8s_api_probes_and_service_match_the_app() -> None:
    objects = _k8s()
    pod = objects[("Deployment", "fixmem-api")]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    routes = {getattr(r, "path", None) for r in router.routes}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz" in routes
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz" in routes
    (port,) = container["ports"]
    assert port["containerPort"] == int(container["args"][container["args"].index("--port") + 1])
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port["containerPort"])
    service = objects[("Service", "fixmem-api")]
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


# -- Docker -------------------------------------------------------------------------------------------------


def test_dockerfile_installs_every_package_and_runs_a_real_command() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = [pattern.rstrip("*") for pattern in shipped["include"]]  # every package the wheel ships
    assert {"fixmem", "ingest", "workers", "store", "evals"} <= set(packages)
    for package in packages:
        assert f"COPY {package} ./{package}" in text
    # the image runs the compiled extraction core (setup.py), built in a stage that has the compiler
    assert "COPY pyproject.toml setup.py README.md ./" in text
    assert "FIXMEM_COMPILE=1 pip wheel" in text and "COPY --from=build /wheels /wheels" in text
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.+)$", text, re.M).group(1))  # type: ignore[union-attr]
    cmd = json.loads(re.search(r"^CMD (.+)$", text, re.M).group(1))  # type: ignore[union-attr]
    assert entrypoint == ["fixmem"]
    assert _resolve(cmd).name == "serve"
    assert shlex.join(cmd).startswith("serve --host 0.0.0.0")


def test_a_bad_command_is_caught() -> None:
    with pytest.raises(click.UsageError):
        _resolve(["serve", "--no-such-flag"])
    with pytest.raises(AssertionError):
        _resolve(["frobnicate"])


def test_the_registry_helper_exposes_only_the_families_it_is_given() -> None:
    assert generate_latest(_registry([])) == b""  # a fresh registry: nothing of the process's default one
    families = fleet_families(_snapshot({"fixed": 1}, last=1.0))
    assert [f.name for f in _registry(families).collect()] == [f.name for f in families]


# -- the scan-git job ---------------------------------------------------------------------------------------


def test_scan_git_runs_periodically_in_compose_and_kubernetes() -> None:
    service = yaml.safe_load((DEPLOY / "compose.yml").read_text())["services"]["scan-git"]
    assert service["profiles"] == ["scan-git"] and service["entrypoint"] == ["sh", "-c"]
    (loop,) = service["command"]
    scan = re.search(r"fixmem (verdicts scan-git [^;]+);", loop)
    assert scan is not None and "sleep 3600" in loop and "fetch" in loop
    assert _resolve(shlex.split(scan.group(1))).name == "verdicts"
    _check_env(list(service["environment"]), "compose service scan-git")
    assert "fixmem-data:/data" in service["volumes"]
    job = _k8s()[("CronJob", "fixmem-scan-git")]
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    group = cli.get_command(click.Context(cli, info_name="fixmem"), container["args"][0])
    assert isinstance(group, click.Group)
    sub = group.get_command(click.Context(group), container["args"][1])
    assert sub is not None and sub.name == "scan-git"
    with sub.make_context("scan-git", container["args"][2:]):
        pass
    _check_env([e["name"] for e in container["env"]], "CronJob fixmem-scan-git")
    (clone,) = pod["initContainers"]
    assert clone["args"][0] == "clone" and {m["mountPath"] for m in clone["volumeMounts"]} == {"/repo"}
    assert job["spec"]["concurrencyPolicy"] == "Forbid"
    assert "apt-get install -y --no-install-recommends git" in (DEPLOY / "Dockerfile").read_text()
