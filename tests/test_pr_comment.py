"""The pull-request comment is never wrong in the green direction (issue 25): every state of a changed blueprint the
workflow can leave, and the one verdict its section shows; the boot row reads the plan's real field."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.review.pr import BlueprintReview, comment, facts, verdict_of

PLAN: dict[str, Any] = {"gpus_total": 32, "compute": [
    {"group": "gpu", "instance_type": "p5.48xlarge", "count": 4, "boot": {"estimated_boot_s": 229, "limit_s": 2100}}]}


def review(**kw: Any) -> BlueprintReview:
    return BlueprintReview(**{"path": "blueprints/x.yaml", "base_ref": "main", "base_plan": PLAN, "head_plan": PLAN,
                              "diff_markdown": "fmcluster diff: safe", "diff_exit": 0, **kw})


STATES = [
    ("compared, nothing unsafe", review(), True, "safe"),
    ("new blueprint", review(base_plan=None, diff_exit=None, diff_markdown=""), True, "new blueprint: nothing to compare"),
    ("invalid", review(valid=False, head_plan=None, diff_exit=None), False,
     "invalid (see the annotations on the file): not synthesized, not compared"),
    ("invalid although a stale diff says 0", review(valid=False), False,
     "invalid (see the annotations on the file): not synthesized, not compared"),
    ("head did not synthesize, partial output diffed as safe", review(synth_ok=False), False,
     "did not synthesize: not compared"),
    ("base did not synthesize", review(base_synth_ok=False, diff_exit=None), False,
     "the base version did not synthesize: not compared"),
    ("unsafe", review(diff_exit=1), False, "data loss or a failing update (fmcluster diff exit 1)"),
    ("diff could not compare", review(diff_exit=2), False, "fmcluster diff could not compare (exit 2)"),
    ("diff never ran", review(diff_exit=None), False, "not compared (fmcluster diff did not run)"),
]


@pytest.mark.parametrize(("state", "r", "safe", "words"), STATES, ids=[s[0] for s in STATES])
def test_each_state_has_one_verdict(state: str, r: BlueprintReview, safe: bool, words: str) -> None:
    assert verdict_of(r) == (safe, words)
    text = comment([r])
    icon = ":white_check_mark:" if safe else ":x:"
    assert f"### {icon} `blueprints/x.yaml`: {words}" in text
    if not (r.valid and r.synth_ok and r.base_synth_ok):
        assert "fmcluster diff: safe" not in text  # no diff of partial output
        assert "no stateful resource is replaced" not in text


def test_an_invalid_path_marks_its_section_too() -> None:
    text = comment([review()], invalid=["blueprints/x.yaml"])
    assert ":x: invalid: `blueprints/x.yaml`" in text
    assert "### :x: `blueprints/x.yaml`: invalid" in text and ":white_check_mark:" not in text


def test_boot_row_reads_the_plans_estimate() -> None:
    assert facts(PLAN)["boot estimate"] == "gpu: 229 s"
    assert facts({"compute": [{"group": "gpu", "count": 1, "instance_type": "p5.48xlarge"}]})["boot estimate"] == "-"
