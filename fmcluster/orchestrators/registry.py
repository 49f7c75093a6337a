"""The registry of orchestrators: one row per slice (``fmcluster/orchestrators/<key>/``), the only module that lists
them all.

Each row names the slice's key (:class:`fmcluster.orchestrators.profile.OrchestratorProfile` ``key``, which is the
blueprint's own ``OrchestratorSpec.profile_key``), the ``orchestrator.kind`` it serves and how it builds its profile.
The slice's ``stack.py`` (``build(stack, inputs) -> construct``: the orchestrator construct and its outputs in
``<name>-cluster``) is imported only when a cluster of that orchestrator is synthesized, so a synth loads only its own
orchestrator's CDK modules (:meth:`Orchestrator.build`). The slice's ``rules.py`` is listed in
``fmcluster.validation.rules.RULE_MODULES``. Adding an orchestrator is one folder and one row here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.orchestrators.hyperpod_eks import profile as hyperpod_eks
from fmcluster.orchestrators.hyperpod_slurm import profile as hyperpod_slurm
from fmcluster.orchestrators.parallelcluster import profile as parallelcluster
from fmcluster.orchestrators.pcs import profile as pcs
from fmcluster.orchestrators.profile import OrchestratorProfile


@dataclass(frozen=True)
class Orchestrator:
    """One registry row.

    Attributes:
        key: the profile key (``OrchestratorProfile.key``), e.g. ``hyperpod-eks``.
        kind: the ``orchestrator.kind`` it serves (several keys may share one kind: HyperPod).
        profile: builds the profile from the orchestrator section.
        stack_module: the slice's stack wiring module (``fmcluster.orchestrators.<slice>.stack``).
    """

    key: str
    kind: str
    profile: Callable[[OrchestratorSpec], OrchestratorProfile]
    stack_module: str

    def build(self, stack: Any, inputs: Any) -> Any:
        """The slice's ``stack.build(stack, inputs)``: its orchestrator construct in ``<name>-cluster``
        (``inputs``: :class:`fmcluster.stacks.orchestrator_inputs.OrchestratorInputs`)."""
        return importlib.import_module(self.stack_module).build(stack, inputs)


def _row(module: Any, kind: str) -> Orchestrator:
    """The row of the slice whose ``profile.py`` is ``module`` (its ``KEY`` and ``profile``)."""
    return Orchestrator(module.KEY, kind, module.profile,
                        stack_module=module.__name__.rpartition(".")[0] + ".stack")


#: Every orchestrator, by profile key, in the order fmcluster lists them.
ORCHESTRATORS: Mapping[str, Orchestrator] = MappingProxyType({r.key: r for r in (
    _row(parallelcluster, "parallelcluster"),
    _row(hyperpod_slurm, "hyperpod"),
    _row(hyperpod_eks, "hyperpod"),
    _row(pcs, "pcs"),
)})
#: Every ``orchestrator.kind`` fmcluster knows, in registry order.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in ORCHESTRATORS.values()))
#: What ``@rule(orchestrators=...)`` accepts: every profile key and every kind (a kind covers its keys).
RULE_TARGETS: frozenset[str] = frozenset((*ORCHESTRATORS, *KINDS))


def profile_for(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of the orchestrator section ``orch``: the row of ``orch.profile_key`` (HyperPod: Slurm or EKS by
    ``orchestration``).

    Raises:
        KeyError: no registered orchestrator has that key.
    """
    return ORCHESTRATORS[orch.profile_key].profile(orch)
