"""HyperPod Slurm's part of the budget's stop action (docs/capacity.md "Budget"): the handler
(:mod:`.handler_fleet_stop`: the compute instance groups to 0 with ``UpdateCluster``) and IAM limited to this cluster
and its execution role."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import aws_iam as iam

from fmcluster.features.capacity_window.construct_fleet_stop import FleetStop

HANDLER_SOURCE = Path(__file__).with_name("handler_fleet_stop.py")


def fleet_stop(*, cluster_name: str, cluster_arn: str, execution_role_arn: str, groups: Sequence[str],
               mechanism: str) -> FleetStop:
    """The stop of the compute instance groups ``groups`` of the HyperPod cluster ``cluster_name``.

    IAM: ``sagemaker:DescribeCluster`` and ``sagemaker:UpdateCluster`` on the cluster's ARN (resource type ``cluster``:
    Service Authorization Reference, Amazon SageMaker AI,
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html), and
    ``iam:PassRole`` of the execution role to SageMaker only (the request carries the groups' ``ExecutionRole``;
    passing a role to a service needs ``iam:PassRole``: IAM user guide, "Grant a user permissions to pass a role to an
    AWS service", https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_use_passrole.html). ``mechanism``: the
    profile's ``fleet_stop``."""
    return FleetStop(
        handler_source=HANDLER_SOURCE.read_text(),
        environment={"CLUSTER_NAME": cluster_name, "COMPUTE_GROUPS": json.dumps(list(groups))},
        statements=[
            iam.PolicyStatement(actions=["sagemaker:DescribeCluster", "sagemaker:UpdateCluster"], resources=[cluster_arn]),
            iam.PolicyStatement(actions=["iam:PassRole"], resources=[execution_role_arn],
                                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}),
        ],
        mechanism=f"{mechanism} ({', '.join(groups)})",
    )
