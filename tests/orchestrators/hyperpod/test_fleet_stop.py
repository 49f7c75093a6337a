"""The budget's fleet stop on HyperPod Slurm (fmcluster/orchestrators/hyperpod_slurm/handler_fleet_stop.py) against
botocore's Stubber, which checks every request and response against SageMaker's service model: the UpdateCluster
request is a valid ``ClusterInstanceGroupSpecification`` per compute group with ``InstanceCount`` 0, carrying what
DescribeCluster said of the group and nothing that is state."""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmcluster.orchestrators.hyperpod_slurm import handler_fleet_stop as h

ARN = "arn:aws:sagemaker:us-east-2:111122223333:cluster/abcdef012345"
ROLE = "arn:aws:iam::111122223333:role/hp-train-exec"


def _group(name: str, count: int, node_type: str = "Compute") -> dict[str, Any]:
    return {"InstanceGroupName": name, "InstanceType": "ml.p5.48xlarge", "CurrentCount": count, "TargetCount": count,
            "Status": "InService", "ExecutionRole": ROLE, "ThreadsPerCore": 1,
            "LifeCycleConfig": {"SourceS3Uri": f"s3://bucket/lifecycle/{name}/", "OnInitComplete": "on_init_complete.sh"},
            "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
            "SlurmConfig": {"NodeType": node_type, **({"PartitionNames": [name]} if node_type == "Compute" else {})},
            "CurrentImageId": "ami-0123456789abcdef0"}


def _described(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"ClusterArn": ARN, "ClusterName": "hp-train", "ClusterStatus": "InService", "InstanceGroups": list(groups)}


def _client() -> Any:
    return boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")


def _sent(group: dict[str, Any]) -> dict[str, Any]:
    """What the stop must send for ``group``: the group without its counts and state, the image as ImageId, 0."""
    spec = {k: copy.deepcopy(v) for k, v in group.items()
            if k not in ("CurrentCount", "TargetCount", "Status", "CurrentImageId")}
    return {**spec, "ImageId": group["CurrentImageId"], "InstanceCount": 0}


@pytest.mark.parametrize(("groups", "stopped", "already_zero"), [
    ([_group("controller", 1, "Controller"), _group("gpu", 4), _group("gpu2", 2)], ["gpu", "gpu2"], []),
    ([_group("controller", 1, "Controller"), _group("gpu", 0), _group("gpu2", 2)], ["gpu2"], ["gpu"]),
    ([_group("controller", 1, "Controller"), _group("gpu", 0), _group("gpu2", 0)], [], ["gpu", "gpu2"]),
], ids=["both-running", "one-already-at-zero", "nothing-to-stop"])
def test_the_compute_groups_go_to_zero_and_the_controller_stays(groups: list[dict[str, Any]], stopped: list[str],
                                                                already_zero: list[str]) -> None:
    sm = _client()
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", _described(*groups), {"ClusterName": "hp-train"})
        if stopped:
            by_name = {g["InstanceGroupName"]: g for g in groups}
            stub.add_response("update_cluster", {"ClusterArn": ARN}, {
                "ClusterName": "hp-train", "InstanceGroups": [_sent(by_name[g]) for g in stopped]})
        assert h.stop(sm, "hp-train", ["gpu", "gpu2"]) == {"cluster": "hp-train", "stopped": stopped,
                                                          "already_zero": already_zero}
        stub.assert_no_pending_responses()


def test_a_group_the_cluster_does_not_have_is_refused_before_any_update() -> None:
    sm = _client()
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", _described(_group("controller", 1, "Controller"), _group("gpu", 4)),
                          {"ClusterName": "hp-train"})
        with pytest.raises(RuntimeError, match="hp-train has no instance group gpu2; it has controller, gpu"):
            h.stop(sm, "hp-train", ["gpu", "gpu2"])
        stub.assert_no_pending_responses()


def test_the_handler_reads_cluster_and_groups_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    sm = _client()
    monkeypatch.setenv("CLUSTER_NAME", "hp-train")
    monkeypatch.setenv("COMPUTE_GROUPS", '["gpu"]')
    monkeypatch.setattr(h.boto3, "client", lambda service: sm if service == "sagemaker" else None)
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", _described(_group("gpu", 0)), {"ClusterName": "hp-train"})
        assert h.handler({}, None) == {"cluster": "hp-train", "stopped": [], "already_zero": ["gpu"]}
