"""ParallelCluster: provider nested stack pinned by version, and the generated ClusterConfiguration."""

from __future__ import annotations

from typing import Any

import pytest

from tests.blueprints import blueprint_text
from tests.conftest import resources_of, synth_templates

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
    t, props = cluster({"orchestrator": {"parallelcluster": {"version": "3.15.0"}}})
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
    efa = {"Enabled": True, "GdrSupport": True}
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
    script = q["CustomActions"]["OnNodeConfigured"]["Script"]["Fn::Sub"]
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
    t, props = cluster({"observability": {"metrics": metrics}})
    head = props["ClusterConfiguration"]["HeadNode"]
    script = head["CustomActions"]["OnNodeConfigured"]["Script"]["Fn::Sub"]
    assert head["Iam"]["S3Access"] == [{"BucketName": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-us-east-1"},
                                        "KeyName": script.rsplit("/", 1)[1]}]
    [policy] = head["Iam"]["AdditionalIamPolicies"]
    assert "ObservabilityNodePolicy" in policy["Policy"]["Fn::ImportValue"]


def test_head_node_has_no_custom_action_without_metrics() -> None:
    _, props = cluster()
    assert "CustomActions" not in props["ClusterConfiguration"]["HeadNode"]
    assert "Iam" not in props["ClusterConfiguration"]["HeadNode"]


def test_kms_checkpoint_bucket_adds_the_key_policy_to_every_queue() -> None:
    kms = "arn:aws:kms:us-east-1:123456789012:key/0123abcd-0123-4567-89ab-0123456789ab"
    t, props = cluster({"storage": {"checkpoints": {"bucket": "existing-ckpt", "kms_key_arn": kms}}})
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    [ref] = q["Iam"]["AdditionalIamPolicies"]
    policy = t["Resources"][ref["Policy"]["Ref"]]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    [st] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (st["Sid"], st["Resource"]) == ("CheckpointKey", kms)


def test_no_key_policy_without_kms() -> None:
    _, props = cluster()
    [q] = props["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    assert "AdditionalIamPolicies" not in q["Iam"]
