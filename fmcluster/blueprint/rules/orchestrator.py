"""Orchestrator rules."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.blueprint.rules import Violation, rule

_KINDS = ("parallelcluster", "hyperpod", "pcs")


@rule("R-ORCH-1", source="fmcluster: settings for an orchestrator other than orchestrator.kind would be silently ignored",
      scope="orchestrator")
def settings_match_kind(orch: OrchestratorSpec) -> Iterator[Violation]:
    for other in _KINDS:
        if other != orch.kind and other in orch.model_fields_set:
            yield f"orchestrator.{other}", (
                f"settings for {other} are ignored because orchestrator.kind is {orch.kind!r}; "
                f"allowed only orchestrator.{orch.kind} - did you mean kind: {other}?"
            )

