"""ParallelCluster login nodes (``orchestrator.parallelcluster.login_instance_type``): one ``LoginNodes`` pool
in the head node's subnet and security group, loading in ParallelCluster's own schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import cluster_template

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
LOGIN = {"orchestrator": {"parallelcluster": {"login_instance_type": "m7i.2xlarge", "login_count": 2,
                                              "ssh_key_name": "ops"}}}


def config(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    t = cluster_template(synth_templates(blueprint_text(patch)))
    [res] = resources_of(t, "Custom::PclusterCluster").values()
    return res["Properties"]["ClusterConfiguration"]


def test_login_pool_shares_the_head_nodes_network_and_access() -> None:
    c = config(LOGIN)
    [pool] = c["LoginNodes"]["Pools"]
    head = c["HeadNode"]
    assert pool == {
        "Name": "login", "InstanceType": "m7i.2xlarge", "Count": 2,
        "Networking": {"SubnetIds": [head["Networking"]["SubnetId"]],
                       "AdditionalSecurityGroups": head["Networking"]["AdditionalSecurityGroups"]},
        "Iam": {"AdditionalIamPolicies": [head["Iam"]["AdditionalIamPolicies"][0]]},
    }  # no Ssh.KeyName: refused by ParallelCluster >= 3.15 for login nodes (they take the head node's)
    assert head["Ssh"] == {"KeyName": "ops"}
    assert head["Iam"]["AdditionalIamPolicies"][0] == {
        "Policy": {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}}


def test_no_login_pool_by_default() -> None:
    assert "LoginNodes" not in config()


@pytest.mark.parametrize(("value", "fragment"), [(0, "login_count"), (101, "login_count")])
def test_login_count_is_bounded(value: int, fragment: str) -> None:
    from fmcluster.blueprint import BlueprintError
    from fmcluster.validation import load_blueprint_text

    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text({"orchestrator": {"parallelcluster": {"login_count": value}}}))
    assert any(fragment in p.path for p in e.value.problems)


@pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")
def test_login_pool_loads_with_the_parallelcluster_schema(tmp_path: Path) -> None:
    (c,) = cluster_configurations(cluster_template(synth_templates(blueprint_text(LOGIN)))).values()
    path = tmp_path / "login.pcluster-config.yaml"
    path.write_text(yaml.safe_dump(c, sort_keys=False))
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "pcluster_schema_check.py"), str(path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(r["ok"], r["errors"]) for r in results] == [(True, {})], proc.stdout + proc.stderr
