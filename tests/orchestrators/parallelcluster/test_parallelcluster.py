"""ParallelCluster construct: the provider nested stack pinned by version, the generated
ClusterConfiguration (queues, networking, storage, scripts, IAM, deletion policy, Slurm settings,
CloudWatch, head node), and every generated configuration loading with ParallelCluster's own schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.features.slurm.render_hooks import slurm_conf_settings
from fmcluster.orchestrators.parallelcluster.construct import TASK_PROLOG
from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from fmcluster.resolved.cluster import NODE_DIR
from tests.blueprints import blueprint_text
from tests.conftest import EXAMPLES, ROOT, resources_of, synth_templates
from tests.orchestrator_support import (
    KINDS,
    cluster_template,
    head_node_steps,
    matrix_stacks,
    matrix_templates,
    pcluster_schema_results,
    same_blueprint_text,
)

TWO_QUEUES = {"compute": [
    {"name": "train", "instance_type": "p5.48xlarge", "count": 4},
    {"name": "cb", "instance_type": "p5en.48xlarge", "count": 2,
     "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}},
    {"name": "odcr", "instance_type": "p5.48xlarge", "count": 3, "min_count": 1,
     "capacity": {"type": "odcr", "resource_group_arn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"}},
    {"name": "spot", "instance_type": "p4d.24xlarge", "count": 2, "capacity": {"type": "spot"}, "threads_per_core": 1},
]}


def cluster(patch: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    t = synth_templates(blueprint_text(patch))["t-cluster-cluster"]
    [res] = resources_of(t, "Custom::PclusterCluster").values()
    return t, res["Properties"]


def test_provider_is_a_nested_stack_pinned_to_the_blueprint_version() -> None:
    # 3.15.0 has no image manifest (R-IMG-2): its official AMI can only be used as a custom image
    t, props = cluster({"orchestrator": {"parallelcluster": {"version": "3.15.0"}},
                        "software": {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}})
    [provider] = resources_of(t, "AWS::CloudFormation::Stack").items()
    url = provider[1]["Properties"]["TemplateURL"]["Fn::Sub"]
    assert url == ("https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                   "/parallelcluster/3.15.0/templates/custom_resource/cluster.yaml")
    assert props["ServiceToken"] == {"Fn::GetAtt": [provider[0], "Outputs.ServiceToken"]}
    assert props["ClusterName"] == "t-cluster"


def test_one_queue_per_compute_group_with_counts_efa_and_capacity() -> None:
    _, props = cluster(TWO_QUEUES)
    queues = {q["Name"]: q for q in props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]}
    assert list(queues) == ["train", "cb", "odcr", "spot"]
    got = {n: (q["CapacityType"], q["ComputeResources"][0]["InstanceType"], q["ComputeResources"][0]["MinCount"],
               q["ComputeResources"][0]["MaxCount"], q["ComputeResources"][0]["Efa"],
               q["ComputeResources"][0].get("CapacityReservationTarget"), q["Networking"]["PlacementGroup"]["Enabled"])
           for n, q in queues.items()}
    efa = {"Enabled": True}  # no GdrSupport: no effect since ParallelCluster 3.0.2 (its release notes)
    assert got == {
        "train": ("ONDEMAND", "p5.48xlarge", 4, 4, efa, None, True),
        "cb": ("CAPACITY_BLOCK", "p5en.48xlarge", 2, 2, efa, {"CapacityReservationId": "cr-0123456789abcdef0"}, False),
        "odcr": ("ONDEMAND", "p5.48xlarge", 1, 3, efa,
                 {"CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"}, False),
        "spot": ("SPOT", "p4d.24xlarge", 2, 2, efa, None, True),
    }
    assert queues["spot"]["ComputeResources"][0]["DisableSimultaneousMultithreading"] is True


def test_queue_networking_uses_the_gpu_subnet_efa_group_and_named_placement_group() -> None:
    _, props = cluster()
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    net = q["Networking"]
    assert "GpuSubnet" in net["SubnetIds"][0]["Fn::ImportValue"]
    assert "EfaSecurityGroup" in net["AdditionalSecurityGroups"][0]["Fn::ImportValue"]
    assert "PlacementGroups" in net["PlacementGroup"]["Name"]["Fn::ImportValue"]


def test_fsx_is_mounted_as_existing_shared_storage() -> None:
    _, props = cluster()
    [shared] = props["ClusterConfiguration"]["SharedStorage"]
    assert (shared["MountDir"], shared["StorageType"]) == ("/fsx", "FsxLustre")
    assert "StorageFileSystem" in shared["FsxLustreSettings"]["FileSystemId"]["Fn::ImportValue"]
    assert list(shared["FsxLustreSettings"]) == ["FileSystemId"]


def test_bootstrap_script_is_on_node_configured_and_readable_object_level() -> None:
    t, props = cluster()
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    # first in the sequence; enroot/pyxis follow (tests/features/slurm/test_slurm_settings.py)
    script = q["CustomActions"]["OnNodeConfigured"]["Sequence"][0]["Script"]["Fn::Sub"]
    assert script.startswith("s3://cdk-hnb659fds-assets-${AWS::AccountId}-us-east-1/") and script.endswith(".sh")
    access = q["Iam"]["S3Access"]
    assert access[0]["KeyName"] == script.rsplit("/", 1)[1]  # the object, not the bucket
    assert access[0].get("EnableWriteAccess", False) is False
    assert access[1]["KeyName"] == "checkpoints/*" and access[1]["EnableWriteAccess"] is True


@pytest.mark.parametrize(("os", "pc_os"), [("ubuntu-22.04", "ubuntu2204"), ("ubuntu-24.04", "ubuntu2404"),
                                           ("amazon-linux-2023", "alinux2023")])
def test_image_os_follows_the_software_os(os: str, pc_os: str) -> None:
    _, props = cluster({"software": {"os": os}})
    assert props["ClusterConfiguration"]["Image"] == {"Os": pc_os}


@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
def test_head_node_runs_the_observability_script_with_the_node_policy(metrics: str) -> None:
    t, props = cluster({"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}})
    head = props["ClusterConfiguration"]["HeadNode"]
    # first in the sequence; the topology installer follows (tests/features/slurm/test_slurm_settings.py)
    script = head_node_steps(t, "OnNodeConfigured")[0]["Script"]
    assert head["Iam"]["S3Access"][0] == {"BucketName": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-us-east-1"},
                                          "KeyName": script.rsplit("/", 1)[1]}
    [ssm, policy, _topology, actions] = head["Iam"]["AdditionalIamPolicies"]
    assert ssm == {"Policy": {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}}
    assert "ObservabilityNodePolicy" in policy["Policy"]["Fn::ImportValue"]
    assert "HeadNodeActionsPolicy" in actions["Policy"]["Ref"]


def test_head_node_runs_only_the_topology_scripts_without_metrics() -> None:
    t, props = cluster()
    head = props["ClusterConfiguration"]["HeadNode"]
    # the phases name the constant launcher; the steps (topology placeholder, installers) are in SSM
    assert set(head["CustomActions"]) == {"OnNodeStart", "OnNodeConfigured", "OnNodeUpdated"}
    assert len(head_node_steps(t, "OnNodeStart")) == 1  # topology placeholder
    assert len(head_node_steps(t, "OnNodeConfigured")) == 4  # topology, Slurm hooks, gate watcher, containers
    [topology] = [k for k in resources_of(t, "AWS::IAM::ManagedPolicy") if "TopologyPolicy" in k]
    [actions] = [k for k in resources_of(t, "AWS::IAM::ManagedPolicy") if "HeadNodeActionsPolicy" in k]
    assert head["Iam"]["AdditionalIamPolicies"] == [
        {"Policy": {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}},
        {"Policy": {"Ref": topology}}, {"Policy": {"Ref": actions}}]


def test_kms_checkpoint_bucket_adds_the_key_policy_to_every_queue() -> None:
    kms = "arn:aws:kms:us-east-1:123456789012:key/0123abcd-0123-4567-89ab-0123456789ab"
    t, props = cluster({"storage": {"checkpoints": {"bucket": "existing-ckpt", "kms_key_arn": kms}}})
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    [ref] = q["Iam"]["AdditionalIamPolicies"]
    policy = t["Resources"][ref["Policy"]["Ref"]]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    statements = {st["Sid"]: st for st in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["CheckpointKey"]["Resource"] == kms
    assert "CheckpointPrefixList" in statements  # issue 12 item 7: listing the prefix (tests/features/storage/test_deploy_storage.py)


def test_checkpoint_policy_without_kms_has_no_key_statement() -> None:
    # Changed on purpose (issue 12 item 7): queues now always get the prefix-listing policy.
    t, props = cluster()
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    [ref] = q["Iam"]["AdditionalIamPolicies"]
    sids = [st["Sid"] for st in t["Resources"][ref["Policy"]["Ref"]]["Properties"]["PolicyDocument"]["Statement"]]
    assert sids == ["CheckpointPrefixList"]


# ---- deletion policy, Slurm settings, CloudWatch, head node; ParallelCluster's own schema ----------
PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"


def _resource(templates: dict[str, Any]) -> dict[str, Any]:
    (res,) = resources_of(cluster_template(templates), "Custom::PclusterCluster").values()
    return res["Properties"]


@pytest.fixture(scope="module")
def default() -> dict[str, Any]:
    return _resource(synth_templates((ROOT / "blueprints" / "default.yaml").read_text()))


def test_cdk_destroy_deletes_the_cluster_by_default(default: dict[str, Any]) -> None:
    """DeletionPolicy is a property of Custom::PclusterCluster (cfn-cluster-resource.html); Delete by default."""
    assert default["DeletionPolicy"] == "Delete"
    assert default["ClusterName"] == "llm-train"


def test_slurm_settings(default: dict[str, Any]) -> None:
    assert default["ClusterConfiguration"]["Scheduling"]["SlurmSettings"] == {
        "QueueUpdateStrategy": "DRAIN", "ScaledownIdletime": 10, "EnableMemoryBasedScheduling": False,
        "CustomSlurmSettings": [{"TopologyPlugin": "topology/tree"}, *slurm_conf_settings(NODE_DIR, TASK_PROLOG)]}
    # (topology and hooks: tests/features/slurm/test_slurm_settings.py)
    (queue,) = default["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    assert queue["HealthChecks"] == {"Gpu": {"Enabled": True}}
    assert queue["ComputeSettings"]["LocalStorage"]["RootVolume"] == {"Size": 200, "Encrypted": True, "VolumeType": "gp3"}


def test_monitoring_and_head_node(default: dict[str, Any]) -> None:
    config = default["ClusterConfiguration"]
    assert config["Monitoring"] == {
        "DetailedMonitoring": False,
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
        "deletion_policy": "Retain", "queue_update_strategy": "TERMINATE", "scaledown_idletime_minutes": 30,
        "memory_based_scheduling": True, "log_retention_days": 90, "cloudwatch_dashboard": False,
        "gpu_health_checks": False, "head_node_root_volume_gib": 500, "head_node_instance_type": "m7i.8xlarge"}}})))
    config = props["ClusterConfiguration"]
    assert props["DeletionPolicy"] == "Retain"
    assert config["Scheduling"]["SlurmSettings"] == {
        "QueueUpdateStrategy": "TERMINATE", "ScaledownIdletime": 30, "EnableMemoryBasedScheduling": True,
        "CustomSlurmSettings": [{"TopologyPlugin": "topology/tree"}, *slurm_conf_settings(NODE_DIR, TASK_PROLOG)]}
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
    returncode, results = pcluster_schema_results(configs, tmp_path)
    assert results == [(f"{name}.pcluster-config.yaml", True, {}) for name in configs]
    assert returncode == 0


def test_only_parallelcluster_writes_a_pcluster_config() -> None:
    counts = {k: len(cluster_configurations(cluster_template(synth_templates(same_blueprint_text(k))))) for k in KINDS}
    assert counts == {"parallelcluster": 1, "hyperpod": 0, "pcs": 0}
