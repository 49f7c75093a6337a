"""HyperPod EKS rules: the EKS cluster fmcluster creates or imports, its version compatibility and EFA requests.

Facts and their sources live in :mod:`fmcluster.catalog.eks`; the derived plan in :mod:`fmcluster.orchestrators.hyperpod_eks.plan`.
Messages follow ``<what is wrong>, got <value>; allowed <values>``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

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


OBSERVABILITY_SETUP = "https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-setup.html"


@rule("R-EKS-7", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"{OBSERVABILITY_SETUP} (the HyperPod observability add-on is what collects DCGM, node and network "
      "metrics on HyperPod EKS); fmcluster installs it only with observability.metrics: managed")
def metrics_off_leaves_gpus_unwatched(rc: ResolvedCluster) -> Iterator[Violation]:
    """``metrics: none`` on HyperPod EKS, or an existing EKS cluster (whose add-ons fmcluster does not manage) with
    metrics on: no collector fmcluster installs, so no GPU, EFA or node metric and no alert."""
    plan = as_eks_plan(rc.eks)
    metrics = rc.blueprint.observability.metrics
    if metrics == "managed" and plan is not None and not plan.creates_cluster:
        yield "observability.metrics", (
            f"fmcluster installs no add-on on an existing EKS cluster, so nothing writes to the workspace it creates "
            f"and GPUs and EFA are unwatched, got 'managed' with eks_cluster_arn {plan.imported_arn}; allowed "
            f"managed after installing {cat.OBSERVABILITY.name} on that cluster with the workspace of stack output "
            "RemoteWriteUrl (docs/kubernetes.md)"
        )
    if metrics == "none":
        yield "observability.metrics", (
            "GPUs and EFA are unwatched on HyperPod EKS: no observability add-on, no alert on a failing GPU or "
            "network card, got 'none'; allowed managed (the HyperPod observability add-on writes to an Amazon "
            "Managed Prometheus workspace with fmcluster's alert rules and receiver)"
        )


@rule("R-EKS-8", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"{OBSERVABILITY_SETUP} (the add-on writes to an Amazon Managed Prometheus workspace); fmcluster's "
      "self-hosted Prometheus runs on a head node, which HyperPod EKS does not have")
def self_hosted_metrics_have_no_node(rc: ResolvedCluster) -> Iterator[Violation]:
    """``metrics: self_hosted`` on HyperPod EKS: nothing would run Prometheus or Grafana."""
    if rc.blueprint.observability.metrics == "self_hosted":
        yield "observability.metrics", (
            "self-hosted Prometheus needs a head node, which HyperPod EKS does not have, got 'self_hosted'; allowed "
            "managed (the HyperPod observability add-on writes to Amazon Managed Prometheus) or none"
        )


@rule("R-EKS-9", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="aws-samples/awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/"
      "hyperpod-eks-tf/modules/observability/eks_addon.tf (the add-on's configuration keys: a sample, not the add-on's "
      "configuration schema); https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-cluster-metrics.html "
      "(the exporters the add-on runs, not the labels or suffixes of their series); "
      "fmcluster.features.observability.render_addon_rules (what the rules assume)")
def addon_metrics_unverified(rc: ResolvedCluster) -> Iterator[Violation]:
    """The observability add-on fmcluster configures: its configuration keys, the label that names the node on its
    series, the name its EFA counters arrive with and whether the configured network level runs the EFA exporter are
    not verified; the node check's and the acceptance gate's verdicts are no metric there."""
    plan = as_eks_plan(rc.eks)
    if plan is not None and plan.metrics_scrape_interval_s is not None:
        yield "observability.metrics", (
            f"the {cat.OBSERVABILITY.name} add-on's configuration keys (ampWorkspace, metricsProvider), the label that "
            "names the node on its series and whether its network level runs the EFA exporter are taken from AWS "
            "samples, not verified; fmcluster evaluates its DCGM GPU, EFA exporter and node exporter alerts there "
            "(no Slurm, node-check or acceptance alert), got 'managed'; allowed managed: after deploy check the "
            "add-on is ACTIVE (aws eks describe-addon), the Watchdog mail arrives and EfaMetricsAbsent does not fire"
        )


@rule("R-EKS-10", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html (a private endpoint is reached "
      "only from the VPC or a connected network whose traffic the control plane security group admits on 443)")
def private_endpoint_reachable(rc: ResolvedCluster) -> Iterator[Violation]:
    """A private endpoint (no ``public_access_cidrs``) with no ``api_access_cidrs`` and no
    ``api_access_security_group_ids``: only members of the EFA security group (the nodes) reach the API."""
    plan = as_eks_plan(rc.eks)
    if plan is None or not plan.creates_cluster:
        return
    s = plan.settings
    if not (s.public_access_cidrs or s.api_access_cidrs or s.api_access_security_group_ids):
        yield f"{EKS}.api_access_cidrs", (
            "nothing outside the cluster's nodes reaches the private Kubernetes API endpoint, so kubectl and the Helm "
            "step have no place to run from, got no api_access_cidrs, api_access_security_group_ids or "
            "public_access_cidrs; allowed your VPN or bastion network (e.g. 10.0.0.0/16 for hosts in the VPC) or an "
            "admin security group"
        )


def _served(release: str, kind: str) -> tuple[str, ...]:
    known = cat.KUEUE_RELEASES.get(release)
    return known.served.get(kind, ()) if known is not None else ()


@rule("R-EKS-11", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"{cat.TRAINING_OPERATOR_VERSIONS_SOURCE} (training operator: recommended Kueue "
      f"{' and '.join(cat.TRAINING_OPERATOR_RECOMMENDED_KUEUE)}); {cat.TASK_GOVERNANCE.source} (task governance "
      f"{cat.TASK_GOVERNANCE.version} packages Kueue {cat.KUEUE_VERSION}, no Kubernetes versions listed); "
      f"kubernetes-sigs/kueue CRDs at those tags (fmcluster.catalog.eks.KUEUE_RELEASES)")
def kueue_versions_unconfirmed(rc: ResolvedCluster) -> Iterator[Violation]:
    """The Kueue the manifests need (``kueue.x-k8s.io`` :data:`~fmcluster.catalog.eks.KUEUE_API_VERSION`) against what
    AWS documents: the training operator's page recommends a Kueue that does not serve that version, AWS publishes no
    tested pairing of the operator with the Kueue task governance installs, nor the Kubernetes versions of the pinned
    task governance add-on; without task governance or with an existing cluster, the Kueue is not fmcluster's."""
    plan = as_eks_plan(rc.eks)
    if plan is None:
        return
    api = f"{cat.KUEUE_API_GROUP}/{cat.KUEUE_API_VERSION}"
    need = f"a Kueue that serves {api} (from {cat.KUEUE_FIRST_V1BETA2})"
    if not plan.creates_cluster or not plan.settings.task_governance:
        why = ("fmcluster installs no add-on on an existing EKS cluster" if not plan.creates_cluster
               else "task_governance is off, so fmcluster installs no Kueue")
        path = "orchestrator.hyperpod.eks_cluster_arn" if not plan.creates_cluster else f"{EKS}.task_governance"
        yield path, (
            f"the rendered kueue/ manifests need {need}, and {why}, got no Kueue fmcluster can vouch for; allowed "
            f"{need} installed before applying them (task governance {cat.TASK_GOVERNANCE.version} installs "
            f"{cat.KUEUE_VERSION})"
        )
        return
    v = plan.kubernetes_version
    yield f"{EKS}.task_governance", (
        f"AWS lists no Kubernetes versions for task governance {cat.TASK_GOVERNANCE.version} (Kueue "
        f"{cat.KUEUE_VERSION}), so its support of Kubernetes {v} is not confirmed, got {v!r}; allowed {v!r} after "
        f"`aws eks describe-addon-versions --addon-name {cat.TASK_GOVERNANCE.name} --kubernetes-version {v}` lists "
        f"{cat.TASK_GOVERNANCE.version}"
    )
    if plan.settings.training_operator:
        recommended = " and ".join(cat.TRAINING_OPERATOR_RECOMMENDED_KUEUE)
        serves = sorted({ver for r in cat.TRAINING_OPERATOR_RECOMMENDED_KUEUE for ver in _served(r, "ClusterQueue")})
        yield f"{EKS}.training_operator", (
            f"the training operator's page recommends Kueue {recommended} (serving {api.split('/')[0]}/"
            f"{', '.join(serves) or 'unknown versions'}, not {cat.KUEUE_API_VERSION}), while task governance "
            f"{cat.TASK_GOVERNANCE.version} installs Kueue {cat.KUEUE_VERSION}; AWS documents no test of the operator "
            f"with it, only task governance >= {cat.TRAINING_OPERATOR_MIN_TASK_GOVERNANCE}, got training_operator "
            f"with Kueue {cat.KUEUE_VERSION}; allowed training_operator: true after a first PyTorchJob runs, or "
            "training_operator: false (jobs use the Kubeflow operators of the HyperPod Helm chart)"
        )


