"""The budget's fleet stop on AWS PCS (Lambda, shipped inline): every compute node group of the blueprint's compute
groups scaled to 0 (``UpdateComputeNodeGroup`` with ``scalingConfiguration`` ``minInstanceCount`` 0 and
``maxInstanceCount`` 0; both minimum 0: botocore's pcs service model ``ScalingConfigurationRequest``;
https://docs.aws.amazon.com/pcs/latest/APIReference/API_UpdateComputeNodeGroup.html). The login node group, the
cluster (its Slurm controller), FSx and the buckets stay. PCS applies an update when the group goes from ``UPDATING``
back to ``ACTIVE`` (PCS user guide, "Updating an AWS PCS compute node group",
https://docs.aws.amazon.com/pcs/latest/userguide/working-with_cng_update.html); how PCS ends instances that run
jobs when the maximum drops to 0 is not documented there and not verified here.

CloudFormation drift: the stack's ``AWS::PCS::ComputeNodeGroup`` still says the blueprint's scaling; restore with
``aws pcs update-compute-node-group`` and the blueprint's counts (docs/capacity.md "Budget").

Environment: ``CLUSTER_ID``, ``NODE_GROUPS`` (JSON object: compute group name -> compute node group id). Returns
``{"cluster", "stopped": [group, ...]}``; the first failing update raises after the others were tried.
"""

import json
import os

import boto3


def stop(pcs, cluster, node_groups):  # type: ignore[no-untyped-def]
    """Scale every node group of ``node_groups`` (name -> id) of ``cluster`` to 0."""
    stopped, errors = [], []
    for name, group_id in sorted(node_groups.items()):
        try:
            pcs.update_compute_node_group(clusterIdentifier=cluster, computeNodeGroupIdentifier=group_id,
                                          scalingConfiguration={"minInstanceCount": 0, "maxInstanceCount": 0})
            stopped.append(name)
        except Exception as e:  # every group is tried; the failures are reported together
            errors.append(f"{name} ({group_id}): {e}")
    if errors:
        raise RuntimeError(f"stopped {stopped}; could not stop: {'; '.join(errors)}")
    return {"cluster": cluster, "stopped": stopped}


def handler(event, context):  # type: ignore[no-untyped-def]
    """SNS (the budget's stop notification) -> the compute node groups to 0; the result goes to the function's log."""
    result = stop(boto3.client("pcs"), os.environ["CLUSTER_ID"], json.loads(os.environ["NODE_GROUPS"]))
    print(json.dumps(result))
    return result
