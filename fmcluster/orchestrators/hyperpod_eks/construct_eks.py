"""What HyperPod EKS orchestration adds to the shared HyperPod construct
(:class:`fmcluster.orchestrators.hyperpod.construct.HyperPodCluster`): worker groups only (no controller or login),
``Orchestrator.Eks`` naming the EKS cluster, and the execution role's EKS additions (private IPs on the ENIs, instance
ENIs, ECR pull, pod identity).

Source: aws/sagemaker-hyperpod-cluster-setup ``eks/cloudformation/sagemaker-iam-role-template.yaml``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_iam as iam

from fmcluster.orchestrators.hyperpod.construct import HyperPodOrchestration, VpcGrants


class EksOrchestration(HyperPodOrchestration):
    """HyperPod EKS's part of the shared construct. ``cluster_arn``: the EKS cluster fmcluster creates (a token from
    the ``<name>-eks`` stack) or the blueprint's existing one; without one, no EKS statements on the role."""

    def __init__(self, *, cluster_arn: str | None) -> None:
        self.cluster_arn = cluster_arn

    def vpc_grants(self, arn: str) -> VpcGrants:
        """Private IPs on the ENIs and instance ENIs, and the describe calls the EKS node agents make."""
        return VpcGrants(
            eni_actions=("ec2:AssignPrivateIpAddresses", "ec2:ModifyNetworkInterfaceAttribute",
                         "ec2:UnassignPrivateIpAddresses"),
            eni_targets=(f"{arn}:instance/*",),
            describe=("ec2:DescribeInstances", "ec2:DescribeTags", "ec2:DescribeInstanceTypes"),
        )

    def grant_role(self, role: iam.Role, arn: str) -> None:
        """ENI attach, ECR pull and pod identity on the cluster."""
        if not self.cluster_arn:
            return
        role.add_to_policy(
            iam.PolicyStatement(
                sid="EksAttach",
                actions=["ec2:AttachNetworkInterface"],
                resources=[f"{arn}:instance/*", f"{arn}:network-interface/*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="EcrPull",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetAuthorizationToken",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=["*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="EksPodIdentity",
                actions=["eks-auth:AssumeRoleForPodIdentity"],
                resources=[self.cluster_arn],
            )
        )

    def orchestrator(self) -> dict[str, Any]:
        return {"Eks": {"ClusterArn": self.cluster_arn}}
