"""AWS ParallelCluster in ``<name>-cluster``: its construct and the outputs that say how to reach the head node.

The ``Custom::PclusterCluster`` resource returns the ``pcluster describe-cluster`` result flattened to dotted keys as
its ``Fn::GetAtt`` attributes (``headNode.publicIpAddress`` in the documented example;
https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html, and the provider's
``flatten``/``update_response`` in aws/aws-parallelcluster ``cloudformation/custom_resource/cluster.yaml``). The head
node sits in the private GPU subnet, so there is no public address: the outputs are ``headNode.instanceId`` and
``headNode.privateIpAddress`` (fields of describe-cluster's ``headNode``), and an SSM Session Manager command (the head
node role gets AmazonSSMManagedInstanceCore, :mod:`fmcluster.orchestrators.parallelcluster.construct`).
"""

from __future__ import annotations

from aws_cdk import CfnOutput, CfnResource, Fn, Stack

from fmcluster.features.acceptance.render_watch import WATCH_INSTALLER_FILE, request_command
from fmcluster.features.capacity_window.construct import (
    WindowEndAutomation,
    WindowPreloadSchedules,
    WindowStartGate,
    WindowStartRule,
    start_command,
)
from fmcluster.features.capacity_window.construct_fleet_stop import FleetStopAction
from fmcluster.features.capacity_window.plan import windows
from fmcluster.features.capacity_window.render_window import (
    render_window_end,
    render_window_preload,
    render_window_start,
)
from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.parallelcluster.construct import ParallelClusterCluster
from fmcluster.orchestrators.parallelcluster.construct_fleet_stop import fleet_stop
from fmcluster.resolved.cluster import NODE_DIR
from fmcluster.stacks.access_outputs import OUTPUT_CONNECT

OUTPUT_HEAD_NODE_ID = "HeadNodeInstanceId"
OUTPUT_HEAD_NODE_IP = "HeadNodePrivateIp"


def build(stack: Stack, inputs: OrchestratorInputs) -> ParallelClusterCluster:
    """The ``ParallelCluster`` construct and its access outputs."""
    pc = ParallelClusterCluster(
        stack, "ParallelCluster", spec=inputs.orchestrator.parallelcluster, profile=inputs.profile, region=stack.region,
        os=inputs.os, placement_groups=inputs.placement_groups, bootstraps=inputs.bootstraps,
        head_node_script=inputs.head_node_asset, accounting=inputs.accounting_database,
        cluster_name=inputs.cluster_name, groups=inputs.groups, subnet=inputs.subnet,
        security_group=inputs.security_group, lustre=inputs.lustre, checkpoints=inputs.checkpoints, tags=inputs.tags,
        head_node_policy=inputs.head_node_policy, images=inputs.images, admin_scripts=inputs.admin_scripts,
    )
    _access_outputs(stack, pc.resource, region=stack.region)
    _window_end(stack, inputs, pc.resource.get_att("headNode.instanceId").to_string())
    if inputs.budget_stop_topic_arn is not None:
        FleetStopAction(stack, "BudgetStop", topic_arn=inputs.budget_stop_topic_arn,
                        alert_topic_arn=inputs.alert_topic_arn, cluster_name=inputs.cluster_name,
                        stop=fleet_stop(stack, inputs.cluster_name, inputs.profile.fleet_stop)).node.add_dependency(pc)
    return pc


def _window_end(stack: Stack, inputs: OrchestratorInputs, instance_id: str) -> None:
    """The capacity window's automation (docs/capacity.md "The capacity window") when a group is on a Capacity
    Block: at EC2's warning the head node runs ``fmcluster-window-end`` from Slurm's directory
    (``OrchestratorProfile.slurm_bin_dir``); before a window with ``starts_at`` and a preload, a schedule runs
    ``fmcluster-window-preload`` there; at a window's ``starts_at`` a schedule deletes the previous window end's hold
    (``fmcluster-window-start <group>``) and then asks the acceptance gate's watcher (when the head node
    runs it) to gate the window's nodes (``fmcluster-gate-watch request <group>``); EC2's Capacity Block Delivered
    event runs ``fmcluster-window-start <reservation id>`` as well (the watcher gates nodes that boot by itself)."""
    ws = windows((g.spec for g in inputs.groups), inputs.lustre_spec)
    if not ws or not inputs.profile.window_automation or inputs.profile.slurm_bin_dir is None:
        return
    script = render_window_end(ws, cluster_name=inputs.cluster_name, slurm_bin_dir=inputs.profile.slurm_bin_dir)
    WindowEndAutomation(stack, "WindowEnd", windows=ws, script=script, instance_id=instance_id,
                        cluster_name=inputs.cluster_name, topic_arn=inputs.alert_topic_arn)
    preloads = {w.group: render_window_preload(w, cluster_name=inputs.cluster_name) for w in ws if w.preload_gib}
    if preloads:
        WindowPreloadSchedules(stack, "WindowPreload", windows=ws, scripts=preloads, instance_id=instance_id,
                               cluster_name=inputs.cluster_name)
    start = render_window_start(ws, cluster_name=inputs.cluster_name, slurm_bin_dir=inputs.profile.slurm_bin_dir)
    gated = WATCH_INSTALLER_FILE in inputs.admin_scripts
    # the previous window end's hold is deleted first, so that the gate's watcher (which skips nodes in maintenance and
    # drained nodes) sees them
    WindowStartGate(stack, "WindowStart", windows=ws, instance_id=instance_id, cluster_name=inputs.cluster_name,
                    commands={w.group: start_command(start, w.group)
                              + (f"; {request_command(NODE_DIR, w.group)}" if gated else "") for w in ws})
    # EC2's Capacity Block Delivered event resumes them too (a window without starts_at has no start schedule)
    WindowStartRule(stack, "WindowStartEvent", windows=ws, script=start, instance_id=instance_id,
                    cluster_name=inputs.cluster_name)


def _access_outputs(stack: Stack, resource: CfnResource, *, region: str) -> None:
    """Head-node instance id, private IP and the Session Manager command, from the custom resource's attributes."""
    instance_id = resource.get_att("headNode.instanceId").to_string()
    CfnOutput(stack, OUTPUT_HEAD_NODE_ID, value=instance_id, description="Head node EC2 instance id")
    CfnOutput(stack, OUTPUT_HEAD_NODE_IP, value=resource.get_att("headNode.privateIpAddress").to_string(),
              description="Head node private IPv4 address (in the GPU subnet; no public address)")
    CfnOutput(stack, OUTPUT_CONNECT, value=Fn.join("", ["aws ssm start-session --region ", region, " --target ", instance_id]),
              description="Shell on the head node through SSM Session Manager")
