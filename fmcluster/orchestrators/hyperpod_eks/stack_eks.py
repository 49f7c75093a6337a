"""``<name>-eks``: the EKS cluster fmcluster creates for HyperPod EKS orchestration (deployed before the cluster
stack, and before the HyperPod dependency Helm chart is installed: docs/kubernetes.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.features.network.construct import Placement
from fmcluster.features.network.stack import NetworkStack
from fmcluster.orchestrators.hyperpod_eks.addons import EksControlPlane
from fmcluster.orchestrators.hyperpod_eks.plan import EksPlan, as_eks_plan
from fmcluster.orchestrators.registry import ExtraStack
from fmcluster.stacks.context import StackContext


class EksStack(Stack):
    """The EKS control plane, its node add-ons, admin access entry, control-plane subnets and interface endpoints
    (``control_plane``: :class:`EksControlPlane`). ``plan`` must create the cluster (ValueError otherwise)."""

    def __init__(self, scope: Construct, id: str, *, plan: EksPlan, vpc: ec2.IVpc, gpu_subnet: ec2.ISubnet,
                 security_group: ec2.ISecurityGroup, placement: Placement, tags: Mapping[str, str],
                 **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        if not plan.creates_cluster:
            raise ValueError("EksStack is for an EKS cluster fmcluster creates (no orchestrator.hyperpod.eks_cluster_arn)")
        self.control_plane = EksControlPlane(
            self, "Eks", plan=plan, vpc=vpc, gpu_subnet=gpu_subnet, security_group=security_group, az=placement.az,
            az_is_id=placement.az_is_id, tags=tags,
        )


def build_extra_stack(ctx: StackContext) -> ExtraStack | None:
    """The registry row's extra-stack hook: ``<name>-eks`` (tagged ``fmcluster:stack: eks`` by the app builder) when
    fmcluster creates the EKS cluster (``rc.stacks.eks``), else ``None``. Reads the ``network`` stack (VPC, GPU subnet,
    EFA security group, AZ) of ``ctx``."""
    rc = ctx.rc
    plan = as_eks_plan(rc.eks)
    if rc.stacks.eks is None or plan is None:
        return None
    network = ctx.stack("network", NetworkStack)
    net = network.network
    stack = EksStack(
        ctx.app, rc.stacks.eks, env=ctx.env, plan=plan, vpc=net.vpc, gpu_subnet=net.gpu_subnet,
        security_group=net.efa_security_group, placement=network.placement, tags=rc.tags,
        description=f"fmcluster {rc.name}: EKS cluster {plan.cluster_name}, node add-ons, admin access, endpoints",
    )
    return ExtraStack(stack, stack.control_plane.cluster_arn)
