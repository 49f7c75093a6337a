"""The registry of features: one row per feature slice (``fmcluster/features/<name>/``) whose parts the core composes
without naming the feature's modules (docs/architecture.md "Slices"), like the orchestrator registry
(:data:`fmcluster.orchestrators.registry.ORCHESTRATORS`).

A row names the feature and, per hook, the function that provides it as ``"<module>:<function>"``. A hook is imported
only when called, so this module (layer: resolved, by its role ``registry``) loads no slice; each hook's module has the
role of the layer its caller sits at (``render*``: templates, called by review; ``provision*``: provision; ``plan*``:
resolved), which ``tests/test_registry.py`` checks, so composing through the registry keeps the one-way layer order.

Hooks (each optional; a feature without it contributes nothing):

- ``render``: ``(rc) -> {relative path: text}``, the files ``fmcluster render`` writes (``<folder>/<name>``), in the
  order of :data:`FEATURES` (files of one folder keep the order they are given in).
- ``endpoints``: ``(rc) -> [endpoint]``, the plan's endpoint lines (each with ``as_dict() -> {name, address, access}``).
- ``provision``: ``(file, *, profile, session_factory) -> exit code``, the after-deploy command of the feature.
- ``image_lookups``: ``(rc) -> [(image key, DescribeImages name filter, CPU architecture)]``, the parent AMIs a
  bake-mode deployment finds (``fmcluster image lookup`` shows them).
- ``parent_image``: ``(ec2 client, name filter, arch) -> AMI id``, the image the deployment would pick now for one of
  those lookups; raises ``LookupError`` (with a message naming the filter or the tied AMIs) when there is no single one.
- ``plan``: ``(bp, profile) -> plan``, the feature's resolved plan of the blueprint, computed once by
  :func:`fmcluster.resolved.cluster.resolve` into the ``ResolvedCluster`` field named by the row's ``plan_slot`` (typed
  by the core as a protocol of :mod:`fmcluster.resolved.slots`).
- ``group_plan``: ``(bp, instance, software, *, efa_enabled) -> plan``, the feature's plan of one compute group of
  that instance type, into the ``ResolvedGroup`` field named by ``group_plan_slot``.
- ``stack``: ``(ctx) -> Stack | None``, the feature's stack (``ctx``: :class:`fmcluster.stacks.context.StackContext`,
  the stacks built before it), or ``None`` when the resolved cluster needs none; the app builder calls it in the
  order of :data:`STACK_ORDER` and records the stack under its role there.
- ``admin_node_script``: ``(rc) -> (file name, text) | None``, a script for the node that administers Slurm (the
  ParallelCluster head node, the HyperPod controller, the PCS login node), run by root after the orchestrator
  configured it; ``None``: none for this cluster.
- ``plan_rows``: ``(rc) -> [{column: text}]``, the rows of the feature's own table in ``fmcluster plan`` (the capacity
  windows).
- ``plan_budget``: ``(rc) -> [{column: text}]``, the rows of the plan's budget table (the blueprint's ``budget``:
  limit, alerts, the stop and what it does); empty: no budget.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol


class Endpoint(Protocol):
    """One line of the plan's endpoint table."""

    def as_dict(self) -> dict[str, str]: ...


def _hook(spec: str) -> Callable[..., Any]:
    """The function ``spec`` (``"<module>:<function>"``) names, imported now."""
    module, _, name = spec.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


