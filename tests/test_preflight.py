"""``fmcluster preflight`` against a fake account.

moto serves what it implements (STS, describe_availability_zones, describe_instance_type_offerings
by AZ ID, describe_subnets, S3, FSx describe_file_systems); botocore's Stubber, which validates
requests and responses against the service model, serves what moto lacks (service-quotas
get_service_quota, ec2 describe_capacity_reservations, sagemaker describe_training_plan). The CLI
gets these clients by monkeypatching ``fmcluster.preflight.clients.make_clients``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.preflight import clients as clients_module
from fmcluster.preflight.checks import GroupDemand, Zone, check_vcpu_quota
from fmcluster.preflight.clients import Clients
from tests.blueprints import ACCOUNT, blueprint_text

REGION = "us-east-1"
CR = "cr-0f1e2d3c4b5a69788"  # not a placeholder id (those are refused, see test_placeholder_ids_are_refused)
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/plan-a"
FAR = dt.datetime(2030, 6, 1, 11, 30, tzinfo=dt.UTC)
ON_DEMAND = ("L-417A185B", "Running On-Demand P instances")
SPOT = ("L-7212CCBC", "All P Spot Instance Requests")
FSX_P2 = ("L-8F1B9C74", "Lustre Persistent_2 storage capacity (GiB)")

GPU_GROUP = ACCOUNT["compute"][0]  # 4 x p5.48xlarge, on demand
BLOCK_GROUP = {
    "name": "blk",
    "instance_type": "p5.48xlarge",
    "count": 2,
    "capacity": {"type": "capacity_block", "reservation_id": CR},
}


def quota(code_name: tuple[str, str], value: float, service: str = "ec2") -> dict[str, Any]:
    code, name = code_name
    return {
        "Quota": {"ServiceCode": service, "QuotaCode": code, "QuotaName": name, "Value": float(value)},
        "_expected": {"ServiceCode": service, "QuotaCode": code},
    }


def reservation(**over: Any) -> dict[str, Any]:
    cr = {
        "CapacityReservationId": CR,
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1a",
        "AvailabilityZoneId": "use1-az6",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "StartDate": dt.datetime(2026, 1, 1, 11, 30, tzinfo=dt.UTC),
        "EndDateType": "limited",
        "EndDate": FAR,
    }
    cr.update(over)
    return cr


class _Ec2:
    """moto's EC2 client, except for the calls moto lacks, which go to a stubbed client."""

    STUBBED = ("describe_capacity_reservations",)

    def __init__(self, moto_client: Any, stubbed: Any) -> None:
        self._moto, self._stubbed = moto_client, stubbed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stubbed if name in self.STUBBED else self._moto, name)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-aws-file"
    empty.write_text("")
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("COLUMNS", "250")


class Account:
    """A moto account plus stubbed answers; ``install`` makes the CLI use it."""

    def __init__(self, session: boto3.Session) -> None:
        self.session = session
        self.quotas = Stubber(session.client("service-quotas", region_name=REGION))
        self.ec2_stub = Stubber(session.client("ec2", region_name=REGION))
        self.sagemaker = Stubber(session.client("sagemaker", region_name=REGION))
        self.moto_ec2 = session.client("ec2", region_name=REGION)
        self.s3 = session.client("s3", region_name=REGION)

    def with_buckets(self, *names: str) -> Account:
        for n in names:
            self.s3.create_bucket(Bucket=n)
        return self

    def with_quotas(self, *answers: dict[str, Any] | tuple[str, dict[str, str]]) -> Account:
        for a in answers:
            if isinstance(a, tuple):
                code, params = a
                self.quotas.add_client_error(
                    "get_service_quota",
                    service_error_code=code,
                    service_message=f"{code} for this call",
                    http_status_code=400,
                    expected_params=params,
                )
            else:
                body = {k: v for k, v in a.items() if k != "_expected"}
                self.quotas.add_response("get_service_quota", body, a["_expected"])
        return self

    def with_reservations(self, *answers: dict[str, Any] | str) -> Account:
        for a in answers:
            if isinstance(a, str):
                self.ec2_stub.add_client_error(
                    "describe_capacity_reservations",
                    service_error_code=a,
                    service_message=f"The capacity reservation ID '{CR}' does not exist",
                    http_status_code=400,
                )
            else:
                self.ec2_stub.add_response(
                    "describe_capacity_reservations",
                    {"CapacityReservations": [a]},
                    {"CapacityReservationIds": [a["CapacityReservationId"]]},
                )
        return self

    def with_training_plan(self, plan: dict[str, Any]) -> Account:
        self.sagemaker.add_response("describe_training_plan", plan, {"TrainingPlanName": PLAN})
        return self

    def clients(self) -> Clients:
        for s in (self.quotas, self.ec2_stub, self.sagemaker):
            s.activate()
        c = self.session
        return Clients(
            ec2=_Ec2(self.moto_ec2, self.ec2_stub.client),
            s3=self.s3,
            service_quotas=self.quotas.client,
            fsx=c.client("fsx", region_name=REGION),
            sts=c.client("sts", region_name=REGION),
            sagemaker=self.sagemaker.client,
        )

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        made = self.clients()
        monkeypatch.setattr(clients_module, "make_clients", lambda region, profile=None: made)

    def assert_all_answered(self) -> None:
        for s in (self.quotas, self.ec2_stub, self.sagemaker):
            s.assert_no_pending_responses()


