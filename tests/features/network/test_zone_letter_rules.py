"""R-AZ-5: an AZ name whose letter its Region does not have, in every field that takes an AZ name; and the letter
bound (``catalog.regions.zone_letter_count``) against moto's recording of every Region's AZ names."""

from __future__ import annotations

import gzip
import json
import string
from importlib import resources
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog.regions import zone_letter_count
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

EKS = {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks": {
    "admin_role_arn": "arn:aws:iam::123456789012:role/eks-admins", "api_access_cidrs": ["10.0.0.0/16"]}}}}


def eks(zone: str) -> dict[str, Any]:
    return {"orchestrator": {**EKS["orchestrator"], "hyperpod": {
        **EKS["orchestrator"]["hyperpod"], "eks": {**EKS["orchestrator"]["hyperpod"]["eks"],
                                                   "control_plane_availability_zone": zone}}}}


def accounting(zone: str) -> dict[str, Any]:
    return {"orchestrator": {"slurm": {"accounting": {"enabled": True, "second_availability_zone": zone}}}}


def problems(patch: dict[str, Any], rule_id: str = "R-AZ-5") -> list[tuple[str, str]]:
    try:
        found = list(load_blueprint_text(blueprint_text(patch)).warnings)
    except BlueprintError as e:
        found = list(e.problems)
    return [(p.path, p.message) for p in found if p.rule_id == rule_id]


def msg(region: str, az: str, last: str) -> str:
    return (f"no such Availability Zone in {region}, got {az!r}; allowed {region}a to {region}{last} (the letters "
            f"your account has: aws ec2 describe-availability-zones --region {region}), or an AZ ID "
            "(availability_zone_id) for a zone opened since fmcluster's recording")


CASES: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    ({"availability_zone": "us-east-1z"}, [("availability_zone", msg("us-east-1", "us-east-1z", "f"))]),
    ({"availability_zone": "us-east-1g"}, [("availability_zone", msg("us-east-1", "us-east-1g", "f"))]),
    ({"availability_zone": "us-east-1f"}, []),
    ({"region": "us-west-2", "availability_zone": "us-west-2e"},
     [("availability_zone", msg("us-west-2", "us-west-2e", "d"))]),
    ({"region": "us-west-2", "availability_zone": "us-west-2d"}, []),
    # a gap left by a zone closed to new accounts (apne1-az3): accounts see a, c and d
    ({"region": "ap-northeast-1", "availability_zone": "ap-northeast-1d"}, []),
    ({"region": "ap-northeast-1", "availability_zone": "ap-northeast-1e"},
     [("availability_zone", msg("ap-northeast-1", "ap-northeast-1e", "d"))]),
    ({"region": "us-west-1", "availability_zone": "us-west-1c"}, []),  # usw1-az1, usw1-az3
    # another Region's name and Local Zone names are other rules' (R-AZ-2, R-LZ-1)
    ({"availability_zone": "us-west-2z"}, []),
    ({"availability_zone": "us-east-1-dfw-2z"}, []),
    # a Region not recorded is not checked
    ({"region": "ap-southeast-7", "availability_zone": "ap-southeast-7z"}, []),
    (eks("us-east-1q"), [("orchestrator.hyperpod.eks.control_plane_availability_zone",
                          msg("us-east-1", "us-east-1q", "f"))]),
    (eks("us-east-1b"), []),
    (accounting("us-east-1x"), [("orchestrator.slurm.accounting.second_availability_zone",
                                 msg("us-east-1", "us-east-1x", "f"))]),
    (accounting("us-east-1b"), []),
    ({"availability_zone": None, "availability_zone_id": "use1-az6", **accounting("use1-az4")}, []),
]


@pytest.mark.parametrize(("patch", "expected"), CASES)
def test_zone_letter_exists(patch: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert problems(patch) == expected


def _moto_zone_names() -> dict[str, set[str]]:
    folder = resources.files("moto").joinpath("ec2/resources/instance_type_offerings/availability-zone")
    return {item.name.removesuffix(".json.gz"): {o["Location"] for o in json.loads(gzip.decompress(item.read_bytes()))}
            for item in folder.iterdir()}


def test_every_recorded_zone_name_is_within_the_bound() -> None:
    """moto's recording of AZ names (a separate recording from the AZ IDs fmcluster keeps) has no letter beyond the
    bound, in every Region both recordings hold; ap-northeast-1 and ca-central-1 are why the bound is not the count."""
    pytest.importorskip("moto")
    checked = {}
    for region, names in _moto_zone_names().items():
        count = zone_letter_count(region)
        if count is None:
            continue
        letters = {n[len(region):] for n in names if len(n) == len(region) + 1}
        assert letters <= set(string.ascii_lowercase[:count]), (region, sorted(letters), count)
        checked[region] = "".join(sorted(letters))
    assert (checked["ap-northeast-1"], checked["ca-central-1"], checked["us-west-2"]) == ("acd", "abd", "abcd")
    assert (zone_letter_count("ap-northeast-1"), zone_letter_count("us-west-2")) == (4, 4)