@dataclass(frozen=True)
class Feature:
    """One registry row: the feature's folder name and its hooks (``"<module>:<function>"`` or ``None``; see the
    module docstring for each hook's shape)."""

    name: str
    render: str | None = None
    endpoints: str | None = None
    provision: str | None = None
    image_lookups: str | None = None
    parent_image: str | None = None
    stack: str | None = None
    plan: str | None = None
    plan_slot: str | None = None
    group_plan: str | None = None
    group_plan_slot: str | None = None
    admin_node_script: str | None = None
    plan_rows: str | None = None
    plan_budget: str | None = None

    def hooks(self) -> dict[str, str]:
        """Hook name -> ``"<module>:<function>"`` of the hooks this row has."""
        specs = {"render": self.render, "endpoints": self.endpoints, "provision": self.provision,
                 "image_lookups": self.image_lookups, "parent_image": self.parent_image, "stack": self.stack,
                 "plan": self.plan, "group_plan": self.group_plan, "admin_node_script": self.admin_node_script,
                 "plan_rows": self.plan_rows, "plan_budget": self.plan_budget}
        return {k: v for k, v in specs.items() if v is not None}

    def render_files(self, rc: Any) -> dict[str, str]:
        """``{relative path: text}`` the feature adds to ``fmcluster render`` of ``rc`` (empty: none)."""
        files: dict[str, str] = _hook(self.render)(rc) if self.render else {}
        return files

    def plan_endpoints(self, rc: Any) -> list[Endpoint]:
        """The feature's endpoint lines in ``fmcluster plan`` of ``rc`` (empty: none)."""
        return list(_hook(self.endpoints)(rc)) if self.endpoints else []

    def run_provision(self, file: Path, *, profile: str | None = None, session_factory: Any = None) -> int:
        """Run the feature's after-deploy command on blueprint ``file``; its exit code.

        Raises:
            LookupError: the feature has no provision hook.
        """
        if self.provision is None:
            raise LookupError(f"feature {self.name!r} provisions nothing after deploy")
        code: int = _hook(self.provision)(file, profile=profile, session_factory=session_factory)
        return code

    def admin_script(self, rc: Any) -> tuple[str, str] | None:
        """``(file name, text)`` of the feature's script for the node that administers Slurm of ``rc``, or ``None``."""
        script: tuple[str, str] | None = _hook(self.admin_node_script)(rc) if self.admin_node_script else None
        return script
    def plan_table(self, rc: Any) -> list[dict[str, str]]:
        """The rows of the feature's table in ``fmcluster plan`` of ``rc`` (empty: no table)."""
        return list(_hook(self.plan_rows)(rc)) if self.plan_rows else []

    def budget_table(self, rc: Any) -> list[dict[str, str]]:
        """The rows of the budget table in ``fmcluster plan`` of ``rc`` (empty: no budget)."""
        return list(_hook(self.plan_budget)(rc)) if self.plan_budget else []

    def parent_image_lookups(self, rc: Any) -> list[tuple[str, str, str]]:
        """``(context key, name filter, arch)`` of each parent AMI ``rc``'s bake mode needs looked up (empty: none)."""
        return list(_hook(self.image_lookups)(rc)) if self.image_lookups else []

    def newest_parent_image(self, ec2: Any, name_filter: str, arch: str) -> str:
        """The AMI id the deployment would pick now for one of :meth:`parent_image_lookups` (``ec2``: a boto3 EC2
        client).

        Raises:
            LookupError: no single image matches (the hook's message), or the feature has no ``parent_image`` hook.
        """
        if self.parent_image is None:
            raise LookupError(f"feature {self.name!r} looks up no parent image")
        ami: str = _hook(self.parent_image)(ec2, name_filter, arch)
        return ami

    def resolve_plan(self, bp: Any, profile: Any) -> Any:
        """The feature's plan of ``bp`` (a blueprint) for its orchestrator ``profile``.

        Raises:
            LookupError: the feature has no ``plan`` hook.
        """
        if self.plan is None:
            raise LookupError(f"feature {self.name!r} has no resolved plan")
        return _hook(self.plan)(bp, profile)

    def resolve_group_plan(self, bp: Any, inst: Any, software: Any, *, efa_enabled: bool) -> Any:
        """The feature's plan of a compute group of ``inst`` (catalog instance) in ``bp`` (``software``: the
        resolved software stack or ``None``; ``efa_enabled``: the group uses EFA).

        Raises:
            LookupError: the feature has no ``group_plan`` hook.
        """
        if self.group_plan is None:
            raise LookupError(f"feature {self.name!r} has no compute-group plan")
        return _hook(self.group_plan)(bp, inst, software, efa_enabled=efa_enabled)

    def build_stack(self, ctx: Any) -> Any:
        """The feature's stack for ``ctx`` (:class:`fmcluster.stacks.context.StackContext`), or ``None`` (no hook,
        or the resolved cluster needs none). Call from the stacks layer."""
        return _hook(self.stack)(ctx) if self.stack else None


