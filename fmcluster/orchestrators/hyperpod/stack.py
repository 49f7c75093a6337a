"""SageMaker HyperPod in ``<name>-cluster`` (both orchestrations): its construct and outputs.

The outputs are the cluster ARN, the lifecycle-script bucket and how to reach the nodes. Node instance ids are not
known to CloudFormation: on Slurm the outputs are the command that lists the nodes of the group users log in to and the
SSM target prefix ``sagemaker-cluster:<cluster-id>_<group>-`` to which the instance id is appended
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html); on EKS nodes
are reached through kubectl, and the output lists the cluster's nodes.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_sagemaker as sagemaker

from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster, HyperPodOrchestration
from fmcluster.orchestrators.hyperpod.profile import HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP
from fmcluster.orchestrators.profile import OrchestratorProfile

OUTPUT_CLUSTER_ARN = "ClusterArn"
OUTPUT_LIFECYCLE_BUCKET = "LifecycleBucket"
OUTPUT_LIST_NODES = "ListNodesCommand"
OUTPUT_SSM_TARGET_PREFIX = "SsmTargetPrefix"


def build(stack: Stack, inputs: OrchestratorInputs, orchestration: HyperPodOrchestration,
          after_cluster: Callable[[HyperPodCluster], None] | None = None) -> HyperPodCluster:
    """The ``HyperPod`` construct with what the variant's ``orchestration`` adds, then ``after_cluster`` (what a variant
    adds that needs the cluster), then the outputs."""
    hp = HyperPodCluster(
        stack, "HyperPod", spec=inputs.orchestrator.hyperpod, profile=inputs.profile, orchestration=orchestration,
        node_contexts=inputs.node_contexts, vpc=inputs.require_vpc(), cluster_name=inputs.cluster_name,
        groups=inputs.groups, subnet=inputs.subnet, security_group=inputs.security_group, lustre=inputs.lustre,
        checkpoints=inputs.checkpoints, tags=inputs.tags, images=inputs.images,
    )
    if after_cluster is not None:
        after_cluster(hp)
    CfnOutput(stack, OUTPUT_CLUSTER_ARN, value=hp.cluster.attr_cluster_arn)
    CfnOutput(stack, OUTPUT_LIFECYCLE_BUCKET, value=hp.bucket.bucket_name)
    _access_outputs(stack, hp.cluster, profile=inputs.profile, region=stack.region)
    return hp


def _access_outputs(stack: Stack, cluster: sagemaker.CfnCluster, *, profile: OrchestratorProfile, region: str) -> None:
    """The command that lists the nodes of the group users log in to, and the SSM target prefix."""
    cluster_id = Fn.select(1, Fn.split("/", cluster.attr_cluster_arn))
    name = cluster.cluster_name or ""
    if profile.head_node_label is None:  # HyperPod EKS: nodes are reached through kubectl, no controller group
        CfnOutput(stack, OUTPUT_LIST_NODES, value=f"aws sagemaker list-cluster-nodes --region {region} --cluster-name {name}",
                  description="List the cluster's nodes (instance ids and groups)")
        return
    group = HYPERPOD_LOGIN_GROUP if "login node" in profile.management else HYPERPOD_CONTROLLER_GROUP
    CfnOutput(stack, OUTPUT_LIST_NODES,
              value=(f"aws sagemaker list-cluster-nodes --region {region} --cluster-name {name} "
                     f"--instance-group-name-contains {group} --query ClusterNodeSummaries[].InstanceId --output text"),
              description=f"Instance id of the {group} node")
    CfnOutput(stack, OUTPUT_SSM_TARGET_PREFIX, value=Fn.join("", ["sagemaker-cluster:", cluster_id, f"_{group}-"]),
              description=(f"aws ssm start-session --region {region} --target <this prefix><instance id of the {group} node>"))