_SESSION: list[boto3.Session] = []


@pytest.fixture
def account(aws_env: None) -> Iterator[Account]:
    """A fresh moto account. One boto3 session serves every test: it caches the large EC2 and
    SageMaker service models, which would otherwise be parsed again for each test."""
    if not _SESSION:
        _SESSION.append(
            boto3.Session(region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
        )
    with mock_aws():
        yield Account(_SESSION[0])


def blueprint(tmp_path: Path, **top: Any) -> Path:
    """``blueprints.ACCOUNT`` with the top-level keys ``top`` merged in, written to ``tmp_path``."""
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint_text(top, base=ACCOUNT))
    return path


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["preflight", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run_json(path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """Exit code and the report (the envelope's ``result``; the envelope itself is checked here)."""
    code, out, _err = run_cli(str(path), "--json", *extra)
    envelope = json.loads(out)
    assert (envelope["command"], envelope["ok"]) == ("preflight", code == 0)
    # every check that did not pass is a problem too (errors and could-not-check as error, warnings as warning)
    found = [(p["path"], p["message"], p["severity"], p["rule_id"], p["value"]) for p in envelope["problems"]
             if (p["rule_id"] or "").startswith("preflight-")]
    assert found == [(c["subject"], f"{c['check']}: {c['detail']}", "warning" if c["status"] == "warning" else "error",
                      "preflight-" + c["check"].lower().replace(" ", "-"), None)
                     for c in envelope["result"].get("checks", []) if c["status"] in ("error", "warning", "unknown")]
    return code, envelope["result"]


def rows(report: dict[str, Any], *statuses: str) -> list[tuple[str, str, str, str]]:
    return [
        (c["check"], c["subject"], c["status"], c["detail"])
        for c in report["checks"]
        if not statuses or c["status"] in statuses
    ]


# ---- a passing account ---------------------------------------------------------------------------------
def test_passing_account(account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = blueprint(tmp_path, compute=[GPU_GROUP, BLOCK_GROUP])
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx"))
    account.with_reservations(reservation())
    account.install(monkeypatch)

    code, report = run_json(path, "--until", "2030-05-31")

    assert code == 0
    assert report["verdict"] == "passed" and report["account"] == "123456789012"
    assert [(c, s, st) for c, s, st, _d in rows(report)] == [
        ("credentials", "account 123456789012", "ok"),
        ("availability zone", "us-east-1a", "ok"),
        ("instance offering", "p5.48xlarge in use1-az6", "ok"),
        ("instance offering", "m7i.4xlarge in use1-az6", "ok"),  # the head node launches in the same subnet
        ("network layout", "p5.48xlarge", "ok"),
        ("vCPU quota", "Running On-Demand P instances (L-417A185B)", "ok"),
        ("vCPU quota", "Capacity Block groups (blk)", "skipped"),
        ("capacity reservation", f"{CR} (compute[1] blk)", "ok"),
        ("S3 bucket", "s3://fm-datasets (data_repositories[0])", "ok"),
        ("S3 bucket", "s3://fm-checkpoints (checkpoints)", "ok"),
        ("FSx storage quota", "Lustre PERSISTENT_2 storage (L-8F1B9C74)", "ok"),
    ]
    details = {c: d for c, _s, _st, d in rows(report, "ok")}
    assert details["availability zone"] == "use1-az6 (us-east-1a)"
    assert details["vCPU quota"] == "quota 1536 vCPUs covers 768 (4 x p5.48xlarge x 192)"
    assert details["capacity reservation"] == (
        "Capacity Block active, p5.48xlarge x 2 in use1-az6, ends 2030-06-01 11:30 UTC"
    )
    assert details["FSx storage quota"] == (
        "quota 100800 GiB (Lustre Persistent_2 storage capacity (GiB)), 0 GiB in use, "
        "100800 GiB free; 4800 GiB needed"
    )
    account.assert_all_answered()


def test_passing_account_table_output(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = blueprint(tmp_path)
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(quota(ON_DEMAND, 768), quota(FSX_P2, 100800, "fsx")).install(monkeypatch)

    code, out, _err = run_cli(str(path))

    assert code == 0
    assert "check" in out and "subject" in out and "status" in out and "detail" in out
    assert "quota 768 vCPUs covers 768 (4 x p5.48xlarge x 192)" in out
    assert out.rstrip().endswith("preflight passed (9 ok)")  # + network layout, head node offering


# ---- failing accounts: each with its own message, exit 1 ----------------------------------------------
FAILING = [
    pytest.param(
        dict(
            availability_zone="us-east-1b",
            compute=[{"name": "gpu", "instance_type": "p5en.48xlarge", "count": 4}],
        ),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")),
        (),
        [
            (
                "instance offering",
                "p5en.48xlarge in use1-az1",
                "p5en.48xlarge is not offered in use1-az1 (us-east-1b); offered in use1-az2, use1-az6",
            )
        ],
        id="type not offered in the AZ",
    ),
    pytest.param(
        {},
        lambda a: a.with_quotas(quota(ON_DEMAND, 384), quota(FSX_P2, 100800, "fsx")),
        (),
        [
            (
                "vCPU quota",
                "Running On-Demand P instances (L-417A185B)",
                "quota 384 vCPUs is below the 768 needed (4 x p5.48xlarge x 192); request an increase of "
                "L-417A185B in "
                "Service Quotas (vCPUs already running in the Region count against it too)",
            )
        ],
        id="on-demand quota short",
    ),
    pytest.param(
        dict(
            compute=[
                {"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "capacity": {"type": "spot"}},
                {"name": "od", "instance_type": "p4d.24xlarge", "count": 2},
            ]
        ),
        lambda a: a.with_quotas(quota(ON_DEMAND, 192), quota(SPOT, 192), quota(FSX_P2, 100800, "fsx")),
        (),
        [
            (
                "vCPU quota",
                "All P Spot Instance Requests (L-7212CCBC)",
                "quota 192 vCPUs is below the 768 needed (4 x p5.48xlarge x 192); request an increase of "
                "L-7212CCBC in "
                "Service Quotas (vCPUs already running in the Region count against it too)",
            )
        ],
        id="spot quota short, on-demand quota enough",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, BLOCK_GROUP]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(State="expired", EndDate=dt.datetime(2026, 3, 1, 11, 30, tzinfo=dt.UTC))
        ),
        (),
        [("capacity reservation", f"{CR} (compute[1] blk)", "state expired; allowed active or scheduled")],
        id="reservation expired",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, BLOCK_GROUP]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(EndDate=dt.datetime(2030, 5, 20, 11, 30, tzinfo=dt.UTC))
        ),
        ("--until", "2030-05-31"),
        [
            (
                "capacity reservation",
                f"{CR} (compute[1] blk)",
                "ends 2030-05-20 11:30 UTC, before --until 2030-05-31",
            )
        ],
        id="reservation ends before --until",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, BLOCK_GROUP]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(AvailabilityZone="us-east-1d", AvailabilityZoneId="use1-az4")
        ),
        (),
        [
            (
                "capacity reservation",
                f"{CR} (compute[1] blk)",
                "is in use1-az4 (us-east-1d), the blueprint in use1-az6 (us-east-1a)",
            )
        ],
        id="reservation in the wrong AZ",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, BLOCK_GROUP]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(InstanceType="p5en.48xlarge")
        ),
        (),
        [
            (
                "capacity reservation",
                f"{CR} (compute[1] blk)",
                "reserves p5en.48xlarge, the blueprint uses p5.48xlarge",
            )
        ],
        id="reservation of the wrong instance type",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, {**BLOCK_GROUP, "count": 4}]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(TotalInstanceCount=2)
        ),
        (),
        [("capacity reservation", f"{CR} (compute[1] blk)", "holds 2 instances, the blueprint needs 4")],
        id="group larger than the reservation",
    ),
    pytest.param(
        dict(compute=[{**BLOCK_GROUP, "count": 2}, {**BLOCK_GROUP, "name": "blk2", "count": 1}]),
        lambda a: a.with_quotas(quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation(TotalInstanceCount=2)
        ),
        (),
        [
            (
                "capacity reservation",
                f"{CR} (compute[0] blk, compute[1] blk2)",
                "holds 2 instances, the blueprint needs 3",
            )
        ],
        id="two groups together larger than their shared reservation",
    ),
    pytest.param(
        dict(
            compute=[GPU_GROUP, {**BLOCK_GROUP, "capacity": {"type": "odcr", "reservation_id": CR}}]
        ),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            reservation()
        ),
        (),
        [
            (
                "capacity reservation",
                f"{CR} (compute[1] blk)",
                "is a Capacity Block; use capacity type capacity_block",
            )
        ],
        id="capacity block declared as odcr",
    ),
    pytest.param(
        dict(compute=[GPU_GROUP, BLOCK_GROUP]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).with_reservations(
            "InvalidCapacityReservationId.NotFound"
        ),
        (),
        [
            (
                "capacity reservation",
                f"{CR} (compute[1] blk)",
                f"{CR} not found in this account and Region (InvalidCapacityReservationId.NotFound); a "
                "reservation "
                "shared "
                "from another account must be shared with this one",
            )
        ],
        id="reservation not found",
    ),
    pytest.param(  # an example's placeholder: refused with the reason, never looked up
        dict(compute=[GPU_GROUP, {**BLOCK_GROUP, "capacity": {"type": "capacity_block",
                                                               "reservation_id": "cr-0123456789abcdef0"}}]),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")),
        (),
        [("placeholder id", "cr-0123456789abcdef0 (compute[1].capacity.reservation_id)",
          "a placeholder id shipped in an example blueprint (its digits are a documentation pattern, no real "
          "resource has it); replace it with your own before deploying")],
        id="placeholder reservation id",
    ),
    pytest.param(
        dict(storage={"checkpoints": {"bucket": "fm-missing"}}),
        lambda a: a.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")),
        (),
        [("S3 bucket", "s3://fm-missing (checkpoints)", "bucket fm-missing does not exist")],
        id="checkpoint bucket missing",
    ),
]


