"""The parent AMIs a bake-mode deployment finds (the feature registry's ``image_lookups`` and ``parent_image`` hooks,
read by ``fmcluster image lookup``): one per DescribeImages name filter and architecture, from
:mod:`fmcluster.features.node.plan_bake`. The deployment finds them itself (``Custom::FmclusterParentAmi``); synthesis
never reads a lookup."""

from __future__ import annotations

from typing import Any

from fmcluster.catalog.images import PARALLELCLUSTER_AMI_OWNER
from fmcluster.features.node.handler_parent_ami import NoImage, describe, pick_official_image, utc_now
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


def newest_parent_image(ec2: Any, name_filter: str, arch: str) -> str:
    """The feature registry's ``parent_image`` hook: the AMI id the deployment (``Custom::FmclusterParentAmi``) and
    ``pcluster`` would pick now for ``name_filter`` and ``arch`` among ParallelCluster's official images (``ec2``: a
    boto3 EC2 client with the caller's credentials), by the handler's own query and pick
    (:func:`fmcluster.features.node.handler_parent_ami.pick_official_image`).

    Raises:
        LookupError: no single image: none, or a tie on the newest creation date (the message names the filter or
            the tied AMIs and what to set instead).
    """
    try:
        return pick_official_image(describe(ec2, name_filter, arch, PARALLELCLUSTER_AMI_OWNER), name_filter, utc_now())
    except NoImage as e:
        raise LookupError(str(e)) from None
