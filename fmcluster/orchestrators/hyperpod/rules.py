"""SageMaker HyperPod rules, Slurm and EKS orchestration (each rule names the variants it applies to)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, OrchestratorSpec
from fmcluster.catalog import cpu_architecture_of
from fmcluster.catalog.instance_types import hyperpod_instance_types, unknown_type_hint
from fmcluster.orchestrators.hyperpod.profile import HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule


@rule("R-HP-1", source="https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterOrchestratorEksConfig.html "
      "(ClusterArn required for EKS orchestration: an existing cluster's, or the one fmcluster creates)",
      scope="orchestrator", orchestrators=("hyperpod-slurm",))
def eks_settings_only_with_eks(orch: OrchestratorSpec) -> Iterator[Violation]:
    """``orchestrator.hyperpod.eks`` (the EKS cluster fmcluster creates) only shapes EKS orchestration."""
    if orch.hyperpod.eks is not None:
        yield "orchestrator.hyperpod.eks", (
            "ignored with orchestration: slurm, got EKS cluster settings; allowed only with orchestration: eks"
        )


@rule("R-HP-2", source="fmcluster: an EKS cluster ARN is only used by HyperPod EKS orchestration", scope="orchestrator",
      orchestrators=("hyperpod-slurm",))
def eks_cluster_only_with_eks(orch: OrchestratorSpec) -> Iterator[Violation]:
    hp = orch.hyperpod
    if hp.eks_cluster_arn:
        yield "orchestrator.hyperpod.eks_cluster_arn", (
            f"ignored with orchestration: slurm, got {hp.eks_cluster_arn!r}; allowed only with orchestration: eks"
        )


@rule("R-HP-3", source="https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html (instance group "
      "names are unique; fmcluster names the Slurm controller and login groups 'controller' and 'login')",
      scope="cluster", orchestrators=("hyperpod-slurm",))
def hyperpod_reserved_names(rc: ResolvedCluster) -> Iterator[Violation]:
    for g in rc.groups:
        if g.name in rc.profile.reserved_group_names:
            yield f"{g.path}.name", (
                f"name reserved for the HyperPod Slurm {g.name} instance group, got {g.name!r}; allowed any other name"
            )


#: ``sagemaker-<name>-<account>-<region>``: the prefix the managed AmazonSageMakerClusterInstanceRolePolicy reads
#: (botocore sagemaker ClusterLifeCycleConfig.SourceS3Uri), a 12-digit account id, S3's 63-character limit
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html). Kept equal to the construct's
#: ``lifecycle_bucket_name`` (tests/orchestrators/hyperpod/test_deploy_hyperpod.py checks both agree).
LIFECYCLE_BUCKET_FIXED = len("sagemaker-") + 1 + 12 + 1
S3_BUCKET_MAX = 63


@rule("R-HP-5", source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (3-63 characters); "
      "botocore sagemaker service-2.json ClusterLifeCycleConfig.SourceS3Uri (bucket must start with sagemaker-); "
      "fmcluster names the lifecycle bucket sagemaker-<name>-<account>-<region>", orchestrators=("hyperpod",))
def hyperpod_lifecycle_bucket_fits(bp: Blueprint) -> Iterator[Violation]:
    """The lifecycle bucket ``sagemaker-<name>-<12-digit account>-<region>`` must fit 63 characters; it is never
    shortened (a shortened name could collide with another cluster's bucket)."""
    room = S3_BUCKET_MAX - LIFECYCLE_BUCKET_FIXED - len(bp.region)
    if len(bp.name) > room:
        yield "name", (
            f"too long for the HyperPod lifecycle bucket sagemaker-{bp.name}-<account>-{bp.region} "
            f"({LIFECYCLE_BUCKET_FIXED + len(bp.name) + len(bp.region)} characters with a 12-digit account id; "
            f"S3 allows {S3_BUCKET_MAX}), got {len(bp.name)} characters; allowed at most {room} characters in {bp.region} "
            f"- did you mean {bp.name[:room].rstrip('-')!r}?"
        )


@rule("R-HP-6", source="fmcluster: HyperPod on EKS has no Slurm controller or login instance group (the construct "
      "creates worker groups only; https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks.html)",
      scope="orchestrator", orchestrators=("hyperpod-eks",))
def eks_has_no_controller_or_login(orch: OrchestratorSpec) -> Iterator[Violation]:
    """Settings that only shape the Slurm controller and login groups are errors on EKS, not silently ignored."""
    hp = orch.hyperpod
    groups = {"controller_instance_type": HYPERPOD_CONTROLLER_GROUP, "login_instance_type": HYPERPOD_LOGIN_GROUP}
    for field, group in groups.items():
        if field in hp.model_fields_set and getattr(hp, field) is not None:  # null login = no login group
            yield f"orchestrator.hyperpod.{field}", (
                f"HyperPod on EKS has no {group} instance group, got {getattr(hp, field)!r} with orchestration eks; "
                f"allowed nothing (remove it) or orchestration: slurm"
            )


@rule("R-HP-11", scope="orchestrator", orchestrators=("hyperpod-slurm",),
      source="botocore data/sagemaker/*/service-2.json shape ClusterInstanceType (an enum, read offline: "
      "fmcluster.catalog.instance_types); https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
      "API_ClusterInstanceGroupSpecification.html (InstanceType: Valid Values)")
def controller_and_login_types_exist(orch: OrchestratorSpec) -> Iterator[Violation]:
    """The controller and login groups' types must be SageMaker HyperPod instance types (``ml.m5.5xlarge`` is not:
    ml.m5 has no 5xlarge). An error: CreateCluster's ``InstanceType`` is an enum of the API; a type SageMaker added
    after the installed botocore is accepted once botocore is updated. Compute groups' types are R-HP-4's."""
    hp, known = orch.hyperpod, hyperpod_instance_types()
    for field in ("controller_instance_type", "login_instance_type"):
        instance_type = getattr(hp, field)
        if instance_type is not None and instance_type not in known:
            import botocore

            yield f"orchestrator.hyperpod.{field}", (
                f"not a SageMaker HyperPod instance type, got {instance_type!r}; allowed a type of SageMaker's "
                f"ClusterInstanceType list (botocore {botocore.__version__}){unknown_type_hint(instance_type, known)}"
            )


@rule("R-HP-8", level="warning", scope="cluster", orchestrators=("hyperpod-eks",),
      source="fmcluster: HyperPod EKS instance groups get no FsxLustreConfig from fmcluster (the API-driven FSx mount "
      "is documented for Slurm: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-"
      "migration.html), so the nodes do not mount the file system and their scripts do not wait for it")
def eks_lustre_not_mounted(rc: ResolvedCluster) -> Iterator[Violation]:
    """The file system is created but not mounted on HyperPod EKS nodes: pods reach it through the FSx CSI driver."""
    lustre = rc.blueprint.storage.lustre
    if lustre is not None and not rc.profile.lustre_on_nodes:
        yield "storage.lustre", (
            f"FSx for Lustre is not mounted at {lustre.mount_point} on HyperPod EKS nodes, got orchestration eks; "
            "allowed a file system that pods mount through the FSx for Lustre CSI driver "
            "(a PersistentVolume in your EKS cluster), "
            "or orchestration: slurm for a host mount"
        )


#: A Slurm controller / login type per CPU architecture, for R-HP-9's advice: the default (ml.m5.4xlarge) and its
#: Graviton counterpart of the same size. Both are in botocore's sagemaker service-2.json ClusterInstanceType enum
#: (tests/orchestrators/hyperpod/test_deploy_hyperpod.py checks it offline).
HELPER_TYPE_FOR_ARCH = {"x86_64": "ml.m5.4xlarge", "arm64": "ml.m7g.4xlarge"}


@rule("R-HP-9", scope="cluster", orchestrators=("hyperpod-slurm",), suppressed_by=("R-CAP-9",),
      source="botocore sagemaker service-2.json ClusterInstanceGroupSpecification.ImageId (one AMI per instance group); "
      "an AMI has one architecture (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ComponentsAMIs.html); "
      "fmcluster applies software.image.ami_id (custom mode) to every instance group")
def hyperpod_image_one_architecture(rc: ResolvedCluster) -> Iterator[Violation]:
    """One custom AMI on every instance group needs the Slurm controller and login groups in the compute groups'
    CPU architecture (p6e-gb200 is arm64, the default helpers ml.m5.4xlarge are x86_64). Reported at the helper's
    field with a type of the right architecture; the compute groups share one architecture (else R-CAP-9 reports
    them, and this rule is suppressed). Official and bake modes pick an image per group, but that is no advice
    for a stack only a custom image carries (p6e-gb200 on R580), so the advice is the helper type."""
    bp = rc.blueprint
    hp, image = bp.orchestrator.hyperpod, bp.software.image
    if image.mode != "custom" or not rc.groups:
        return
    arch = rc.groups[0].instance.cpu_architecture
    for field, label, t in (("controller_instance_type", "controller", hp.controller_instance_type),
                            ("login_instance_type", "login", hp.login_instance_type)):
        other = cpu_architecture_of(t.removeprefix("ml.")) if t else None
        if other is None or other == arch:
            continue
        fix = HELPER_TYPE_FOR_ARCH.get(arch)
        allowed = f"an {arch} type such as {fix}" if fix else f"an {arch} type"
        if field == "login_instance_type":
            allowed += " or null (no login group)"
        yield f"orchestrator.hyperpod.{field}", (
            f"the {label} group boots the one custom AMI of every group (software.image.ami_id {image.ami_id}), "
            f"built for the compute groups' {arch} CPUs, got {t} ({other}); allowed {allowed}"
        )


#: P-series HyperPod types CloudFormation linting accepts per Region, derived from public pricing
#: (training-plan-only types such as ml.p5e and ml.p6e-gb200 are absent everywhere). Source: cfn-lint
#: 1.58.0 ``src/cfnlint/data/schemas/extensions/aws_sagemaker_cluster/instancetype_enum.json``
#: (cfn-lint's per-Region enum, derived from public pricing: a warning only). Regions missing here are not checked.
HYPERPOD_PRICED_TYPES: dict[str, tuple[str, ...]] = {
    "ap-northeast-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge"),
    "ap-northeast-2": ("p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge"),
    "ap-south-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"),
    "ap-south-2": ("p6-b200.48xlarge", "p6-b300.48xlarge"),
    "ap-southeast-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"),
    "ap-southeast-2": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge"),
    "ap-southeast-3": ("p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b300.48xlarge"),
    "ca-central-1": ("p4d.24xlarge", "p5.48xlarge"),
    "eu-central-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"),
    "eu-north-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5en.48xlarge"),
    "eu-south-2": ("p5en.48xlarge",),
    "eu-west-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"),
    "eu-west-2": ("p4d.24xlarge", "p5.4xlarge", "p5.48xlarge"),
    "sa-east-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge"),
    "us-east-1": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
                  "p6-b300.48xlarge"),
    "us-east-2": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"),
    "us-west-1": ("p5.48xlarge", "p5en.48xlarge"),
    "us-west-2": ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
                  "p6-b300.48xlarge"),
}


