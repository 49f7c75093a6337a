"""Rules on the orchestrator section that hold for every orchestrator; each orchestrator's own rules live in its
slice (``fmcluster/orchestrators/<key>/rules.py``)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.orchestrators.registry import KINDS
from fmcluster.validation.rules import Violation, rule


@rule("R-ORCH-1", source="fmcluster: settings for an orchestrator other than orchestrator.kind would be silently ignored",
      scope="orchestrator")
def settings_match_kind(orch: OrchestratorSpec) -> Iterator[Violation]:
    for other in KINDS:
        if other != orch.kind and other in orch.model_fields_set:
            yield f"orchestrator.{other}", (
                f"settings for {other} are ignored because orchestrator.kind is {orch.kind!r}; "
                f"allowed only orchestrator.{orch.kind} - did you mean kind: {other}?"
            )
