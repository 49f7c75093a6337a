"""The parent AMIs bake mode needs looked up once (the feature registry's ``image_lookups`` hook, read by
``fmcluster image lookup``): one per ``cdk.context.json`` key, from :mod:`fmcluster.features.node.plan_bake`."""

from __future__ import annotations

from fmcluster.features.node.plan_bake import bake_targets, parent_image
from fmcluster.resolved.cluster import ResolvedCluster


def parent_lookups(rc: ResolvedCluster) -> list[tuple[str, str, str]]:
    """``(context key, DescribeImages name filter, CPU architecture)`` of each bake target whose parent is a
    ``lookup`` (empty unless a bake-mode parent is found by name and not pinned), first occurrence per key."""
    out: dict[str, tuple[str, str, str]] = {}
    for t in bake_targets(rc):
        p = parent_image(rc, t.manifest, t.arch)
        if p.kind == "lookup" and p.context_key and p.name_filter:
            out[p.context_key] = (p.context_key, p.name_filter, t.arch)
    return list(out.values())
