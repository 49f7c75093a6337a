"""FSx for Lustre, data repository association and checkpoint rules (FSx CreateFileSystem API, FSx for Lustre User Guide).

Every rule names its source. Facts marked unverified in the research notes are warnings, not errors.
Messages follow ``<what is wrong>, got <value>; allowed <values>`` (README.md).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from fmcluster.blueprint.model import DEFAULT_MOUNT_POINT, DEFAULT_SCRATCH_PATH, Blueprint, StorageSpec
from fmcluster.validation.rules import Violation, rule

FSX_API = "https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html"
FSX_LUSTRE_CONFIG = "https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html"
FSX_EFA = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html"
DRA_DOC = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-fsx-datarepositoryassociation.html"
S3_TRANSITION = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_Transition.html"
S3_TRANSITION_GUIDE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html"

THROUGHPUT_TIERS: dict[str, tuple[int, ...]] = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
MAX_DATA_REPOSITORIES = 8
#: FSx recommends EFA for file systems above this aggregate throughput (MB/s), https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html.
EFA_RECOMMENDED_ABOVE_MBPS = 10_000
#: S3 refuses lifecycle transitions to these classes earlier than this many days after creation.
IA_MIN_TRANSITION_DAYS = 30


def capacity_allowed(deployment_type: str, gib: int) -> bool:
    """Lustre storage capacity increments: 1200, 2400, then multiples of 2400 (3600 for SCRATCH_1)."""
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    return gib in (1200, 2400) or (gib > 0 and gib % step == 0)


# ---- FSx for Lustre -------------------------------------------------------------------------
@rule("R-FSX-1", source=f"{FSX_API} (StorageCapacity)", scope="storage")
def lustre_capacity(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and not capacity_allowed(fs.deployment_type, fs.storage_capacity_gib):
        step = 3600 if fs.deployment_type == "SCRATCH_1" else 2400
        lower = max(step, (fs.storage_capacity_gib // step) * step)
        yield "storage.lustre.storage_capacity_gib", (
            f"invalid capacity for {fs.deployment_type}, got {fs.storage_capacity_gib} GiB; "
            f"allowed 1200, 2400 or a multiple of {step} GiB - did you mean {lower} or {lower + step}?"
        )


@rule("R-FSX-2", source=f"{FSX_LUSTRE_CONFIG} (PerUnitStorageThroughput)", scope="storage")
def lustre_throughput(storage: StorageSpec) -> Iterator[Violation]:
    """Throughput tiers per deployment type; scratch file systems take none."""
    fs = storage.lustre
    if not fs or fs.per_unit_storage_throughput is None:
        return
    tiers = THROUGHPUT_TIERS.get(fs.deployment_type)
    value = fs.per_unit_storage_throughput
    path = "storage.lustre.per_unit_storage_throughput"
    if tiers and value not in tiers:
        yield path, f"invalid for {fs.deployment_type}, got {value}; allowed {', '.join(map(str, tiers))} MB/s/TiB"
    elif not tiers:
        yield path, f"not used by {fs.deployment_type}, got {value}; allowed null (only PERSISTENT_1/2 take a throughput tier)"


@rule("R-FSX-3", source=f"{FSX_EFA}; Terraform AWS provider docs, efa_enabled (EfaEnabled needs PERSISTENT_2 + metadata configuration)",
      scope="storage")
def efa_needs_persistent2(storage: StorageSpec) -> Iterator[Violation]:
    """EFA-enabled Lustre needs PERSISTENT_2, a metadata configuration (always added) and Lustre 2.15."""
    fs = storage.lustre
    if fs and fs.efa_enabled and fs.deployment_type != "PERSISTENT_2":
        yield "storage.lustre.efa_enabled", f"needs deployment_type PERSISTENT_2, got {fs.deployment_type}; allowed PERSISTENT_2"
    if fs and fs.efa_enabled and fs.file_system_type_version != "2.15":
        yield "storage.lustre.file_system_type_version", f"EFA needs Lustre 2.15, got {fs.file_system_type_version}; allowed 2.15"


@rule("R-FSX-4", source=f"{FSX_API} (MetadataConfiguration.Iops)", scope="storage")
def metadata_iops(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs or fs.metadata_iops is None:
        return
    path = "storage.lustre.metadata_iops"
    if fs.deployment_type != "PERSISTENT_2":
        yield path, f"only for PERSISTENT_2, got deployment_type {fs.deployment_type}; allowed null"
    elif fs.metadata_iops not in (1500, 3000, 6000) and not (fs.metadata_iops % 12000 == 0 and 0 < fs.metadata_iops <= 192000):
        yield path, f"invalid, got {fs.metadata_iops}; allowed 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000"


@rule("R-FSX-5", source=f"{FSX_LUSTRE_CONFIG} (AutomaticBackupRetentionDays; not on scratch)", scope="storage")
def no_backups_on_scratch(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and not fs.persistent and fs.automatic_backup_retention_days > 0:
        yield "storage.lustre.automatic_backup_retention_days", (
            f"scratch file systems have no backups, got {fs.automatic_backup_retention_days}; allowed 0"
        )


@rule("R-FSX-6", source=f"{FSX_LUSTRE_CONFIG} (DailyAutomaticBackupStartTime); aws-cdk lustre-file-system.ts "
      "validateDailyAutomaticBackupStartTime", scope="storage")
def backup_start_needs_retention(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and fs.daily_automatic_backup_start_time is not None and fs.automatic_backup_retention_days == 0:
        yield "storage.lustre.daily_automatic_backup_start_time", (
            "only used when automatic backups are on, "
            f"got {fs.daily_automatic_backup_start_time!r} with automatic_backup_retention_days 0; "
            "allowed null, or set automatic_backup_retention_days to 1-90"
        )


@rule("R-FSX-7", source=f"{FSX_API} (KmsKeyId: PERSISTENT_1 and PERSISTENT_2 only)", scope="storage")
def kms_only_persistent(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and fs.kms_key_arn is not None and not fs.persistent:
        yield "storage.lustre.kms_key_arn", (
            f"scratch file systems are always encrypted with the FSx service key, got a key for {fs.deployment_type}; "
            "allowed null, or deployment_type PERSISTENT_1 or PERSISTENT_2"
        )


@rule("R-FSX-8", source=f"{FSX_LUSTRE_CONFIG} (ImportPath is not supported with the Persistent_2 deployment type)",
      scope="storage")
def import_path_not_persistent2(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and fs.import_path is not None and fs.deployment_type == "PERSISTENT_2":
        yield "storage.lustre.import_path", (
            f"PERSISTENT_2 file systems link to S3 only through data repository associations, got {fs.import_path!r}; "
            "allowed null - move it to data_repositories: [{file_system_path: /, s3_uri: ...}]"
        )


@rule("R-FSX-9", level="warning", source=f"{FSX_EFA} (EFA recommended above 10 GB/s)",
      scope="storage")
def efa_below_recommended_throughput(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs or not fs.efa_enabled or fs.throughput_tier is None:
        return
    mbps = fs.throughput_mbps
    if mbps <= EFA_RECOMMENDED_ABOVE_MBPS:
        yield "storage.lustre.efa_enabled", (
            f"FSx recommends EFA for file systems above {EFA_RECOMMENDED_ABOVE_MBPS // 1000} GB/s, "
            f"got {mbps} MB/s ({fs.storage_capacity_gib} GiB x {fs.throughput_tier} MB/s/TiB); "
            "allowed as is, or raise storage_capacity_gib / per_unit_storage_throughput (EfaEnabled cannot be changed later)"
        )


@rule("R-FSX-10", level="warning", source=f"{FSX_EFA} (clients need EFA; unverified: non-EFA clients fall back to TCP)")
def efa_file_system_without_efa_clients(bp: Blueprint) -> Iterator[Violation]:
    fs = bp.storage.lustre
    if fs is None or not fs.efa_enabled:
        return
    tcp_only = [g.name for g in bp.compute if not g.efa_enabled]
    if tcp_only:
        yield "storage.lustre.efa_enabled", (
            f"compute groups without EFA reach an EFA-enabled file system over TCP only, got {', '.join(tcp_only)}; "
            "allowed efa: true on every group that should use EFA to the file system"
        )


def _nested(a: str, b: str) -> bool:
    """Whether two absolute paths are equal or one is inside the other (``/scratch`` and ``/scratch/fsx``)."""
    na, nb = _norm(posixpath.normpath(a)), _norm(posixpath.normpath(b))
    return na.startswith(nb) or nb.startswith(na)


@rule("R-FSX-11", source="fmcluster: the FSx file system and each group's NVMe RAID0 scratch volume are mounted on "
      "every node (constructs/orchestrator.py, features/node/render_context.py); a mount on, inside or above another "
      "hides it or is hidden. Checkpoints live in S3 and have no mount point.")
def lustre_mount_clear_of_scratch(bp: Blueprint) -> Iterator[Violation]:
    """``storage.lustre.mount_point`` must be neither equal to, inside nor above any compute group's
    ``scratch_path``. Reported at ``storage.lustre.mount_point`` when the blueprint sets it (one finding
    per distinct scratch path, naming the groups), else at each clashing group's ``scratch_path``."""
    fs = bp.storage.lustre
    if fs is None:
        return
    clashes: dict[str, list[int]] = {}
    for i, g in enumerate(bp.compute):
        if _nested(fs.mount_point, g.scratch_path):
            clashes.setdefault(g.scratch_path, []).append(i)
    if "mount_point" not in fs.model_fields_set:
        for groups in clashes.values():
            for i in groups:
                g = bp.compute[i]
                yield f"compute[{i}].scratch_path", (
                    f"clashes with the FSx for Lustre mount point {fs.mount_point!r} (one mount would hide the other), "
                    f"got {g.scratch_path!r}; allowed a path neither equal to, inside nor above {fs.mount_point!r} - "
                    f"did you mean {DEFAULT_SCRATCH_PATH}?"
                )
        return
    free = not any(_nested(DEFAULT_MOUNT_POINT, g.scratch_path) for g in bp.compute)
    hint = f" - did you mean {DEFAULT_MOUNT_POINT}?" if free and fs.mount_point != DEFAULT_MOUNT_POINT else ""
    for scratch, groups in clashes.items():
        names = ", ".join(f"compute[{i}] ({bp.compute[i].name})" for i in groups)
        yield "storage.lustre.mount_point", (
            f"clashes with the NVMe scratch_path {scratch!r} of {names} (one mount would hide the other), "
            f"got {fs.mount_point!r}; allowed a path neither equal to, inside nor above {scratch!r}{hint}"
        )


