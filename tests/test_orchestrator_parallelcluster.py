"""ParallelCluster depth: deletion policy, queue update strategy, Slurm settings, CloudWatch, head node,
and every generated configuration loading with ParallelCluster's own schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.review.pcluster_config import cluster_configurations
from tests.blueprints import blueprint_text
from tests.conftest import EXAMPLES, ROOT, resources_of, synth_templates
from tests.orchestrator_support import KINDS, cluster_template, matrix_stacks, matrix_templates, same_blueprint_text

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"


def _resource(templates: dict[str, Any]) -> dict[str, Any]:
    (res,) = resources_of(cluster_template(templates), "Custom::PclusterCluster").values()
    return res["Properties"]


@pytest.fixture(scope="module")
def default() -> dict[str, Any]:
    return _resource(synth_templates((ROOT / "blueprints" / "default.yaml").read_text()))


def test_deletion_policy_is_a_retained_resource_property(default: dict[str, Any]) -> None:
    assert default["DeletionPolicy"] == "Retain"
    assert default["ClusterName"] == "llm-train"


def test_slurm_settings(default: dict[str, Any]) -> None:
    assert default["ClusterConfiguration"]["Scheduling"]["SlurmSettings"] == {
        "QueueUpdateStrategy": "DRAIN", "ScaledownIdletime": 10, "EnableMemoryBasedScheduling": False}
    (queue,) = default["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    assert queue["HealthChecks"] == {"Gpu": {"Enabled": True}}
    assert queue["ComputeSettings"]["LocalStorage"]["RootVolume"] == {"Size": 200, "Encrypted": True, "VolumeType": "gp3"}


def test_monitoring_and_head_node(default: dict[str, Any]) -> None:
    config = default["ClusterConfiguration"]
    assert config["Monitoring"] == {
        "DetailedMonitoring": True,
        "Logs": {"CloudWatch": {"Enabled": True, "RetentionInDays": 30, "DeletionPolicy": "Retain"}, "Rotation": {"Enabled": True}},
        "Dashboards": {"CloudWatch": {"Enabled": True}},
        "Alarms": {"Enabled": True},
    }
    head = config["HeadNode"]
    assert head["InstanceType"] == "m7i.4xlarge"
    assert head["LocalStorage"]["RootVolume"] == {"Size": 200, "Encrypted": True, "VolumeType": "gp3"}
    assert head["Imds"] == {"Secured": True}


def test_settings_reach_the_config() -> None:
    props = _resource(synth_templates(blueprint_text({"orchestrator": {"parallelcluster": {
        "deletion_policy": "Delete", "queue_update_strategy": "TERMINATE", "scaledown_idletime_minutes": 30,
        "memory_based_scheduling": True, "log_retention_days": 90, "cloudwatch_dashboard": False,
        "gpu_health_checks": False, "head_node_root_volume_gib": 500, "head_node_instance_type": "m7i.8xlarge"}}})))
    config = props["ClusterConfiguration"]
    assert props["DeletionPolicy"] == "Delete"
    assert config["Scheduling"]["SlurmSettings"] == {
        "QueueUpdateStrategy": "TERMINATE", "ScaledownIdletime": 30, "EnableMemoryBasedScheduling": True}
    assert config["Monitoring"]["Logs"]["CloudWatch"]["RetentionInDays"] == 90
    assert config["Monitoring"]["Dashboards"] == {"CloudWatch": {"Enabled": False}}
    assert config["Scheduling"]["SlurmQueues"][0]["HealthChecks"] == {"Gpu": {"Enabled": False}}
    assert config["HeadNode"]["LocalStorage"]["RootVolume"]["Size"] == 500
    assert config["HeadNode"]["InstanceType"] == "m7i.8xlarge"


def _pcluster_blueprints() -> dict[str, str]:
    """Every ParallelCluster example, the hyperpod-p5 example switched to ParallelCluster, and the matrix."""
    out = {}
    for path in EXAMPLES:
        data = yaml.safe_load(path.read_text())
        if data.get("orchestrator", {}).get("kind", "parallelcluster") == "parallelcluster":
            out[path.stem] = path.read_text()
    out["hyperpod-p5-as-parallelcluster"] = same_blueprint_text("parallelcluster")
    return out


@pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")
def test_generated_configs_load_with_the_parallelcluster_schema(tmp_path: Path) -> None:
    configs: dict[str, Any] = {}
    for name, text in _pcluster_blueprints().items():
        (config,) = cluster_configurations(cluster_template(synth_templates(text))).values()
        configs[name] = config
    for stack in matrix_stacks():
        (config,) = cluster_configurations(cluster_template(matrix_templates("parallelcluster", stack))).values()
        configs[f"matrix-{stack}"] = config
    assert {"default", "p5en-capacity-block", "p6-b200", "hyperpod-p5-as-parallelcluster"} <= set(configs)
    paths = []
    for name, config in configs.items():
        path = tmp_path / f"{name}.pcluster-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths.append(str(path))
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "pcluster_schema_check.py"), *paths],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(Path(r["file"]).name, r["ok"], r["errors"]) for r in results] == [
        (Path(p).name, True, {}) for p in paths]
    assert proc.returncode == 0


def test_only_parallelcluster_writes_a_pcluster_config() -> None:
    counts = {k: len(cluster_configurations(cluster_template(synth_templates(same_blueprint_text(k))))) for k in KINDS}
    assert counts == {"parallelcluster": 1, "hyperpod": 0, "pcs": 0}
