"""Network stack: EFA security group both ways, one AZ (by name or ID), S3 endpoint, placement groups."""

from __future__ import annotations

from typing import Any

import pytest

from tests.blueprints import blueprint_text
from tests.conftest import resources_of, synth_templates


def network(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    return synth_templates(blueprint_text(patch))["t-cluster-network"]


def efa_group_id(t: dict[str, Any]) -> str:
    [lid] = [k for k, v in resources_of(t, "AWS::EC2::SecurityGroup").items()
             if "EFA" in v["Properties"]["GroupDescription"]]
    return lid


def test_efa_security_group_allows_all_traffic_to_and_from_itself() -> None:
    t = network()
    sg = efa_group_id(t)
    self_ref = {"Fn::GetAtt": [sg, "GroupId"]}
    ingress = [r["Properties"] for r in resources_of(t, "AWS::EC2::SecurityGroupIngress").values()]
    egress = [r["Properties"] for r in resources_of(t, "AWS::EC2::SecurityGroupEgress").values()]
    assert {"IpProtocol": "-1", "GroupId": self_ref, "SourceSecurityGroupId": self_ref} in [
        {k: p[k] for k in ("IpProtocol", "GroupId", "SourceSecurityGroupId") if k in p} for p in ingress]
    assert {"IpProtocol": "-1", "GroupId": self_ref, "DestinationSecurityGroupId": self_ref} in [
        {k: p[k] for k in ("IpProtocol", "GroupId", "DestinationSecurityGroupId") if k in p} for p in egress]


def test_efa_security_group_has_no_implicit_allow_all_and_no_open_ingress() -> None:
    t = network()
    props = t["Resources"][efa_group_id(t)]["Properties"]
    assert "SecurityGroupIngress" not in props  # nothing from 0.0.0.0/0
    assert all(r["Properties"].get("CidrIp") != "0.0.0.0/0" for r in resources_of(t, "AWS::EC2::SecurityGroupIngress").values())


@pytest.mark.parametrize(("patch", "key", "value"), [
    ({}, "AvailabilityZone", "us-east-1a"),
    ({"availability_zone": None, "availability_zone_id": "use1-az6"}, "AvailabilityZoneId", "use1-az6"),
])
def test_every_subnet_is_in_the_blueprint_zone(patch: dict[str, Any], key: str, value: str) -> None:
    subnets = resources_of(network(patch), "AWS::EC2::Subnet").values()
    assert len(subnets) == 2
    assert all(s["Properties"][key] == value for s in subnets)
    other = "AvailabilityZone" if key == "AvailabilityZoneId" else "AvailabilityZoneId"
    assert all(other not in s["Properties"] for s in subnets)


def test_gpu_subnet_is_private_with_the_requested_prefix() -> None:
    subnets = [s["Properties"] for s in resources_of(network({"network": {"gpu_subnet_prefix_length": 21}}),
                                                     "AWS::EC2::Subnet").values()]
    private = [s for s in subnets if not s["MapPublicIpOnLaunch"]]
    assert [s["CidrBlock"].split("/")[1] for s in private] == ["21"]


def test_s3_gateway_endpoint_and_one_nat() -> None:
    t = network()
    [ep] = resources_of(t, "AWS::EC2::VPCEndpoint").values()
    assert ep["Properties"]["VpcEndpointType"] == "Gateway"
    assert "s3" in str(ep["Properties"]["ServiceName"])
    assert len(resources_of(t, "AWS::EC2::NatGateway")) == 1


@pytest.mark.parametrize(("groups", "expected"), [
    ([{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}], 1),
    ([{"name": "ga", "instance_type": "p5.48xlarge", "count": 2},
      {"name": "gb", "instance_type": "p5en.48xlarge", "count": 2}], 2),
    ([{"name": "cb", "instance_type": "p5.48xlarge", "count": 2,
       "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}}], 0),
    ([{"name": "noefa", "instance_type": "p5.48xlarge", "count": 2, "efa": False}], 0),
])
def test_cluster_placement_group_per_group_that_is_not_reservation_backed(groups: list, expected: int) -> None:
    pgs = resources_of(network({"compute": groups}), "AWS::EC2::PlacementGroup").values()
    assert [p["Properties"]["Strategy"] for p in pgs] == ["cluster"] * expected


def test_imported_vpc_creates_no_vpc() -> None:
    t = network({"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}})
    assert resources_of(t, "AWS::EC2::VPC") == {} and resources_of(t, "AWS::EC2::Subnet") == {}
    [sg] = [v for v in resources_of(t, "AWS::EC2::SecurityGroup").values()]
    assert sg["Properties"]["VpcId"] == "vpc-0123456789abcdef0"
