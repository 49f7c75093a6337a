"""A new VPC too small for its GPU subnet is a validate error (R-SUBNET-3, issue 12 item 10), and the
subnet rules never advise a size that does not fit.

CDK's ``ec2.Vpc`` allocates the public /24 and then the GPU subnet, each aligned to its size, and
raises at synth when one does not fit (aws-cdk-lib ``aws-ec2/lib/network-util.ts``). Before R-SUBNET-3,
``fmcluster validate`` accepted such blueprints and synth, plan and diff printed that exception.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog.vpc_layout import PUBLIC_SUBNET_PREFIX, VPC_PREFIXES, vpc_holds
from fmcluster.validation import load_blueprint_text

BASE: dict[str, Any] = {
    "name": "vpc-fit",
    "region": "us-east-1",
    "availability_zone": "us-east-1a",
    "software": {"image": {"mode": "bake"}, "stack": "h100-570-cuda12.8", "os": "ubuntu-22.04"},
    "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}],
    "orchestrator": {"kind": "parallelcluster"},
}
PREFIX = "the VPC is too small for the GPU subnet: a new VPC must hold its public /24 subnet and the GPU subnet " \
         "(at most a /17 GPU subnet in a /16 VPC), "


def _problems(network: dict[str, Any], count: int = 2, orchestrator: dict[str, Any] | None = None) -> list[Any]:
    data = copy.deepcopy(BASE)
    data["network"] = network
    data["compute"][0]["count"] = count
    if orchestrator:
        data["orchestrator"] = orchestrator
    try:
        return list(load_blueprint_text(yaml.safe_dump(data)).warnings)
    except BlueprintError as e:
        return list(e.problems)


CASES = [
    ("vpc20-gpu20", {"vpc_cidr": "10.0.0.0/20", "gpu_subnet_prefix_length": 20},
     PREFIX + "got gpu_subnet_prefix_length 20 in network.vpc_cidr 10.0.0.0/20; allowed gpu_subnet_prefix_length /21 "
     "to /28 in this VPC or network.vpc_cidr /19 or larger for a /20 GPU subnet - did you mean network.vpc_cidr: <a /19 CIDR>?"),
    ("vpc16-gpu16", {"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 16},
     PREFIX + "got gpu_subnet_prefix_length 16 in network.vpc_cidr 10.0.0.0/16; allowed gpu_subnet_prefix_length /17 "
     "to /28 in this VPC - did you mean gpu_subnet_prefix_length: 17?"),
    ("vpc22-gpu21", {"vpc_cidr": "10.0.0.0/22", "gpu_subnet_prefix_length": 21},
     PREFIX + "got gpu_subnet_prefix_length 21 in network.vpc_cidr 10.0.0.0/22; allowed gpu_subnet_prefix_length /23 "
     "to /28 in this VPC or network.vpc_cidr /20 or larger for a /21 GPU subnet - did you mean network.vpc_cidr: <a /20 CIDR>?"),
    ("vpc24-gpu28", {"vpc_cidr": "10.0.0.0/24", "gpu_subnet_prefix_length": 28},
     PREFIX + "got gpu_subnet_prefix_length 28 in network.vpc_cidr 10.0.0.0/24; allowed network.vpc_cidr /23 or larger "
     "for a /28 GPU subnet - did you mean network.vpc_cidr: <a /23 CIDR>?"),
    ("vpc24-gpu16", {"vpc_cidr": "10.0.0.0/24", "gpu_subnet_prefix_length": 16},
     PREFIX + "got gpu_subnet_prefix_length 16 in network.vpc_cidr 10.0.0.0/24; allowed network.vpc_cidr /23 or larger, "
     "with gpu_subnet_prefix_length /17 or longer - did you mean gpu_subnet_prefix_length: 17?"),
]


@pytest.mark.parametrize(("case", "network", "message"), CASES, ids=[c[0] for c in CASES])
def test_vpc_too_small_is_an_error(case: str, network: dict[str, Any], message: str) -> None:
    found = [(p.level, p.path, p.message) for p in _problems(network) if p.rule_id == "R-SUBNET-3"]
    assert found == [("error", "network.gpu_subnet_prefix_length", message)]


@pytest.mark.parametrize("network", [
    {"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 17},
    {"vpc_cidr": "10.0.0.0/23", "gpu_subnet_prefix_length": 24},
    {"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 28},
    {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"},  # imported: not sized here
])
def test_fitting_or_imported_vpc_is_fine(network: dict[str, Any]) -> None:
    assert [p for p in _problems(network) if p.rule_id == "R-SUBNET-3"] == []


@pytest.mark.synth
def test_vpc_holds_matches_cdk() -> None:
    """For every VPC and GPU-subnet prefix the model allows, R-SUBNET-3's arithmetic agrees with CDK."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    for v in VPC_PREFIXES:
        for g in range(16, 29):
            stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="123456789012", region="us-east-1"))
            try:
                ec2.Vpc(stack, "Vpc", ip_addresses=ec2.IpAddresses.cidr(f"10.0.0.0/{v}"),
                        availability_zones=["us-east-1a"], nat_gateways=1, subnet_configuration=[
                            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC,
                                                    cidr_mask=PUBLIC_SUBNET_PREFIX),
                            ec2.SubnetConfiguration(name="Gpu", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                                                    cidr_mask=g)])
                synth_ok = True
            except Exception as e:  # jsii raises a generic RuntimeError carrying CDK's message
                assert "exceeds remaining space" in str(e), e
                synth_ok = False
            assert vpc_holds(v, g) == synth_ok, (v, g)


# Clusters R-SUBNET-1/2 flag in various VPCs (PCS with `efa` interfaces: 32 addresses per p5 node):
# following their advice must give no R-SUBNET-3 error.
ADVICE = [
    ({"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 20}, 300),     # needs a /18: fits a /16 VPC
    ({"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 18}, 1500),    # would need a /16: fewer nodes
    ({"vpc_cidr": "10.0.0.0/22", "gpu_subnet_prefix_length": 24}, 10),      # needs a /23: fits a /22 VPC
    ({"vpc_cidr": "10.0.0.0/23", "gpu_subnet_prefix_length": 24}, 20),      # needs a /22: a /21 VPC
    ({"vpc_cidr": "10.0.0.0/23", "gpu_subnet_prefix_length": 24}, 7),       # headroom only: /23 in a /22 VPC
]


@pytest.mark.parametrize(("network", "count"), ADVICE)
def test_subnet_advice_fits_the_vpc(network: dict[str, Any], count: int) -> None:
    pcs = {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}}
    found = [p for p in _problems(network, count, pcs) if p.rule_id in ("R-SUBNET-1", "R-SUBNET-2")]
    assert found, "the case must trigger R-SUBNET-1 or -2"
    for p in found:
        m = re.search(r"did you mean gpu_subnet_prefix_length: (\d+)(?: with a /(\d+) vpc_cidr)?\?", p.message)
        if m is None:
            assert "fewer nodes" in p.message, p.message
            continue
        fixed = {"vpc_cidr": f"10.0.0.0/{m.group(2) or network['vpc_cidr'].split('/')[1]}",
                 "gpu_subnet_prefix_length": int(m.group(1))}
        assert vpc_holds(int(fixed["vpc_cidr"].split("/")[1]), fixed["gpu_subnet_prefix_length"]), p.message
        assert [q for q in _problems(fixed, count, pcs) if q.rule_id in ("R-SUBNET-3", p.rule_id)] == [], p.message
