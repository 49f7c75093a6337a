"""Domain rules as tables: (blueprint patch, expected path, message, rule id), plus a passing case each."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

P5 = {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}


def lustre(**kw: Any) -> dict[str, Any]:
    return {"storage": {"lustre": kw}}


FAILING = [
    ({"availability_zone_id": "use1-az6"}, "availability_zone_id",
     "set either availability_zone or availability_zone_id, not both, got 'us-east-1a' and 'use1-az6'; allowed one of them "
     "(prefer availability_zone_id for reservations)", "R-AZ-1"),
    ({"availability_zone": None}, "availability_zone",
     "missing; allowed an AZ name such as us-east-1a or an availability_zone_id such as use1-az6 (EFA nodes, the placement "
     "group and FSx live in one AZ)", "R-AZ-1"),
    ({"availability_zone": "us-west-2a"}, "availability_zone",
     "not in region us-east-1, got 'us-west-2a'; allowed us-east-1a, us-east-1b, ...", "R-AZ-2"),
    ({"region": "us-esat-1"}, "region",
     "unknown AWS Region, got 'us-esat-1'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1 - did you mean us-east-1?", "R-REGION-1"),
    ({"region": "us-east-9", "availability_zone": "us-east-9a"}, "region",
     "unknown AWS Region, got 'us-east-9'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1 - did you mean us-east-1 or us-east-2?", "R-REGION-1"),
    ({"region": "zz-nowhere-1", "availability_zone": "zz-nowhere-1a"}, "region",
     "unknown AWS Region, got 'zz-nowhere-1'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1", "R-REGION-1"),
    ({"network": {"vpc_id": "vpc-0123456789abcdef0"}}, "network.gpu_subnet_id",
     "required with vpc_id 'vpc-0123456789abcdef0', got nothing; allowed subnet-<hex> in the blueprint's AZ", "R-NET-1"),
    ({"compute": [P5, P5]}, "compute[1].name",
     "duplicate compute group name, got 'gpu'; allowed a name not used by another group", "R-COMPUTE-1"),
    ({"compute": [{**P5, "min_count": 3}]}, "compute[0].min_count", "larger than count, got 3; allowed 0..2", "R-COMPUTE-2"),
    (lustre(storage_capacity_gib=3000), "storage.lustre.storage_capacity_gib",
     "invalid capacity for PERSISTENT_2, got 3000 GiB; allowed 1200, 2400 or a multiple of 2400 GiB - did you mean 2400 or 4800?",
     "R-FSX-1"),
    (lustre(deployment_type="SCRATCH_1", storage_capacity_gib=4800, per_unit_storage_throughput=None),
     "storage.lustre.storage_capacity_gib",
     "invalid capacity for SCRATCH_1, got 4800 GiB; allowed 1200, 2400 or a multiple of 3600 GiB - did you mean 3600 or 7200?",
     "R-FSX-1"),
    (lustre(per_unit_storage_throughput=200), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_2, got 200; allowed 125, 250, 500, 1000 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=125), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_1, got 125; allowed 50, 100, 200 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="SCRATCH_2", per_unit_storage_throughput=250), "storage.lustre.per_unit_storage_throughput",
     "not used by SCRATCH_2, got 250; allowed null (only PERSISTENT_1/2 take a throughput tier)", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=200, efa_enabled=True), "storage.lustre.efa_enabled",
     "needs deployment_type PERSISTENT_2, got PERSISTENT_1; allowed PERSISTENT_2", "R-FSX-3"),
    (lustre(metadata_iops=2000), "storage.lustre.metadata_iops",
     "invalid, got 2000; allowed 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000", "R-FSX-4"),
    (lustre(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, automatic_backup_retention_days=7),
     "storage.lustre.automatic_backup_retention_days", "scratch file systems have no backups, got 7; allowed 0", "R-FSX-5"),
    (lustre(data_repositories=[{"file_system_path": f"/d{i}"} for i in range(9)]), "storage.lustre.data_repositories",
     "too many data repository associations, got 9; allowed at most 8", "R-DRA-1"),
    (lustre(deployment_type="SCRATCH_1", storage_capacity_gib=1200, per_unit_storage_throughput=None,
            data_repositories=[{"file_system_path": "/data"}]), "storage.lustre.data_repositories",
     "SCRATCH_1 file systems do not support data repository associations, got 1; allowed SCRATCH_2, PERSISTENT_1 or PERSISTENT_2",
     "R-DRA-1"),
    (lustre(data_repositories=[{"file_system_path": "/data"}, {"file_system_path": "/data/llm"}]),
     "storage.lustre.data_repositories[1].file_system_path",
     "overlaps data_repositories[0] ('/data'), got '/data/llm'; allowed a path that is neither inside nor above another "
     "association's path", "R-DRA-2"),
    (lustre(data_repositories=[{"file_system_path": "/"}, {"file_system_path": "/x"}]),
     "storage.lustre.data_repositories[0].file_system_path",
     "'/' links the whole file system and must be the only association, got '/' with 1 other(s); allowed a subdirectory such as "
     "/datasets", "R-DRA-2"),
    (lustre(data_repositories=[{"file_system_path": "/a", "s3_uri": "s3://bkt/data/"},
                               {"file_system_path": "/b", "s3_uri": "s3://bkt/data/sub/"}]),
     "storage.lustre.data_repositories[1].s3_uri",
     "overlaps the S3 location of data_repositories[0], got 's3://bkt/data/sub/'; allowed a separate bucket or prefix", "R-DRA-3"),
    ({"orchestrator": {"kind": "parallelcluster", "pcs": {"size": "LARGE"}}}, "orchestrator.pcs",
     "settings for pcs are ignored because orchestrator.kind is 'parallelcluster'; allowed only orchestrator.parallelcluster - "
     "did you mean kind: pcs?", "R-ORCH-1"),
    ({"observability": {"scrape_interval_seconds": 15, "scrape_timeout_seconds": 20}}, "observability.scrape_timeout_seconds",
     "longer than scrape_interval_seconds (15 s), got 20; allowed 1..15 - lower the timeout or raise scrape_interval_seconds",
     "R-OBS-1"),
    ({"compute": [{**P5, "instance_type": "p6-b200.48xlarge"}]}, "software.stack",
     "stack is not known-good for the p6-b200 family (compute[0] is p6-b200.48xlarge), got 'h100-570-cuda12.8'; "
     "allowed blackwell-580-cuda13.0 - did you mean 'blackwell-580-cuda13.0'?", "R-SW-1"),
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), FAILING, ids=[f"{r[3]}-{i}" for i, r in enumerate(FAILING)])
def test_rule_rejects(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    found = [(p.path, p.message, p.rule_id, p.level) for p in exc.value.problems]
    assert (path, message, rule_id, "error") in found
    assert all(p.source for p in exc.value.problems if p.rule_id)


PASSING = [
    {"availability_zone": None, "availability_zone_id": "use1-az6"},
    {"region": "eu-west-1", "availability_zone": "eu-west-1a"},
    {"region": "us-gov-west-1", "availability_zone": "us-gov-west-1a"},
    {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}},
    {"compute": [P5, {**P5, "name": "gpu2", "min_count": 0}]},
    lustre(storage_capacity_gib=2400), lustre(storage_capacity_gib=1200), lustre(storage_capacity_gib=9600),
    lustre(deployment_type="SCRATCH_1", storage_capacity_gib=3600, per_unit_storage_throughput=None),
    lustre(per_unit_storage_throughput=1000),
    lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=200),
    lustre(efa_enabled=True, metadata_iops=12000),
    lustre(data_repositories=[{"file_system_path": f"/d{i}"} for i in range(8)]),
    lustre(data_repositories=[{"file_system_path": "/data"}, {"file_system_path": "/database"}]),
    lustre(data_repositories=[{"file_system_path": "/"}]),
    {"orchestrator": {"kind": "pcs", "pcs": {"size": "LARGE"}}},
    {"observability": {"scrape_interval_seconds": 15, "scrape_timeout_seconds": 15}},
    {"compute": [{**P5, "instance_type": "p6-b200.48xlarge"}], "software": {"stack": "blackwell-580-cuda13.0"}},
]


@pytest.mark.parametrize(
    "patch",
    [{"region": "us-esat-1"}, {"region": "us-esat-1", "availability_zone": None, "availability_zone_id": "use1-az6"},
     {"region": "us-east-9", "availability_zone": "us-east-9a"}],
)
def test_unknown_region_is_reported_once(patch: dict[str, Any]) -> None:
    """Only R-REGION-1: the AZ rules invent no zones (us-esat-1a, usesat1-az1) from a misspelt Region."""
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    assert [p.rule_id for p in exc.value.problems if p.rule_id and p.rule_id.startswith(("R-REGION", "R-AZ"))] == [
        "R-REGION-1"
    ]


@pytest.mark.parametrize("patch", PASSING)
def test_rule_accepts(patch: dict[str, Any]) -> None:
    load_blueprint_text(blueprint_text(patch))


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "PATH"])
def test_loader_path_variables_warn(name: str) -> None:
    warnings = load_blueprint_text(blueprint_text({"software": {"environment": {name: "/opt/conda/lib"}}})).warnings
    [w] = [w for w in warnings if w.rule_id == "R-ENV-3"]
    assert w.path == f"software.environment.{name}" and w.level == "warning"
    assert w.message.endswith(f", got {name}='/opt/conda/lib'; allowed leaving it unset (set it per job if you must)")


def test_ordinary_job_variables_do_not_warn() -> None:
    warnings = load_blueprint_text(blueprint_text({"software": {"environment": {"WANDB_PROJECT": "llm"}}})).warnings
    assert [w for w in warnings if w.rule_id and w.rule_id.startswith("R-ENV")] == []
