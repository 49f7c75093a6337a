"""AWS PCS's part of the budget's stop action (docs/capacity.md "Budget"): the handler (:mod:`.handler_fleet_stop`:
the compute node groups scaled to 0) and the IAM the PCS user guide lists for ``UpdateComputeNodeGroup``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from fmcluster.features.capacity_window.construct_fleet_stop import FleetStop

HANDLER_SOURCE = Path(__file__).with_name("handler_fleet_stop.py")

#: What the PCS user guide lists as the minimum permissions of UpdateComputeNodeGroup, besides the action itself
#: ("Minimum permissions for AWS PCS", https://docs.aws.amazon.com/pcs/latest/userguide/security-min-permissions.html),
#: plus ec2:DescribeCapacityReservations for a group on a Capacity Block (same page, "Minimum permissions to use
#: Capacity Blocks"). The Describe actions have no resource-level permissions (Service Authorization Reference,
#: Amazon EC2).
EC2_DESCRIBE = ("ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeLaunchTemplates",
                "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeCapacityReservations")
EC2_LAUNCH = ("ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateTags")


def fleet_stop(stack: Stack, *, cluster_id: str, node_groups: Mapping[str, tuple[str, str]], node_role_arn: str,
               instance_profile_arn: str, mechanism: str) -> FleetStop:
    """The stop of the compute node groups ``node_groups`` (compute group name -> (node group id, node group ARN)) of
    the PCS cluster ``cluster_id``.

    IAM, what the guide lists for ``UpdateComputeNodeGroup`` (and Capacity Blocks): ``pcs:UpdateComputeNodeGroup`` on those node
    groups only; the EC2 reads on ``*``; ``ec2:RunInstances``, ``ec2:CreateFleet`` and ``ec2:CreateTags`` on ``*``,
    without a condition (the guide names no resources for them, and no source says PCS sets ``aws:CalledVia``: the IAM
    user guide lists the services that do, https://docs.aws.amazon.com/IAM/latest/UserGuide/
    reference_policies_condition-keys.html#condition-keys-calledvia, so a ``CalledVia`` condition could refuse the
    scale-down); ``iam:PassRole`` and ``iam:GetInstanceProfile`` of the nodes' role and instance profile only.
    ``mechanism``: the profile's ``fleet_stop``.
    """
    return FleetStop(
        handler_source=HANDLER_SOURCE.read_text(),
        environment={"CLUSTER_ID": cluster_id,
                     "NODE_GROUPS": stack.to_json_string({name: ids[0] for name, ids in node_groups.items()})},
        statements=[
            iam.PolicyStatement(actions=["pcs:UpdateComputeNodeGroup"], resources=[a for _, a in node_groups.values()]),
            iam.PolicyStatement(actions=[*EC2_DESCRIBE, *EC2_LAUNCH], resources=["*"]),
            iam.PolicyStatement(actions=["iam:PassRole"], resources=[node_role_arn]),
            iam.PolicyStatement(actions=["iam:GetInstanceProfile"], resources=[instance_profile_arn]),
        ],
        mechanism=f"{mechanism} ({', '.join(sorted(node_groups))})",
        wildcard_reasons={r"^Resource::\*$": "Exactly the EC2 permissions the PCS user guide lists for "
                          "UpdateComputeNodeGroup (security-min-permissions.html): Describe actions have no "
                          "resource-level permissions, and the guide names no resources for RunInstances, CreateFleet "
                          "and CreateTags (which touch instances, volumes, interfaces, images and launch templates)."},
    )
