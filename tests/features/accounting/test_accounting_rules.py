"""Slurm accounting rules and resolved facts (orchestrator.slurm.accounting; docs/accounting.md): R-ACCT-* as tables
(blueprint fragment -> path, message, rule), the route per orchestrator, the stack name and the database subnets."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.features.accounting.plan import database_subnet_cidrs
from fmcluster.orchestrators.hyperpod_eks.plan import control_plane_cidrs
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, MINIMAL, blueprint_text, example, to_yaml

ACCT = "orchestrator.slurm.accounting"


def accounting(**kw: Any) -> dict[str, Any]:
    return {"orchestrator": {"slurm": {"accounting": {"enabled": True, **kw}}}}


ON = accounting(second_availability_zone="us-east-1b")


def errors(*patches: dict[str, Any], base: dict[str, Any] = MINIMAL) -> list[tuple[str, str, str | None]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(*patches, base=base))
    return [(p.path, p.message, p.rule_id) for p in exc.value.errors]


def warnings(*patches: dict[str, Any], base: dict[str, Any] = MINIMAL) -> list[tuple[str, str, str | None]]:
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(*patches, base=base)).warnings]


# ---- rules ------------------------------------------------------------------------------------------
IMPORTED_VPC = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}
HYPERPOD = {"orchestrator": {"kind": "hyperpod"}}

ERRORS: list[tuple[str, list[dict[str, Any]], list[tuple[str, str, str]]]] = [
    ("no-second-az", [accounting()], [(f"{ACCT}.second_availability_zone",
     "the accounting database subnets need two Availability Zones, got none besides us-east-1a; allowed an AZ "
     "name of us-east-1 such as us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("same-az", [accounting(second_availability_zone="us-east-1a")], [(f"{ACCT}.second_availability_zone",
     "same AZ as the GPU subnet, got 'us-east-1a'; allowed an AZ name of us-east-1 such as us-east-1b other than "
     "us-east-1a", "R-ACCT-2")]),
    ("other-region", [accounting(second_availability_zone="us-west-2b")], [(f"{ACCT}.second_availability_zone",
     "not an AZ name of us-east-1 such as us-east-1b, got 'us-west-2b'; allowed an AZ name of us-east-1 such as "
     "us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("id-for-name", [accounting(second_availability_zone="use1-az4")], [(f"{ACCT}.second_availability_zone",
     "not an AZ name of us-east-1 such as us-east-1b, got 'use1-az4'; allowed an AZ name of us-east-1 such as "
     "us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("id-of-other-region", [{"availability_zone": DROP, "availability_zone_id": "use1-az6"},
                            accounting(second_availability_zone="use2-az1")], [(f"{ACCT}.second_availability_zone",
     "not an AZ ID of us-east-1 such as use1-az4, got 'use2-az1'; allowed an AZ ID of us-east-1 such as use1-az4 "
     "other than use1-az6", "R-ACCT-2")]),
    ("subnets-in-new-vpc", [accounting(second_availability_zone="us-east-1b", subnet_ids=["subnet-0123456789abcdef1"])],
     [(f"{ACCT}.subnet_ids", "subnets of an imported VPC, got subnet-0123456789abcdef1 with a new VPC; allowed nothing "
       f"(fmcluster creates the accounting database subnets; name their second AZ in {ACCT}.second_availability_zone)", "R-ACCT-2")]),
    ("vpc-full", [ON, {"network": {"vpc_cidr": "10.0.0.0/20", "gpu_subnet_prefix_length": 21}}],
     [("network.vpc_cidr", "no room for the two /28 accounting database subnets after the public /24 and the /21 GPU "
       "subnet, got 10.0.0.0/20; allowed a larger VPC or a smaller network.gpu_subnet_prefix_length", "R-ACCT-2")]),
    ("imported-one-subnet", [IMPORTED_VPC, accounting(subnet_ids=["subnet-0123456789abcdef1"] * 2,
                                                      second_availability_zone="us-east-1b")],
     [(f"{ACCT}.subnet_ids", "the accounting database subnets need two Availability Zones, got 1 subnet(s) with an "
       "imported VPC; allowed at least two subnet ids in different AZs of network.vpc_id", "R-ACCT-2"),
      (f"{ACCT}.second_availability_zone", "ignored with an imported VPC, got 'us-east-1b'; allowed nothing (name the "
       f"subnets in {ACCT}.subnet_ids)", "R-ACCT-2")]),
    ("acu-range", [accounting(second_availability_zone="us-east-1b", min_capacity_acu=8, max_capacity_acu=4)],
     [(f"{ACCT}.min_capacity_acu", "above max_capacity_acu (4), got 8; allowed 0.5-4 ACU", "R-ACCT-3")]),
    ("hyperpod-slurm", [HYPERPOD, ON],
     [(f"{ACCT}.enabled", "Slurm accounting is not wired on SageMaker HyperPod yet, got true; allowed false. HyperPod "
       "already runs slurmdbd with MariaDB on the controller; an external database (Orchestrator.Slurm."
       "AccountingDatabase) needs NodeProvisioningMode Continuous, which fmcluster does not set for HyperPod Slurm, "
       "and cannot be detached again. Use orchestrator.kind parallelcluster or pcs for accounting fmcluster manages",
       "R-ACCT-1")]),
]


@pytest.mark.parametrize(("patches", "expected"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_accounting_errors(patches: list[dict[str, Any]], expected: list[tuple[str, str, str]]) -> None:
    assert [e for e in errors(*patches) if (e[2] or "").startswith("R-ACCT")] == expected


def test_hyperpod_eks_has_no_slurm() -> None:
    found = errors(ON, base=example("hyperpod-eks"))
    assert (f"{ACCT}.enabled", "Slurm accounting on HyperPod EKS orchestration, got true; allowed false (the cluster "
            "runs Kubernetes, not Slurm)", "R-ACCT-1") in found


def test_imported_vpc_with_two_subnets_and_az_ids_are_valid() -> None:
    ok = accounting(subnet_ids=["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"])
    assert [w for w in warnings(IMPORTED_VPC, ok) if w[2] and w[2].startswith("R-ACCT")] == []
    by_id = {"availability_zone": DROP, "availability_zone_id": "use1-az6"}
    assert [w for w in warnings(by_id, accounting(second_availability_zone="use1-az4"))
            if w[2] and w[2].startswith("R-ACCT")] == []


def test_settings_the_route_does_not_read_are_warned_about() -> None:
    assert [w for w in warnings(ON, accounting(purge_after_days=90)) if w[2] == "R-ACCT-4"] == [
        (f"{ACCT}.purge_after_days", "not used by parallelcluster, got 90; allowed the default (only AWS PCS reads it)",
         "R-ACCT-4")]
    pcs = example("pcs-p5en")
    assert [w for w in warnings(accounting(backup_retention_days=14), base=pcs) if w[2] == "R-ACCT-4"] == [
        (f"{ACCT}.backup_retention_days", "not used by pcs, got 14; allowed the default (only AWS ParallelCluster (the "
         "database fmcluster creates) reads it)", "R-ACCT-4")]


@pytest.mark.parametrize(("value", "message"), [
    (0, "0 is not allowed (AWS PCS DefaultPurgeTimeInDays), got 0; allowed -1 (keep) or 1-10000"),
    (-2, "out of range, got -2; allowed >= -1"),
])
def test_purge_days_shape(value: int, message: str) -> None:
    found = errors(accounting(purge_after_days=value), base=example("pcs-p5en"))
    assert [(p, m) for p, m, _ in found] == [(f"{ACCT}.purge_after_days", message)]


# ---- resolved -----------------------------------------------------------------------------------------
def test_off_by_default_everywhere() -> None:
    for name in ("default", "pcs-p5en", "hyperpod-p5", "hyperpod-eks"):
        rc = resolve(load_blueprint_text(to_yaml(example(name))).blueprint)
        assert rc.accounting is not None and rc.accounting.route is None and rc.stacks.accounting is None, name


def test_routes_and_stack_name() -> None:
    pc = resolve(load_blueprint_text(blueprint_text(ON)).blueprint)
    assert (pc.accounting.route, pc.stacks.accounting, pc.accounting.subnet_cidrs) == (  # type: ignore[union-attr]
        "database", "t-cluster-accounting", ("10.0.255.192/28", "10.0.255.208/28"))
    assert pc.stacks.all()[:3] == ["t-cluster-network", "t-cluster-storage", "t-cluster-accounting"]
    pcs = resolve(load_blueprint_text(blueprint_text(accounting(), base=example("pcs-p5en"))).blueprint)
    assert (pcs.accounting.route, pcs.stacks.accounting) == ("managed", None)  # type: ignore[union-attr]


@pytest.mark.parametrize(("vpc", "gpu"), [("10.0.0.0/16", 20), ("10.0.0.0/16", 18), ("172.16.0.0/20", 22)])
def test_database_subnets_sit_before_the_eks_blocks_and_after_the_gpu_subnet(vpc: str, gpu: int) -> None:
    import ipaddress

    db = database_subnet_cidrs(vpc, gpu)
    eks = control_plane_cidrs(vpc, gpu)
    assert db is not None and eks is not None
    nets = [ipaddress.IPv4Network(c) for c in (*db, *eks)]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert nets[1].broadcast_address + 1 == nets[2].network_address  # contiguous: db1, db2, eks1, eks2 at the end
    assert nets[3].broadcast_address == ipaddress.IPv4Network(vpc).broadcast_address
    gpu_end = 2 * 2 ** (32 - gpu)  # the public /24 first, then the GPU subnet aligned to its own size
    assert int(nets[0].network_address) - int(ipaddress.IPv4Network(vpc).network_address) >= gpu_end


def test_no_room_for_database_subnets_next_to_the_largest_gpu_subnet() -> None:
    # a /17 GPU subnet after the public /24 is aligned to 10.0.128.0 and fills the VPC to its end
    assert database_subnet_cidrs("10.0.0.0/16", 17) is None
