"""SageMaker HyperPod EKS in ``<name>-cluster``: the shared HyperPod construct and outputs
(:mod:`fmcluster.orchestrators.hyperpod.stack`). The EKS add-ons that need nodes are not here but in ``<name>-addons``
(:mod:`fmcluster.orchestrators.hyperpod_eks.stack_addons`), so that their failure cannot roll back the cluster."""

from __future__ import annotations

from aws_cdk import Stack

from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.hyperpod import stack as hyperpod
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster
from fmcluster.orchestrators.hyperpod_eks.construct_eks import EksOrchestration


def build(stack: Stack, inputs: OrchestratorInputs) -> HyperPodCluster:
    """The ``HyperPod`` construct joined to the EKS cluster, and the outputs."""
    # The cluster the <name>-eks stack creates (a token), else the blueprint's existing cluster.
    eks = EksOrchestration(cluster_arn=inputs.eks_cluster_arn or inputs.orchestrator.hyperpod.eks_cluster_arn)
    return hyperpod.build(stack, inputs, eks)
