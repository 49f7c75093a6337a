"""Deliberate answers to ParallelCluster's two warnings on fmcluster's configs: DetailedMonitoring is a blueprint
option (default off: it is billed per instance), and no key pair is expected because the head node gets the SSM
Session Manager policy (ParallelCluster attaches only CloudWatchAgentServerPolicy and AdditionalIamPolicies)."""

from __future__ import annotations

from typing import Any

from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from tests.blueprints import blueprint_text
from tests.conftest import synth_templates

SSM = {"Policy": {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}}


def config(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    [found] = [c for t in synth_templates(blueprint_text(patch)).values() for c in cluster_configurations(t).values()]
    return found


def test_detailed_monitoring_is_off_by_default_and_a_blueprint_option() -> None:
    assert config()["Monitoring"]["DetailedMonitoring"] is False
    on = config({"orchestrator": {"parallelcluster": {"detailed_monitoring": True}}})
    assert on["Monitoring"]["DetailedMonitoring"] is True


def test_head_node_is_reachable_through_ssm_with_or_without_a_key() -> None:
    # SSM first; then the topology refresh's policy (tests/features/slurm/test_slurm_settings.py)
    assert config()["HeadNode"]["Iam"]["AdditionalIamPolicies"][0] == SSM
    keyed = config({"orchestrator": {"parallelcluster": {"ssh_key_name": "ops"}}})
    assert keyed["HeadNode"]["Ssh"] == {"KeyName": "ops"}
    assert keyed["HeadNode"]["Iam"]["AdditionalIamPolicies"][0] == SSM
