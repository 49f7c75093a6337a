"""AWS PCS in ``<name>-cluster``: its construct and the outputs that say how to reach the login node.

The outputs are the login node group id and the command that finds its instance by the
``aws:pcs:compute-node-group-id`` tag PCS puts on every instance it launches
(https://docs.aws.amazon.com/pcs/latest/userguide/working-with_cng_find-instances.html); the node role has
AmazonSSMManagedInstanceCore, so Session Manager connects.
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Fn, Stack, aws_pcs

from fmcluster.features.capacity_window.construct_fleet_stop import FleetStopAction
from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.pcs.construct import PcsCluster
from fmcluster.orchestrators.pcs.construct_fleet_stop import fleet_stop
from fmcluster.orchestrators.pcs.profile import PCS_LOGIN_GROUP
from fmcluster.stacks.access_outputs import OUTPUT_CONNECT

OUTPUT_CLUSTER_ID = "PcsClusterId"
OUTPUT_LOGIN_GROUP_ID = "LoginNodeGroupId"
OUTPUT_FIND_LOGIN = "FindLoginNodeCommand"


def build(stack: Stack, inputs: OrchestratorInputs) -> PcsCluster:
    """The ``Pcs`` construct, the cluster id and the login node's access outputs; with a budget stop, the fleet stop
    subscribed to its topic (:mod:`.construct_fleet_stop`)."""
    pcs = PcsCluster(
        stack, "Pcs", spec=inputs.orchestrator.pcs, profile=inputs.profile, os=inputs.os, vpc=inputs.require_vpc(),
        placement_groups=inputs.placement_groups, bootstraps=inputs.bootstraps, head_node_script=inputs.head_node_asset,
        accounting=inputs.orchestrator.slurm.accounting,
        cluster_name=inputs.cluster_name, groups=inputs.groups, subnet=inputs.subnet,
        security_group=inputs.security_group, lustre=inputs.lustre, checkpoints=inputs.checkpoints, tags=inputs.tags,
        head_node_policy=inputs.head_node_policy, images=inputs.images, admin_scripts=inputs.admin_scripts,
    )
    CfnOutput(stack, OUTPUT_CLUSTER_ID, value=pcs.cluster.attr_id)
    _access_outputs(stack, pcs.node_groups[PCS_LOGIN_GROUP], region=stack.region)
    if inputs.budget_stop_topic_arn is not None:
        groups = {g.name: (pcs.node_groups[g.name].attr_id, pcs.node_groups[g.name].attr_arn) for g in inputs.groups}
        stop = fleet_stop(stack, cluster_id=pcs.cluster.attr_id, node_groups=groups, node_role_arn=pcs.role.role_arn,
                          instance_profile_arn=pcs.instance_profile.instance_profile_arn,
                          mechanism=inputs.profile.fleet_stop)
        FleetStopAction(stack, "BudgetStop", topic_arn=inputs.budget_stop_topic_arn,
                        alert_topic_arn=inputs.alert_topic_arn, stop=stop,
                        cluster_name=inputs.cluster_name)
    return pcs


def _access_outputs(stack: Stack, login: aws_pcs.CfnComputeNodeGroup, *, region: str) -> None:
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
