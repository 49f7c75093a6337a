"""The budget's fleet stop on HyperPod Slurm (fmcluster/orchestrators/hyperpod_slurm/handler_fleet_stop.py) against
botocore's Stubber, which checks every request and response against SageMaker's service model: the UpdateCluster
request is a valid ``ClusterInstanceGroupSpecification`` per compute group with ``InstanceCount`` 0, carrying what
DescribeCluster said of the group and nothing that is state."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.loaders
import pytest
from botocore.exceptions import ClientError
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


# ---- what is copied, decided from the installed botocore's sagemaker model ----------------------------------------

SPEC, DETAILS = "ClusterInstanceGroupSpecification", "ClusterInstanceGroupDetails"
#: Members of the specification that are counts or the image, set by the stop itself, never copied.
SET_BY_THE_STOP = {"InstanceCount", "MinInstanceCount", "ImageId", "ImageReleaseVersion"}


def _shapes() -> dict[str, Any]:
    """The raw shapes of the installed botocore's sagemaker service model (service-2.json)."""
    return botocore.loaders.Loader().load_service_model("sagemaker", "service-2")["shapes"]


def _canonical(shapes: dict[str, Any], name: str, seen: tuple[str, ...] = ()) -> Any:
    """A shape with every reference resolved, so two differently named but equal shapes compare equal; documentation
    and the shape's own name are left out."""
    if name in seen:
        return ("recursive", name)
    shape = {k: v for k, v in shapes[name].items() if k not in ("documentation", "deprecated", "deprecatedMessage")}
    seen = (*seen, name)
    for part in ("member", "key", "value"):
        if part in shape:
            shape[part] = _canonical(shapes, shape[part]["shape"], seen)
    if "members" in shape:
        shape["members"] = {k: _canonical(shapes, v["shape"], seen) for k, v in shape["members"].items()}
    return shape


def _member_shape(shapes: dict[str, Any], structure: str, member: str) -> Any:
    return _canonical(shapes, shapes[structure]["members"][member]["shape"])


def test_every_copied_member_has_the_same_shape_in_the_details_and_the_specification() -> None:
    """A member sent back as DescribeCluster gave it must be valid in UpdateCluster: the same shape on both sides
    (a botocore that changes one side fails here, not in the account)."""
    shapes = _shapes()
    differ = [m for m in h.COPIED if m not in shapes[DETAILS]["members"] or m not in shapes[SPEC]["members"]
              or _member_shape(shapes, DETAILS, m) != _member_shape(shapes, SPEC, m)]
    assert differ == []
    # the specification's required members are all there: copied, or set by the stop
    assert set(shapes[SPEC]["required"]) <= set(h.COPIED) | {"InstanceCount"}


def test_every_member_of_the_same_shape_is_copied_and_no_other() -> None:
    """Both ways: the members the model gives the same shape on both sides are exactly COPIED; AutoPatchConfig,
    InstanceRequirements and KubernetesConfig are among those of another shape."""
    shapes = _shapes()
    shared = (set(shapes[SPEC]["members"]) & set(shapes[DETAILS]["members"])) - SET_BY_THE_STOP
    same = {m for m in shared if _member_shape(shapes, DETAILS, m) == _member_shape(shapes, SPEC, m)}
    assert same == set(h.COPIED)
    assert {"AutoPatchConfig", "InstanceRequirements", "KubernetesConfig"} <= shared - same


def test_a_group_with_auto_patching_is_stopped_with_a_valid_request() -> None:
    """DescribeCluster gives the group's AutoPatchConfig as details (CurrentPatchSchedule, DesiredPatchSchedule); the
    Stubber validates the UpdateCluster request against the model, and AutoPatchConfig is not in it."""
    gpu = {**_group("gpu", 4), "AutoPatchConfig": {
        "PatchingStrategy": "WhenIdle", "CurrentPatchSchedule": {"NextPatchDate": datetime(2026, 12, 7, tzinfo=UTC)},
        "DesiredPatchSchedule": {"NextPatchDate": datetime(2026, 12, 14, tzinfo=UTC)}}}
    sent = {k: v for k, v in _sent(gpu).items() if k != "AutoPatchConfig"}
    sm = _client()
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", _described(_group("controller", 1, "Controller"), gpu),
                          {"ClusterName": "hp-train"})
        stub.add_response("update_cluster", {"ClusterArn": ARN}, {"ClusterName": "hp-train", "InstanceGroups": [sent]})
        assert h.stop(sm, "hp-train", ["gpu"])["stopped"] == ["gpu"]
        stub.assert_no_pending_responses()


def test_an_update_the_api_refuses_is_raised_so_the_errors_alarm_sees_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """ConflictException (the cluster is already updating): the handler raises, so Lambda counts an error."""
    sm = _client()
    monkeypatch.setenv("CLUSTER_NAME", "hp-train")
    monkeypatch.setenv("COMPUTE_GROUPS", '["gpu"]')
    monkeypatch.setattr(h.boto3, "client", lambda service: sm if service == "sagemaker" else None)
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", _described(_group("gpu", 4)), {"ClusterName": "hp-train"})
        stub.add_client_error("update_cluster", "ConflictException", "cluster is updating")
        with pytest.raises(ClientError, match="ConflictException"):
            h.handler({}, None)
