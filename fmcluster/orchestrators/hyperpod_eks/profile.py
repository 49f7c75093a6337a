"""The SageMaker HyperPod EKS profile (:class:`fmcluster.orchestrators.profile.OrchestratorProfile`). Sources per fact."""

from __future__ import annotations

from fmcluster.blueprint.model import HyperPodEksSettings, OrchestratorSpec
from fmcluster.catalog.support import evaluation_date, in_extended_support, support_entry
from fmcluster.orchestrators.hyperpod.profile import HYPERPOD_BOOT_PARTS, HYPERPOD_CAPACITY
from fmcluster.orchestrators.profile import ClusterFee, ImexWiring, OrchestratorProfile

#: The EKS control plane's fee per cluster-hour: $0.10 while its Kubernetes version is in standard support, $0.60 in
#: extended support (https://aws.amazon.com/eks/pricing/; AWS Containers blog, "Amazon EKS extended support for
#: Kubernetes versions pricing": "$0.60 per cluster per hour ... standard support is unchanged ... $0.10").
EKS_FEE_USD_PER_HOUR = {"standard": 0.10, "extended": 0.60}
EKS_PRICING = "https://aws.amazon.com/eks/pricing/"


def eks_cluster_fee(orch: OrchestratorSpec) -> ClusterFee | None:
    """The control-plane fee of the EKS cluster fmcluster creates (``None`` with ``eks_cluster_arn``: that cluster is
    its owner's), at the rate of its Kubernetes version's support on the evaluation date (the support calendar,
    ``fmcluster.catalog.support``; an unknown version is priced at the standard rate and says so; an evaluation date
    that is not a date leaves the fee unpriced, never an exception: the profile is built for every command)."""
    hp = orch.hyperpod
    if hp.eks_cluster_arn is not None:
        return None
    version = (hp.eks or HyperPodEksSettings()).kubernetes_version
    entry = support_entry("kubernetes", version)
    try:
        today = evaluation_date()
    except ValueError as e:  # a malformed FMCLUSTER_SUPPORT_DATE: R-SUP-1 reports it; the rate cannot be chosen
        return ClusterFee("EKS control plane", f"Kubernetes {version}", None,
                          f"unknown: $0.10 or $0.60 per cluster-hour by the version's support, and {e}", EKS_PRICING)
    if entry is None or entry.standard_end is None:
        tier, why = "standard", "standard-support rate (no support dates recorded for this version)"
    elif in_extended_support(entry, today):
        tier, why = "extended", f"extended-support rate (standard support ended {entry.standard_end})"
    else:
        tier, why = "standard", f"standard-support rate (to {entry.standard_end})"
    return ClusterFee("EKS control plane", f"Kubernetes {version}", EKS_FEE_USD_PER_HOUR[tier],
                      f"${EKS_FEE_USD_PER_HOUR[tier]:.2f} per cluster-hour, {why}", EKS_PRICING)


KEY = "hyperpod-eks"


def profile(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of a HyperPod EKS blueprint.

    No controller or login instance group on EKS (the construct creates only worker groups, the control plane is the
    EKS cluster's): no management node in the subnet and no head node.
    """
    hp = orch.hyperpod
    return OrchestratorProfile(
        key=KEY, kind="hyperpod", settings_path="orchestrator.hyperpod",
        efa_interface_type=hp.efa_interface_type,
        efa_interface_type_setting="orchestrator.hyperpod.efa_interface_type", head_node_label=None,
        management=(), reserved_group_names=(), capacity_types=HYPERPOD_CAPACITY,
        node_bootstrap_delivery="lifecycle", head_node_script_delivery=None, default_node_discovery="slurm",
        places_nodes_itself=True, ec2_capacity=False, needs_vpc=True, lustre_on_nodes=False,
        notes=("HyperPod on EKS: pods take VPC CNI addresses from this subnet; they are not counted",),
        # No Slurm, so no prolog: on Kubernetes the IMEX domain comes from the NVIDIA DRA driver's ComputeDomain
        # (EKS >= 1.33 with DRA), which fmcluster does not install.
        imex=ImexWiring(
            None, blocked_by="orchestrator.hyperpod.orchestration", allowed="slurm",
            source="https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html (P6e-GB200 on "
            "EKS needs dynamic resource allocation, Kubernetes >= 1.33, and the NVIDIA DRA driver)",
            reason="HyperPod on EKS has no Slurm prolog to set the IMEX domain, and fmcluster does not install "
            "the NVIDIA DRA driver whose ComputeDomain sets it on Kubernetes"),
        runs_slurm=False, encrypted_custom_ami=False,
        # The HyperPod observability add-on collects (fmcluster.orchestrators.hyperpod_eks.addons; docs/kubernetes.md).
        metrics_collector="eks_addon",
        boot_parts=HYPERPOD_BOOT_PARTS,
        cluster_fee=eks_cluster_fee(orch),
    )
