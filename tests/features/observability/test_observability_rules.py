"""Observability rules R-OBS-1..6 as a table: (blueprint patch, level, YAML path, exact message)."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, group, merge

VPC = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}

RULE_CASES = [
    (
        {
            "observability": {
                "metrics": "managed",
                "scrape_interval_seconds": 15,
                "scrape_timeout_seconds": 20,
            }
        },
        "error",
        "observability.scrape_timeout_seconds",
        "longer than scrape_interval_seconds (15 s), got 20; allowed 1..15 - lower the timeout or raise "
        "scrape_interval_seconds [R-OBS-1]",
    ),
    (
        {
            "observability": {"metrics": "managed", "node_discovery": "ec2"},
            "orchestrator": {"kind": "hyperpod"},
        },
        "error",
        "observability.node_discovery",
        "EC2 service discovery cannot find SageMaker HyperPod nodes, got 'ec2'; allowed slurm or auto - did you mean "
        "node_discovery: slurm? [R-OBS-2]",
    ),
    (
        {"observability": {"metrics": "self_hosted", "grafana_authentication": "SAML"}},
        "warning",
        "observability.grafana_authentication",
        "ignored because metrics is 'self_hosted', got 'SAML'; allowed only with metrics: managed (self-hosted Grafana "
        "is reached through SSM port forwarding) [R-OBS-4]",
    ),
    (
        {"observability": {"metrics": "self_hosted", "amp_vpc_endpoint": True}},
        "warning",
        "observability.amp_vpc_endpoint",
        "ignored because metrics is 'self_hosted', got true; allowed only with metrics: managed (only the managed "
        "Prometheus agent writes to Amazon Managed Service for Prometheus) [R-OBS-5]",
    ),
    (
        {"observability": {"alert_email": "a@example.com", "alert_topic_arn": "arn:aws:sns:us-east-1:123456789012:t"}},
        "warning",
        "observability.alert_email",
        "ignored because alert_topic_arn is set, got 'a@example.com'; allowed one of alert_email (a topic fmcluster "
        "creates) or alert_topic_arn (your topic: subscribe the address there) [R-OBS-5]",
    ),
    (
        {"network": VPC, "observability": {"metrics": "managed"}},
        "warning",
        "observability.amp_vpc_endpoint",
        "the head node must reach Amazon Managed Service for Prometheus from the imported VPC vpc-0123456789abcdef0, "
        "got false; allowed true (an aps-workspaces interface endpoint) or false when the GPU subnet routes to a NAT "
        "gateway - set amp_vpc_endpoint: true for subnets without one [R-OBS-6]",
    ),
    *[
        (
            {"observability": {"metrics": mode}, **orch},
            "error",
            "observability.alert_email",
            f"alerts reach nobody: metrics is {mode!r} but no receiver is set, got none; allowed "
            "observability.alert_email (an address fmcluster subscribes; confirm the subscription email), "
            "observability.alert_topic_arn (your SNS topic) or observability.no_alert_receiver: true (the explicit "
            "choice to send alerts to nobody) [R-OBS-7]",
        )
        for mode, orch in [
            ("managed", {}),
            ("self_hosted", {}),
            ("managed", {"orchestrator": {"kind": "hyperpod"}}),
            ("self_hosted", {"orchestrator": {"kind": "pcs"}}),
        ]
    ],
    *[
        (
            {"observability": {"metrics": "managed", "no_alert_receiver": True, **receivers}},
            "error",
            "observability.no_alert_receiver",
            f"no_alert_receiver is true but {named} is set too, got true; allowed false with a receiver, or true "
            "with neither alert_email nor alert_topic_arn [R-OBS-8]",
        )
        for receivers, named in [
            ({"alert_email": "oncall@example.com"}, "alert_email"),
            ({"alert_email": "oncall@example.com", "alert_topic_arn": "arn:aws:sns:us-east-1:123456789012:t"},
             "alert_email and alert_topic_arn"),
        ]
    ],
]
#: A budget with the stop, on the observability a budget needs (R-BUDGET-1).
STOP = {"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"},
        "budget": {"monthly_usd": 1000, "stop_compute_at_percent": 110}}
CR = "cr-0123456789abcdef0"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/plan-a"


def _prepaid(name: str, kind: str) -> str:
    return (f"the budget's stop (stop_compute_at_percent 110) ends jobs without reducing the cost of {name}'s prepaid "
            f"capacity, got {kind!r}; the reservation is paid whether its nodes run or not. Allowed as is (the stop "
            "still ends the jobs), or stop_compute_at_percent unset, or on_demand / spot capacity for the group "
            "[R-BUDGET-2]")


#: R-BUDGET-2: (patch on STOP, the warnings' (path, message)), one per reservation-backed group, none otherwise.
PREPAID_CASES = [
    ({"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR})]},
     [("compute[0].capacity.type", _prepaid("gpu", "capacity_block"))]),
    ({"compute": [group(capacity={"type": "on_demand"}),
                  group(name="gpu2", capacity={"type": "odcr", "reservation_id": CR})]},
     [("compute[1].capacity.type", _prepaid("gpu2", "odcr"))]),
    ({"orchestrator": {"kind": "hyperpod"}, "compute": [group(capacity={"type": "training_plan", "arn": PLAN})]},
     [("compute[0].capacity.type", _prepaid("gpu", "training_plan"))]),
    ({"compute": [group(capacity={"type": "on_demand"})]}, []),
    ({"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR})],
      "budget": {"stop_compute_at_percent": None}}, []),
]


@pytest.mark.parametrize(("patch", "expected"), PREPAID_CASES,
                         ids=["capacity-block", "odcr-second-group", "training-plan", "on-demand", "no-stop"])
def test_the_stop_warns_that_prepaid_capacity_costs_the_same(patch: dict[str, Any],
                                                              expected: list[tuple[str, str]]) -> None:
    assert [(p[1], p[2]) for p in _problems(merge(STOP, patch)) if "R-BUDGET-2" in p[2]] == expected
    assert all(p[0] == "warning" for p in _problems(merge(STOP, patch)) if "R-BUDGET-2" in p[2])


#: A receiver every accept case carries, so R-OBS-7 does not hide the rule under test.
RECEIVER = {"observability": {"alert_email": "oncall@example.com"}}


def _problems(patch: dict[str, Any]) -> list[tuple[str, str, str]]:
    try:
        result = load_blueprint_text(blueprint_text(patch))
    except BlueprintError as e:
        return [(p.level, p.path, p.message + f" [{p.rule_id}]") for p in e.problems]
    return [(w.level, w.path, w.message + f" [{w.rule_id}]") for w in result.warnings]


@pytest.mark.parametrize(
    ("patch", "level", "path", "message"), RULE_CASES, ids=[c[-1][-8:-1] for c in RULE_CASES]
)
def test_observability_rules(patch: dict[str, Any], level: str, path: str, message: str) -> None:
    assert (level, path, message) in _problems(patch)


@pytest.mark.parametrize(
    "patch",
    [
        {
            "observability": {
                "metrics": "managed",
                "scrape_interval_seconds": 10,
                "scrape_timeout_seconds": 10,
            }
        },
        {"observability": {"metrics": "managed"}, "orchestrator": {"kind": "hyperpod"}},
        {"observability": {"metrics": "managed", "grafana_authentication": "SAML"}},
        {"observability": {"metrics": "none", "scrape_timeout_seconds": 10}},
        {"network": VPC, "observability": {"metrics": "managed", "amp_vpc_endpoint": True}},
        {"network": VPC, "observability": {"metrics": "self_hosted"}},
        {"observability": {"alert_email": "a@example.com"}},
    ],
)
def test_observability_rules_accept(patch: dict[str, Any]) -> None:
    assert [p for p in _problems(merge(RECEIVER, patch)) if "R-OBS" in p[2]] == []


@pytest.mark.parametrize(
    "observability",
    [
        {"metrics": "managed", "alert_email": "oncall@example.com"},
        {"metrics": "managed", "alert_topic_arn": "arn:aws:sns:us-east-1:123456789012:oncall"},
        {"metrics": "self_hosted", "no_alert_receiver": True},
        {"metrics": "none"},
    ],
)
def test_a_receiver_or_the_explicit_choice_satisfies_r_obs_7(observability: dict[str, Any]) -> None:
    assert [p for p in _problems({"observability": observability}) if "R-OBS-7" in p[2]] == []


def test_hyperpod_eks_needs_a_receiver_too() -> None:
    """HyperPod EKS has the same alert topic as the Slurm orchestrators (the observability add-on writes to the
    workspace), so R-OBS-7 asks for a receiver there too."""
    eks = {
        "observability": {"metrics": "managed"},
        "orchestrator": {"kind": "hyperpod", "hyperpod": {
            "orchestration": "eks", "eks_cluster_arn": "arn:aws:eks:us-east-1:123456789012:cluster/x"}},
        "network": VPC,
    }
    assert [(p[0], p[1]) for p in _problems(eks) if "R-OBS-7" in p[2]] == [("error", "observability.alert_email")]


def test_unknown_metrics_mode_is_a_shape_error() -> None:
    problems = _problems({"observability": {"metrics": "prometheus"}})
    assert any(p[1] == "observability.metrics" and p[0] == "error" for p in problems), problems