def _tags_text(tags: Mapping[str, str]) -> str:
    """``tags team=research, owner=ml`` as the blueprint's ``tags:`` reads, ``no tags`` for none."""
    return "tags " + ", ".join(f"{k}={v}" for k, v in sorted(tags.items())) if tags else "no tags"


@rule("R-EKS-12", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="https://docs.aws.amazon.com/sagemaker/latest/dg/"
      "security-iam-awsmanpol-AmazonSageMakerHyperPodTrainingOperatorAccess.html (the policy allows "
      "sagemaker:DescribeClusterNode; its JSON and conditions are only in the AWS Managed Policy Reference, not read); "
      "public samples found in a deploy review tag the HyperPod cluster SageMaker=true for that policy")
def training_operator_policy_tag_unverified(rc: ResolvedCluster) -> Iterator[Violation]:
    """The training operator's role has the AWS managed policy AmazonSageMakerHyperPodTrainingOperatorAccess; two public
    samples tag the HyperPod cluster ``SageMaker=true`` because, they say, that policy allows its actions only on
    resources with that tag. The policy text was not found in a primary source, so fmcluster does not add the tag."""
    plan = as_eks_plan(rc.eks)
    if plan is None or not plan.creates_cluster or not plan.settings.training_operator:
        return
    tags = rc.blueprint.tags
    if tags.get("SageMaker") == "true":
        return
    yield f"{EKS}.training_operator", (
        f"whether {cat.TRAINING_OPERATOR_IDENTITY.managed_policies[0]} acts only on resources tagged SageMaker=true "
        "is not verified (two samples tag the HyperPod cluster so), so the operator may be refused "
        f"sagemaker:DescribeClusterNode on this cluster, got {_tags_text(tags)}; allowed tags: "
        "SageMaker: \"true\" on the blueprint (every resource gets it), or check the policy's conditions "
        f"(aws iam get-policy-version --policy-arn arn:aws:iam::aws:policy/"
        f"{cat.TRAINING_OPERATOR_IDENTITY.managed_policies[0]} --version-id <default>)"
    )


