"""The alert rules run through ``promtool test rules`` with realistic series (issue 24, "alerts that fire in normal
operation"): each case is (name, input series, evaluation minute, alert, the instances expected to fire).

Series are what the exporters publish: ``fmcluster_efa_tx_bytes_total`` is a hardware byte counter (one device
here; 10 GB/s = 6e11 bytes per minute), ``fmcluster_slurm_job_steps`` / ``..._oldest_age_seconds`` the textfile
gauges node_facts.sh.j2 writes from ``ps -C slurmstepd``, ``slurm_node_count_per_state`` the Slurm exporter's
per-state node count (sinfo %T states).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.features.observability.render_alert_rules import alert_groups, render_alert_rules
from fmcluster.features.observability.render_context import observability_context
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

GBPS_10 = 6e11  # bytes per minute at 10 GB/s
MINUTES = 80


def _ctx(metrics: str = "self_hosted", discovery: str = "slurm", min_count: int | None = None) -> Any:
    group: dict[str, Any] = {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}
    if min_count is not None:
        group["min_count"] = min_count
    text = blueprint_text({
        "compute": [group],
        "observability": {"metrics": metrics, "node_discovery": discovery, "alert_email": "oncall@example.com"},
    })
    return observability_context(resolve(load_blueprint_text(text).blueprint))


def _tx(instance: str, per_minute: list[float]) -> dict[str, str]:
    """A tx_bytes counter from bytes sent in each minute (promtool's explicit value list)."""
    total, values = 0.0, ["0"]
    for b in per_minute:
        total += b
        values.append(f"{total:.0f}")
    return {"series": f'fmcluster_efa_tx_bytes_total{{instance="{instance}",device="rdmap0s0",port="1"}}',
            "values": " ".join(values)}


def _gauge(name: str, instance: str, values: list[float]) -> dict[str, str]:
    return {"series": f'{name}{{instance="{instance}"}}', "values": " ".join(f"{v:.0f}" for v in values)}


def _job(instance: str, running: list[bool]) -> list[dict[str, str]]:
    """The two slurmstepd gauges of a node whose job runs in the minutes ``running`` is true (age restarts at 0)."""
    steps, age, a = [], [], 0
    for r in running:
        steps.append(1 if r else 0)
        age.append(a if r else 0)
        a = a + 60 if r else 0
    steps.append(steps[-1])
    age.append(age[-1])
    return [_gauge("fmcluster_slurm_job_steps", instance, steps),
            _gauge("fmcluster_slurm_job_step_oldest_age_seconds", instance, age)]


def _flat(rate: float, n: int = MINUTES) -> list[float]:
    return [rate] * n


def _until(minute: int, before: float, after: float) -> list[float]:
    return [before if m < minute else after for m in range(MINUTES)]


def _ran(until: int | None = None) -> list[bool]:
    return [until is None or m < until for m in range(MINUTES)]


def _job_end_series() -> list[dict[str, str]]:
    """Two nodes of one job at 10 GB/s; the job ends normally at minute 45 (traffic and slurmstepd stop)."""
    out = []
    for i in ("10.0.0.1:9100", "10.0.0.2:9100"):
        out += [_tx(i, _until(45, GBPS_10, 0)), *_job(i, _ran(until=45))]
    return out


def _link_drop_series() -> list[dict[str, str]]:
    """The same job keeps running, but one node falls to 1 GB/s at minute 45 (a degraded link or a hung rank)."""
    return [
        _tx("10.0.0.1:9100", _flat(GBPS_10)), *_job("10.0.0.1:9100", _ran()),
        _tx("10.0.0.2:9100", _until(45, GBPS_10, GBPS_10 / 10)), *_job("10.0.0.2:9100", _ran()),
    ]


def _idle_node_series() -> list[dict[str, str]]:
    """Three nodes run a job at 10 GB/s, a fourth is idle (no slurmstepd, no traffic)."""
    out = []
    for i in ("10.0.0.1:9100", "10.0.0.2:9100", "10.0.0.3:9100"):
        out += [_tx(i, _flat(GBPS_10)), *_job(i, _ran())]
    return out + [_tx("10.0.0.4:9100", _flat(0)), *_job("10.0.0.4:9100", [False] * MINUTES)]


def _straggler_series() -> list[dict[str, str]]:
    """Four nodes in one job; 10.0.0.4 sends 3 GB/s while its peers send 10 GB/s; a fifth node is idle."""
    out = []
    for i in ("10.0.0.1:9100", "10.0.0.2:9100", "10.0.0.3:9100"):
        out += [_tx(i, _flat(GBPS_10)), *_job(i, _ran())]
    out += [_tx("10.0.0.4:9100", _flat(GBPS_10 * 0.3)), *_job("10.0.0.4:9100", _ran())]
    return out + [_tx("10.0.0.5:9100", _flat(0)), *_job("10.0.0.5:9100", [False] * MINUTES)]


def _slurm_states(**counts: int) -> list[dict[str, str]]:
    return [{"series": f'slurm_node_count_per_state{{state="{s}",job="slurm"}}', "values": f"{n}x{MINUTES}"}
            for s, n in counts.items()]


CASES = [
    # (name, series, eval minute, alert, instances (or label sets) expected to fire)
    ("job end is quiet", _job_end_series(), 70, "EfaThroughputDrop", []),
    ("drop inside a running job fires", _link_drop_series(), 70, "EfaThroughputDrop", ["10.0.0.2:9100"]),
    ("idle node while others run is quiet", _idle_node_series(), 40, "EfaThroughputStraggler", []),
    ("straggler in a job fires, idle node does not", _straggler_series(), 40, "EfaThroughputStraggler",
     ["10.0.0.4:9100"]),
    ("drained node alerts", _slurm_states(idle=3, drained=1), 15, "SlurmNodesDrained", [{}]),
    ("draining node alerts", _slurm_states(allocated=3, draining=1), 15, "SlurmNodesDrained", [{}]),
    ("no drained node is quiet", _slurm_states(idle=2, allocated=2), 15, "SlurmNodesDrained", []),
]


def _rule(ctx: Any, alert: str) -> Any:
    return next(r for rules in alert_groups(ctx).values() for r in rules if r.alert == alert)


def _expand(template: str, labels: dict[str, str], value: str) -> str:
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    return text.replace("{{ $value }}", value)


def _expected(ctx: Any, alert: str, fire: list[Any], value: str) -> list[dict[str, Any]]:
    rule = _rule(ctx, alert)
    out = []
    for f in fire:
        labels = {"instance": f} if isinstance(f, str) else dict(f)
        out.append({
            "exp_labels": {**labels, "severity": rule.severity, "cluster": ctx.blueprint_name},
            "exp_annotations": {"summary": _expand(rule.summary, labels, value),
                                "description": _expand(rule.description, labels, value)},
        })
    return out


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (apt-get install prometheus)")
    return path


def _run(promtool: str, tmp_path: Path, ctx: Any, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yml").write_text(render_alert_rules(ctx))
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.parametrize(("name", "series", "minute", "alert", "fire"), CASES, ids=[c[0] for c in CASES])
def test_alert_fires_only_on_a_real_fault(
    promtool: str, tmp_path: Path, name: str, series: list[dict[str, str]], minute: int, alert: str, fire: list[Any]
) -> None:
    ctx = _ctx()
    test = {"interval": "1m", "input_series": series,
            "alert_rule_test": [{"eval_time": f"{minute}m", "alertname": alert,
                                 "exp_alerts": _expected(ctx, alert, fire, "1")}]}
    proc = _run(promtool, tmp_path, ctx, [test])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_old_drop_rule_would_have_fired_at_the_job_end(promtool: str, tmp_path: Path) -> None:
    """The job-end series is a real test: without the job-step condition the drop comparison holds on both nodes."""
    ctx = _ctx()
    expr = _rule(ctx, "EfaThroughputDrop").expr.split(" and on (instance) (max by")[0]
    doc = {"groups": [{"name": "old", "rules": [{"alert": "Old", "expr": expr, "for": "10m"}]}]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(doc))
    test = {"interval": "1m", "input_series": _job_end_series(),
            "alert_rule_test": [{"eval_time": "70m", "alertname": "Old", "exp_alerts": [
                {"exp_labels": {"instance": "10.0.0.1:9100"}}, {"exp_labels": {"instance": "10.0.0.2:9100"}}]}]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "tests": [test]}))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_watchdog_carries_the_cluster_name(promtool: str, tmp_path: Path) -> None:
    """The SNS subject is ``... ({{ .CommonLabels.cluster }})``: the Watchdog must carry ``cluster`` itself."""
    ctx = _ctx()
    rule = _rule(ctx, "Watchdog")
    test = {"interval": "1m", "input_series": [],
            "alert_rule_test": [{"eval_time": "1m", "alertname": "Watchdog", "exp_alerts": [{
                "exp_labels": {"severity": "none", "cluster": "t-cluster"},
                "exp_annotations": {"summary": rule.summary, "description": rule.description}}]}]}
    proc = _run(promtool, tmp_path, ctx, [test])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("discovery", "min_count", "absent_rules"),
    [
        ("slurm", None, {"prometheus", "node", "dcgm", "head-node", "slurm"}),
        ("slurm", 0, {"prometheus", "head-node", "slurm"}),  # the GPU group may scale to zero
        ("ec2", 0, {"prometheus", "node", "slurm"}),  # the head node is a node target under EC2 discovery
        ("ec2", 1, {"prometheus", "node", "dcgm", "slurm"}),
    ],
)
def test_absent_rules_only_for_jobs_that_always_have_a_target(
    discovery: str, min_count: int | None, absent_rules: set[str]
) -> None:
    ctx = _ctx(discovery=discovery, min_count=min_count)
    names = {r.alert for rules in alert_groups(ctx).values() for r in rules if r.alert.startswith("MetricsAbsent_")}
    assert names == {f"MetricsAbsent_{j.replace('-', '_')}" for j in absent_rules}


