"""The registry of orchestrators: one row per slice (``fmcluster/orchestrators/<key>/``), the only module that lists
them all.

Each row names the slice's key (:class:`fmcluster.orchestrators.profile.OrchestratorProfile` ``key``, which is the
blueprint's own ``OrchestratorSpec.profile_key``), the ``orchestrator.kind`` it serves and how it builds its profile.
The slice's ``stack.py`` (``build(stack, inputs) -> construct``: the orchestrator construct and its outputs in
``<name>-cluster``) is imported only when a cluster of that orchestrator is synthesized, so a synth loads only its own
orchestrator's CDK modules (:meth:`Orchestrator.build`). The slice's ``rules.py`` is listed in
``fmcluster.validation.rules.RULE_MODULES``. Adding an orchestrator is one folder and one row here.

A row may add what only some orchestrators have, each as a hook the core calls without naming the orchestrator
(HyperPod EKS has all of them): its own resolved plan (``ResolvedCluster.eks``, :meth:`Orchestrator.plan_for`), a
stack deployed before ``<name>-cluster`` (:meth:`Orchestrator.build_extra_stack`), files ``fmcluster render`` writes
(:meth:`Orchestrator.render_files`) and the source of its IMEX wiring (R-IMEX-1 cites every row's). A hook above this
module's layer (resolved) is a module path, imported only when called, from a caller at or above that layer
(stacks, templates), like :attr:`Orchestrator.stack_module`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from fmcluster.blueprint.model import Blueprint, OrchestratorSpec
from fmcluster.catalog.support import PinnedRelease
from fmcluster.orchestrators.hyperpod_eks import plan as hyperpod_eks_plan
from fmcluster.orchestrators.hyperpod_eks import profile as hyperpod_eks
from fmcluster.orchestrators.hyperpod_slurm import profile as hyperpod_slurm
from fmcluster.orchestrators.parallelcluster import profile as parallelcluster
from fmcluster.orchestrators.pcs import profile as pcs
from fmcluster.orchestrators.profile import OrchestratorProfile

if TYPE_CHECKING:
    from aws_cdk import Stack


class ClusterPlan(Protocol):
    """What the core reads of an orchestrator's own resolved plan (``ResolvedCluster.eks``; HyperPod EKS:
    :class:`fmcluster.orchestrators.hyperpod_eks.plan.EksPlan`): whether fmcluster creates the cluster it joins
    (its stack then is ``<name>-eks``), that cluster's name, its Kubernetes version when fmcluster creates it (``None``
    otherwise; the support calendar reads it), and whether it installs something after its cluster stack (its stack
    then is ``<name>-addons``). The slice reads the rest of its own plan."""

    @property
    def creates_cluster(self) -> bool: ...

    @property
    def cluster_name(self) -> str: ...

    @property
    def kubernetes_version(self) -> str | None: ...

    @property
    def has_late_stack(self) -> bool: ...


@dataclass(frozen=True)
class ExtraStack:
    """A stack an orchestrator adds before ``<name>-cluster`` (HyperPod EKS: ``<name>-eks``, the EKS cluster).

    Attributes:
        stack: the CDK stack.
        cluster_arn: the ARN of the cluster it creates (a cross-stack token) for the orchestrator construct.
    """

    stack: Stack
    cluster_arn: str


@dataclass(frozen=True)
class Orchestrator:
    """One registry row.

    Attributes:
        key: the profile key (``OrchestratorProfile.key``), e.g. ``hyperpod-eks``.
        kind: the ``orchestrator.kind`` it serves (several keys may share one kind: HyperPod).
        profile: builds the profile from the orchestrator section.
        stack_module: the slice's stack wiring module (``fmcluster.orchestrators.<slice>.stack``).
        plan: builds the orchestrator's own resolved plan from the blueprint (``None`` when it has none, or the
            hook returns ``None``). Default: none.
        extra_stack_module: module (stacks layer) whose ``build_extra_stack(ctx)`` adds the stack deployed before
            ``<name>-cluster`` (``ctx``: :class:`fmcluster.stacks.context.StackContext`), or ``None``. Default: none.
        late_stack_module: module (stacks layer) whose ``build_late_stack(ctx)`` adds the stack deployed after
            ``<name>-cluster`` (``<name>-addons``), or ``None``. Default: none.
        render_module: module (templates layer) whose ``render_files(rc)`` gives ``{relative path: text}`` for
            ``fmcluster render``, or ``None``. Default: none.
        imex_source: the primary source of how the orchestrator sets the IMEX domain per job (cited by R-IMEX-1),
            or ``None``. Default: none.
        update_review: ``(resource types, module)``: the CloudFormation types of the orchestrator's cluster resource
            and the module (review layer) whose ``review_resource_update(old_props, new_props, region)`` gives the
            orchestrator's own verdict on each changed setting and whose ``group_impacts(old_props, new_props,
            region, where, updated)`` gives what a change does to each node group and its jobs
            (``fmcluster diff``, :mod:`fmcluster.review.impact`), or ``None``. Default: none.
        releases: ``(bp, cluster plan) -> [PinnedRelease]`` (component, version, YAML path, choices): the releases the orchestrator section
            of ``bp`` pins that the support calendar covers (:mod:`fmcluster.resolved.support`), or ``None``: none.
            Default: none.
    """

    key: str
    kind: str
    profile: Callable[[OrchestratorSpec], OrchestratorProfile]
    stack_module: str
    plan: Callable[[Blueprint], ClusterPlan | None] | None = None
    extra_stack_module: str | None = None
    late_stack_module: str | None = None
    render_module: str | None = None
    imex_source: str | None = None
    update_review: tuple[tuple[str, ...], str] | None = None
    releases: Callable[[Blueprint, ClusterPlan | None], list[PinnedRelease]] | None = None

    def build(self, stack: Any, inputs: Any) -> Any:
        """The slice's ``stack.build(stack, inputs)``: its orchestrator construct in ``<name>-cluster``
        (``inputs``: :class:`fmcluster.features.cluster.stack_inputs.OrchestratorInputs`)."""
        return importlib.import_module(self.stack_module).build(stack, inputs)

    def plan_for(self, bp: Blueprint) -> ClusterPlan | None:
        """The orchestrator's own resolved plan of ``bp`` (``ResolvedCluster.eks``), or ``None``."""
        return self.plan(bp) if self.plan is not None else None

    def pinned_releases(self, bp: Blueprint, cluster_plan: ClusterPlan | None) -> list[PinnedRelease]:
        """The :class:`~fmcluster.catalog.support.PinnedRelease` (component, version, YAML path, choices) of each
        release the orchestrator section of ``bp`` pins that the support calendar covers (empty: none);
        ``cluster_plan``: :meth:`plan_for` of ``bp``."""
        return self.releases(bp, cluster_plan) if self.releases is not None else []

    def build_extra_stack(self, ctx: Any) -> ExtraStack | None:
        """The slice's stack before ``<name>-cluster`` (``ctx``: :class:`fmcluster.stacks.context.StackContext`, the
        stacks built before it), or ``None`` when it has none or the resolved cluster needs none. Call from stacks."""
        if self.extra_stack_module is None:
            return None
        built: ExtraStack | None = importlib.import_module(self.extra_stack_module).build_extra_stack(ctx)
        return built

    def build_late_stack(self, ctx: Any) -> Stack | None:
        """The slice's stack after ``<name>-cluster`` (``ctx``: :class:`fmcluster.stacks.context.StackContext`, the
        stacks built before it, ``cluster`` included), or ``None`` when it has none or the resolved cluster needs
        none. Call from stacks."""
        if self.late_stack_module is None:
            return None
        built: Stack | None = importlib.import_module(self.late_stack_module).build_late_stack(ctx)
        return built

    def render_files(self, rc: Any) -> dict[str, str]:
        """``{relative path: text}`` the slice adds to ``fmcluster render`` of ``rc`` (empty: none). Call from review."""
        if self.render_module is None:
            return {}
        files: dict[str, str] = importlib.import_module(self.render_module).render_files(rc)
        return files


