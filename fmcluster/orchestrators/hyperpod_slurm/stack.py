"""SageMaker HyperPod Slurm in ``<name>-cluster``: the shared HyperPod construct and outputs
(:mod:`fmcluster.orchestrators.hyperpod.stack`) with what Slurm adds (:mod:`.construct_slurm`)."""

from __future__ import annotations

from aws_cdk import Stack

from fmcluster.features.capacity_window.construct_fleet_stop import FleetStopAction
from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.hyperpod import stack as hyperpod
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster
from fmcluster.orchestrators.hyperpod_slurm.construct_fleet_stop import fleet_stop
from fmcluster.orchestrators.hyperpod_slurm.construct_slurm import SlurmOrchestration


def build(stack: Stack, inputs: OrchestratorInputs) -> HyperPodCluster:
    """The ``HyperPod`` construct (Slurm: controller and login groups, Slurm hooks, head-node script and policy) and
    its outputs; with a budget stop, the fleet stop subscribed to its topic (:mod:`.construct_fleet_stop`)."""
    slurm = SlurmOrchestration(profile=inputs.profile, groups=inputs.groups, lustre=inputs.lustre,
                               head_node_script=inputs.head_node_text, head_node_policy=inputs.head_node_policy,
                               admin_scripts=inputs.admin_scripts)
    hp = hyperpod.build(stack, inputs, slurm)
    if inputs.budget_stop_topic_arn is not None:
        stop = fleet_stop(cluster_name=inputs.cluster_name, cluster_arn=hp.cluster.attr_cluster_arn,
                          execution_role_arn=hp.role.role_arn, groups=[g.name for g in inputs.groups],
                          mechanism=inputs.profile.fleet_stop)
        FleetStopAction(stack, "BudgetStop", topic_arn=inputs.budget_stop_topic_arn,
                        alert_topic_arn=inputs.alert_topic_arn, stop=stop,
                        cluster_name=inputs.cluster_name)
    return hp
