"""The budget's fleet stop on SageMaker HyperPod Slurm (Lambda, shipped inline): every compute instance group of the
cluster set to 0 instances with ``UpdateCluster``; the controller and login groups, FSx and the buckets stay.

``UpdateCluster`` takes each group it changes as a whole ``ClusterInstanceGroupSpecification`` (``InstanceCount``,
``InstanceGroupName`` and ``ExecutionRole`` required, ``InstanceCount`` 0 allowed: botocore's sagemaker service model,
``ClusterInstanceCount`` minimum 0; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html).
So the handler reads each group with ``DescribeCluster`` and sends back only the members whose shape is the same in
the details (``ClusterInstanceGroupDetails``) and in the specification: ``COPIED``, a fixed list that
tests/orchestrators/hyperpod/test_fleet_stop.py checks against botocore's sagemaker service model member by member
(deep, shape by shape). Same-named members of another shape are never sent back (``AutoPatchConfig``: details
``ClusterAutoPatchConfigDetails`` with ``CurrentPatchSchedule`` / ``DesiredPatchSchedule``, specification
``ClusterAutoPatchConfig`` with ``PatchSchedule``; likewise ``InstanceRequirements`` and ``KubernetesConfig``): sent
as read, the request fails the SDK's parameter validation and nothing stops. At run time a member is also left out
when the function's own SDK does not know it on both sides. The image goes as ``ImageId`` (the details'
``DesiredImageId``, else ``CurrentImageId``), and ``InstanceCount`` is 0. Not verified against a live cluster:
whether ``UpdateCluster`` resets a member it is not sent (``AutoPatchConfig`` among them).

Errors are raised, never swallowed (a ``ConflictException`` while the cluster is updating, AccessDenied): the
invocation then counts in the function's ``Errors`` metric, which the stop's alarm watches (docs/capacity.md
"Budget").

CloudFormation drift: the cluster stack's ``AWS::SageMaker::Cluster`` still says the blueprint's counts, and a deploy
that changes nothing else does not put them back. Restore with ``UpdateCluster`` and the blueprint's counts (the same
specifications with ``InstanceCount`` restored), e.g. ``aws sagemaker update-cluster``; docs/capacity.md "Budget".

Environment: ``CLUSTER_NAME``, ``COMPUTE_GROUPS`` (JSON list of the compute instance group names). Returns
``{"cluster", "stopped": [group, ...], "already_zero": [group, ...]}``.
"""

import json
import os

import boto3

#: Members copied from a group's details into its specification: those whose shape is the same on both sides in
#: botocore's sagemaker model (checked by tests/orchestrators/hyperpod/test_fleet_stop.py against the installed model).
COPIED = ("InstanceGroupName", "InstanceType", "LifeCycleConfig", "ExecutionRole", "ThreadsPerCore",
          "InstanceStorageConfigs", "OnStartDeepHealthChecks", "TrainingPlanArn", "OverrideVpcConfig",
          "ScheduledUpdateConfig", "CapacityRequirements", "SlurmConfig", "NetworkInterface")


def copyable(model):  # type: ignore[no-untyped-def]
    """The members of ``COPIED`` the running SDK's sagemaker ``model`` knows in both the details and the
    specification (an older SDK in the Lambda runtime may lack one)."""
    spec = model.shape_for("ClusterInstanceGroupSpecification").members
    details = model.shape_for("ClusterInstanceGroupDetails").members
    return tuple(k for k in COPIED if k in spec and k in details)


def spec_of(details, copied):  # type: ignore[no-untyped-def]
    """The ``ClusterInstanceGroupSpecification`` of a described group (members ``copied``) with ``InstanceCount`` 0."""
    spec = {k: details[k] for k in copied if k in details}
    image = details.get("DesiredImageId") or details.get("CurrentImageId")
    if image:
        spec["ImageId"] = image
    spec["InstanceCount"] = 0
    return spec


def stop(sagemaker, cluster, groups):  # type: ignore[no-untyped-def]
    """Set every group of ``groups`` of ``cluster`` to 0 instances (one UpdateCluster; none when all are at 0)."""
    copied = copyable(sagemaker.meta.service_model)
    described = {g["InstanceGroupName"]: g for g in sagemaker.describe_cluster(ClusterName=cluster)["InstanceGroups"]}
    missing = sorted(set(groups) - set(described))
    if missing:
        raise RuntimeError(f"{cluster} has no instance group {', '.join(missing)}; it has {', '.join(sorted(described))}")
    running = [g for g in groups if described[g].get("TargetCount", described[g].get("CurrentCount", 0))]
    if running:
        sagemaker.update_cluster(ClusterName=cluster,
                                 InstanceGroups=[spec_of(described[g], copied) for g in running])
    return {"cluster": cluster, "stopped": running, "already_zero": [g for g in groups if g not in running]}


def handler(event, context):  # type: ignore[no-untyped-def]
    """SNS (the budget's stop notification) -> the compute groups to 0; the result goes to the function's log."""
    result = stop(boto3.client("sagemaker"), os.environ["CLUSTER_NAME"], json.loads(os.environ["COMPUTE_GROUPS"]))
    print(json.dumps(result))
    return result
