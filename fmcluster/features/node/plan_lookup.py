"""The parent AMIs a bake-mode deployment finds (the feature registry's ``image_lookups`` hook, read by
``fmcluster image lookup``): one per DescribeImages name filter and architecture, from
:mod:`fmcluster.features.node.plan_bake`. The deployment finds them itself (``Custom::FmclusterParentAmi``); synthesis
never reads a lookup."""

from __future__ import annotations

from fmcluster.features.node.plan_bake import bake_targets, parent_image
from fmcluster.resolved.cluster import ResolvedCluster


def parent_lookups(rc: ResolvedCluster) -> list[tuple[str, str, str]]:
    """``(image key, DescribeImages name filter, CPU architecture)`` of each bake target whose parent is a ``lookup``
    (empty unless a bake-mode ParallelCluster parent is not pinned), first occurrence per name filter and architecture."""
    out: dict[str, tuple[str, str, str]] = {}
    for t in bake_targets(rc):
        p = parent_image(rc, t.manifest, t.arch)
        if p.kind == "lookup" and p.name_filter:
            out.setdefault(p.name_filter + t.arch, (t.key, p.name_filter, t.arch))
    return list(out.values())
