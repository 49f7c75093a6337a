"""Instance catalog network layouts and the preflight check that compares them with DescribeInstanceTypes
(issue 12 item 8).

``check_network_layout`` runs against botocore's Stubber (which validates every request and response
against the EC2 service model): a difference in a value the catalog marks verified is an error, in an
unverified one a warning; a Region that does not describe the type (UltraServer-only types) warns.
"""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmcluster.catalog import get_instance
from fmcluster.preflight.checks import _gbps, account_layout, check_network_layout
from fmcluster.preflight.runner import network_layout

REGION = "us-east-1"


def card(index: int, types: list[str] | None, gbps: int = 100, enis: int = 2) -> dict[str, Any]:
    c: dict[str, Any] = {"NetworkCardIndex": index, "NetworkPerformance": f"{gbps} Gigabit",
                         "MaximumNetworkInterfaces": enis, "BaselineBandwidthInGbps": float(gbps),
                         "PeakBandwidthInGbps": float(gbps)}
    if types is not None:
        c["InterfaceTypes"] = types
    return c


EFA = ["interface", "efa", "efa-only"]


def described(name: str, cards: list[dict[str, Any]], *, max_efa: int, performance: str,
              ipv4: int = 50) -> dict[str, Any]:
    return {"InstanceTypes": [{"InstanceType": name, "NetworkInfo": {
        "NetworkPerformance": performance, "MaximumNetworkCards": len(cards), "NetworkCards": cards,
        "Ipv4AddressesPerInterface": ipv4, "EfaSupported": max_efa > 0,
        "EfaInfo": {"MaximumEfaInterfaces": max_efa}}}]}


P5 = described("p5.48xlarge", [card(i, EFA) for i in range(32)], max_efa=32, performance="3200 Gigabit")
B300 = described("p6-b300.48xlarge", [card(0, ["interface"], 350, 4)] + [card(i, EFA, 400, 4) for i in range(1, 17)],
                 max_efa=16, performance="6400 Gigabit")
GB200 = described("p6e-gb200.36xlarge", [card(0, ["interface"], 200)] + [card(i, EFA, 200) for i in range(1, 17)],
                  max_efa=16, performance="3200 Gigabit")


def run(instance_type: str, response: dict[str, Any] | None = None, error: str | None = None) -> tuple[str, str]:
    client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        params = {"InstanceTypes": [instance_type]}
        if error:
            stub.add_client_error("describe_instance_types", service_error_code=error, expected_params=params)
        else:
            stub.add_response("describe_instance_types", response, params)
        row = check_network_layout(client, expected=network_layout(get_instance(instance_type)), region=REGION)
        stub.assert_no_pending_responses()
    assert row.check == "network layout" and row.subject == instance_type
    assert row.source and "API_DescribeInstanceTypes" in row.source
    return row.status, row.detail


def _edit(response: dict[str, Any], **net: Any) -> dict[str, Any]:
    out = copy.deepcopy(response)
    out["InstanceTypes"][0]["NetworkInfo"].update(net)
    return out


FIX = "; fmcluster's launch templates and subnet sizing use the catalog (fmcluster/catalog/data/instances.yaml)"

# (id, type, DescribeInstanceTypes answer or error code, status, detail)
CASES = [
    ("p5-matches", "p5.48xlarge", P5, "ok", "32 network cards, EFA on cards 0-31, 3200 Gbps: matches the catalog"),
    ("b300-card0-ena-matches", "p6-b300.48xlarge", B300, "ok",
     "17 network cards, EFA on cards 1-16, 6400 Gbps: matches the catalog"),
    ("gb200-confirms-unverified", "p6e-gb200.36xlarge", GB200, "ok",
     "17 network cards, EFA on cards 1-16, 3200 Gbps: matches the catalog; confirms the unverified network_cards, "
     "max_efa_interfaces, efa_cards, max_enis_per_card, network_gbps"),
    ("p5-fewer-cards-is-an-error", "p5.48xlarge",
     described("p5.48xlarge", [card(i, EFA) for i in range(16)], max_efa=16, performance="3200 Gigabit"), "error",
     "the catalog differs from DescribeInstanceTypes: network_cards: catalog 32, account 16; max_efa_interfaces: "
     "catalog 32, account 16; efa_cards: catalog 0-31, account 0-15" + FIX),
    ("b300-card0-efa-is-an-error", "p6-b300.48xlarge",
     described("p6-b300.48xlarge", [card(i, EFA, 400, 4) for i in range(17)], max_efa=17, performance="6400 Gigabit"),
     "error", "the catalog differs from DescribeInstanceTypes: max_efa_interfaces: catalog 16, account 17; "
     "efa_cards: catalog 1-16, account 0-16" + FIX),
    ("gb200-other-layout-warns", "p6e-gb200.36xlarge",
     described("p6e-gb200.36xlarge", [card(0, ["interface"], 400)] + [card(i, EFA, 400) for i in range(1, 9)],
               max_efa=8, performance="3200 Gigabit"),
     "warning", "the catalog differs from DescribeInstanceTypes: network_cards: catalog 17, account 9 (unverified in the "
     "catalog); max_efa_interfaces: catalog 16, account 8 (unverified in the catalog); efa_cards: catalog 1-16, "
     "account 1-8 (unverified in the catalog)" + FIX),
    ("bandwidth-differs", "p5.48xlarge", _edit(P5, NetworkPerformance="1600 Gigabit"), "error",
     "the catalog differs from DescribeInstanceTypes: network_gbps: catalog 3200, account 1600" + FIX),
    ("gb200-not-described", "p6e-gb200.36xlarge", "InvalidInstanceType", "warning",
     "DescribeInstanceTypes in us-east-1 does not describe p6e-gb200.36xlarge (types sold only as UltraServers or in "
     "Local Zones may be absent); the catalog's layout is used unchecked"),
]


