"""R-IMEX-1: an IMEX type (p6e-gb200) on an orchestrator, as configured, that cannot set the IMEX domain per job is
an error. Table: blueprint patch -> exact (path, message, rule id) of the R-IMEX-1 problems (other rules' problems are
other files' business), and the profile fact the rule and the constructs both read."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.resolved import profile_for
from fmcluster.validation import load_blueprint_text
from tests.blueprints import AZ_ID, blueprint_text, group

CR = "cr-0123456789abcdef0"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-plan"
EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/existing"
GB200_STACK = {"software": {"image": {"mode": "bake", "parent_ami_id": "ami-0123456789abcdef0"},
                            "stack": "gb200-580-cuda13.0", "os": "ubuntu-24.04"}}
GB = {"instance_type": "p6e-gb200.36xlarge", "count": 18}


def imex_problems(*patches: dict[str, Any]) -> tuple[list[tuple[str, str, str | None]], list[str | None]]:
    """(R-IMEX-1 problems, ids of every error) of a blueprint."""
    try:
        result = load_blueprint_text(blueprint_text(*patches, base=AZ_ID))
    except BlueprintError as e:
        return ([(p.path, p.message, p.rule_id) for p in e.problems if p.rule_id == "R-IMEX-1"],
                [p.rule_id for p in e.problems if p.level == "error"])
    return [(w.path, w.message, w.rule_id) for w in result.warnings if w.rule_id == "R-IMEX-1"], []


CASES = [
    pytest.param(
        {**GB200_STACK, "orchestrator": {"kind": "pcs"},
         "compute": [group(**GB, capacity={"type": "capacity_block", "reservation_id": CR})]},
        [], id="pcs 25.05 capacity block: wired",
    ),
    pytest.param(
        {**GB200_STACK, "orchestrator": {"kind": "pcs", "pcs": {"slurm_version": "24.11"}},
         "compute": [group(**GB, capacity={"type": "capacity_block", "reservation_id": CR})]},
        [("orchestrator.pcs.slurm_version",
          "p6e-gb200.36xlarge in group 'gpu' needs the IMEX domain set per job, and the AWS PCS IMEX prolog needs "
          "Slurm 25.05 or later, got '24.11'; allowed 25.05, 25.11, 26.05", "R-IMEX-1")],
        id="pcs slurm 24.11",
    ),
    pytest.param(
        {**GB200_STACK, "orchestrator": {"kind": "hyperpod"},
         "compute": [group(**GB, capacity={"type": "training_plan", "arn": PLAN})]},
        [], id="hyperpod slurm training plan: wired",
    ),
    pytest.param(
        {**GB200_STACK, "orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks",
                                                                        "eks_cluster_arn": EKS_ARN}},
         "compute": [group(**GB, capacity={"type": "training_plan", "arn": PLAN})]},
        [("orchestrator.hyperpod.orchestration",
          "p6e-gb200.36xlarge in group 'gpu' needs the IMEX domain set per job, and HyperPod on EKS has no Slurm "
          "prolog to set the IMEX domain, and fmcluster does not install the NVIDIA DRA driver whose ComputeDomain "
          "sets it on Kubernetes, got 'eks'; allowed slurm", "R-IMEX-1")],
        id="hyperpod eks",
    ),
    pytest.param(
        {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks_cluster_arn": EKS_ARN}}},
        [], id="hyperpod eks without imex types",
    ),
    pytest.param(
        {**GB200_STACK, "software": {"os": "ubuntu-22.04"},
         "orchestrator": {"parallelcluster": {"head_node_instance_type": "m7g.4xlarge"}},
         "compute": [group(**GB, capacity={"type": "capacity_block", "reservation_id": CR})]},
        [], id="parallelcluster capacity block: wired",
    ),
]


@pytest.mark.parametrize(("patch", "expected"), CASES)
def test_imex_per_job(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert imex_problems(patch)[0] == expected


def test_pcs_on_demand_gb200_reports_the_capacity_once() -> None:
    # R-CAP-6 (reserved UltraServer capacity) is the precise finding; R-IMEX-1's capacity echo is suppressed
    problems, errors = imex_problems({**GB200_STACK, "orchestrator": {"kind": "pcs"}, "compute": [group(**GB)]})
    assert problems == [] and "R-CAP-6" in errors


@pytest.mark.parametrize(("orchestrator", "on_demand", "capacity_block", "method"), [
    ({"kind": "parallelcluster"}, True, True, "prolog_dir"),
    ({"kind": "hyperpod"}, True, False, "controller_slurm_conf"),  # HyperPod has no capacity blocks (R-CAP-1)
    ({"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks_cluster_arn": EKS_ARN}}, False, False, None),
    ({"kind": "pcs"}, False, True, "cluster_prolog"),
    ({"kind": "pcs", "pcs": {"slurm_version": "24.11"}}, False, False, None),
])
def test_profile_imex_wiring(orchestrator: dict[str, Any], on_demand: bool, capacity_block: bool,
                             method: str | None) -> None:
    profile = profile_for(OrchestratorSpec.model_validate(orchestrator))
    imex = profile.imex
    assert (imex.wires("on_demand"), imex.wires("capacity_block") and profile.accepts("capacity_block"),
            imex.method) == (on_demand, capacity_block, method)


def test_capacity_branch_names_the_capacity_the_wiring_needs() -> None:
    # No catalog IMEX type is outside R-CAP-6 today (p6e-gb200 is capacity-block-only), so the branch is checked
    # on a resolved cluster whose group is an IMEX type on an ODCR: the message a future such type would get.
    from dataclasses import replace
    from types import SimpleNamespace

    from fmcluster.resolved import resolve
    from fmcluster.validation.rules.imex import imex_per_job

    rc = resolve(load_blueprint_text(blueprint_text({"orchestrator": {"kind": "pcs"}}, base=AZ_ID)).blueprint)
    g = rc.groups[0]
    odcr = SimpleNamespace(spec=SimpleNamespace(instance_type="p6e-gb200.36xlarge", capacity=SimpleNamespace(type="odcr")),
                           instance=replace(g.instance, imex=True), imex=rc.profile.imex.wires("odcr"), path=g.path,
                           name=g.name)
    fake = SimpleNamespace(profile=rc.profile, blueprint=rc.blueprint, groups=[odcr])
    assert list(imex_per_job(fake)) == [(
        "compute[0].capacity.type",
        "p6e-gb200.36xlarge gets the IMEX domain per job only on capacity_block capacity (the AWS PCS IMEX prolog is "
        "documented for UltraServer node groups on a Capacity Block), got 'odcr'; allowed capacity_block")]
