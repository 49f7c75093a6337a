"""Preflight of an existing EKS cluster for HyperPod EKS (``eks_cluster_arn``): DescribeCluster answers through
botocore's Stubber (which checks every request and response against the EKS service model) -> the check's row."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmcluster.blueprint.model import HYPERPOD_EKS_KUBERNETES_VERSIONS
from fmcluster.preflight.checks import check_eks_cluster
from fmcluster.preflight.clients import Clients
from fmcluster.preflight.runner import plan_steps
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, blueprint_text, example

VPC = "vpc-0123456789abcdef0"
NET = {"vpc_id": VPC, "gpu_subnet_id": "subnet-0123456789abcdef0"}
ARN = "arn:aws:eks:us-east-1:123456789012:cluster/training"


def _cluster(**over: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "training", "arn": ARN, "version": "1.33",
                         "resourcesVpcConfig": {"vpcId": VPC, "subnetIds": ["subnet-0123456789abcdef1"]},
                         "accessConfig": {"authenticationMode": "API"}}
    c.update(over)
    return c


def _check(answer: dict[str, Any] | str) -> tuple[str, str]:
    client = boto3.client("eks", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        if isinstance(answer, str):
            stub.add_client_error("describe_cluster", service_error_code=answer, http_status_code=404,
                                  expected_params={"name": "training"})
        else:
            stub.add_response("describe_cluster", {"cluster": answer}, {"name": "training"})
        row = check_eks_cluster(client, name="training", vpc_id=VPC, versions=HYPERPOD_EKS_KUBERNETES_VERSIONS)
        stub.assert_no_pending_responses()
    return row.status, row.detail


@pytest.mark.parametrize(("answer", "status", "detail"), [
    (_cluster(), "ok", f"in {VPC}, Kubernetes 1.33, authentication mode API"),
    (_cluster(resourcesVpcConfig={"vpcId": "vpc-0fedcba9876543210"}), "error",
     f"is in vpc-0fedcba9876543210, not network.vpc_id {VPC}"),
    (_cluster(version="1.27"), "error", "runs Kubernetes 1.27; HyperPod supports 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, 1.34"),
    (_cluster(accessConfig={"authenticationMode": "CONFIG_MAP"}), "error",
     "authentication mode CONFIG_MAP; HyperPod needs API or API_AND_CONFIG_MAP"),
    (_cluster(accessConfig={}), "warning",
     f"in {VPC}, Kubernetes 1.33; the authentication mode was not reported (HyperPod needs API or API_AND_CONFIG_MAP)"),
    ("ResourceNotFoundException", "error", "no EKS cluster training in this Region"),
])
def test_existing_cluster_is_checked(answer: dict[str, Any] | str, status: str, detail: str) -> None:
    assert _check(answer) == (status, detail)


def _steps(patch: dict[str, Any], eks: Any) -> list[str]:
    text = blueprint_text(patch, base=example("hyperpod-eks"))
    rc = resolve(load_blueprint_text(text).blueprint)
    clients = Clients(ec2=None, s3=None, service_quotas=None, fsx=None, sts=None, sagemaker=None, eks=eks)
    return [f"{s.check}: {s.subject}" for s in plan_steps(rc, clients, None, until=None) if s.check == "EKS cluster"]


def test_only_an_existing_cluster_is_checked() -> None:
    imported = {"network": NET, "orchestrator": {"hyperpod": {"eks": DROP, "eks_cluster_arn": ARN}}}
    assert _steps(imported, eks=object()) == ["EKS cluster: training"]
    assert _steps({}, eks=object()) == []  # the cluster fmcluster creates does not exist yet
