"""Capacity rules (aws-resource-rules.md sections 4 and 5)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint
from fmcluster.blueprint.rules import Violation, rule


@rule("R-CAP-1", source="https://docs.aws.amazon.com/sagemaker/latest/dg/reserve-capacity-with-training-plans.html "
      "(training plans are SageMaker capacity)")
def training_plan_only_on_hyperpod(bp: Blueprint) -> Iterator[Violation]:
    for i, g in enumerate(bp.compute):
        if g.capacity.type == "training_plan" and bp.orchestrator.kind != "hyperpod":
            yield f"compute[{i}].capacity.type", (
                f"training plans only work with HyperPod, got orchestrator.kind {bp.orchestrator.kind!r}; allowed "
                "on_demand, spot, odcr or capacity_block (or orchestrator.kind: hyperpod)"
            )