def test_group_scaled_to_zero_raises_no_critical(promtool: str, tmp_path: Path) -> None:
    """GPU group at min_count 0, all nodes powered down: only the head node's jobs report; nothing critical fires."""
    ctx = _ctx(min_count=0)
    up = [{"series": f'up{{job="{j}",instance="127.0.0.1"}}', "values": f"1x{MINUTES}"}
          for j in ("prometheus", "head-node", "slurm")]
    tests = [{"interval": "1m", "input_series": up,
              "alert_rule_test": [{"eval_time": "30m", "alertname": f"MetricsAbsent_{j}", "exp_alerts": []}
                                  for j in ("prometheus", "head_node", "slurm")]}]
    proc = _run(promtool, tmp_path, ctx, tests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    critical = {r.alert for rules in alert_groups(ctx).values() for r in rules
                if r.severity == "critical" and r.expr.startswith("absent(")}
    assert critical == {"MetricsAbsent_prometheus", "MetricsAbsent_head_node", "MetricsAbsent_slurm"}


@pytest.mark.parametrize(("ps_output", "steps", "oldest"), [("  120\n 3600\n", 2, 3600), ("", 0, 0)])
def test_node_facts_count_job_steps_from_slurmstepd(tmp_path: Path, ps_output: str, steps: int, oldest: int) -> None:
    """The collector reads ``ps -C slurmstepd -o etimes=`` (a stub here: one line per step, seconds since start;
    procps ps exits 1 and prints nothing when no process matches)."""
    from fmcluster.features.observability.render_exporters import exporter_context, render_node_facts_script

    rc = resolve(load_blueprint_text(blueprint_text(
        {"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})).blueprint)
    script = tmp_path / "facts.sh"
    script.write_text(render_node_facts_script(exporter_context(rc, role="compute", group=rc.groups[0])))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ps").write_text(
        '#!/bin/bash\n[[ "$*" == "-C slurmstepd -o etimes=" ]] || exit 2\n'
        f"printf '%s' '{ps_output}'\n" + ("exit 1\n" if not ps_output else "")
    )
    (bin_dir / "ps").chmod(0o755)
    (tmp_path / "sys" / "class").mkdir(parents=True)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FMC_SYSFS_ROOT": str(tmp_path / "sys"),
           "FMC_TEXTFILE_DIR": str(tmp_path / "tf")}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "tf" / "fmcluster.prom").read_text()
    assert f"fmcluster_slurm_job_steps {steps}\n" in text
    assert f"fmcluster_slurm_job_step_oldest_age_seconds {oldest}\n" in text
