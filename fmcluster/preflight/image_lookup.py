"""``fmcluster image lookup BLUEPRINT``: show the parent AMIs a bake-mode blueprint's deployment will find.

Only ParallelCluster parents are looked up (PCS's parent is an SSM parameter Image Builder resolves; a pinned
``software.image.parent_ami_id`` needs nothing). The deployment finds them itself (the node feature's
``Custom::FmclusterParentAmi``); this command runs the same query and pick, through the feature registry's
``image_lookups`` and ``parent_image`` hooks (:mod:`fmcluster.features.registry`), with the caller's credentials, so a
user can see, or pin as ``parent_ami_id``, the AMI the build will start from. Synthesis never reads its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fmcluster.features.registry import FEATURES
from fmcluster.resolved import ResolvedCluster


class LookupError_(Exception):
    """The lookup found no single image (exit 2)."""


@dataclass(frozen=True)
class Lookup:
    """One parent AMI to find: the image ``key`` (bake target), DescribeImages ``name_filter``, ``arch``, and the
    ``feature`` (registry row name) whose ``parent_image`` hook finds it."""

    key: str
    name_filter: str
    arch: str
    feature: str


def lookups(rc: ResolvedCluster) -> list[Lookup]:
    """The lookups a blueprint's deployment makes, every feature's in registry order (empty unless a bake-mode
    ParallelCluster parent is not pinned)."""
    return [Lookup(key, name_filter, arch, f.name) for f in FEATURES.values()
            for key, name_filter, arch in f.parent_image_lookups(rc)]


def newest_official_image(ec2: Any, lookup: Lookup) -> str:
    """The AMI id the deployment (and ``pcluster``) would pick for ``lookup`` now (``ec2``: a boto3 EC2 client).
    Raises :class:`LookupError_` when there is no single one."""
    try:
        return FEATURES[lookup.feature].newest_parent_image(ec2, lookup.name_filter, lookup.arch)
    except LookupError as e:
        raise LookupError_(str(e)) from None
