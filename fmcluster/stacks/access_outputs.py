"""Stack outputs of ``<name>-cluster`` that say how to reach the cluster after ``cdk deploy``.

Every orchestrator: ``ClusterName``. Then what each orchestrator can honestly give at deploy time:

- ParallelCluster: the ``Custom::PclusterCluster`` resource returns the ``pcluster describe-cluster``
  result flattened to dotted keys as its ``Fn::GetAtt`` attributes (``headNode.publicIpAddress`` in the
  documented example; https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html, and the
  provider's ``flatten``/``update_response`` in aws/aws-parallelcluster
  ``cloudformation/custom_resource/cluster.yaml``). The head node sits in the private GPU subnet, so there is no
  public address: the outputs are ``headNode.instanceId`` and ``headNode.privateIpAddress`` (fields of
  describe-cluster's ``headNode``), and an SSM Session Manager command (the head node role gets
  AmazonSSMManagedInstanceCore, ``fmcluster.constructs.orchestrators.parallelcluster``).
- SageMaker HyperPod: the cluster ARN (and its id, the ARN's last part). Node instance ids are not known to
  CloudFormation; the outputs are the command that lists the nodes of the controller (Slurm) group and the SSM
  target prefix ``sagemaker-cluster:<cluster-id>_<group>-`` to which the instance id is appended
  (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html).
- AWS PCS: the login node group id and the command that finds its instance by the
  ``aws:pcs:compute-node-group-id`` tag PCS puts on every instance it launches
  (https://docs.aws.amazon.com/pcs/latest/userguide/working-with_cng_find-instances.html); the node role has
  AmazonSSMManagedInstanceCore, so Session Manager connects.

Output logical ids are the names below (no ``Export``: nothing imports them, so they can change freely).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import CfnOutput, CfnResource, Fn, Stack

from fmcluster.resolved import OrchestratorProfile
from fmcluster.resolved.profiles import HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP

if TYPE_CHECKING:  # a synth loads only its own orchestrator's CDK modules (fmcluster.stacks.cluster_stack)
    from aws_cdk import aws_pcs
    from aws_cdk import aws_sagemaker as sagemaker

OUTPUT_CLUSTER_NAME = "ClusterName"
OUTPUT_HEAD_NODE_ID = "HeadNodeInstanceId"
OUTPUT_HEAD_NODE_IP = "HeadNodePrivateIp"
OUTPUT_CONNECT = "ConnectCommand"
OUTPUT_LIST_NODES = "ListNodesCommand"
OUTPUT_SSM_TARGET_PREFIX = "SsmTargetPrefix"
OUTPUT_LOGIN_GROUP_ID = "LoginNodeGroupId"
OUTPUT_FIND_LOGIN = "FindLoginNodeCommand"


def cluster_name(stack: Stack, name: str) -> None:
    """``ClusterName``: the orchestrator's cluster name (``pcluster``, ``aws sagemaker``, ``aws pcs`` use it)."""
    CfnOutput(stack, OUTPUT_CLUSTER_NAME, value=name, description="Cluster name for the orchestrator's CLI")


def parallelcluster(stack: Stack, resource: CfnResource, *, region: str) -> None:
    """Head-node instance id, private IP and the Session Manager command, from the custom resource's attributes."""
    instance_id = resource.get_att("headNode.instanceId").to_string()
    CfnOutput(stack, OUTPUT_HEAD_NODE_ID, value=instance_id, description="Head node EC2 instance id")
    CfnOutput(stack, OUTPUT_HEAD_NODE_IP, value=resource.get_att("headNode.privateIpAddress").to_string(),
              description="Head node private IPv4 address (in the GPU subnet; no public address)")
    CfnOutput(stack, OUTPUT_CONNECT, value=Fn.join("", ["aws ssm start-session --region ", region, " --target ", instance_id]),
              description="Shell on the head node through SSM Session Manager")


def hyperpod(stack: Stack, cluster: sagemaker.CfnCluster, *, profile: OrchestratorProfile, region: str) -> None:
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


def pcs(stack: Stack, login: aws_pcs.CfnComputeNodeGroup, *, region: str) -> None:
    """The login node group id and the command that finds (and connects to) its instance."""
    CfnOutput(stack, OUTPUT_LOGIN_GROUP_ID, value=login.attr_id, description="Compute node group id of the login node")
    find = Fn.join("", [
        "aws ec2 describe-instances --region ", region,
        " --filters Name=tag:aws:pcs:compute-node-group-id,Values=", login.attr_id,
        " Name=instance-state-name,Values=running --query Reservations[].Instances[].InstanceId --output text",
    ])
    CfnOutput(stack, OUTPUT_FIND_LOGIN, value=find, description="Instance id of the login node")
    CfnOutput(stack, OUTPUT_CONNECT, value=Fn.join("", [
        "aws ssm start-session --region ", region, " --target $(", find, ")"]),
        description="Shell on the login node through SSM Session Manager")
