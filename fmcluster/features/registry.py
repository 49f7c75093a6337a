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
- ``image_lookups``: ``(rc) -> [(cdk.context.json key, DescribeImages name filter, CPU architecture)]``, the parent
  AMIs bake mode needs looked up once (``fmcluster image lookup``).
- ``plan_rows``: ``(rc) -> [{column: text}]``, the rows of the feature's own table in ``fmcluster plan`` (the capacity
  windows).
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
    plan_rows: str | None = None

    def hooks(self) -> dict[str, str]:
        """Hook name -> ``"<module>:<function>"`` of the hooks this row has."""
        specs = {"render": self.render, "endpoints": self.endpoints, "provision": self.provision,
                 "image_lookups": self.image_lookups, "plan_rows": self.plan_rows}
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

    def plan_table(self, rc: Any) -> list[dict[str, str]]:
        """The rows of the feature's table in ``fmcluster plan`` of ``rc`` (empty: no table)."""
        return list(_hook(self.plan_rows)(rc)) if self.plan_rows else []

    def parent_image_lookups(self, rc: Any) -> list[tuple[str, str, str]]:
        """``(context key, name filter, arch)`` of each parent AMI ``rc``'s bake mode needs looked up (empty: none)."""
        return list(_hook(self.image_lookups)(rc)) if self.image_lookups else []


#: Every feature the core composes, by name, in the order their files are rendered.
FEATURES: Mapping[str, Feature] = MappingProxyType({f.name: f for f in (
    Feature("node", render="fmcluster.features.node.render_files:render_files",
            image_lookups="fmcluster.features.node.plan_lookup:parent_lookups"),
    Feature("slurm"),
    Feature("containers", render="fmcluster.features.containers.render_first_job:render_files"),
    Feature("observability", render="fmcluster.features.observability.render_files:render_observability_files",
            endpoints="fmcluster.features.observability.endpoints:observability_endpoints",
            provision="fmcluster.features.observability.provision_command:run"),
    Feature("acceptance", render="fmcluster.features.acceptance.render_gate:render_acceptance_files"),
    Feature("capacity_window", render="fmcluster.features.capacity_window.render_window:render_window_files",
            plan_rows="fmcluster.features.capacity_window.plan:plan_rows"),
)})
#: The layer each hook's module must have (its role), so that a caller at that layer may call it.
HOOK_LAYERS: Mapping[str, str] = MappingProxyType({
    "render": "templates", "endpoints": "resolved", "provision": "provision", "image_lookups": "resolved",
    "plan_rows": "resolved"})
