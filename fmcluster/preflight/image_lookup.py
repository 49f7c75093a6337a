"""``fmcluster image lookup BLUEPRINT``: find the parent AMIs of a bake-mode blueprint and cache them in
``cdk.context.json``, the way CDK's context providers cache ``ec2.LookupMachineImage`` (synthesis then reads the
cache and never calls AWS).

Only ParallelCluster parents need it (PCS's parent is an SSM parameter Image Builder resolves; a pinned
``software.image.parent_ami_id`` needs nothing). The query is ``pcluster``'s own: DescribeImages with
``Owners=[amazon]``, the name filter of :func:`fmcluster.catalog.images.parallelcluster_ami_name_filter`,
``state=available``, ``IncludeDeprecated=True``, newest non-deprecated image first (aws/aws-parallelcluster 3.16.1
``cli/src/pcluster/aws/ec2.py`` ``get_official_image_id`` / ``_find_valid_official_image``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fmcluster.catalog.images import PARALLELCLUSTER_AMI_OWNER
from fmcluster.features.registry import FEATURES
from fmcluster.resolved import ResolvedCluster

CONTEXT_FILE = "cdk.context.json"


class LookupError_(Exception):
    """The lookup found no image, or the context file cannot be read or written (exit 2)."""


@dataclass(frozen=True)
class Lookup:
    """One parent AMI to find: ``context_key`` in cdk.context.json, DescribeImages ``name_filter``, ``arch``."""

    context_key: str
    name_filter: str
    arch: str


def lookups(rc: ResolvedCluster) -> list[Lookup]:
    """The lookups a blueprint needs (empty unless a bake-mode ParallelCluster parent is not pinned)."""
    return [Lookup(key, name_filter, arch) for key, name_filter, arch in FEATURES["node"].parent_image_lookups(rc)]


def newest_official_image(ec2: Any, lookup: Lookup) -> str:
    """The AMI id ``pcluster`` would pick for ``lookup``. Raises :class:`LookupError_` when there is none."""
    images: list[dict[str, Any]] = []
    for page in ec2.get_paginator("describe_images").paginate(
            Owners=[PARALLELCLUSTER_AMI_OWNER], IncludeDeprecated=True,
            Filters=[{"Name": "name", "Values": [lookup.name_filter]}, {"Name": "state", "Values": ["available"]},
                     {"Name": "architecture", "Values": [lookup.arch]}]):
        images += page.get("Images", [])
    if not images:
        raise LookupError_(f"no available AMI named {lookup.name_filter} owned by {PARALLELCLUSTER_AMI_OWNER} "
                           "in this Region; allowed a Region and OS where ParallelCluster publishes its AMI "
                           "(pcluster list-official-images), or set software.image.parent_ami_id")
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")

    def deprecated(image: dict[str, Any]) -> bool:  # pcluster: DeprecationTime present and not in the future
        return "DeprecationTime" in image and now >= str(image["DeprecationTime"])[:19]

    best = max(images, key=lambda i: ("0" if deprecated(i) else "1") + str(i.get("CreationDate", "")))
    return str(best["ImageId"])


def read_context(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise LookupError_(f"{path}: cannot read it as JSON ({e}); allowed a JSON object (CDK's context file)") from None
    if not isinstance(data, dict):
        raise LookupError_(f"{path}: must be a JSON object, got {type(data).__name__}")
    return data


def write_context(path: Path, found: Mapping[str, str]) -> None:
    """Merge ``found`` into the context file (other keys kept), sorted like CDK writes it."""
    data = {**read_context(path), **found}
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")
