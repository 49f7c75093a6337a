"""The Slurm settings each orchestrator receives for topology (issue 13).

ParallelCluster: ``TopologyPlugin=topology/tree`` in ``SlurmSettings.CustomSlurmSettings``, a first
topology.conf at the head node's ``OnNodeStart``, the refresh timer at ``OnNodeConfigured`` (after the
observability script), the head node's role allowed ``ec2:DescribeInstanceTopology``; none of it with an
UltraServer queue (ParallelCluster writes block topology for p6e-gb200 itself). Every configuration loads
in ParallelCluster's own schema (tools/pcluster_schema_check.py in .venv-pcluster).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.review.pcluster_config import cluster_configurations
from fmcluster.templates.topology_scripts import render_topology_placeholder
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import cluster_template, matrix_blueprint

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
P5 = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 2}]}


def cluster(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    t = cluster_template(synth_templates(text))
    [res] = resources_of(t, "Custom::PclusterCluster").values()
    return t, res["Properties"]["ClusterConfiguration"]


def test_p5_gets_tree_topology_wired_on_the_head_node() -> None:
    t, config = cluster(blueprint_text(P5))
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [{"TopologyPlugin": "topology/tree"}]
    actions = config["HeadNode"]["CustomActions"]
    start = actions["OnNodeStart"]["Script"]["Fn::Sub"]
    configured = actions["OnNodeConfigured"]["Script"]["Fn::Sub"]
    keys = {a["KeyName"] for a in config["HeadNode"]["Iam"]["S3Access"]}
    assert {start.rsplit("/", 1)[1], configured.rsplit("/", 1)[1]} == keys
    [policy] = [r for k, r in resources_of(t, "AWS::IAM::ManagedPolicy").items() if "TopologyPolicy" in k]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [{
        "Action": ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"], "Effect": "Allow", "Resource": "*",
        "Sid": "TopologyRead"}]
    policies = [p["Policy"] for p in config["HeadNode"]["Iam"]["AdditionalIamPolicies"]]
    assert any(p == {"Ref": next(k for k in resources_of(t, "AWS::IAM::ManagedPolicy") if "TopologyPolicy" in k)}
               for p in policies)


def test_the_placeholder_lists_the_queue_nodes_by_parallelcluster_names() -> None:
    # 2 static and 2 dynamic nodes of queue gpu, compute resource p5-48xlarge
    text = render_topology_placeholder("/opt/slurm/etc/topology.conf",
                                       ["gpu-st-p5-48xlarge-[1-2]", "gpu-dy-p5-48xlarge-[1-2]"])
    assert "SwitchName=fmc-no-topology Nodes=gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-2]" in text


def test_with_metrics_the_topology_installer_runs_after_the_observability_script() -> None:
    _, config = cluster(blueprint_text(P5, {"observability": {"metrics": "self_hosted"}}))
    sequence = config["HeadNode"]["CustomActions"]["OnNodeConfigured"]["Sequence"]
    names = [s["Script"]["Fn::Sub"].rsplit("/", 1)[1] for s in sequence]
    assert len(names) == 2 and len(set(names)) == 2
    assert len(config["HeadNode"]["Iam"]["S3Access"]) == 3  # observability, installer, placeholder


def test_an_ultraserver_queue_leaves_topology_to_parallelcluster() -> None:
    _, config = cluster(matrix_blueprint("parallelcluster", "gb200-580-cuda13.0"))
    assert "CustomSlurmSettings" not in config["Scheduling"]["SlurmSettings"]
    assert "OnNodeStart" not in config["HeadNode"].get("CustomActions", {})


@pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")
def test_wired_configs_load_with_the_parallelcluster_schema(tmp_path: Path) -> None:
    texts = {"p5": blueprint_text(P5), "p5-metrics": blueprint_text(P5, {"observability": {"metrics": "self_hosted"}})}
    paths = []
    for name, text in texts.items():
        (config,) = cluster_configurations(cluster_template(synth_templates(text))).values()
        path = tmp_path / f"{name}.pcluster-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths.append(str(path))
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "pcluster_schema_check.py"), *paths],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(Path(r["file"]).name, r["ok"], r["errors"]) for r in results] == [(Path(p).name, True, {}) for p in paths]
