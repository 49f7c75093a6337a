"""The components of a blueprint the support calendar covers, each with its version and the YAML path a blueprint
sets it at (``ResolvedCluster.support``, computed once by :func:`support_pins`).

Read by rules R-SUP-1/R-SUP-2 (``fmcluster.validation.rules.support``) and ``fmcluster plan``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog.software import SoftwareStack
from fmcluster.catalog.support import SupportEntry, support_entry
from fmcluster.orchestrators.registry import ClusterPlan, row_for


@dataclass(frozen=True)
class SupportPin:
    """One pinned component: ``component`` (a ``SUPPORT_COMPONENTS`` name), the ``version`` the cluster runs, the
    YAML ``path`` that chooses it, and its calendar ``entry`` (``None`` when the calendar does not list the release)."""

    component: str
    version: str
    path: str
    entry: SupportEntry | None


def _stack_path(stack: SoftwareStack, component: str) -> str:
    return f"software.overrides.{component}" if component in stack.overridden else "software.stack"


def support_pins(bp: Blueprint, software: SoftwareStack | None, cluster_plan: ClusterPlan | None) -> tuple[SupportPin, ...]:
    """Every calendar component ``bp`` pins, in ``SUPPORT_COMPONENTS`` order: the driver and EFA installer of the
    resolved stack (none when the stack is unknown), then the orchestrator's (its registry row's ``releases`` hook)."""
    pins: list[tuple[str, str, str]] = []
    if software is not None:
        pins += [(c, getattr(software, c), _stack_path(software, c)) for c in ("driver", "efa_installer")]
    pins += row_for(bp.orchestrator).pinned_releases(bp, cluster_plan)
    return tuple(SupportPin(c, v, p, support_entry(c, v)) for c, v, p in pins)
