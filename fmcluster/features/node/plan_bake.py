"""Bake mode: which AMIs the ``<name>-image`` stack builds and what each is built from.

One image per distinct (CPU architecture, lock) among the groups in bake mode; groups with the same lock share an
image (e.g. two p5 groups). The parent image is the orchestrator's official image for the OS and architecture, as
``software.image.parent_ami_id`` when the blueprint pins it, else:

- PCS (reference kind ``ssm``): the public SSM parameter of the PCS-ready DLAMI, given to Image Builder as
  ``ssm:<parameter>``: ``CreateImageRecipe`` ``parentImage`` accepts "an SSM Parameter Store parameter, prefixed
  by ssm:, followed by the parameter name or ARN" (EC2 Image Builder API reference, CreateImageRecipe parentImage;
  https://docs.aws.amazon.com/imagebuilder/latest/APIReference/API_CreateImageRecipe.html). Image Builder resolves
  it when the recipe is created, so the recipe records the AMI it used.
- ParallelCluster (kind ``parallelcluster``): no public SSM parameter exists; the AMI is found at deploy time the
  way ``pcluster`` finds it (:func:`fmcluster.catalog.images.parallelcluster_ami_name_filter`, owner ``amazon``)
  by a custom resource of the image stack (:mod:`fmcluster.features.node.construct_parent_ami`), so synthesis
  needs no credentials and no ``cdk.context.json`` (issue 23 item 7). ``fmcluster image lookup BLUEPRINT`` shows
  the AMI that query picks today (to pin it as ``parent_ami_id``).
- HyperPod (kind ``hyperpod``): fmcluster knows no public parameter or name filter for HyperPod's AMIs
  (unverified), so bake mode needs ``parent_ami_id`` (a HyperPod public AMI; rule R-BAKE-1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fmcluster.catalog.images import (
    PARALLELCLUSTER_AMI_NAME_PART,
    ImageManifest,
    parallelcluster_ami_name_filter,
)
from fmcluster.features.node.plan_image import image_of
from fmcluster.resolved.cluster import ResolvedCluster, ResolvedGroup

ParentKind = Literal["ami", "ssm", "lookup", "unknown"]


@dataclass(frozen=True)
class ParentImage:
    """The parent image of a baked AMI.

    Attributes:
        kind: ``ami`` (pinned by ``parent_ami_id``), ``ssm`` (``ssm:<parameter>``, resolved by Image Builder),
            ``lookup`` (ParallelCluster AMI found at deploy time by name) or ``unknown``.
        value: the ``ParentImage`` of the recipe when known at synth (``None`` for ``lookup``: the deployment
            finds it; ``None`` for ``unknown``).
        name_filter: the DescribeImages name filter for ``lookup``, else ``None``.
        problem: why an ``unknown`` parent has no value (a synth error), else ``None``.
    """

    kind: ParentKind
    value: str | None
    name_filter: str | None = None
    problem: str | None = None


def parent_image(rc: ResolvedCluster, manifest: ImageManifest | None, arch: str) -> ParentImage:
    """The parent image for ``arch`` (``x86_64`` / ``arm64``); never reads the account or CDK context."""
    bp = rc.blueprint
    pinned = bp.software.image.parent_ami_id
    if pinned:
        return ParentImage("ami", pinned)
    if manifest is None:
        return ParentImage("unknown", None, problem="no official image is known for this orchestrator version; "
                           "set software.image.parent_ami_id")
    ref = manifest.reference
    if ref.kind == "ssm" and ref.parameter is not None:
        return ParentImage("ssm", f"ssm:{ref.parameter_for(arch)}")
    if ref.by_name_filter and manifest.parallelcluster_version is not None:
        os_name = bp.software.os_name
        if os_name not in PARALLELCLUSTER_AMI_NAME_PART:
            return ParentImage("unknown", None, problem=f"ParallelCluster publishes no official AMI for {os_name}")
        return ParentImage("lookup", None, parallelcluster_ami_name_filter(
            manifest.parallelcluster_version, os_name, arch))
    return ParentImage("unknown", None, problem=(
        f"{manifest.title} has no public parameter or name filter fmcluster can resolve offline; set "
        "software.image.parent_ami_id to the official AMI to build from"))


@dataclass(frozen=True)
class BakeTarget:
    """One AMI the image stack builds.

    Attributes:
        key: construct id of the image, the first group's name (construct ids are API: renaming replaces).
        arch: CPU architecture (``x86_64`` / ``arm64``).
        groups: the compute groups that boot it, in blueprint order.
        lock: the lock it is built from (``ResolvedImage.lock`` of its groups, all equal).
        manifest: the official (parent) image.
    """

    key: str
    arch: str
    groups: tuple[ResolvedGroup, ...]
    lock: dict[str, str | None]
    manifest: ImageManifest | None


def bake_targets(rc: ResolvedCluster) -> list[BakeTarget]:
    """The AMIs to build for the groups in bake mode (empty when no group bakes)."""
    out: dict[tuple[str, str], list[ResolvedGroup]] = {}
    for g in rc.groups:
        if image_of(g).mode != "bake":
            continue
        key = (g.instance.cpu_architecture, repr(sorted(image_of(g).lock.items())))
        out.setdefault(key, []).append(g)
    return [BakeTarget(gs[0].name, arch, tuple(gs), dict(image_of(gs[0]).lock), image_of(gs[0]).manifest)
            for (arch, _), gs in out.items()]
