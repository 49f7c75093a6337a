"""``<name>-eks``: the EKS cluster fmcluster creates for HyperPod EKS orchestration (deployed before the cluster
stack, and before the HyperPod dependency Helm chart is installed: docs/kubernetes.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.features.network.construct import Placement
from fmcluster.orchestrators.hyperpod_eks.addons import EksControlPlane
from fmcluster.orchestrators.hyperpod_eks.plan import EksPlan


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
