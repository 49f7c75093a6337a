"""``fmcluster image lookup BLUEPRINT``: show the parent AMIs a bake-mode blueprint's deployment will find.

Only ParallelCluster parents are looked up (PCS's parent is an SSM parameter Image Builder resolves; a pinned
``software.image.parent_ami_id`` needs nothing). The deployment finds them itself (``Custom::FmclusterParentAmi``,
:mod:`fmcluster.features.node.construct_parent_ami`); this command runs the same query and pick
(:func:`fmcluster.features.node.handler_parent_ami.pick_official_image`) with the caller's credentials, so a user
can see, or pin as ``parent_ami_id``, the AMI the build will start from. Synthesis never reads its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fmcluster.catalog.images import PARALLELCLUSTER_AMI_OWNER
from fmcluster.features.node.handler_parent_ami import NoImage, describe, pick_official_image, utc_now
from fmcluster.features.registry import FEATURES
from fmcluster.resolved import ResolvedCluster


class LookupError_(Exception):
    """The lookup found no single image (exit 2)."""


@dataclass(frozen=True)
class Lookup:
    """One parent AMI to find: the image ``key`` (bake target), DescribeImages ``name_filter``, ``arch``."""

    key: str
    name_filter: str
    arch: str


def lookups(rc: ResolvedCluster) -> list[Lookup]:
    """The lookups a blueprint's deployment makes (empty unless a bake-mode ParallelCluster parent is not pinned)."""
    return [Lookup(key, name_filter, arch) for key, name_filter, arch in FEATURES["node"].parent_image_lookups(rc)]


def newest_official_image(ec2: Any, lookup: Lookup) -> str:
    """The AMI id the deployment (and ``pcluster``) would pick for ``lookup`` now. Raises :class:`LookupError_`
    when there is no single one."""
    try:
        return pick_official_image(describe(ec2, lookup.name_filter, lookup.arch, PARALLELCLUSTER_AMI_OWNER),
                                   lookup.name_filter, utc_now())
    except NoImage as e:
        raise LookupError_(str(e)) from None