@pytest.mark.parametrize(("top", "setup", "extra", "expected"), FAILING)
def test_failing_account(
    account: Account,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    top: dict[str, Any],
    setup: Any,
    extra: tuple[str, ...],
    expected: list[tuple[str, str, str]],
) -> None:
    path = blueprint(tmp_path, **top)
    account.with_buckets("fm-datasets", "fm-checkpoints")
    setup(account)
    account.install(monkeypatch)

    code, report = run_json(path, *extra)

    assert (code, report["verdict"], report["exit_code"]) == (1, "failed", 1)
    assert [(c, s, d) for c, s, _st, d in rows(report, "error")] == expected
    account.assert_all_answered()


def test_failing_account_table_exit_code(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = blueprint(tmp_path, compute=[GPU_GROUP, BLOCK_GROUP])
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx"))
    account.with_reservations(reservation(State="cancelled")).install(monkeypatch)

    code, out, _err = run_cli(str(path))

    assert code == 1
    assert "state cancelled; allowed active or scheduled" in out
    assert out.rstrip().endswith("preflight failed (9 ok, 1 error, 1 skipped)")  # + network layout, head node offering


def test_a_failed_check_is_a_problem_of_the_envelope(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--json`` exit 1: the failed check is in ``problems`` (not only in ``result``), at its subject."""
    path = blueprint(tmp_path, storage={"checkpoints": {"bucket": "fm-missing"}})
    account.with_buckets("fm-datasets")
    account.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).install(monkeypatch)

    code, out, _err = run_cli(str(path), "--json")

    envelope = json.loads(out)
    assert (code, envelope["ok"]) == (1, False)
    assert [p for p in envelope["problems"] if p["severity"] == "error"] == [{
        "file": str(path), "path": "s3://fm-missing (checkpoints)", "line": None, "value": None,
        "message": "S3 bucket: bucket fm-missing does not exist", "severity": "error", "rule_id": "preflight-s3-bucket",
        "source": next(c["source"] for c in envelope["result"]["checks"] if c["subject"] == "s3://fm-missing (checkpoints)")}]


# ---- other verdicts ------------------------------------------------------------------------------------
def test_imported_subnet_in_the_wrong_zone(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vpc = account.moto_ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = account.moto_ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/26", AvailabilityZoneId="use1-az1")
    sid = subnet["Subnet"]["SubnetId"]
    path = blueprint(tmp_path, network={"vpc_id": vpc, "gpu_subnet_id": sid})
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).install(monkeypatch)

    code, report = run_json(path)

    assert code == 1
    assert rows(report, "error") == [
        (
            "GPU subnet",
            sid,
            "error",
            # 59 free addresses cover 4 nodes + head node (ParallelCluster: 1 address per node with efa-only)
            "is in use1-az1 (us-east-1b), the blueprint in use1-az6 (us-east-1a)",
        )
    ]


def test_imported_subnet_with_room(account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vpc = account.moto_ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    sid = account.moto_ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24", AvailabilityZoneId="use1-az6")[
        "Subnet"
    ]["SubnetId"]
    path = blueprint(tmp_path, network={"vpc_id": vpc, "gpu_subnet_id": sid})
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(quota(ON_DEMAND, 1536), quota(FSX_P2, 100800, "fsx")).install(monkeypatch)

    code, report = run_json(path)

    assert code == 0
    assert rows(report)[-1] == ("GPU subnet", sid, "ok", "251 free IPv4 addresses, 5 needed")


def test_hyperpod_training_plan(account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = blueprint(
        tmp_path,
        orchestrator={"kind": "hyperpod"},
        storage={"lustre": None, "checkpoints": None},
        compute=[
            {
                "name": "gpu",
                "instance_type": "p5.48xlarge",
                "count": 4,
                "capacity": {"type": "training_plan", "arn": PLAN},
            }
        ],
    )
    account.with_training_plan(
        {
            "TrainingPlanArn": PLAN,
            "TrainingPlanName": "plan-a",
            "Status": "Expired",
            "TotalInstanceCount": 2,
            "TargetResources": ["training-job"],
            "EndTime": dt.datetime(2026, 2, 1, tzinfo=dt.UTC),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:123456789012:reserved-capacity/rc-1",
                    "InstanceType": "ml.p5.48xlarge",
                    "TotalInstanceCount": 2,
                    "Status": "Expired",
                    "AvailabilityZone": "us-east-1a",
                    "AvailabilityZoneId": "use1-az6",
                }
            ],
        }
    ).install(monkeypatch)

    code, report = run_json(path)

    assert code == 1
    assert rows(report) == [
        ("credentials", "account 123456789012", "ok", "arn:aws:sts::123456789012:user/moto"),
        ("availability zone", "us-east-1a", "ok", "use1-az6 (us-east-1a)"),
        (
            "instance offering",
            "HyperPod instance groups",
            "skipped",
            "HyperPod runs nodes on SageMaker capacity: EC2 offerings do not apply",
        ),
        ("network layout", "p5.48xlarge", "ok", "32 network cards, EFA on cards 0-31, 3200 Gbps: matches the catalog"),
        (
            "vCPU quota",
            "HyperPod instance groups",
            "skipped",
            "SageMaker 'ml.<type> for cluster usage' quotas apply, not EC2's; check them in Service Quotas",
        ),
        (
            "training plan",
            "plan-a (compute[0] gpu)",
            "error",
            "status Expired; allowed Active or Scheduled; targets training-job, not hyperpod-cluster; holds "
            "2 "
            "instances, "
            "the blueprint needs 4",
        ),
    ]
    account.assert_all_answered()


def test_fsx_quota_code_unknown_only_warns(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = blueprint(tmp_path)
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(
        quota(ON_DEMAND, 1536), ("NoSuchResourceException", {"ServiceCode": "fsx", "QuotaCode": "L-8F1B9C74"})
    ).install(monkeypatch)

    code, report = run_json(path)

    assert code == 0
    assert rows(report, "warning") == [
        (
            "FSx storage quota",
            "Lustre PERSISTENT_2 storage (L-8F1B9C74)",
            "warning",
            "quota L-8F1B9C74 not found (the code is unverified); check the FSx for "
            "Lustre "
            "storage quota by hand: 4800 GiB needed",
        )
    ]


def test_access_denied_is_could_not_check(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = blueprint(tmp_path)
    account.with_buckets("fm-datasets", "fm-checkpoints")
    account.with_quotas(
        ("AccessDeniedException", {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"}),
        quota(FSX_P2, 100800, "fsx"),
    ).install(monkeypatch)

    code, report = run_json(path)

    assert (code, report["verdict"]) == (2, "incomplete")
    assert rows(report, "unknown") == [
        (
            "vCPU quota",
            "Running On-Demand P instances (L-417A185B)",
            "unknown",
            "could not check: AccessDeniedException: AccessDeniedException for "
            "this call; "
            "needs servicequotas:GetServiceQuota",
        )
    ]


def test_unconfirmed_quota_name_warns_instead_of_failing() -> None:
    stub = Stubber(
        boto3.client("service-quotas", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    )
    stub.add_response(
        "get_service_quota",
        {"Quota": {"QuotaCode": "L-417A185B", "QuotaName": "Something else", "Value": 96.0}},
    )
    with stub:
        row = check_vcpu_quota(
            stub.client, quota=ON_DEMAND, demands=[GroupDemand(0, "gpu", "p5.48xlarge", 1, 192)]
        )
    assert (row.status, row.detail) == (
        "warning",
        "quota 96 vCPUs is below the 192 needed (1 x p5.48xlarge x 192); "
        "request an increase of L-417A185B in Service Quotas (vCPUs already "
        "running "
        "in the Region count against it too); the quota is named 'Something "
        "else', "
        "not 'Running On-Demand P instances', so this is not an error",
    )


def test_scheduled_block_reports_its_start() -> None:
    from fmcluster.preflight.checks import check_capacity_reservation

    stub = Stubber(boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y"))
    start = dt.datetime(2026, 9, 1, 11, 30, tzinfo=dt.UTC)
    stub.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [reservation(State="scheduled", StartDate=start)]},
    )
    with stub:
        row = check_capacity_reservation(
            stub.client,
            reservation_id=CR,
            kind="capacity_block",
            zone=Zone("us-east-1a", "use1-az6"),
            demands=[GroupDemand(0, "blk", "p5.48xlarge", 2)],
            until=None,
            now=dt.datetime(2026, 8, 1, tzinfo=dt.UTC),
        )
    assert (row.status, row.detail) == (
        "ok",
        "Capacity Block scheduled, p5.48xlarge x 2 in use1-az6, ends "
        "2030-06-01 11:30 UTC; starts 2026-09-01 11:30 UTC; nodes launch "
        "from then",
    )


# ---- could not run: exit 2 -------------------------------------------------------------------------------
def test_invalid_blueprint_exits_2_with_the_problem_list(tmp_path: Path) -> None:
    path = blueprint(
        tmp_path,
        compute=[
            {
                "name": "gpu",
                "instance_type": "p5.48xlarge",
                "count": 4,
                "capacity": {"type": "capacity_block", "reservation_id": "cr-1"},
            }
        ],
    )
    code, _out, err = run_cli(str(path))
    assert code == 2
    assert re.search(
        r"error: compute\[0\]\.capacity\.reservation_id \(line \d+\): invalid format, got 'cr-1'; "
        r"allowed cr- followed by 17 hex digits\n",
        err,
    )
    assert "preflight could not run: the blueprint is not valid (run fmcluster validate)" in err


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    path = blueprint(tmp_path)
    code, report = run_json(path, "--until", "31.05.2030")
    assert (code, report["message"]) == (2, "--until must be a date, got '31.05.2030'; allowed YYYY-MM-DD")
    code, report = run_json(path, "--region", "us-west-2")
    assert (code, report["message"]) == (
        2,
        "--region differs from the blueprint's region, got 'us-west-2'; allowed "
        "'us-east-1' (or omit --region)",
    )


def test_no_credentials_exits_2_without_touching_the_network(
    aws_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    path = blueprint(tmp_path)

    code, _out, err = run_cli(str(path))

    assert code == 2
    assert " ".join(err.split()) == (
        "preflight could not run: no AWS credentials found; provide them with AWS_PROFILE=<profile> or "
        "--profile "
        "<profile> for a configured profile, `aws configure` (or `aws configure sso`) to create one, or the "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables"
    )
    assert attempts == []


def test_no_credentials_subprocess(aws_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed console script, in a clean process: exit 2 and the JSON verdict."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env["AWS_ACCESS_KEY_ID"] = ""
    env["AWS_SECRET_ACCESS_KEY"] = ""
    path = blueprint(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "fmcluster.cli", "preflight", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["result"]["verdict"] == "could_not_run"


# ---- IAM Identity Center for managed Grafana with AWS_SSO (botocore Stubber: shapes from the sso-admin model) ----
IDC_ARN = "arn:aws:sso:::instance/ssoins-1234567890abcdef"
IDENTITY_CENTER = [
    # (case, ListInstances response or error code, status, detail fragment)
    ("enabled", {"Instances": [{"InstanceArn": IDC_ARN, "IdentityStoreId": "d-1234567890", "Status": "ACTIVE"}]},
     "ok", f"instance {IDC_ARN} (ACTIVE)"),
    ("not enabled", {"Instances": []}, "warning", "no IAM Identity Center instance visible to this account in us-east-1"),
    ("no permission", "AccessDeniedException", "unknown", "needs sso:ListInstances"),
]


@pytest.mark.parametrize(("case", "answer", "status", "detail"), IDENTITY_CENTER, ids=[c[0] for c in IDENTITY_CENTER])
def test_identity_center_is_checked_for_aws_sso_grafana(case: str, answer: Any, status: str, detail: str) -> None:
    from fmcluster.preflight.runner import _guard, plan_steps
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_text

    client = boto3.Session(region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing").client("sso-admin")
    stub = Stubber(client)
    if isinstance(answer, str):
        stub.add_client_error("list_instances", service_error_code=answer, service_message="not allowed", http_status_code=400)
    else:
        stub.add_response("list_instances", answer, {})
    stub.activate()
    rc = resolve(load_blueprint_text(blueprint_text({"observability": {
        "metrics": "managed", "grafana_authentication": "AWS_SSO", "alert_email": "ops@example.com"}})).blueprint)
    clients = Clients(ec2=None, s3=None, service_quotas=None, fsx=None, sts=None, sagemaker=None, sso_admin=client)
    [step] = [s for s in plan_steps(rc, clients, None, until=None) if s.check == "Identity Center"]
    row = _guard(step)
    assert (row.status, row.subject) == (status, "IAM Identity Center in us-east-1")
    assert detail in row.detail
    stub.assert_no_pending_responses()


def test_identity_center_is_not_asked_with_saml_or_self_hosted() -> None:
    from fmcluster.preflight.runner import plan_steps
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_text

    clients = Clients(ec2=None, s3=None, service_quotas=None, fsx=None, sts=None, sagemaker=None, sso_admin=object())
    for obs in ({"metrics": "managed", "grafana_authentication": "SAML"}, {"metrics": "self_hosted"}):
        rc = resolve(load_blueprint_text(blueprint_text({"observability": {**obs, "alert_email": "ops@example.com"}})).blueprint)
        assert not [s for s in plan_steps(rc, clients, None, until=None) if s.check == "Identity Center"]
