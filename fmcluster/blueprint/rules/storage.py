"""FSx for Lustre, data repository association and checkpoint rules (aws-resource-rules.md section 6)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import StorageSpec
from fmcluster.blueprint.rules import Violation, rule

FSX_API = "https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html"
DRA_DOC = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-fsx-datarepositoryassociation.html"

THROUGHPUT_TIERS: dict[str, tuple[int, ...]] = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
MAX_DATA_REPOSITORIES = 8


def capacity_allowed(deployment_type: str, gib: int) -> bool:
    """Lustre storage capacity increments: 1200, 2400, then multiples of 2400 (3600 for SCRATCH_1)."""
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    return gib in (1200, 2400) or (gib > 0 and gib % step == 0)


@rule("R-FSX-1", source=f"{FSX_API} (StorageCapacity)", scope="storage")
def lustre_capacity(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and not capacity_allowed(fs.deployment_type, fs.storage_capacity_gib):
        step = 3600 if fs.deployment_type == "SCRATCH_1" else 2400
        lower = max(step, (fs.storage_capacity_gib // step) * step)
        yield "storage.lustre.storage_capacity_gib", (
            f"invalid capacity for {fs.deployment_type}, got {fs.storage_capacity_gib} GiB; allowed 1200, 2400 or a "
            f"multiple of {step} GiB - did you mean {lower} or {lower + step}?"
        )


@rule("R-FSX-2", source=f"{FSX_API} (PerUnitStorageThroughput)", scope="storage")
def lustre_throughput(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if not fs:
        return
    tiers = THROUGHPUT_TIERS.get(fs.deployment_type)
    value = fs.per_unit_storage_throughput
    path = "storage.lustre.per_unit_storage_throughput"
    if tiers and value not in tiers:
        yield path, f"invalid for {fs.deployment_type}, got {value}; allowed {', '.join(map(str, tiers))} MB/s/TiB"
    elif not tiers and value is not None and "per_unit_storage_throughput" in fs.model_fields_set:
        yield path, f"not used by {fs.deployment_type}, got {value}; allowed null (only PERSISTENT_1/2 take a throughput tier)"


@rule("R-FSX-3", source="https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html", scope="storage")
def efa_needs_persistent2(storage: StorageSpec) -> Iterator[Violation]:
    """EFA-enabled Lustre needs PERSISTENT_2, a metadata configuration and Lustre 2.15."""
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


@rule("R-FSX-5", source=f"{FSX_API} (AutomaticBackupRetentionDays; not on scratch)", scope="storage")
def no_backups_on_scratch(storage: StorageSpec) -> Iterator[Violation]:
    fs = storage.lustre
    if fs and fs.deployment_type.startswith("SCRATCH") and fs.automatic_backup_retention_days > 0:
        yield "storage.lustre.automatic_backup_retention_days", (
            f"scratch file systems have no backups, got {fs.automatic_backup_retention_days}; allowed 0"
        )


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