def _row(module: Any, kind: str, **hooks: Any) -> Orchestrator:
    """The row of the slice whose ``profile.py`` is ``module`` (its ``KEY`` and ``profile``), with optional ``hooks``
    (:class:`Orchestrator` fields)."""
    return Orchestrator(module.KEY, kind, module.profile,
                        stack_module=module.__name__.rpartition(".")[0] + ".stack", **hooks)


#: HyperPod's cluster resource, Slurm and EKS alike, is judged by the shared HyperPod slice.
HYPERPOD_REVIEW = (("AWS::SageMaker::Cluster",), "fmcluster.orchestrators.hyperpod.review_update")
#: Every orchestrator, by profile key, in the order fmcluster lists them.
ORCHESTRATORS: Mapping[str, Orchestrator] = MappingProxyType({r.key: r for r in (
    _row(parallelcluster, "parallelcluster", imex_source=parallelcluster.PCLUSTER_IMEX_DOC,
         update_review=(("Custom::PclusterCluster",), "fmcluster.orchestrators.parallelcluster.review_update"),
         releases=parallelcluster.pinned_releases),
    _row(hyperpod_slurm, "hyperpod", update_review=HYPERPOD_REVIEW),
    _row(hyperpod_eks, "hyperpod", plan=hyperpod_eks_plan.eks_plan,
         extra_stack_module="fmcluster.orchestrators.hyperpod_eks.stack_eks",
         late_stack_module="fmcluster.orchestrators.hyperpod_eks.stack_addons",
         render_module="fmcluster.orchestrators.hyperpod_eks.render_kubernetes", update_review=HYPERPOD_REVIEW,
         releases=hyperpod_eks_plan.pinned_releases),
    _row(pcs, "pcs", imex_source=pcs.PCS_IMEX_DOC,
         update_review=(("AWS::PCS::ComputeNodeGroup",), "fmcluster.orchestrators.pcs.review_update"),
         releases=pcs.pinned_releases),
)})
#: Every ``orchestrator.kind`` fmcluster knows, in registry order.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in ORCHESTRATORS.values()))
#: What ``@rule(orchestrators=...)`` accepts: every profile key and every kind (a kind covers its keys).
RULE_TARGETS: frozenset[str] = frozenset((*ORCHESTRATORS, *KINDS))


#: Resource type -> module of the orchestrator whose own update policies judge a change of it
#: (:attr:`Orchestrator.update_review`); imported by the caller (review layer) only when such a resource changes.
UPDATE_REVIEWERS: Mapping[str, str] = MappingProxyType({
    t: r.update_review[1] for r in ORCHESTRATORS.values() if r.update_review for t in r.update_review[0]})

#: The sources of every orchestrator's IMEX wiring (:attr:`Orchestrator.imex_source`), in registry order.
IMEX_SOURCES: tuple[str, ...] = tuple(r.imex_source for r in ORCHESTRATORS.values() if r.imex_source)


def row_for(orch: OrchestratorSpec) -> Orchestrator:
    """The registry row of the orchestrator section ``orch`` (``orch.profile_key``).

    Raises:
        KeyError: no registered orchestrator has that key.
    """
    return ORCHESTRATORS[orch.profile_key]


def profile_for(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of the orchestrator section ``orch``: the row of ``orch.profile_key`` (HyperPod: Slurm or EKS by
    ``orchestration``).

    Raises:
        KeyError: no registered orchestrator has that key.
    """
    return row_for(orch).profile(orch)
