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

from fmcluster.catalog import get_instance
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


# ---- HyperPod EKS: the rules on the series the HyperPod observability add-on publishes (render_addon_rules.py) ------
# The example: 2 x p5.48xlarge (8 GPUs and 32 EFA devices each). Series carry the names their exporters give them:
# node_amazonefa_info{device} once per EFA device, node_amazonefa_<counter>{device,port} counters (with or without the
# _total an OpenMetrics scrape appends), DCGM_FI_DEV_GPU_TEMP{gpu} per GPU, node_load1 once per node.
EKS_NODES = ("10.1.0.1:9100", "10.1.0.2:9100")


def _eks_ctx() -> Any:
    from fmcluster.validation import load_blueprint
    from tests.conftest import ROOT

    return observability_context(resolve(load_blueprint(ROOT / "blueprints" / "hyperpod-eks.yaml")))


def _per(name: str, instance: str, n: int, label: str, value: str = "1") -> list[dict[str, str]]:
    """``n`` series of ``name`` on ``instance``, one per ``label`` value 0..n-1, constant ``value``."""
    return [{"series": f'{name}{{instance="{instance}",{label}="{i}"}}', "values": f"{value}x{MINUTES}"}
            for i in range(n)]


def _efa_errors(instance: str, name: str, rising: bool) -> dict[str, str]:
    values = " ".join(str(m if rising else 0) for m in range(MINUTES))
    return {"series": f'{name}{{instance="{instance}",device="rdmap0s0",port="1"}}', "values": values}


EKS_CASES = [
    # (name, series, eval minute, alert, instances (or label sets) expected to fire, $value)
    ("a node with 31 of 32 EFA devices", _per("node_amazonefa_info", EKS_NODES[0], 32, "device")
     + _per("node_amazonefa_info", EKS_NODES[1], 31, "device"), 20, "EfaDeviceMissing", [EKS_NODES[1]], "31"),
    ("work-request errors under either counter name fire, a flat counter does not",
     [_efa_errors(EKS_NODES[0], "node_amazonefa_rdma_write_wr_err", True),
      _efa_errors(EKS_NODES[1], "node_amazonefa_rdma_read_wr_err_total", True),
      _efa_errors(EKS_NODES[1], "node_amazonefa_rdma_write_wr_err_total", False)],
     20, "EfaWorkRequestErrors", [{"instance": n, "device": "rdmap0s0"} for n in EKS_NODES], "1"),
    ("read and write errors on one device fire once", [
        _efa_errors(EKS_NODES[0], "node_amazonefa_rdma_write_wr_err", True),
        _efa_errors(EKS_NODES[0], "node_amazonefa_rdma_read_wr_err", True)],
     20, "EfaWorkRequestErrors", [{"instance": EKS_NODES[0], "device": "rdmap0s0"}], "1"),
    ("no EFA series at all", _per("node_load1", EKS_NODES[0], 1, "cpu"), 20, "EfaMetricsAbsent", [{}], "1"),
    ("EFA series arrive", _per("node_amazonefa_info", EKS_NODES[0], 1, "device"), 20, "EfaMetricsAbsent", [], "1"),
    ("one of two nodes reports", _per("node_load1", EKS_NODES[0], 1, "cpu"), 20, "NodesBelowPlan", [{}], "1"),
    ("no node reports (the collector is down)", _per("DCGM_FI_DEV_GPU_TEMP", EKS_NODES[0], 1, "gpu", "40"), 20,
     "NodesBelowPlan", [{}], "0"),
    ("both nodes report", _per("node_load1", EKS_NODES[0], 1, "cpu") + _per("node_load1", EKS_NODES[1], 1, "cpu"),
     20, "NodesBelowPlan", [], "2"),
    ("a node with 7 of 8 GPUs", _per("DCGM_FI_DEV_GPU_TEMP", EKS_NODES[0], 8, "gpu", "40")
     + _per("DCGM_FI_DEV_GPU_TEMP", EKS_NODES[1], 7, "gpu", "40"), 20, "GpuMissing", [EKS_NODES[1]], "7"),
    ("no GPU reports", _per("node_load1", EKS_NODES[0], 1, "cpu"), 20, "GpusBelowPlan", [{}], "0"),
    ("a missing node for less than 15 minutes is quiet", _per("node_load1", EKS_NODES[0], 1, "cpu"), 10,
     "NodesBelowPlan", [], "1"),
]


