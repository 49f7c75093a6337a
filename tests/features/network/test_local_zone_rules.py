"""Local Zones (R-LZ-1..3): which zones count as Local Zones, and what each orchestrator and storage choice gets.

Table rows: (blueprint patch, (path, level, rule id) of every R-LZ problem). Messages are asserted once each."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests import blueprints
from tests.blueprints import DROP

DFW = {"availability_zone": "us-east-1-dfw-2a"}
DFW_ID = {"availability_zone": DROP, "availability_zone_id": "use1-dfw2-az1"}
EXISTING_VPC = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}
NO_LUSTRE = {"storage": {"lustre": None}}
PCS = {"orchestrator": {"kind": "pcs"}}
HEAD = ("availability_zone", "warning", "R-LZ-4")
HEAD_ID = ("availability_zone_id", "warning", "R-LZ-4")


def local_zone_problems(*patches: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    text = blueprints.blueprint_text(*patches, base=blueprints.PINNED_STACK)
    try:
        problems = load_blueprint_text(text).warnings
    except BlueprintError as e:
        problems = e.problems
    return [(p.path, p.level, p.rule_id) for p in problems if (p.rule_id or "").startswith("R-LZ-")]


@pytest.mark.parametrize(
    ("patches", "expected"),
    [
        ((), []),
        (({"availability_zone": DROP, "availability_zone_id": "use1-az6"},), []),
        # every Local Zone row also warns that the head / login node's type may not be offered there (R-LZ-4)
        ((DFW,), [("availability_zone", "error", "R-LZ-1"), ("storage.lustre", "warning", "R-LZ-3"), HEAD]),
        ((DFW_ID,), [("availability_zone_id", "error", "R-LZ-1"), ("storage.lustre", "warning", "R-LZ-3"), HEAD_ID]),
        ((DFW, EXISTING_VPC), [("storage.lustre", "warning", "R-LZ-3"), HEAD]),
        ((DFW, EXISTING_VPC, NO_LUSTRE), [HEAD]),
        ((DFW, EXISTING_VPC, NO_LUSTRE, PCS), [("availability_zone", "error", "R-LZ-2"), HEAD]),
        ((DFW_ID, NO_LUSTRE, PCS), [("availability_zone_id", "error", "R-LZ-1"), ("availability_zone_id", "error", "R-LZ-2"),
                                    HEAD_ID]),
    ],
    ids=["regular-name", "regular-id", "lz-name-new-vpc", "lz-id-new-vpc", "lz-existing-vpc-lustre",
         "lz-existing-vpc-no-lustre", "lz-pcs", "lz-id-pcs-new-vpc"],
)
def test_local_zone_rules(patches: tuple[dict[str, Any], ...], expected: list[tuple[str, str, str]]) -> None:
    assert sorted(local_zone_problems(*patches)) == sorted(expected)


def messages(*patches: dict[str, Any]) -> dict[str | None, str]:
    text = blueprints.blueprint_text(*patches, base=blueprints.PINNED_STACK)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text)
    return {p.rule_id: p.message for p in exc.value.problems if (p.rule_id or "").startswith("R-LZ-")}


def test_messages_quote_the_zone_and_say_what_is_allowed() -> None:
    found = messages(DFW, PCS)
    assert found["R-LZ-1"] == (
        "a Local Zone with a VPC fmcluster creates, got 'us-east-1-dfw-2a': its NAT gateway and public subnet would be "
        "created in the Local Zone, and NAT gateways exist only in some Local Zones; allowed a regular Availability "
        "Zone, or an existing VPC (network.vpc_id and network.gpu_subnet_id: a subnet in the Local Zone whose route "
        "table reaches a NAT gateway or endpoints in the parent Region)")
    assert found["R-LZ-2"] == (
        "AWS PCS cannot place its control plane in a Local Zone, got 'us-east-1-dfw-2a' (fmcluster gives PCS the GPU "
        "subnet); allowed a regular Availability Zone with PCS, or ParallelCluster or HyperPod in the Local Zone")
    assert found["R-LZ-3"] == (
        "created in the GPU subnet, which is in the Local Zone 'us-east-1-dfw-2a' (availability_zone); FSx for Lustre "
        "in Local Zones is not confirmed by AWS documentation and creation may fail; allowed a regular Availability "
        "Zone, or storage.lustre as is (at your risk), or drop storage.lustre and mount a file system of the parent "
        "Region yourself")


#: A p6e-gb200 UltraServer Capacity Block group: EC2 sells these blocks only in the Dallas Local Zone (R-CAP-15).
GB200 = {"compute": [blueprints.group(instance_type="p6e-gb200.36xlarge", count=9,
                                      capacity={"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"})],
         "software": {"stack": "gb200-580-cuda13.0", "os": "ubuntu-24.04"}}


def test_no_other_zone_is_offered_for_a_type_sold_only_in_the_local_zone() -> None:
    """R-LZ-2 and R-LZ-3 drop "a regular Availability Zone" from their advice when a Capacity Block group's type is
    sold only in this Local Zone: there R-CAP-15 would refuse it, so the way out for PCS is ParallelCluster."""
    found = messages(DFW, GB200, PCS)
    assert found["R-LZ-2"] == (
        "AWS PCS cannot place its control plane in a Local Zone, got 'us-east-1-dfw-2a' (fmcluster gives PCS the GPU "
        "subnet); allowed orchestrator.kind parallelcluster in the Local Zone: with PCS, fmcluster cannot run "
        "p6e-gb200.36xlarge, "
        "whose Capacity Blocks EC2 sells only in us-east-1-dfw-2a, use1-dfw2-az1 (R-CAP-15)")
    assert found["R-LZ-3"] == (
        "created in the GPU subnet, which is in the Local Zone 'us-east-1-dfw-2a' (availability_zone); FSx for Lustre "
        "in Local Zones is not confirmed by AWS documentation and creation may fail; allowed storage.lustre as is (at "
        "your risk), or drop storage.lustre and mount a file system of the parent Region yourself")


def test_the_head_node_in_a_local_zone_is_named_with_its_type() -> None:
    """R-LZ-4: the management node launches in the GPU subnet; its type is named and preflight is the check."""
    text = blueprints.blueprint_text(DFW, EXISTING_VPC, NO_LUSTRE, base=blueprints.PINNED_STACK)
    [warning] = [p for p in load_blueprint_text(text).warnings if p.rule_id == "R-LZ-4"]
    assert warning.message == (
        "the head node (m7i.4xlarge) launches in the GPU subnet, in the Local Zone 'us-east-1-dfw-2a', and a Local Zone "
        "offers fewer instance types than its Region (not recorded in the catalog), got 'us-east-1-dfw-2a'; allowed as "
        "is after `fmcluster preflight` finds m7i.4xlarge offered there, or another head node type that is")


def test_r_lz_1_offers_no_other_zone_for_a_type_sold_only_in_the_local_zone() -> None:
    assert messages(DFW, GB200)["R-LZ-1"].endswith(
        "allowed an existing VPC (network.vpc_id and network.gpu_subnet_id: a subnet in the Local Zone whose route "
        "table reaches a NAT gateway or endpoints in the parent Region)")