# ---- data repository associations -------------------------------------------------------------
@rule("R-DRA-1", source=f"{DRA_DOC} (at most 8 per file system; not on SCRATCH_1)", scope="storage")
def dra_count_and_type(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs or not fs.data_repositories:
        return
    if len(fs.data_repositories) > MAX_DATA_REPOSITORIES:
        yield "storage.lustre.data_repositories", (
            f"too many data repository associations, got {len(fs.data_repositories)}; allowed at most {MAX_DATA_REPOSITORIES}"
        )
    if fs.deployment_type == "SCRATCH_1":
        yield "storage.lustre.data_repositories", (
            "SCRATCH_1 file systems do not support data repository associations, got "
            f"{len(fs.data_repositories)}; allowed SCRATCH_2, PERSISTENT_1 or PERSISTENT_2"
        )


def _norm(path: str) -> str:
    return path.rstrip("/") + "/"


@rule("R-DRA-2", source=f"{DRA_DOC} (FileSystemPath: paths must not overlap; / only for a single association)",
      scope="storage")
def dra_paths_disjoint(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs:
        return
    repos = fs.data_repositories
    for i, a in enumerate(repos):
        if a.file_system_path == "/" and len(repos) > 1:
            yield f"storage.lustre.data_repositories[{i}].file_system_path", (
                "'/' links the whole file system and must be the only association, got '/' with "
                f"{len(repos) - 1} other(s); allowed a subdirectory such as /datasets"
            )
            continue
        for j in range(i):
            b = repos[j]
            if _norm(a.file_system_path).startswith(_norm(b.file_system_path)) or _norm(b.file_system_path).startswith(
                _norm(a.file_system_path)
            ):
                yield f"storage.lustre.data_repositories[{i}].file_system_path", (
                    f"overlaps data_repositories[{j}] ({b.file_system_path!r}), got {a.file_system_path!r}; "
                    "allowed a path that is neither inside nor above another association's path"
                )


@rule("R-DRA-3", source=f"{DRA_DOC} (each S3 prefix maps to exactly one file-system path)", scope="storage")
def dra_unique_s3(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs:
        return
    seen: dict[str, int] = {}
    for i, r in enumerate(fs.data_repositories):
        if r.s3_uri is None:
            continue
        key = _norm(r.s3_uri)
        for other, j in seen.items():
            if key.startswith(other) or other.startswith(key):
                yield f"storage.lustre.data_repositories[{i}].s3_uri", (
                    f"overlaps the S3 location of data_repositories[{j}], got {r.s3_uri!r}; allowed a separate bucket or prefix"
                )
        seen[key] = i


@rule("R-DRA-4", source=f"{FSX_LUSTRE_CONFIG} (ImportPath: not supported for file systems with a data repository "
      "association)", scope="storage")
def dra_not_with_import_path(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and fs.import_path is not None and fs.data_repositories:
        yield "storage.lustre.data_repositories", (
            "a file system linked to S3 by the legacy import_path cannot also have data repository associations, "
            f"got import_path {fs.import_path!r} and {len(fs.data_repositories)} association(s); "
            "allowed one of the two (prefer data_repositories and drop import_path)"
        )


# ---- checkpoint bucket -------------------------------------------------------------------------
@rule("R-CKPT-1", source=f"{S3_TRANSITION} (Days); {S3_TRANSITION_GUIDE}", scope="storage")
def checkpoint_transition_days(storage: StorageSpec) -> Iterator[Violation]:
    cp = storage.checkpoints
    if cp is None or cp.transition is None:
        return
    t = cp.transition
    if t.storage_class in ("STANDARD_IA", "ONEZONE_IA") and t.after_days < IA_MIN_TRANSITION_DAYS:
        yield "storage.checkpoints.transition.after_days", (
            f"S3 moves objects to {t.storage_class} only after {IA_MIN_TRANSITION_DAYS} days, got {t.after_days}; "
            f"allowed >= {IA_MIN_TRANSITION_DAYS}, or storage_class INTELLIGENT_TIERING / GLACIER_IR (any day)"
        )


@rule("R-CKPT-2", source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html "
      "(NoncurrentVersionExpiration acts on versioned buckets)", scope="storage")
def noncurrent_needs_versioning(storage: StorageSpec) -> Iterator[Violation]:
    cp = storage.checkpoints
    if cp is not None and not cp.versioned and "noncurrent_version_expiration_days" in cp.model_fields_set:
        yield "storage.checkpoints.noncurrent_version_expiration_days", (
            f"only applies to a versioned bucket, got {cp.noncurrent_version_expiration_days} with versioned false; "
            "allowed versioned: true, or remove noncurrent_version_expiration_days"
        )


#: Checkpoint settings that shape a bucket fmcluster creates; an existing bucket keeps its own.
CREATED_BUCKET_ONLY = ("versioned", "noncurrent_version_expiration_days", "transition", "removal_policy")


@rule("R-CKPT-3", level="warning", source="fmcluster: an existing bucket is imported by name and never modified",
      scope="storage")
def existing_bucket_settings_ignored(storage: StorageSpec) -> Iterator[Violation]:
    cp = storage.checkpoints
    if cp is None or cp.created:
        return
    ignored = [k for k in CREATED_BUCKET_ONLY if k in cp.model_fields_set]
    if ignored:
        yield "storage.checkpoints", (
            f"settings for a created bucket are ignored for the existing bucket {cp.bucket!r}, got {', '.join(ignored)}; "
            "allowed bucket: create, or configure the existing bucket directly"
        )


S3_BUCKET_NAMING = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html"
#: Prefixes and suffixes S3 reserves in general purpose bucket names (S3 user guide, bucket naming rules): an
#: existing bucket cannot have them, so a name with one is a typo or an access point / Multi-Region alias.
RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def _bucket_name_problem(name: str) -> str | None:
    """Why S3 would refuse ``name`` as a general purpose bucket name beyond the model's length and characters
    (None when it would not)."""
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", name):
        return "S3 bucket names must not be formatted as an IP address"
    if ".." in name:
        return "S3 bucket names must not contain two adjacent periods"
    prefix = next((p for p in RESERVED_BUCKET_PREFIXES if name.startswith(p)), None)
    if prefix:
        return f"S3 reserves the prefix {prefix!r}"
    suffix = next((s for s in RESERVED_BUCKET_SUFFIXES if name.endswith(s)), None)
    if suffix:
        return f"S3 reserves the suffix {suffix!r} (access point aliases, Multi-Region Access Points, directory and table buckets)"
    return None


def _named_buckets(storage: StorageSpec) -> Iterator[tuple[str, str]]:
    """(YAML path, bucket name) of every existing bucket the storage section names: the checkpoint bucket, each data
    repository's ``s3_uri`` and the Lustre ``import_path``."""
    cp = storage.checkpoints
    if cp is not None and not cp.created:
        yield "storage.checkpoints.bucket", cp.bucket
    lustre = storage.lustre
    if lustre is None:
        return
    for i, repo in enumerate(lustre.data_repositories):
        if repo.s3_uri:
            yield f"storage.lustre.data_repositories[{i}].s3_uri", repo.s3_uri.removeprefix("s3://").split("/")[0]
    if lustre.import_path:
        yield "storage.lustre.import_path", lustre.import_path.removeprefix("s3://").split("/")[0]


@rule("R-S3-1", source=f"{S3_BUCKET_NAMING} (general purpose buckets)", scope="storage")
def bucket_names_allowed(storage: StorageSpec) -> Iterator[Violation]:
    """Every existing bucket the blueprint names must have a name S3 allows: not an IP address, no two adjacent periods,
    none of the reserved prefixes (``xn--``, ``sthree-``, ``amzn-s3-demo-``) or suffixes (``-s3alias``, ``--ol-s3``,
    ``.mrap``, ``--x-s3``, ``--table-s3``). The model checks length and characters."""
    for path, name in _named_buckets(storage):
        why = _bucket_name_problem(name)
        if why:
            yield path, (
                f"not a bucket name S3 allows ({why}), got {name!r}; allowed the name of an existing general purpose "
                "bucket" + (", or create" if path == "storage.checkpoints.bucket" else "")
            )
