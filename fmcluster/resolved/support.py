"""The components of a blueprint the support calendar covers, each with its version and the YAML path a blueprint
sets it at (``ResolvedCluster.support``, computed once by :func:`support_pins`).

Read by rules R-SUP-1/R-SUP-2 (``fmcluster.validation.rules.support``) and ``fmcluster plan``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog.software import SoftwareStack
from fmcluster.catalog.support import PinnedRelease, SupportEntry, support_entry
from fmcluster.orchestrators.registry import ClusterPlan, row_for


@dataclass(frozen=True)
class SupportPin:
    """One pinned component: ``component`` (a ``SUPPORT_COMPONENTS`` name), the ``version`` the cluster runs, the
    YAML ``path`` that chooses it, and its calendar ``entry`` (``None`` when the calendar does not list the release);
    ``choices``/``choices_why``: the versions the blueprint may set at ``path`` and what bounds them (empty: any
    release; :class:`~fmcluster.catalog.support.PinnedRelease`)."""

    component: str
    version: str
    path: str
    entry: SupportEntry | None
    choices: tuple[str, ...] = ()
    choices_why: str = ""


def _stack_path(stack: SoftwareStack, component: str) -> str:
    return f"software.overrides.{component}" if component in stack.overridden else "software.stack"


def support_pins(bp: Blueprint, software: SoftwareStack | None, cluster_plan: ClusterPlan | None) -> tuple[SupportPin, ...]:
    """Every calendar component ``bp`` pins, in ``SUPPORT_COMPONENTS`` order: the driver and EFA installer of the
    resolved stack (none when the stack is unknown), then the orchestrator's (its registry row's ``releases`` hook)."""
    pins: list[PinnedRelease] = []
    if software is not None:
        pins += [PinnedRelease(c, getattr(software, c), _stack_path(software, c)) for c in ("driver", "efa_installer")]
    pins += row_for(bp.orchestrator).pinned_releases(bp, cluster_plan)
    return tuple(SupportPin(p.component, p.version, p.path, support_entry(p.component, p.version), p.choices,
                            p.choices_why) for p in pins)
