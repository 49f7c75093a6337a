"""Deploy-time refusals on every orchestrator, of the kinds AWS ParallelCluster's own create-time validation
refuses: reserved directories, reserved tag keys, ARNs of another Region or partition, managed services a Region
does not offer (ParallelCluster's own reserved names are its slice's rules, ``fmcluster/orchestrators/parallelcluster/rules.py``).

Each rule cites the ParallelCluster validator (aws/aws-parallelcluster 3.16.1,
``cli/src/pcluster/validators/*.py`` and ``cli/src/pcluster/schemas/*.py``, the code
``pcluster create-cluster --dryrun`` runs) or the AWS source it checks. ``tools/pcluster_validate.py``
runs ParallelCluster's validators themselves on every generated config, and
``tests/orchestrators/parallelcluster/test_deploy_pcluster_rules.py`` asserts that fmcluster refuses each case first.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from fmcluster.blueprint.fields import text_fields
from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog.regions import partition_of, recorded_regions_of, service_regions
from fmcluster.resolved import NODE_DIR, ResolvedCluster
from fmcluster.validation.rules import Violation, rule

PCLUSTER_VALIDATORS = "aws/aws-parallelcluster 3.16.1 cli/src/pcluster/validators/cluster_validators.py"

#: Directories ParallelCluster refuses as a shared-storage mount directory (its
#: ``SharedStorageMountDirValidator.reserved_directories``, exact match), which are also the Linux system
#: directories that a mount would hide on any orchestrator.
PCLUSTER_RESERVED_MOUNT_DIRS = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/media", "/mnt", "/opt", "/opt/parallelcluster",
    "/opt/parallelcluster/shared", "/opt/parallelcluster/shared_login_nodes", "/opt/slurm", "/opt/intel", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
)
#: The users' home directories: a mount there hides every user's files, and on ParallelCluster the head node
#: shares /home with the compute nodes over NFS (its cookbook's ``nfs_export[/home]``, aws/aws-parallelcluster#2344),
#: which docs/first-job.md relies on.
HOME_DIR = "/home"
#: Kernel pseudo file systems: nothing may be mounted anywhere under them.
PSEUDO_FS_ROOTS = ("/proc", "/sys", "/dev")
#: fmcluster's own reserved tag key prefix (``fmcluster:blueprint``, ``fmcluster:stack``).
FMCLUSTER_TAG_PREFIX = "fmcluster:"


# ---- every orchestrator ----------------------------------------------------------------------
def _system_directory(path: str, node_dir: str, *, home: bool = False) -> str | None:
    """Why ``path`` must not be a mount point (None when it may be); ``home``: /home too (a node-local mount there
    hides every user's home; a shared file system at /home is how HyperPod's and PCS's samples share homes)."""
    norm = posixpath.normpath(path)
    if norm == "/":
        return "the root file system"
    if norm in PCLUSTER_RESERVED_MOUNT_DIRS:
        return "a system directory (ParallelCluster reserves it too)"
    if home and norm == HOME_DIR:
        return "the users' home directories (shared from the head node on ParallelCluster)"
    if any(norm.startswith(root + "/") for root in PSEUDO_FS_ROOTS):
        return f"inside the kernel file system {next(r for r in PSEUDO_FS_ROOTS if norm.startswith(r + '/'))}"
    if norm == node_dir or norm.startswith(node_dir + "/") or node_dir.startswith(norm + "/"):
        return f"fmcluster's node directory {node_dir} (or a directory holding it)"
    return None


@rule("R-PATH-1", source=f"{PCLUSTER_VALIDATORS} SharedStorageMountDirValidator (reserved directories, "
      "FailureLevel.ERROR); mounting over a system directory hides it on every orchestrator; /home holds the users' "
      "homes (ParallelCluster's head node exports it over NFS: aws/aws-parallelcluster#2344); fmcluster keeps its node "
      f"files in {NODE_DIR}", scope="cluster")
def mount_points_not_system_directories(rc: ResolvedCluster) -> Iterator[Violation]:
    """The FSx for Lustre mount point and every compute group's local NVMe ``scratch_path`` must not be
    ``/``, a system directory (ParallelCluster's reserved list: /bin /boot /dev /etc /lib /lib64 /media /mnt
    /opt /opt/parallelcluster... /opt/slurm /opt/intel /proc /root /run /sbin /srv /sys /tmp /usr /var), ``/home`` for
    the node-local scratch,
    anything under /proc, /sys or /dev, or fmcluster's node directory. A sub-directory such as /opt/data
    is allowed (ParallelCluster compares exact paths)."""
    bp = rc.blueprint
    if bp.storage.lustre is not None:
        why = _system_directory(bp.storage.lustre.mount_point, rc.node_dir)
        if why:
            yield "storage.lustre.mount_point", (
                f"mounting FSx for Lustre there would hide {why}, got {bp.storage.lustre.mount_point!r}; "
                "allowed a directory of its own such as /fsx or /opt/fsx"
            )
    for i, g in enumerate(bp.compute):
        why = _system_directory(g.scratch_path, rc.node_dir, home=True)
        if why:
            yield f"compute[{i}].scratch_path", (
                f"mounting the local NVMe scratch there would hide {why}, got {g.scratch_path!r}; "
                "allowed a directory of its own such as /scratch or /opt/scratch"
            )


@rule("R-TAG-1", source="fmcluster: fmcluster:blueprint and fmcluster:stack tag every resource (metrics discovery, "
      "stack roles); a blueprint tag with the fmcluster: prefix would override or shadow them")
def fmcluster_reserved_tags(bp: Blueprint) -> Iterator[Violation]:
    for key in bp.tags:
        if key.lower().startswith(FMCLUSTER_TAG_PREFIX):
            yield f"tags.{key}", (
                f"tag key prefix {FMCLUSTER_TAG_PREFIX!r} is reserved for fmcluster's own tags, got {key!r}; "
                f"allowed a key not starting with {FMCLUSTER_TAG_PREFIX}"
            )


#: What each ARN field of the blueprint names, by field name (a field missing here is named by its own name).
ARN_FIELDS = {"arn": "training plan", "resource_group_arn": "capacity reservation resource group",
              "eks_cluster_arn": "EKS cluster", "kms_key_arn": "KMS key", "alert_topic_arn": "SNS topic",
              "admin_role_arn": "IAM role"}


def _arns(bp: Blueprint) -> Iterator[tuple[str, str, str]]:
    """(path, what, ARN) of every ARN the blueprint gives: every text field named ``arn`` or ``*_arn`` at any depth
    (found by walking the blueprint, so a new ARN field is covered the day it is added). Of the orchestrator sections
    only the chosen one's: a section of another kind is R-ORCH-1's to report."""
    for path, name, arn in text_fields(bp, lambda n: n == "arn" or n.endswith("_arn")):
        what = ARN_FIELDS.get(name, name)
        if path.startswith("orchestrator.") and not path.startswith(f"orchestrator.{bp.orchestrator.kind}."):
            continue
        yield path, what, arn


KMS_REGIONAL = "https://docs.aws.amazon.com/kms/latest/developerguide/multi-region-keys-overview.html (KMS keys are " \
    "Regional; a multi-Region replica has its own Region's ARN)"


@rule("R-ARN-1", source=f"{KMS_REGIONAL}; https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html (an ARN "
      "names its partition and Region; resources of one partition cannot be used from another)",
      suppressed_by=("R-REGION-1",))
def kms_keys_in_region(bp: Blueprint) -> Iterator[Violation]:
    """Every ARN must be of the blueprint's partition (aws, aws-cn, aws-us-gov, ...), and every KMS key of
    its Region: FSx and S3 use the key in their own Region."""
    partition = partition_of(bp.region)
    for path, what, arn in _arns(bp):
        arn_partition, arn_region = arn.split(":")[1], arn.split(":")[3]
        if partition is not None and arn_partition != partition:
            yield path, (
                f"{what} ARN of partition {arn_partition!r}, got {arn!r}; allowed an ARN of partition {partition!r} "
                f"(region {bp.region} is in {partition})"
            )
        elif what == "KMS key" and arn_region != bp.region:
            yield path, (
                f"KMS key in another Region ({arn_region}), got {arn!r}; "
                f"allowed a key in {bp.region}, the blueprint's Region "
                f"(a multi-Region key's replica in {bp.region} has an ARN with {bp.region})"
            )


@rule("R-ARN-2", level="warning",
      source="unverified: SageMaker, EKS and EC2 are Regional APIs, so a training plan, EKS cluster or capacity "
      "reservation resource group of another Region is not expected to be usable (no AWS page states it); "
      "https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-alertmanager-receiver-config.html (the alert "
      "manager signs its SNS publish with SigV4 for the one Region fmcluster configures, the cluster's)",
      suppressed_by=("R-REGION-1", "R-ARN-1"))
def arns_in_region(bp: Blueprint) -> Iterator[Violation]:
    for path, what, arn in _arns(bp):
        arn_region = arn.split(":")[3]
        # An empty Region is a global resource (IAM roles): usable from every Region.
        if what != "KMS key" and arn_region and arn_region != bp.region:
            yield path, (
                f"{what} in another Region ({arn_region}), got {arn!r}; allowed one in {bp.region}, the blueprint's Region"
            )


#: Managed services of ``observability.metrics: managed``: (endpoint prefix in botocore's endpoints data, name).
MANAGED_METRICS_SERVICES = (("aps", "Amazon Managed Service for Prometheus"), ("grafana", "Amazon Managed Grafana"))


@rule("R-REGION-2", source="botocore data/endpoints.json (services 'aps' and 'grafana': the Regions with an endpoint, "
      "read through fmcluster.catalog.regions.service_regions); https://docs.aws.amazon.com/grafana/latest/userguide/"
      "what-is-Amazon-Managed-Service-Grafana.html (Supported Regions)", scope="blueprint",
      suppressed_by=("R-REGION-1",))
def managed_metrics_offered(bp: Blueprint) -> Iterator[Violation]:
    """``metrics: managed`` creates an Amazon Managed Service for Prometheus and an Amazon Managed Grafana
    workspace in the blueprint's Region; each must be offered there."""
    if bp.observability.metrics != "managed":
        return
    for service, name in MANAGED_METRICS_SERVICES:
        regions = service_regions(service)
        if bp.region not in regions:
            yield "observability.metrics", (
                f"{name} is not offered in {bp.region}, got 'managed'; "
                f"allowed self_hosted or none here, or a Region offering it: {', '.join(regions)}"
            )


@rule("R-REGION-3", level="warning",
      source="fmcluster/catalog/data/region_offerings.yaml (EC2 DescribeInstanceTypeOfferings recorded by moto 5.2.5); "
      f"{PCLUSTER_VALIDATORS.replace('cluster_validators.py', 'ec2_validators.py')} InstanceTypeBaseAMICompatibleValidator "
      "refuses a type the Region does not offer (an error there; a warning here because the recording is a snapshot)",
      orchestrators=("parallelcluster", "pcs"), suppressed_by=("R-REGION-1",))
def instance_type_offered_in_region(bp: Blueprint) -> Iterator[Violation]:
    """Each compute group's EC2 instance type should be offered in the blueprint's Region. HyperPod's ml.* types
    have their own availability (R-HP-4)."""
    for i, g in enumerate(bp.compute):
        regions = recorded_regions_of(g.instance_type)
        if regions is not None and bp.region not in regions:
            yield f"compute[{i}].instance_type", (
                f"{g.instance_type} was not offered in {bp.region} when EC2's offerings were recorded, got "
                f"{g.instance_type!r}; allowed a type offered there, or a Region offering it: {', '.join(regions) or 'none'} "
                "- check with: aws ec2 describe-instance-type-offerings --location-type region"
            )