@rule("R-EKS-13", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source=f"{cat.VPC_CNI.source} (latest EKS add-on version per Kubernetes version); an AWS::EKS::Addon whose "
      "AddonVersion EKS does not offer for the cluster's version fails its stack")
def pinned_addon_kubernetes(rc: ResolvedCluster) -> Iterator[Violation]:
    """A pinned add-on version whose documented Kubernetes versions do not include the cluster's: EKS may refuse it,
    which fails ``<name>-eks`` (add-ons before nodes) or ``<name>-addons``. Unverified, so a warning."""
    plan = as_eks_plan(rc.eks)
    if plan is None or plan.kubernetes_version is None:
        return
    v = plan.kubernetes_version
    for addon in (*plan.addons_before_nodes, *plan.addons_after_nodes):
        if addon.version is None or not addon.kubernetes or v in addon.kubernetes:
            continue
        stack = "<name>-addons" if addon.needs_nodes else "<name>-eks"
        yield f"{EKS}.kubernetes_version", (
            f"the pinned {addon.name} {addon.version} is documented for Kubernetes {', '.join(addon.kubernetes)} "
            f"only ({addon.source}), so EKS may refuse it on {v} and fail {stack}, got {v!r}; allowed "
            f"{', '.join(addon.kubernetes)}, or {v!r} after `aws eks describe-addon-versions --addon-name {addon.name} "
            f"--kubernetes-version {v}` lists {addon.version}"
        )
