"""SageMaker HyperPod Slurm in ``<name>-cluster``: the shared HyperPod construct and outputs
(:mod:`fmcluster.orchestrators.hyperpod.stack`)."""

from __future__ import annotations

from aws_cdk import Stack

from fmcluster.orchestrators.hyperpod import stack as hyperpod
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster
from fmcluster.stacks.orchestrator_inputs import OrchestratorInputs


def build(stack: Stack, inputs: OrchestratorInputs) -> HyperPodCluster:
    """The ``HyperPod`` construct and its outputs."""
    return hyperpod.build(stack, inputs)
