"""A setting the chosen orchestrator or layout ignores is said to be ignored, never silently dropped (issue 26): a
table of (blueprint patch, YAML path, exact warning, rule), and the neighbours each rule must leave quiet."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

HP = {"orchestrator": {"kind": "hyperpod"}}
IMPORTED = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}


def warnings(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(patch)).warnings]


IGNORED = [
    ({**HP, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 1}]},
     "compute[0].min_count",
     "ignored on HyperPod: the instance group runs count (4) instances at all times, got 1; allowed no min_count (or "
     "min_count equal to count) - plan and cost assume 4", "R-HP-10"),
    ({"network": {**IMPORTED["network"], "vpc_cidr": "10.20.0.0/16"}}, "network.vpc_cidr",
     "ignored with an imported VPC (vpc-0123456789abcdef0), got '10.20.0.0/16'; allowed this setting only for "
     "a VPC fmcluster creates (remove it, or remove vpc_id)", "R-NET-2"),
    ({"network": {**IMPORTED["network"], "gpu_subnet_prefix_length": 22}}, "network.gpu_subnet_prefix_length",
     "ignored with an imported VPC (vpc-0123456789abcdef0), got 22; allowed this setting "
     "only for a VPC fmcluster creates (remove it, or remove vpc_id)", "R-NET-2"),
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), IGNORED, ids=[r[3] + " " + r[1] for r in IGNORED])
def test_ignored_settings_are_named(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    assert (path, message, rule_id) in warnings(patch)


QUIET = [
    {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 1}]},  # ParallelCluster scales
    {**HP, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 4}]},
    {"network": {"vpc_cidr": "10.20.0.0/16", "gpu_subnet_prefix_length": 22}},  # a new VPC uses both
    IMPORTED,
]


@pytest.mark.parametrize("patch", QUIET)
def test_used_settings_stay_quiet(patch: dict[str, Any]) -> None:
    assert [w for w in warnings(patch) if w[2] in {"R-HP-10", "R-NET-2"}] == []
