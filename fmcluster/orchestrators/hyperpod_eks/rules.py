"""HyperPod EKS rules: the EKS cluster fmcluster creates or imports, its version compatibility and EFA requests.

Facts and their sources live in :mod:`fmcluster.catalog.eks`; the derived plan in :mod:`fmcluster.orchestrators.hyperpod_eks.plan`.
Messages follow ``<what is wrong>, got <value>; allowed <values>``.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.catalog import eks as cat
from fmcluster.features.network.rules_subnet import second_az_subnet_problems
from fmcluster.orchestrators.hyperpod_eks.plan import as_eks_plan
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule

EKS = "orchestrator.hyperpod.eks"
NETWORK_REQS = "https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html"
PREREQS = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html"


@rule("R-EKS-1", scope="cluster", orchestrators=("hyperpod-eks",),
      source="https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html (authentication mode API: only "
      "access entries grant Kubernetes access; fmcluster does not make the CloudFormation role cluster admin)")
def created_cluster_needs_admin(rc: ResolvedCluster) -> Iterator[Violation]:
    """A cluster fmcluster creates has authentication mode API and no bootstrap admin: without an admin role nobody
    could run kubectl against it."""
    plan = as_eks_plan(rc.eks)
    if plan is not None and plan.creates_cluster and plan.settings.admin_role_arn is None:
        yield f"{EKS}.admin_role_arn", (
            "required when fmcluster creates the EKS cluster (authentication mode API, no other admin), got nothing; "
            "allowed an IAM role ARN such as arn:aws:iam::123456789012:role/eks-admins"
        )


@rule("R-EKS-2", scope="cluster", orchestrators=("hyperpod-eks",),
      source="https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterOrchestratorEksConfig.html; HyperPod "
      "joins nodes in VpcConfig's subnets to the EKS cluster, which must be reachable in that VPC "
      f"({PREREQS} 'Networking')")
def imported_cluster_same_region_and_vpc(rc: ResolvedCluster) -> Iterator[Violation]:
    """An imported EKS cluster must be in the blueprint's Region and in the blueprint's (so: an existing) VPC; the
    creation settings do not apply to it."""
    plan = as_eks_plan(rc.eks)
    if plan is None or plan.creates_cluster:
        return
    bp = rc.blueprint
    path = "orchestrator.hyperpod.eks_cluster_arn"
    if plan.imported_region != bp.region:
        yield path, (
            f"EKS cluster in another Region, got {plan.imported_region!r} ({plan.imported_arn}); allowed a cluster in "
            f"{bp.region}, or no eks_cluster_arn (fmcluster creates one)"
        )
    if bp.network.vpc_id is None:
        yield path, (
            f"an existing EKS cluster cannot be in the VPC this blueprint creates, "
            f"got {plan.imported_arn} with no network.vpc_id; "
            "allowed network.vpc_id and network.gpu_subnet_id of the cluster's VPC, "
            "or no eks_cluster_arn (fmcluster creates the cluster in its VPC)"
        )
    if bp.orchestrator.hyperpod.eks is not None:
        yield EKS, (
            f"settings for a cluster fmcluster creates are ignored with an existing cluster, got eks_cluster_arn "
            f"{plan.imported_arn}; allowed one of eks_cluster_arn or {EKS}"
        )


@rule("R-EKS-3", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"{NETWORK_REQS} (at least two subnets in different Availability Zones); fmcluster adds two /28 subnets "
      "at the end of a new VPC (fmcluster.orchestrators.hyperpod_eks.plan.control_plane_cidrs)")
def control_plane_subnets(rc: ResolvedCluster) -> Iterator[Violation]:
    """HyperPod EKS: the EKS cluster fmcluster creates has control-plane subnets in two AZs."""
    plan = as_eks_plan(rc.eks)
    if plan is None or not plan.creates_cluster:
        return
    s = plan.settings
    yield from second_az_subnet_problems(
        rc.blueprint, what="EKS control-plane subnets", az=s.control_plane_availability_zone,
        az_path=f"{EKS}.control_plane_availability_zone", subnet_ids=s.control_plane_subnet_ids,
        subnets_path=f"{EKS}.control_plane_subnet_ids", cidrs=plan.control_plane_cidrs)


@rule("R-EKS-4", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="aws/sagemaker-hyperpod-cli issue #306 (pods that do not request vpc.amazonaws.com/efa run NCCL over TCP); "
      "https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html")
def efa_off_on_efa_type(rc: ResolvedCluster) -> Iterator[Violation]:
    """A group on an EFA type with EFA turned off: its job templates request no EFA device, so NCCL runs over TCP."""
    for g in rc.groups:
        if g.instance.efa_interface_count and not g.efa_devices:
            yield f"{g.path}.efa", (
                f"EFA is off on {g.instance.name} ({g.instance.efa_interface_count} EFA devices), "
                f"so its job templates request no {cat.EFA_RESOURCE} and NCCL runs over TCP, got efa off; "
                "allowed EFA on (the default)"
            )


@rule("R-EKS-5", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator.html (training operator supports "
      f"Kubernetes {', '.join(cat.TRAINING_OPERATOR_KUBERNETES)}); {PREREQS} (HyperPod supports 1.28-1.34)")
def addon_kubernetes_versions(rc: ResolvedCluster) -> Iterator[Violation]:
    plan = as_eks_plan(rc.eks)
    if plan is None or plan.kubernetes_version is None:
        return
    v = plan.kubernetes_version
    if plan.settings.training_operator and v not in cat.TRAINING_OPERATOR_KUBERNETES:
        yield f"{EKS}.kubernetes_version", (
            f"the HyperPod training operator does not support Kubernetes {v}, got {v!r}; allowed "
            f"{', '.join(cat.TRAINING_OPERATOR_KUBERNETES)}, or training_operator: false"
        )


@rule("R-EKS-6", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html (public endpoint access CIDRs)")
def public_endpoint_open(rc: ResolvedCluster) -> Iterator[Violation]:
    plan = as_eks_plan(rc.eks)
    if plan is None or not plan.creates_cluster:
        return
    for i, cidr in enumerate(plan.settings.public_access_cidrs):
        if cidr.endswith("/0"):
            yield f"{EKS}.public_access_cidrs[{i}]", (
                f"the Kubernetes API endpoint is open to the whole internet, got {cidr!r}; "
                "allowed your own address ranges (e.g. 203.0.113.7/32), or none for a private endpoint"
            )