#: Every feature the core composes, by name, in the order their files are rendered.
FEATURES: Mapping[str, Feature] = MappingProxyType({f.name: f for f in (
    Feature("node", render="fmcluster.features.node.render_files:render_files",
            image_lookups="fmcluster.features.node.plan_lookup:parent_lookups",
            parent_image="fmcluster.features.node.plan_lookup:newest_parent_image",
            stack="fmcluster.features.node.stack_image:build_stack",
            group_plan="fmcluster.features.node.plan_image:resolve_image", group_plan_slot="image"),
    Feature("slurm"),
    Feature("containers", render="fmcluster.features.containers.render_first_job:render_files",
            plan="fmcluster.features.containers.plan:containers_plan", plan_slot="containers"),
    Feature("observability", render="fmcluster.features.observability.render_files:render_observability_files",
            endpoints="fmcluster.features.observability.endpoints:observability_endpoints",
            provision="fmcluster.features.observability.provision_command:run",
            stack="fmcluster.features.observability.stack:build_stack"),
    Feature("acceptance", render="fmcluster.features.acceptance.render_watch:render_files",
            admin_node_script="fmcluster.features.acceptance.render_watch:admin_node_script"),
    Feature("capacity_window", render="fmcluster.features.capacity_window.render_window:render_window_files",
            plan_rows="fmcluster.features.capacity_window.plan:plan_rows",
            plan_budget="fmcluster.features.capacity_window.plan:budget_rows"),
    Feature("network", stack="fmcluster.features.network.stack:build_stack",
            plan="fmcluster.features.network.plan:network_plan", plan_slot="subnet"),
    Feature("storage", stack="fmcluster.features.storage.stack:build_stack"),
    Feature("accounting", stack="fmcluster.features.accounting.stack:build_stack",
            plan="fmcluster.features.accounting.plan:accounting_plan", plan_slot="accounting"),
    Feature("cluster", stack="fmcluster.features.cluster.stack:build_stack"),
)})
#: :data:`STACK_ORDER`'s name for the orchestrator registry row's extra stack
#: (:meth:`fmcluster.orchestrators.registry.Orchestrator.build_extra_stack`).
ORCHESTRATOR = "orchestrator"
#: :data:`STACK_ORDER`'s name for the orchestrator registry row's late stack, deployed after ``<name>-cluster``
#: (:meth:`fmcluster.orchestrators.registry.Orchestrator.build_late_stack`; HyperPod EKS: ``<name>-addons``).
ORCHESTRATOR_LATE = "orchestrator-late"
#: The stacks of a cluster in the order the app builder adds them: ``(role, provider)``, where role is the stack's
#: :class:`fmcluster.resolved.cluster.StackNames` field and ``fmcluster:stack`` tag value, and provider the feature
#: whose ``stack`` hook builds it (or :data:`ORCHESTRATOR` / :data:`ORCHESTRATOR_LATE`). A hook reads only stacks of roles before its own; the
#: order is also the order of the stacks in the cloud assembly.
STACK_ORDER: tuple[tuple[str, str], ...] = (
    ("network", "network"), ("storage", "storage"), ("accounting", "accounting"), ("observability", "observability"),
    ("eks", ORCHESTRATOR), ("image", "node"), ("cluster", "cluster"), ("addons", ORCHESTRATOR_LATE))
#: The layer each hook's module must have (its role), so that a caller at that layer may call it.
HOOK_LAYERS: Mapping[str, str] = MappingProxyType({
    "render": "templates", "endpoints": "resolved", "provision": "provision", "image_lookups": "resolved",
    "parent_image": "resolved", "stack": "stacks", "plan": "resolved",
    "group_plan": "resolved", "admin_node_script": "templates", "plan_rows": "resolved",
    "plan_budget": "resolved"})


def admin_node_scripts(rc: Any) -> dict[str, str]:
    """File name -> text of every feature's script for the node that administers Slurm of ``rc``, in
    :data:`FEATURES` order (empty: none)."""
    return dict(script for f in FEATURES.values() if (script := f.admin_script(rc)) is not None)
