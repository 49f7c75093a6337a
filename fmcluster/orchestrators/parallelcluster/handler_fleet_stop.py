"""The budget's fleet stop on ParallelCluster (Lambda, shipped inline): what ``pcluster update-compute-fleet --status
STOP_REQUESTED`` does for a Slurm cluster, nothing more.

ParallelCluster 3 keeps the compute fleet's status in the cluster's DynamoDB table ``parallelcluster-<cluster name>``,
item ``Id = COMPUTE_FLEET``, attribute ``Data`` = ``{"status": ..., "lastStatusUpdatedTime": ...}``. ``pcluster``
reads it and, unless it is already ``STOP_REQUESTED``, ``STOPPING`` or ``STOPPED``, sets ``Data.status`` to
``STOP_REQUESTED`` and ``Data.lastStatusUpdatedTime`` to now, on the condition that the status is still the one it read
(aws/aws-parallelcluster ``cli/src/pcluster/models/compute_fleet_status_manager.py``, ``update_status`` and
``JsonComputeFleetStatusManager._put_status``; the table name: ``PCLUSTER_DYNAMODB_PREFIX`` in
``cli/src/pcluster/constants.py``). The head node's ``clusterstatusmgtd`` then moves it to ``STOPPING``, stops the
compute nodes and sets ``STOPPED`` (aws/aws-parallelcluster-cookbook
``cookbooks/aws-parallelcluster-computefleet/files/clusterstatusmgtd/clusterstatusmgtd.py``,
``manage_cluster_status``). The head node, its volumes, FSx and the buckets stay. Restart with ``pcluster
update-compute-fleet --status START_REQUESTED``.

Environment: ``FLEET_STATUS_TABLE`` (the table name). Returns ``{"table", "status", "requested"}`` (the status read,
and whether this call asked for the stop); a missing item raises (the cluster is being created or deleted).
"""

import json
import os
from datetime import UTC, datetime

import boto3

KEY = {"Id": {"S": "COMPUTE_FLEET"}}
STOP_STATUSES = ("STOP_REQUESTED", "STOPPING", "STOPPED")


def stop(ddb, table):  # type: ignore[no-untyped-def]
    """Ask ParallelCluster to stop the compute fleet of ``table`` (a DynamoDB client and the table name)."""
    item = ddb.get_item(TableName=table, Key=KEY, ConsistentRead=True).get("Item")
    if item is None:
        raise RuntimeError(f"{table} has no COMPUTE_FLEET item: is the cluster being created or deleted?")
    status = item["Data"]["M"]["status"]["S"]
    if status in STOP_STATUSES:
        return {"table": table, "status": status, "requested": False}
    ddb.update_item(
        TableName=table, Key=KEY,
        UpdateExpression="SET #dt.#st = :s, #dt.#lut = :t",
        ConditionExpression="#dt.#st = :current",
        ExpressionAttributeNames={"#dt": "Data", "#st": "status", "#lut": "lastStatusUpdatedTime"},
        ExpressionAttributeValues={":s": {"S": "STOP_REQUESTED"}, ":t": {"S": str(datetime.now(tz=UTC))},
                                   ":current": {"S": status}},
    )
    return {"table": table, "status": status, "requested": True}


def handler(event, context):  # type: ignore[no-untyped-def]
    """SNS (the budget's stop notification) -> stop the fleet; the result goes to the function's log."""
    result = stop(boto3.client("dynamodb"), os.environ["FLEET_STATUS_TABLE"])
    print(json.dumps(result))
    return result
