"""Launch templates computed from the catalog: per-node interface layouts and IPv4 addresses (pure),
each orchestrator's default interface type, the documented table, capacity rendered per capacity type,
and the synthesized PCS templates for every catalog instance type."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fmcluster.blueprint.model import ComputeGroup, OrchestratorSpec
from fmcluster.catalog import get_instance, known_instance_types
from fmcluster.catalog.networking import InterfaceSlot, describe_layout, interface_layout, ipv4_per_node
from fmcluster.constructs.capacity import launch_template_market, reservation_target
from fmcluster.orchestrators.parallelcluster.construct import capacity_settings
from fmcluster.resolved import profile_for
from fmcluster.resolved.cluster import smt_off_cpu_options
from tests.conftest import ROOT, resources_of
from tests.orchestrator_support import (
    cluster_template,
    group_name,
    matrix_templates,
    pcs_launch_templates,
    runs_on,
    stack_for,
)

TYPES = known_instance_types()
MODES = ("efa-only", "efa")

#: type -> (EFA interfaces, network cards, card 0 has EFA): the catalog facts the templates must carry.
EXPECTED = {
    "p4d.24xlarge": (4, 4, True),
    "p4de.24xlarge": (4, 4, True),
    "p5.4xlarge": (1, 1, True),
    "p5.48xlarge": (32, 32, True),
    "p5e.48xlarge": (32, 32, True),
    "p5en.48xlarge": (16, 16, True),
    "p6-b200.48xlarge": (8, 8, True),
    "p6-b300.48xlarge": (16, 17, False),
    "p6e-gb200.36xlarge": (16, 17, False),
}


def test_expected_table_covers_the_catalog() -> None:
    assert sorted(EXPECTED) == sorted(TYPES)
    for t, (efa, cards, card0) in EXPECTED.items():
        inst = get_instance(t)
        assert (inst.efa_interface_count, inst.network_cards, inst.card0_has_efa) == (efa, cards, card0)


# ---- pure layouts ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("instance_type", TYPES)
def test_layout_follows_the_catalog(instance_type: str, mode: str) -> None:
    inst = get_instance(instance_type)
    nics = interface_layout(inst, efa=True, interface_type=mode)
    efa_count, cards, card0_efa = EXPECTED[instance_type]
    pairs = [(n.card, n.device) for n in nics]
    assert len(set(pairs)) == len(pairs)
    assert (nics[0].card, nics[0].device) == (0, 0)
    assert nics[0].interface_type != "efa-only"
    assert sum(n.is_efa for n in nics) == efa_count
    assert max(Counter(n.card for n in nics if n.is_efa).values()) == 1
    assert {n.card for n in nics if n.is_efa} == set(inst.efa_cards)
    assert all(0 <= n.card < cards for n in nics)
    assert max(Counter(n.card for n in nics).values()) <= inst.max_enis_per_card
    assert all(n.interface_type == mode for n in nics if n.is_efa)
    if not card0_efa:
        assert [n.interface_type for n in nics if n.card == 0] == ["interface"]


@pytest.mark.parametrize(
    ("instance_type", "mode", "layout"),
    [
        ("p5.48xlarge", "efa-only", [(0, 0, "interface"), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 32)]),
        ("p5.48xlarge", "efa", [(0, 0, "efa")] + [(c, 0, "efa") for c in range(1, 32)]),
        ("p6-b300.48xlarge", "efa-only", [(0, 0, "interface")] + [(c, 0, "efa-only") for c in range(1, 17)]),
        ("p6-b300.48xlarge", "efa", [(0, 0, "interface")] + [(c, 0, "efa") for c in range(1, 17)]),
        ("p5.4xlarge", "efa-only", [(0, 0, "interface"), (0, 1, "efa-only")]),
        ("p5.4xlarge", "efa", [(0, 0, "efa")]),
    ],
)
def test_exact_layouts(instance_type: str, mode: str, layout: list[tuple[int, int, str]]) -> None:
    nics = interface_layout(get_instance(instance_type), efa=True, interface_type=mode)
    assert [(n.card, n.device, n.interface_type) for n in nics] == layout


@pytest.mark.parametrize(("instance_type", "mode", "ipv4"), [
    ("p5.48xlarge", "efa-only", 1), ("p5.48xlarge", "efa", 32), ("p6-b300.48xlarge", "efa", 17),
    ("p5en.48xlarge", "efa-only", 1), ("p5en.48xlarge", "efa", 16),
])
def test_ipv4_addresses_per_node(instance_type: str, mode: str, ipv4: int) -> None:
    assert ipv4_per_node(get_instance(instance_type), efa=True, interface_type=mode) == ipv4


def test_efa_disabled_is_one_ena_interface() -> None:
    nics = interface_layout(get_instance("p5.48xlarge"), efa=False, interface_type="efa-only")
    assert [(n.card, n.device, n.interface_type) for n in nics] == [(0, 0, "interface")]


# ---- layouts described, IPv4 per node, the defaults and the refusal --------------------------------
LAYOUTS = [
    # (instance type, EFA interface type, efa, layout, IPv4 per node)
    ("p5.48xlarge", "efa", True, "32 efa", 32),
    ("p5.48xlarge", "efa-only", True, "1 interface + 32 efa-only", 1),
    ("p5en.48xlarge", "efa", True, "16 efa", 16),
    ("p6-b200.48xlarge", "efa", True, "8 efa", 8),
    ("p6-b300.48xlarge", "efa", True, "1 interface + 16 efa", 17),
    ("p6-b300.48xlarge", "efa-only", True, "1 interface + 16 efa-only", 1),
    ("p4d.24xlarge", "efa", True, "4 efa", 4),
    ("p5.4xlarge", "efa", True, "1 efa", 1),
    ("p5.4xlarge", "efa-only", True, "1 interface + 1 efa-only", 1),
    ("p5.48xlarge", "efa", False, "1 interface", 1),
    ("p5.48xlarge", "efa-only", False, "1 interface", 1),
]


@pytest.mark.parametrize(("instance_type", "interface_type", "efa", "layout", "ips"), LAYOUTS)
def test_interface_layout_and_addresses(instance_type: str, interface_type: str, efa: bool, layout: str, ips: int) -> None:
    inst = get_instance(instance_type)
    assert describe_layout(interface_layout(inst, efa=efa, interface_type=interface_type)) == layout
    assert ipv4_per_node(inst, efa=efa, interface_type=interface_type) == ips


def test_efa_only_layout_follows_the_aws_pattern() -> None:
    """ENA primary c0d0; efa-only c0d1 where card 0 has EFA; efa-only d0 on every other EFA card."""
    p5 = interface_layout(get_instance("p5.48xlarge"), efa=True, interface_type="efa-only")
    assert p5[:3] == (
        InterfaceSlot(0, 0, "interface"),
        InterfaceSlot(0, 1, "efa-only"),
        InterfaceSlot(1, 0, "efa-only"),
    )
    assert p5[-1] == InterfaceSlot(31, 0, "efa-only")
    b300 = interface_layout(get_instance("p6-b300.48xlarge"), efa=True, interface_type="efa-only")
    assert b300[:2] == (InterfaceSlot(0, 0, "interface"), InterfaceSlot(1, 0, "efa-only"))
    assert [s.card for s in b300] == list(range(17))


# pcs changed on purpose (issue 12 item 3): PCS needs efa (R-PCS-3)
@pytest.mark.parametrize(("kind", "expected"), [("parallelcluster", "efa-only"), ("pcs", "efa"), ("hyperpod", "efa-only")])
def test_orchestrators_default_interface_types(kind: str, expected: str) -> None:
    from fmcluster.blueprint.model import OrchestratorSpec
    from fmcluster.resolved import profile_for

    assert profile_for(OrchestratorSpec(kind=kind)).efa_interface_type == expected  # type: ignore[arg-type]


def test_unknown_interface_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown EFA interface type, got 'efa-turbo'; allowed efa, efa-only"):
        interface_layout(get_instance("p5.48xlarge"), efa=True, interface_type="efa-turbo")


# ---- the documented table matches the catalog --------------------------------------------------
def _docs_table() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "orchestrators.md").read_text()
    block = text.split("<!-- launch-template-table:start -->")[1].split("<!-- launch-template-table:end -->")[0]
    rows = [r for r in block.strip().splitlines() if r.startswith("| `p")]
    return {cells[0]: cells[1:] for cells in ([c.strip().strip("`") for c in r.strip("|").split("|")] for r in rows)}


def _cards(cards: list[int]) -> str:
    return f"{cards[0]}-{cards[-1]}" if len(cards) > 1 else str(cards[0])


def test_docs_launch_template_table_matches_the_catalog() -> None:
    table = _docs_table()
    assert sorted(table) == sorted(TYPES)
    for t, row in table.items():
        inst = get_instance(t)
        only = interface_layout(inst, efa=True, interface_type="efa-only")
        assert row == [
            str(inst.network_cards), str(inst.efa_interface_count), _cards(list(inst.efa_cards)),
            "yes" if inst.card0_has_efa else "no", str(len(only)),
            str(ipv4_per_node(inst, efa=True, interface_type="efa-only")),
            str(ipv4_per_node(inst, efa=True, interface_type="efa")),
        ], t


# ---- capacity in each orchestrator's terms -------------------------------------------------------
def _group(capacity: dict[str, Any]) -> ComputeGroup:
    return ComputeGroup.model_validate({"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "capacity": capacity})


PCS_PROFILE = profile_for(OrchestratorSpec(kind="pcs"))
PCLUSTER_PROFILE = profile_for(OrchestratorSpec(kind="parallelcluster"))
RID = "cr-0123456789abcdef0"
RG = "arn:aws:resource-groups:us-east-1:123456789012:group/odcrs"


@pytest.mark.parametrize(
    ("capacity", "lt", "pcs", "pcluster"),
    [
        ({"type": "on_demand"}, {}, "ONDEMAND", ("ONDEMAND", None)),
        ({"type": "spot"}, {"InstanceMarketOptions": {
            "MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}},
         "SPOT", ("SPOT", None)),
        ({"type": "odcr", "reservation_id": RID},
         {"CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": RID}}},
         "ONDEMAND", ("ONDEMAND", {"CapacityReservationId": RID})),
        ({"type": "odcr", "resource_group_arn": RG},
         {"CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationResourceGroupArn": RG}}},
         "ONDEMAND", ("ONDEMAND", {"CapacityReservationResourceGroupArn": RG})),
        ({"type": "capacity_block", "reservation_id": RID},
         {"InstanceMarketOptions": {"MarketType": "capacity-block"},
          "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": RID}}},
         "CAPACITY_BLOCK", ("CAPACITY_BLOCK", {"CapacityReservationId": RID})),
        ({"type": "training_plan", "arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p"}, {}, None, (None, None)),
    ],
)
def test_capacity_rendering(capacity: dict[str, Any], lt: dict[str, Any], pcs: str | None,
                            pcluster: tuple[str | None, dict[str, str] | None]) -> None:
    g = _group(capacity)
    assert launch_template_market(g) == lt
    assert PCS_PROFILE.capacity_term(g.capacity.type) == pcs
    assert (PCLUSTER_PROFILE.capacity_term(g.capacity.type), reservation_target(g)) == pcluster
    # the queue falls back to ONDEMAND for a type ParallelCluster refuses (the construct adds a synth error)
    assert capacity_settings(g, PCLUSTER_PROFILE) == (pcluster[0] or "ONDEMAND", pcluster[1])


def test_smt_off_only_on_x86() -> None:
    assert smt_off_cpu_options(get_instance("p5.48xlarge"), 1) == {"CoreCount": 96, "ThreadsPerCore": 1}
    assert smt_off_cpu_options(get_instance("p5.48xlarge"), 2) is None
    assert smt_off_cpu_options(get_instance("p6e-gb200.36xlarge"), 1) is None


# ---- synthesized PCS launch templates, every catalog type ----------------------------------------
def _pcs_launch_template(instance_type: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tpl = cluster_template(matrix_templates("pcs", stack_for(instance_type)))
    itype, data = pcs_launch_templates(tpl)[group_name(instance_type)]
    assert itype == instance_type
    # PCS takes the type from InstanceConfigs; a Capacity Block template names the block's type (PCS user
    # guide, capacity-blocks-configure-cng; changed on purpose, issue 12 item 3)
    expected = instance_type if get_instance(instance_type).capacity_block_only else None
    assert data.get("InstanceType") == expected
    return data, tpl


def _sg_ref(group: Any) -> str:
    """Identify a security group reference: the imported EFA group or the local cluster group."""
    if "Fn::ImportValue" in group:
        return "efa" if "EfaSecurityGroup" in group["Fn::ImportValue"] else "other-import"
    return "cluster" if "ClusterSecurityGroup" in group["Fn::GetAtt"][0] else "other"


#: Types PCS can run (not p6e-gb200: its Capacity Blocks are sold only in a Local Zone, where fmcluster cannot place
#: PCS, R-LZ-2).
PCS_TYPES = [t for t in TYPES if runs_on("pcs", t)]


@pytest.mark.parametrize("instance_type", PCS_TYPES)
def test_pcs_launch_template_matches_the_catalog(instance_type: str) -> None:
    data, _ = _pcs_launch_template(instance_type)
    efa_count, cards, card0_efa = EXPECTED[instance_type]
    nics = data["NetworkInterfaces"]
    pairs = [(n["NetworkCardIndex"], n["DeviceIndex"]) for n in nics]
    efa = [n for n in nics if n.get("InterfaceType") in ("efa", "efa-only")]
    assert len(efa) == efa_count
    assert len(set(pairs)) == len(pairs)
    assert pairs[0] == (0, 0)
    assert {n["NetworkCardIndex"] for n in efa} == set(get_instance(instance_type).efa_cards)
    # PCS uses efa (R-PCS-3; changed on purpose, issue 12 item 3): the primary is an efa interface where
    # card 0 has EFA, an ENA interface otherwise
    assert all(n["InterfaceType"] == "efa" for n in efa)
    assert ("InterfaceType" in nics[0]) == card0_efa
    if not card0_efa:
        assert not [n for n in efa if n["NetworkCardIndex"] == 0]
    # no public IP anywhere (multi-NIC nodes cannot have one); no explicit IP fields on EFA interfaces
    assert not any(n.get("AssociatePublicIpAddress") for n in nics)
    assert not any(k in n for n in efa for k in ("PrivateIpAddress", "PrivateIpAddresses", "SecondaryPrivateIpAddressCount"))
    # security groups per interface, never template-wide
    assert "SecurityGroupIds" not in data and "SecurityGroups" not in data
    assert sorted(_sg_ref(g) for g in nics[0]["Groups"]) == ["cluster", "efa"]
    assert all([_sg_ref(g) for g in n["Groups"]] == ["efa"] for n in nics[1:])
    assert all("SubnetId" in n and n["DeleteOnTermination"] is True for n in nics)
    # IMDSv2, encrypted root volume
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    root = data["BlockDeviceMappings"][0]
    assert root["DeviceName"] == "/dev/sda1" and root["Ebs"]["Encrypted"] is True and root["Ebs"]["VolumeType"] == "gp3"


@pytest.mark.parametrize("instance_type", PCS_TYPES)
def test_pcs_launch_template_capacity_and_placement(instance_type: str) -> None:
    data, tpl = _pcs_launch_template(instance_type)
    inst = get_instance(instance_type)
    ng = next(r["Properties"] for r in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()
              if r["Properties"]["Name"] == group_name(instance_type))
    if inst.capacity_block_only:  # matrix: capacity_block, no placement group
        assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
        assert data["CapacityReservationSpecification"] == {
            "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
        assert ng["PurchaseOption"] == "CAPACITY_BLOCK"
        assert "Placement" not in data
    else:  # on-demand with a cluster placement group from the network stack
        assert "InstanceMarketOptions" not in data and "CapacityReservationSpecification" not in data
        assert ng["PurchaseOption"] == "ONDEMAND"
        assert "Fn::ImportValue" in data["Placement"]["GroupName"]