@pytest.mark.parametrize(("case", "instance_type", "answer", "status", "detail"), CASES, ids=[c[0] for c in CASES])
def test_network_layout_against_describe_instance_types(case: str, instance_type: str, answer: Any, status: str,
                                                        detail: str) -> None:
    if isinstance(answer, str):
        assert run(instance_type, error=answer) == (status, detail)
    else:
        assert run(instance_type, answer) == (status, detail)


def test_card_efa_inferred_without_interface_types() -> None:
    """Older answers carry no InterfaceTypes: ParallelCluster 3.16's inference (fewer EFA than cards: not card 0)."""
    cards = [card(i, None, 400, 4) for i in range(17)]
    layout = account_layout(described("p6-b300.48xlarge", cards, max_efa=16, performance="6400 Gigabit")["InstanceTypes"][0])
    assert layout["efa_cards"] == tuple(range(1, 17))
    cards = [card(i, None) for i in range(32)]
    assert account_layout(described("p5.48xlarge", cards, max_efa=32, performance="3200 Gigabit")["InstanceTypes"][0])[
        "efa_cards"] == tuple(range(32))


@pytest.mark.parametrize(("text", "gbps"), [("3200 Gigabit", 3200), ("4x 100 Gigabit", 400), ("Up to 25 Gigabit", None),
                                            ("High", None), ("", None)])
def test_network_performance(text: str, gbps: int | None) -> None:
    assert _gbps(text) == gbps


def test_catalog_card_zero() -> None:
    """p6-b300 card 0 ENA-only is verified (aws-parallelcluster #7143); p6e-gb200's card 0 is ENA-only as in
    ParallelCluster 3.16 (INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA) with its counts unverified."""
    b300, gb200 = get_instance("p6-b300.48xlarge"), get_instance("p6e-gb200.36xlarge")
    assert not b300.card0_has_efa and b300.is_verified("efa_cards")
    assert not gb200.card0_has_efa and gb200.efa_cards == tuple(range(1, 17)) and gb200.network_cards == 17
    assert not gb200.is_verified("network_cards") and not gb200.is_verified("efa_cards")
    assert "INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA" in gb200.source_of("efa_cards")
    assert network_layout(gb200).unverified >= {"network_cards", "max_efa_interfaces", "efa_cards", "network_gbps"}
    assert network_layout(b300).unverified == frozenset()


def test_validate_warns_about_an_unverified_layout() -> None:
    """R-COMPUTE-3: a group on a type whose catalog layout is unverified gets a warning naming preflight."""
    from tests.features.node.test_software_rules import GB200, problems

    found = [(p.level, p.path, p.message) for p in problems(GB200) if p.rule_id == "R-COMPUTE-3"]
    assert found == [("warning", "compute[0].instance_type",
                      "the catalog's network layout of p6e-gb200.36xlarge is unverified (network_cards, max_efa_interfaces, "
                      "efa_cards, max_enis_per_card), got 17 network cards with EFA on 16 of them; allowed as is, but run "
                      "fmcluster preflight to compare it with DescribeInstanceTypes before deploying")]
    assert [p for p in problems() if p.rule_id == "R-COMPUTE-3"] == []  # p5.48xlarge: verified layout