@pytest.mark.parametrize(("name", "series", "minute", "alert", "fire", "value"), EKS_CASES,
                         ids=[c[0] for c in EKS_CASES])
def test_eks_alert_fires_only_on_a_real_fault(
    promtool: str, tmp_path: Path, name: str, series: list[dict[str, str]], minute: int, alert: str,
    fire: list[Any], value: str,
) -> None:
    ctx = _eks_ctx()
    test = {"interval": "1m", "input_series": series,
            "alert_rule_test": [{"eval_time": f"{minute}m", "alertname": alert,
                                 "exp_alerts": _expected(ctx, alert, fire, value)}]}
    proc = _run(promtool, tmp_path, ctx, [test])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_eks_rules_read_only_what_the_addon_publishes() -> None:
    """Every series an EKS rule reads is one the add-on publishes (render_addon_rules.ADDON_SERIES), under its name or,
    for an EFA counter, with _total; none of fmcluster's own textfile, Slurm or scrape-job series."""
    from fmcluster.features.observability.render_addon_rules import ADDON_SERIES

    rules = [r for rules in alert_groups(_eks_ctx()).values() for r in rules]
    assert {r.alert for r in rules} >= {"GpuMissing", "GpusBelowPlan", "EfaDeviceMissing", "EfaWorkRequestErrors",
                                        "EfaMetricsAbsent", "NodesBelowPlan", "Watchdog", "GpuEccDoubleBitErrors"}
    dcgm_fields = {"DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE"}
    for rule in rules:
        plain = set(re.findall(r"\b(?:DCGM_[A-Z_]+|node_[a-z0-9_]+)\b", rule.expr))
        regex = {m[0] for m in re.findall(r'__name__=~"(\w+?)(\(_total\)\?)"', rule.expr)}
        assert plain | regex <= set(ADDON_SERIES) | dcgm_fields, rule.alert
        assert not re.search(r"fmcluster_|slurm_|up\{", rule.expr), rule.alert


@pytest.mark.parametrize(("groups", "expected"), [
    # one group at min 0: nothing is kept running, so no "below plan" or "absent" rule
    ([{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "min_count": 0}],
     {"GpuMissing", "EfaDeviceMissing", "EfaWorkRequestErrors"}),
    # p4d (4 EFA, 8 GPUs) and p5 (32 EFA, 8 GPUs): a node is judged against the smaller EFA count
    ([{"name": "a100", "instance_type": "p4d.24xlarge", "count": 1},
      {"name": "h100", "instance_type": "p5.48xlarge", "count": 1}],
     {"GpuMissing", "GpusBelowPlan", "EfaDeviceMissing", "EfaWorkRequestErrors", "EfaMetricsAbsent", "NodesBelowPlan"}),
])
def test_eks_rules_follow_the_groups(groups: list[dict[str, Any]], expected: set[str]) -> None:
    from tests.blueprints import example

    ctx = observability_context(resolve(load_blueprint_text(blueprint_text({"compute": groups},
                                                                            base=example("hyperpod-eks"))).blueprint))
    rules = {r.alert: r for g in alert_groups(ctx).values() for r in g}
    dcgm_only = {"GpuXidHardwareError", "GpuXidApplicationError", "GpuFallenOffBus", "GpuEccDoubleBitErrors",
                 "GpuRowRemapFailure", "Watchdog"}
    assert set(rules) - dcgm_only == expected
    minimum_efa = min(get_instance(g["instance_type"]).efa_interface_count for g in groups)
    assert rules["EfaDeviceMissing"].expr == f"count by (instance) (node_amazonefa_info) < {minimum_efa}"
