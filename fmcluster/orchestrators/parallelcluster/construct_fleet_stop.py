"""ParallelCluster's part of the budget's stop action (docs/capacity.md "Budget"): the handler
(:mod:`.handler_fleet_stop`: the compute fleet's ``STOP_REQUESTED``, as ``pcluster update-compute-fleet`` sets it) and
an IAM statement limited to that one item of the cluster's own table."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from fmcluster.features.capacity_window.construct_fleet_stop import FleetStop

HANDLER_SOURCE = Path(__file__).with_name("handler_fleet_stop.py")
#: ParallelCluster's table prefix (aws/aws-parallelcluster cli/src/pcluster/constants.py PCLUSTER_DYNAMODB_PREFIX).
TABLE_PREFIX = "parallelcluster-"


def fleet_status_table(cluster_name: str) -> str:
    """``parallelcluster-<cluster name>``: the DynamoDB table that holds the compute fleet's status."""
    return f"{TABLE_PREFIX}{cluster_name}"


def fleet_stop(stack: Stack, cluster_name: str, mechanism: str) -> FleetStop:
    """The stop: ``dynamodb:GetItem`` / ``UpdateItem`` on the cluster's table, only on the ``COMPUTE_FLEET`` item
    (``dynamodb:LeadingKeys``, the partition key values a request may touch: DynamoDB developer guide, "Using IAM
    policy conditions for fine-grained access control",
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html); ``mechanism``: the
    profile's ``fleet_stop``."""
    table = fleet_status_table(cluster_name)
    arn = stack.format_arn(service="dynamodb", resource="table", resource_name=table)
    return FleetStop(
        handler_source=HANDLER_SOURCE.read_text(), environment={"FLEET_STATUS_TABLE": table},
        statements=[iam.PolicyStatement(
            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"], resources=[arn],
            conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["COMPUTE_FLEET"]}})],
        mechanism=f"{mechanism} ({table})",
    )
