"""SageMaker HyperPod EKS in ``<name>-cluster``: the shared HyperPod construct and outputs
(:mod:`fmcluster.orchestrators.hyperpod.stack`), plus the EKS add-ons that need nodes (``EksAddons``)."""

from __future__ import annotations

from aws_cdk import Stack

from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.orchestrators.hyperpod import stack as hyperpod
from fmcluster.orchestrators.hyperpod.construct import HyperPodCluster
from fmcluster.orchestrators.hyperpod_eks.addons import EksWorkloadAddons
from fmcluster.orchestrators.hyperpod_eks.construct_eks import EksOrchestration
from fmcluster.orchestrators.hyperpod_eks.plan import as_eks_plan


def build(stack: Stack, inputs: OrchestratorInputs) -> HyperPodCluster:
    """The ``HyperPod`` construct, the node add-ons installed after it (when the EKS plan has any) and the outputs."""
    plan = as_eks_plan(inputs.eks_plan)

    def addons(hp: HyperPodCluster) -> None:
        if plan is not None and plan.addons_after_nodes:
            EksWorkloadAddons(stack, "EksAddons", plan=plan, cluster_name=plan.cluster_name, after=[hp.cluster],
                              tags=inputs.tags)

    # The cluster the <name>-eks stack creates (a token), else the blueprint's existing cluster.
    eks = EksOrchestration(cluster_arn=inputs.eks_cluster_arn or inputs.orchestrator.hyperpod.eks_cluster_arn)
    return hyperpod.build(stack, inputs, eks, after_cluster=addons)
