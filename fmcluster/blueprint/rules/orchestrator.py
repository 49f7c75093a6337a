"""Orchestrator rules."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, OrchestratorSpec
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


@rule("R-OBS-1", source="https://prometheus.io/docs/prometheus/latest/configuration/configuration/ (scrape_timeout <= scrape_interval)")
def scrape_timeout_within_interval(bp: Blueprint) -> Iterator[Violation]:
    o = bp.observability
    if o.scrape_timeout_seconds > o.scrape_interval_seconds:
        yield "observability.scrape_timeout_seconds", (
            f"longer than scrape_interval_seconds, got {o.scrape_timeout_seconds}; allowed 1..{o.scrape_interval_seconds}"
        )
