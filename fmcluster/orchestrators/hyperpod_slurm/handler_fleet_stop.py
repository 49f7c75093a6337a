"""The budget's fleet stop on SageMaker HyperPod Slurm (Lambda, shipped inline): every compute instance group of the
cluster set to 0 instances with ``UpdateCluster``; the controller and login groups, FSx and the buckets stay.

``UpdateCluster`` takes each group it changes as a whole ``ClusterInstanceGroupSpecification`` (``InstanceCount``,
``InstanceGroupName`` and ``ExecutionRole`` required, ``InstanceCount`` 0 allowed: botocore's sagemaker service model,
``ClusterInstanceCount`` minimum 0; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html).
So the handler reads each group with ``DescribeCluster`` and sends back every field the group's details share with the
specification (the names the SDK's own service model gives, so a field a newer API adds is carried too), the image as
``ImageId`` (the details' ``DesiredImageId``, else ``CurrentImageId``), and ``InstanceCount`` 0. Not verified against
a live cluster: whether ``UpdateCluster`` resets a field it is not sent; the handler sends all it can.

CloudFormation drift: the cluster stack's ``AWS::SageMaker::Cluster`` still says the blueprint's counts, and a deploy
that changes nothing else does not put them back. Restore with ``UpdateCluster`` and the blueprint's counts (the same
specifications with ``InstanceCount`` restored), e.g. ``aws sagemaker update-cluster``; docs/capacity.md "Budget".

Environment: ``CLUSTER_NAME``, ``COMPUTE_GROUPS`` (JSON list of the compute instance group names). Returns
``{"cluster", "stopped": [group, ...], "already_zero": [group, ...]}``.
"""

import json
import os

import boto3

#: Fields of the details that are counts or state, never sent back.
NOT_SENT = ("InstanceCount", "MinInstanceCount", "ImageId")


def spec_of(details, spec_fields):  # type: ignore[no-untyped-def]
    """The ``ClusterInstanceGroupSpecification`` of a described group with ``InstanceCount`` 0."""
    spec = {k: v for k, v in details.items() if k in spec_fields and k not in NOT_SENT}
    image = details.get("DesiredImageId") or details.get("CurrentImageId")
    if image and "ImageId" in spec_fields:
        spec["ImageId"] = image
    spec["InstanceCount"] = 0
    return spec


def stop(sagemaker, cluster, groups):  # type: ignore[no-untyped-def]
    """Set every group of ``groups`` of ``cluster`` to 0 instances (one UpdateCluster; none when all are at 0)."""
    spec_fields = set(sagemaker.meta.service_model.shape_for("ClusterInstanceGroupSpecification").members)
    described = {g["InstanceGroupName"]: g for g in sagemaker.describe_cluster(ClusterName=cluster)["InstanceGroups"]}
    missing = sorted(set(groups) - set(described))
    if missing:
        raise RuntimeError(f"{cluster} has no instance group {', '.join(missing)}; it has {', '.join(sorted(described))}")
    running = [g for g in groups if described[g].get("TargetCount", described[g].get("CurrentCount", 0))]
    if running:
        sagemaker.update_cluster(ClusterName=cluster,
                                 InstanceGroups=[spec_of(described[g], spec_fields) for g in running])
    return {"cluster": cluster, "stopped": running, "already_zero": [g for g in groups if g not in running]}


def handler(event, context):  # type: ignore[no-untyped-def]
    """SNS (the budget's stop notification) -> the compute groups to 0; the result goes to the function's log."""
    result = stop(boto3.client("sagemaker"), os.environ["CLUSTER_NAME"], json.loads(os.environ["COMPUTE_GROUPS"]))
    print(json.dumps(result))
    return result
