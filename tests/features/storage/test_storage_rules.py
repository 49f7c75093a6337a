"""Storage rules as tables: (blueprint fragment, YAML path, exact message, rule id)."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

KMS = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def lustre(**kw: Any) -> dict[str, Any]:
    return {"storage": {"lustre": kw}}


def checkpoints(**kw: Any) -> dict[str, Any]:
    return {"storage": {"checkpoints": kw}}


def dras(*repos: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return lustre(data_repositories=list(repos), **kw)


def errors(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    return [(p.path, p.message, p.rule_id) for p in exc.value.errors]


#: The node slice's warning that an image's Lustre EFA driver is not recorded fires on every EFA-enabled file system
#: whose groups configure LNet over EFA (tests/features/node/test_lustre_efa.py); the storage rules are judged without it.
NODE_SLICE = {"R-FSX-13"}


def warnings(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(patch)).warnings
            if p.rule_id not in NODE_SLICE]


FSX_ERRORS = [
    (lustre(storage_capacity_gib=3000), "storage.lustre.storage_capacity_gib",
     "invalid capacity for PERSISTENT_2, got 3000 GiB; allowed 1200, 2400 or a multiple of 2400 GiB - did you mean 2400 or 4800?",
     "R-FSX-1"),
    (lustre(deployment_type="SCRATCH_1", storage_capacity_gib=4800), "storage.lustre.storage_capacity_gib",
     "invalid capacity for SCRATCH_1, got 4800 GiB; allowed 1200, 2400 or a multiple of 3600 GiB - did you mean 3600 or 7200?",
     "R-FSX-1"),
    (lustre(per_unit_storage_throughput=200), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_2, got 200; allowed 125, 250, 500, 1000 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=250), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_1, got 250; allowed 50, 100, 200 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="SCRATCH_2", per_unit_storage_throughput=125), "storage.lustre.per_unit_storage_throughput",
     "not used by SCRATCH_2, got 125; allowed null (only PERSISTENT_1/2 take a throughput tier)", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", efa_enabled=True), "storage.lustre.efa_enabled",
     "needs deployment_type PERSISTENT_2, got PERSISTENT_1; allowed PERSISTENT_2", "R-FSX-3"),
    (lustre(efa_enabled=True, file_system_type_version="2.12"), "storage.lustre.file_system_type_version",
     "EFA needs Lustre 2.15, got 2.12; allowed 2.15", "R-FSX-3"),
    (lustre(metadata_iops=4000), "storage.lustre.metadata_iops",
     "invalid, got 4000; allowed 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000", "R-FSX-4"),
    (lustre(metadata_iops=204000), "storage.lustre.metadata_iops",
     "invalid, got 204000; allowed 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000", "R-FSX-4"),
    (lustre(deployment_type="SCRATCH_2", metadata_iops=1500), "storage.lustre.metadata_iops",
     "only for PERSISTENT_2, got deployment_type SCRATCH_2; allowed null", "R-FSX-4"),
    (lustre(deployment_type="SCRATCH_2", automatic_backup_retention_days=7), "storage.lustre.automatic_backup_retention_days",
     "scratch file systems have no backups, got 7; allowed 0", "R-FSX-5"),
    (lustre(daily_automatic_backup_start_time="03:00"), "storage.lustre.daily_automatic_backup_start_time",
     "only used when automatic backups are on, got '03:00' with automatic_backup_retention_days 0; allowed null, or set "
     "automatic_backup_retention_days to 1-90", "R-FSX-6"),
    (lustre(deployment_type="SCRATCH_2", kms_key_arn=KMS), "storage.lustre.kms_key_arn",
     "scratch file systems are always encrypted with the FSx service key, got a key for SCRATCH_2; allowed null, or "
     "deployment_type PERSISTENT_1 or PERSISTENT_2", "R-FSX-7"),
    (lustre(import_path="s3://legacy-bucket/data/"), "storage.lustre.import_path",
     "PERSISTENT_2 file systems link to S3 only through data repository associations, got 's3://legacy-bucket/data/'; "
     "allowed null - move it to data_repositories: [{file_system_path: /, s3_uri: ...}]", "R-FSX-8"),
]

SHAPE_ERRORS = [
    (lustre(automatic_backup_retention_days=91), "storage.lustre.automatic_backup_retention_days",
     "out of range, got 91; allowed <= 90"),
    (lustre(weekly_maintenance_start_time="8:03:00"), "storage.lustre.weekly_maintenance_start_time",
     "invalid format, got '8:03:00'; allowed d:HH:MM in UTC, d = 1 (Monday) to 7 (Sunday), e.g. 7:04:00"),
    (lustre(daily_automatic_backup_start_time="3:00", automatic_backup_retention_days=1),
     "storage.lustre.daily_automatic_backup_start_time", "invalid format, got '3:00'; allowed HH:MM in UTC, e.g. 03:00"),
    (lustre(kms_key_arn="alias/aws/fsx"), "storage.lustre.kms_key_arn",
     "invalid format, got 'alias/aws/fsx'; allowed a KMS key ARN, arn:aws:kms:<region>:<account>:key/<key id>"),
    (lustre(deployment_type="PERSISTENT_3"), "storage.lustre.deployment_type",
     # another number is another deployment type, not a typo: no did-you-mean (fmcluster.severity.closest_names)
     "invalid value, got 'PERSISTENT_3'; allowed SCRATCH_1, SCRATCH_2, PERSISTENT_1, PERSISTENT_2"),
]

DRA_ERRORS = [
    (dras(*[{"file_system_path": f"/d{i}"} for i in range(9)]), "storage.lustre.data_repositories",
     "too many data repository associations, got 9; allowed at most 8", "R-DRA-1"),
    (dras({"file_system_path": "/datasets"}, deployment_type="SCRATCH_1", per_unit_storage_throughput=None),
     "storage.lustre.data_repositories",
     "SCRATCH_1 file systems do not support data repository associations, got 1; allowed SCRATCH_2, PERSISTENT_1 or "
     "PERSISTENT_2", "R-DRA-1"),
    (dras({"file_system_path": "/ns1"}, {"file_system_path": "/ns1/ns2"}),
     "storage.lustre.data_repositories[1].file_system_path",
     "overlaps data_repositories[0] ('/ns1'), got '/ns1/ns2'; allowed a path that is neither inside nor above another "
     "association's path", "R-DRA-2"),
    (dras({"file_system_path": "/a/b/"}, {"file_system_path": "/a"}),
     "storage.lustre.data_repositories[1].file_system_path",
     "overlaps data_repositories[0] ('/a/b/'), got '/a'; allowed a path that is neither inside nor above another "
     "association's path", "R-DRA-2"),
    (dras({"file_system_path": "/datasets"}, {"file_system_path": "/"}),
     "storage.lustre.data_repositories[1].file_system_path",
     "'/' links the whole file system and must be the only association, got '/' with 1 other(s); allowed a "
     "subdirectory such as /datasets", "R-DRA-2"),
    (dras({"file_system_path": "/a", "s3_uri": "s3://bkt/data/"}, {"file_system_path": "/b", "s3_uri": "s3://bkt/data/x/"}),
     "storage.lustre.data_repositories[1].s3_uri",
     "overlaps the S3 location of data_repositories[0], got 's3://bkt/data/x/'; allowed a separate bucket or prefix",
     "R-DRA-3"),
    (dras({"file_system_path": "/datasets"}, deployment_type="SCRATCH_2", import_path="s3://legacy-bucket/"),
     "storage.lustre.data_repositories",
     "a file system linked to S3 by the legacy import_path cannot also have data repository associations, got "
     "import_path 's3://legacy-bucket/' and 1 association(s); allowed one of the two (prefer data_repositories and "
     "drop import_path)", "R-DRA-4"),
]

CHECKPOINT_ERRORS = [
    (checkpoints(transition={"storage_class": "STANDARD_IA", "after_days": 7}), "storage.checkpoints.transition.after_days",
     "S3 moves objects to STANDARD_IA only after 30 days, got 7; allowed >= 30, or storage_class INTELLIGENT_TIERING / "
     "GLACIER_IR (any day)", "R-CKPT-1"),
    (checkpoints(transition={"storage_class": "ONEZONE_IA", "after_days": 29}), "storage.checkpoints.transition.after_days",
     "S3 moves objects to ONEZONE_IA only after 30 days, got 29; allowed >= 30, or storage_class INTELLIGENT_TIERING / "
     "GLACIER_IR (any day)", "R-CKPT-1"),
    (checkpoints(versioned=False, noncurrent_version_expiration_days=10),
     "storage.checkpoints.noncurrent_version_expiration_days",
     "only applies to a versioned bucket, got 10 with versioned false; allowed versioned: true, or remove "
     "noncurrent_version_expiration_days", "R-CKPT-2"),
    *[(checkpoints(bucket=name), "storage.checkpoints.bucket",
       f"not a bucket name S3 allows ({why}), got {name!r}; allowed the name of an existing general purpose bucket, or "
       "create", "R-S3-1") for name, why in [
        ("192.168.5.4", "S3 bucket names must not be formatted as an IP address"),
        ("my..bucket", "S3 bucket names must not contain two adjacent periods"),
        ("xn--ckpt-bucket", "S3 reserves the prefix 'xn--'"),
        ("sthree-ckpt", "S3 reserves the prefix 'sthree-'"),
        ("amzn-s3-demo-ckpt", "S3 reserves the prefix 'amzn-s3-demo-'"),
        ("ckpt-ap-s3alias", "S3 reserves the suffix '-s3alias' (access point aliases, Multi-Region Access Points, "
                            "directory and table buckets)"),
        ("ckpt--ol-s3", "S3 reserves the suffix '--ol-s3' (access point aliases, Multi-Region Access Points, directory "
                        "and table buckets)"),
        ("ckpt--use1-az4--x-s3", "S3 reserves the suffix '--x-s3' (access point aliases, Multi-Region Access Points, "
                                 "directory and table buckets)"),
    ]],
    (dras({"file_system_path": "/a", "s3_uri": "s3://xn--data/train/"}), "storage.lustre.data_repositories[0].s3_uri",
     "not a bucket name S3 allows (S3 reserves the prefix 'xn--'), got 'xn--data'; allowed the name of an existing "
     "general purpose bucket", "R-S3-1"),
]

CHECKPOINT_SHAPE_ERRORS = [
    (checkpoints(prefix="/checkpoints/"), "storage.checkpoints.prefix",
     "invalid format, got '/checkpoints/'; allowed a key prefix ending in '/', not starting with '/', e.g. checkpoints/"),
    (checkpoints(transition={"storage_class": "GLACIER_DEEP", "after_days": 1}), "storage.checkpoints.transition.storage_class",
     "invalid value, got 'GLACIER_DEEP'; allowed STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR, GLACIER, "
     "DEEP_ARCHIVE - did you mean 'GLACIER'?"),
    (checkpoints(kms_key_arn="arn:aws:kms:us-east-1:123456789012:alias/ckpt"), "storage.checkpoints.kms_key_arn",
     "invalid format, got 'arn:aws:kms:us-east-1:123456789012:alias/ckpt'; allowed a KMS key ARN, "
     "arn:aws:kms:<region>:<account>:key/<key id>"),
]


MOUNT_ERRORS = [
    (lustre(mount_point="/scratch"), "storage.lustre.mount_point",
     "clashes with the NVMe scratch_path '/scratch' of compute[0] (gpu) (one mount would hide the other), got '/scratch'; "
     "allowed a path neither equal to, inside nor above '/scratch' - did you mean /fsx?", "R-FSX-11"),
    (lustre(mount_point="/scratch/fsx"), "storage.lustre.mount_point",
     "clashes with the NVMe scratch_path '/scratch' of compute[0] (gpu) (one mount would hide the other), got "
     "'/scratch/fsx'; allowed a path neither equal to, inside nor above '/scratch' - did you mean /fsx?", "R-FSX-11"),
    ({**lustre(mount_point="/data"),
      "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "scratch_path": "/data/local"},
                  {"name": "gpu2", "instance_type": "p5.48xlarge", "count": 1, "scratch_path": "/data/local"}]},
     "storage.lustre.mount_point",
     "clashes with the NVMe scratch_path '/data/local' of compute[0] (gpu), compute[1] (gpu2) (one mount would hide the "
     "other), got '/data'; allowed a path neither equal to, inside nor above '/data/local' - did you mean /fsx?", "R-FSX-11"),
    ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "scratch_path": "/fsx/local"}]},
     "compute[0].scratch_path",
     "clashes with the FSx for Lustre mount point '/fsx' (one mount would hide the other), got '/fsx/local'; allowed a "
     "path neither equal to, inside nor above '/fsx' - did you mean /scratch?", "R-FSX-11"),
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), FSX_ERRORS + DRA_ERRORS + CHECKPOINT_ERRORS + MOUNT_ERRORS)
def test_rule_errors(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    assert errors(patch) == [(path, message, rule_id)]


@pytest.mark.parametrize(("patch", "path", "message"), SHAPE_ERRORS + CHECKPOINT_SHAPE_ERRORS)
def test_shape_errors(patch: dict[str, Any], path: str, message: str) -> None:
    assert errors(patch) == [(path, message, None)]


WARNINGS = [
    (lustre(efa_enabled=True), "storage.lustre.efa_enabled",
     "FSx recommends EFA for file systems above 10 GB/s, got 300 MB/s (1200 GiB x 250 MB/s/TiB); allowed as is, or raise "
     "storage_capacity_gib / per_unit_storage_throughput (EfaEnabled cannot be changed later)", "R-FSX-9"),
    ({**lustre(efa_enabled=True, storage_capacity_gib=12000, per_unit_storage_throughput=1000),
      "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
                  {"name": "noefa", "instance_type": "p5.48xlarge", "count": 1, "efa": False}]},
     "storage.lustre.efa_enabled",
     "compute groups without EFA reach an EFA-enabled file system over TCP only, got noefa; allowed efa: true on every "
     "group that should use EFA to the file system", "R-FSX-10"),
    (checkpoints(bucket="existing-ckpt", versioned=False, removal_policy="destroy"), "storage.checkpoints",
     "settings for a created bucket are ignored for the existing bucket 'existing-ckpt', got versioned, removal_policy; "
     "allowed bucket: create, or configure the existing bucket directly", "R-CKPT-3"),
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), WARNINGS)
def test_rule_warnings(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    assert warnings(patch) == [(path, message, rule_id)]


VALID = [
    lustre(),
    lustre(deployment_type="SCRATCH_2", storage_capacity_gib=2400),
    lustre(deployment_type="SCRATCH_1", storage_capacity_gib=3600, import_path="s3://legacy-bucket/prefix/"),
    lustre(deployment_type="PERSISTENT_1", storage_capacity_gib=4800, per_unit_storage_throughput=100, kms_key_arn=KMS),
    lustre(efa_enabled=True, storage_capacity_gib=12000, per_unit_storage_throughput=1000, metadata_iops=12000,
           automatic_backup_retention_days=90, daily_automatic_backup_start_time="23:59",
           weekly_maintenance_start_time="7:04:00"),
    dras(*[{"file_system_path": f"/d{i}"} for i in range(8)]),
    dras({"file_system_path": "/"}),
    dras({"file_system_path": "/ns1"}, {"file_system_path": "/ns10"}),
    dras({"file_system_path": "/a", "s3_uri": "s3://bkt/data/"}, {"file_system_path": "/b", "s3_uri": "s3://bkt/data2/"}),
    checkpoints(transition={"storage_class": "STANDARD_IA", "after_days": 30}, kms_key_arn=KMS),
    checkpoints(bucket="team.ckpt-s3-alias.example"),  # reserved words inside a name are fine
    checkpoints(bucket="10.0.0.1.ckpt"),
    checkpoints(transition={"storage_class": "GLACIER_IR", "after_days": 0}),
    checkpoints(versioned=False),
    checkpoints(bucket="existing-ckpt", prefix="team-a/run-1/"),
    {"storage": {"lustre": None, "checkpoints": None}},
    lustre(mount_point="/scratchpad"),  # a sibling of /scratch, not inside it
    {**lustre(mount_point="/lustre"),
     "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "scratch_path": "/fsx/local"}]},
    {"storage": {"lustre": None},
     "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "scratch_path": "/fsx"}]},
]


@pytest.mark.parametrize("patch", VALID)
def test_valid_storage_has_no_problems(patch: dict[str, Any]) -> None:
    assert warnings(patch) == []


@pytest.mark.parametrize(
    ("deployment_type", "given", "tier"),
    [("PERSISTENT_2", None, 250), ("PERSISTENT_1", None, 200), ("PERSISTENT_2", 1000, 1000), ("SCRATCH_2", None, None)],
)
def test_throughput_tier_defaults_per_deployment_type(deployment_type: str, given: int | None, tier: int | None) -> None:
    bp = load_blueprint_text(blueprint_text(lustre(deployment_type=deployment_type, storage_capacity_gib=2400,
                                            per_unit_storage_throughput=given))).blueprint
    assert bp.storage.lustre is not None
    assert bp.storage.lustre.throughput_tier == tier


@pytest.mark.parametrize(
    ("patch", "mode"),
    [(lustre(), None), (lustre(efa_enabled=True), "AUTOMATIC"), (lustre(metadata_iops=3000), "USER_PROVISIONED"),
     (lustre(efa_enabled=True, metadata_iops=6000), "USER_PROVISIONED")],
)
def test_metadata_mode(patch: dict[str, Any], mode: str | None) -> None:
    fs = load_blueprint_text(blueprint_text(patch)).blueprint.storage.lustre
    assert fs is not None and fs.metadata_mode == mode


def test_replacing_fields_are_marked_in_the_schema() -> None:
    from fmcluster.blueprint.model import DataRepository, LustreSpec

    def marked(model: Any) -> set[str]:
        return {n for n, f in model.model_fields.items() if (f.json_schema_extra or {}).get("replaces")}

    assert marked(LustreSpec) == {"deployment_type", "per_unit_storage_throughput", "file_system_type_version",
                                  "efa_enabled", "kms_key_arn", "import_path"}
    assert marked(DataRepository) == {"file_system_path", "s3_uri", "batch_import_metadata_on_create"}
