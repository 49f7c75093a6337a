"""Rule precedence is declared on the rule (``@rule(..., suppressed_by=(...))``) and applied by the runner."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError, Problem
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules import REGISTRY, Rule, _load_rule_modules, apply_precedence, check_precedence
from fmcluster.validation.rules.software import SPECIFIC_RULES
from tests.blueprints import blueprint_text

_load_rule_modules()
BY_ID = {r.id: r for r in REGISTRY}


def _rule(id: str, *suppressed_by: str) -> Rule:
    return Rule(id, "error", "test", "blueprint", lambda _bp: iter(()), suppressed_by=tuple(suppressed_by))


# A <- B <- C: B is suppressed by A, C by B; D is independent.
CHAIN = [_rule("A"), _rule("B", "A"), _rule("C", "B"), _rule("D")]


def _p(rid: str) -> Problem:
    return Problem(f"path.{rid.lower()}", f"{rid} fired", rule_id=rid)


@pytest.mark.parametrize(("fired", "reported"), [
    ((), []),
    (("B",), ["B"]),
    (("A", "B"), ["A"]),                 # B is suppressed while A reports
    (("B", "C"), ["B"]),
    (("A", "B", "C"), ["A", "C"]),       # B is suppressed, so it does not suppress C
    (("A", "C"), ["A", "C"]),            # suppression is not transitive through a silent rule
    (("C", "D"), ["C", "D"]),
    (("D", "C", "B", "A"), ["A", "C", "D"]),  # output in rule order, not in the order found
])
def test_apply_precedence_table(fired: tuple[str, ...], reported: list[str]) -> None:
    found = {rid: [_p(rid)] for rid in fired}
    found |= {r.id: [] for r in CHAIN if r.id not in found and r.id != "D"}  # ran, found nothing
    assert [p.rule_id for p in apply_precedence(found, CHAIN)] == reported


def test_a_rule_that_did_not_run_suppresses_nothing() -> None:
    # A was skipped (its section failed the shape check): absent from ``found``, B is reported.
    assert apply_precedence({"B": [_p("B")]}, CHAIN) == [_p("B")]


def test_check_precedence_refuses_unknown_ids_and_cycles() -> None:
    check_precedence()  # the real registry
    check_precedence(CHAIN)
    with pytest.raises(ValueError, match="suppressed_by names unknown rule"):
        check_precedence([_rule("A", "NOPE")])
    with pytest.raises(ValueError, match="suppressed_by cycle: A -> B -> A"):
        check_precedence([_rule("A", "B"), _rule("B", "A")])


def test_declared_precedence() -> None:
    declared = {r.id: r.suppressed_by for r in REGISTRY if r.suppressed_by}
    assert declared == {
        "R-AZ-2": ("R-REGION-1",),
        "R-AZ-3": ("R-REGION-1",),
        "R-CAP-7": ("R-CAP-9",),
        "R-PC-2": ("R-CAP-9",),
        "R-SW-1": ("R-CAP-9",),
        "R-SW-4": SPECIFIC_RULES,
        "R-SW-5": SPECIFIC_RULES,
    }


def test_combination_rules_defer_to_every_specific_software_error_rule() -> None:
    specific = {r.id for r in REGISTRY if r.fn.__module__.endswith(".software") and r.level == "error"} - {"R-SW-4"}
    assert set(SPECIFIC_RULES) == specific


MIXED = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
                     {"name": "grace", "instance_type": "p6e-gb200.36xlarge", "count": 1}],
         "orchestrator": {"kind": "parallelcluster"}}


@pytest.mark.parametrize(("patch", "suppressed", "by"), [
    ({"region": "us-esat-1"}, "R-AZ-2", "R-REGION-1"),
    ({"region": "us-esat-1", "availability_zone": None, "availability_zone_id": "use1-az6"}, "R-AZ-3", "R-REGION-1"),
    (MIXED, "R-CAP-7", "R-CAP-9"),
    (MIXED, "R-PC-2", "R-CAP-9"),
    ({"software": {"overrides": {"driver": "570.172.08", "fabric_manager": "580.95.05"}}}, "R-SW-4", "R-FM-1"),
    ({"software": {"overrides": {"driver": "570.172.08", "fabric_manager": "580.95.05"}, "allow_untested": True}},
     "R-SW-5", "R-FM-1"),
])
def test_suppressed_rule_would_fire_but_is_not_reported(patch: dict[str, Any], suppressed: str, by: str) -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    reported = {p.rule_id for p in exc.value.problems}
    assert by in reported and suppressed not in reported
    # the suppressed rule itself does find something on this blueprint: the runner drops it
    bp = _unchecked_blueprint(patch)
    rule = BY_ID[suppressed]
    subject = bp if rule.scope == "blueprint" else getattr(bp, rule.scope)
    assert list(rule.check(subject))


def _unchecked_blueprint(patch: dict[str, Any]) -> Any:
    """The shape-valid Blueprint of ``patch`` without running the cross-field rules."""
    import yaml

    from fmcluster.blueprint.model import Blueprint

    return Blueprint.model_validate(yaml.safe_load(blueprint_text(patch)))
