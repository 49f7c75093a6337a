"""SageMaker HyperPod Slurm in ``<name>-cluster``: the shared HyperPod construct and outputs
(:mod:`fmcluster.orchestrators.hyperpod.stack`) with what Slurm adds (:mod:`.construct_slurm`)."""

from __future__ import annotations

from aws_cdk import Stack

from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.hyperpod import stack as hyperpod
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster
from fmcluster.orchestrators.hyperpod_slurm.construct_slurm import SlurmOrchestration


def build(stack: Stack, inputs: OrchestratorInputs) -> HyperPodCluster:
    """The ``HyperPod`` construct (Slurm: controller and login groups, Slurm hooks, head-node script and policy) and
    its outputs."""
    slurm = SlurmOrchestration(profile=inputs.profile, groups=inputs.groups, lustre=inputs.lustre,
                               head_node_script=inputs.head_node_text, head_node_policy=inputs.head_node_policy,
                               admin_scripts=inputs.admin_scripts)
    return hyperpod.build(stack, inputs, slurm)