@rule("R-HP-4", level="warning",
      source="cfn-lint 1.58.0 extensions/aws_sagemaker_cluster/instancetype_enum.json (per-Region ml.* types from public "
      "pricing, warning only)", orchestrators=("hyperpod",))
def hyperpod_type_in_region(bp: Blueprint) -> Iterator[Violation]:
    if bp.region not in HYPERPOD_PRICED_TYPES:
        return
    priced = HYPERPOD_PRICED_TYPES[bp.region]
    for i, g in enumerate(bp.compute):
        if g.instance_type not in priced:
            training_plan = g.capacity.type == "training_plan"
            yield f"compute[{i}].instance_type", (
                f"ml.{g.instance_type} has no public HyperPod price in {bp.region}"
                f"{' (normal for training-plan capacity)' if training_plan else ''}, and cfn-lint reports E3644 for it, "
                f"got {g.instance_type!r}; allowed here {', '.join(priced) or 'none'}"
            )


@rule("R-HP-10", level="warning", scope="cluster", orchestrators=("hyperpod",),
      source="botocore sagemaker service-2.json ClusterInstanceGroupSpecification.InstanceCount (the group runs that "
      "many instances; MinInstanceCount only gates the first transition to InService); fmcluster sets InstanceCount "
      "to count and does not scale HyperPod groups")
def hyperpod_min_count_ignored(rc: ResolvedCluster) -> Iterator[Violation]:
    """``min_count`` scales ParallelCluster and PCS groups down when idle; a HyperPod instance group always runs
    ``count`` instances, so a ``min_count`` below it is ignored and the bill is for ``count``."""
    for i, g in enumerate(rc.blueprint.compute):
        if g.min_count is not None and g.min_count < g.count:
            yield f"compute[{i}].min_count", (
                f"ignored on HyperPod: the instance group runs count ({g.count}) instances at all times, got "
                f"{g.min_count}; allowed no min_count (or min_count equal to count) - plan and cost assume {g.count}"
            )
