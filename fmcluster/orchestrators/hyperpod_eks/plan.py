"""The EKS side of a HyperPod EKS cluster, resolved once: is the EKS cluster created or imported, its name, Kubernetes
version, control-plane subnets, add-ons and the Kueue queues of the compute groups.

Constructs, the manifests renderer (:mod:`fmcluster.orchestrators.hyperpod_eks.render_kubernetes`), rules and docs read :class:`EksPlan`
instead of re-deriving these facts. Sources are in :mod:`fmcluster.catalog.eks`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.blueprint.model import HYPERPOD_EKS_KUBERNETES_VERSIONS, Blueprint, HyperPodEksSettings
from fmcluster.catalog import eks as cat
from fmcluster.catalog.support import PinnedRelease
from fmcluster.catalog.vpc_layout import tail_subnet_pair

# Why /28 for each EKS control-plane subnet fmcluster adds to a new VPC. EKS needs "at least two subnets that are in
# different Availability Zones" (https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html) with free
# addresses for up to 4 control-plane ENIs each during upgrades; a /28 (16 addresses, 11 usable) is the
# smallest subnet AWS allows and the size the EKS user guide recommends for dedicated control-plane subnets.
# (fmcluster.catalog.vpc_layout.tail_subnet_pair).



def control_plane_cidrs(vpc_cidr: str, gpu_prefix: int) -> tuple[str, str] | None:
    """The two /28 control-plane subnets fmcluster adds to a new VPC: the last two /28 blocks of ``vpc_cidr``,
    after CDK's public /24 and ``/gpu_prefix`` GPU subnet (allocated from the start of the VPC, each aligned to
    its size). ``None`` when they would overlap those (the VPC is full; rule R-EKS-3 reports it)."""
    return tail_subnet_pair(vpc_cidr, gpu_prefix, blocks_from_end=2)


@dataclass(frozen=True)
class EksPlan:
    """The EKS cluster of a HyperPod EKS blueprint.

    Attributes:
        creates_cluster: fmcluster creates the EKS cluster (no ``orchestrator.hyperpod.eks_cluster_arn``).
        cluster_name: EKS cluster name: the blueprint name when created, else the ARN's last part.
        imported_arn: the ARN of an imported cluster, else ``None``.
        imported_region: the Region in that ARN, else ``None``.
        settings: ``orchestrator.hyperpod.eks`` (defaults when absent).
        control_plane_cidrs: the two /28 control-plane subnets fmcluster adds to a new VPC (GPU AZ first), or
            ``None`` (imported VPC or cluster, or no room: R-EKS-3).
        addons_before_nodes: add-ons created with the cluster (node networking and pod identity).
        addons_after_nodes: add-ons whose pods need nodes, in creation order (created after the HyperPod worker
            groups, in their own stack ``<name>-addons``: docs/decisions.md 50); the HyperPod observability add-on
            last when ``observability.metrics`` is ``managed``.
        kueue_version: the Kueue version the task governance add-on installs (manifests are rendered for it).
        metrics_scrape_interval_s: how often the observability add-on scrapes (``observability.scrape_interval_seconds``),
            or ``None`` when the add-on is not installed (``observability.metrics`` not ``managed``).
    """

    creates_cluster: bool
    cluster_name: str
    imported_arn: str | None
    imported_region: str | None
    settings: HyperPodEksSettings
    control_plane_cidrs: tuple[str, str] | None
    addons_before_nodes: tuple[cat.Addon, ...]
    addons_after_nodes: tuple[cat.Addon, ...]
    kueue_version: str
    metrics_scrape_interval_s: int | None = None

    @property
    def has_late_stack(self) -> bool:
        """True when add-ons are installed after the cluster stack (their stack: ``<name>-addons``)."""
        return bool(self.addons_after_nodes)

    @property
    def kubernetes_version(self) -> str | None:
        """The Kubernetes version of a created cluster; ``None`` for an imported one (fmcluster does not know it)."""
        return self.settings.kubernetes_version if self.creates_cluster else None


def as_eks_plan(plan: object) -> EksPlan | None:
    """``plan`` (``ResolvedCluster.eks``, typed by the core as its registry protocol) as this slice's
    :class:`EksPlan`, or ``None`` when it is none."""
    return plan if isinstance(plan, EksPlan) else None


def eks_plan(bp: Blueprint) -> EksPlan | None:
    """The :class:`EksPlan` of a HyperPod EKS blueprint; ``None`` for every other orchestrator."""
    orch = bp.orchestrator
    if orch.kind != "hyperpod" or orch.hyperpod.orchestration != "eks":
        return None
    hp = orch.hyperpod
    settings = hp.eks or HyperPodEksSettings()
    arn = hp.eks_cluster_arn
    creates = arn is None
    cidrs = None
    if creates and bp.network.vpc_id is None:
        cidrs = control_plane_cidrs(bp.network.vpc_cidr, bp.network.gpu_subnet_prefix_length)
    # fmcluster manages the add-ons of the cluster it creates only: an existing cluster's add-ons are its owner's
    # (creating one that exists fails the stack).
    before: tuple[cat.Addon, ...] = ()
    after: tuple[cat.Addon, ...] = ()
    if creates:
        before = (cat.VPC_CNI, cat.KUBE_PROXY, cat.POD_IDENTITY_AGENT)
        after = (cat.COREDNS,)
        if settings.training_operator:
            after += (cat.TRAINING_OPERATOR,)
        if settings.task_governance:
            after += (cat.TASK_GOVERNANCE,)
        if bp.observability.metrics == "managed":
            # Last: its task-governance metrics read Kueue; its failure leaves the others installed.
            after += (cat.OBSERVABILITY,)
    return EksPlan(
        creates_cluster=creates,
        cluster_name=bp.name if creates else arn.rsplit("/", 1)[-1],  # type: ignore[union-attr]
        imported_arn=arn,
        imported_region=arn.split(":")[3] if arn else None,
        settings=settings,
        control_plane_cidrs=cidrs,
        addons_before_nodes=before,
        addons_after_nodes=after,
        kueue_version=cat.KUEUE_VERSION,
        metrics_scrape_interval_s=(
            bp.observability.scrape_interval_seconds if cat.OBSERVABILITY in after else None
        ),
    )


def kubernetes_choices(settings: HyperPodEksSettings) -> tuple[tuple[str, ...], str]:
    """The Kubernetes versions a blueprint with ``settings`` can run without an error, oldest first, and what bounds
    them: HyperPod's list (:data:`~fmcluster.blueprint.model.HYPERPOD_EKS_KUBERNETES_VERSIONS`), narrowed to the
    training operator's (:data:`~fmcluster.catalog.eks.TRAINING_OPERATOR_KUBERNETES`, R-EKS-5) when it is on."""
    if not settings.training_operator:
        return HYPERPOD_EKS_KUBERNETES_VERSIONS, "the versions HyperPod supports"
    both = tuple(v for v in HYPERPOD_EKS_KUBERNETES_VERSIONS if v in cat.TRAINING_OPERATOR_KUBERNETES)
    return both, "the versions HyperPod and its training operator support (training_operator: true)"


def pinned_releases(bp: Blueprint, cluster_plan: object = None) -> list[PinnedRelease]:
    """The registry row's ``releases`` hook: the Kubernetes version of an EKS cluster fmcluster creates (none for an
    existing cluster, whose version fmcluster does not choose), with the versions it could choose instead."""
    plan = as_eks_plan(cluster_plan)
    version = plan.kubernetes_version if plan is not None else None
    if plan is None or version is None:
        return []
    choices, why = kubernetes_choices(plan.settings)
    return [PinnedRelease("kubernetes", version, "orchestrator.hyperpod.eks.kubernetes_version", choices, why)]
