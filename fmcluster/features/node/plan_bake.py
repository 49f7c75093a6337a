"""Bake mode: which AMIs the ``<name>-image`` stack builds and what each is built from.

One image per distinct (CPU architecture, lock) among the groups in bake mode; groups with the same lock share an
image (e.g. two p5 groups). The parent image is the orchestrator's official image for the OS and architecture, as
``software.image.parent_ami_id`` when the blueprint pins it, else:

- PCS (reference kind ``ssm``): the public SSM parameter of the PCS-ready DLAMI, given to Image Builder as
  ``ssm:<parameter>``: ``CreateImageRecipe`` ``parentImage`` accepts "an SSM Parameter Store parameter, prefixed
  by ssm:, followed by the parameter name or ARN" (EC2 Image Builder API reference, CreateImageRecipe parentImage;
  https://docs.aws.amazon.com/imagebuilder/latest/APIReference/API_CreateImageRecipe.html). Image Builder resolves
  it when the recipe is created, so the recipe records the AMI it used.
- ParallelCluster (kind ``parallelcluster``): no public SSM parameter exists; the AMI is looked up the way
  ``pcluster`` does it (:func:`fmcluster.catalog.images.parallelcluster_ami_name_filter`) by ``fmcluster image
  lookup BLUEPRINT`` and cached in ``cdk.context.json`` under :func:`lookup_context_key`, CDK's own pattern for
  ``ec2.LookupMachineImage`` (synthesis reads the cache, never the API). Without a cached value the image stack
  reports a synth error naming the command (:attr:`ParentImage.problem`).
- HyperPod (kind ``hyperpod``): fmcluster knows no public parameter or name filter for HyperPod's AMIs
  (unverified), so bake mode needs ``parent_ami_id`` (a HyperPod public AMI; rule R-BAKE-1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fmcluster.catalog.images import (
    PARALLELCLUSTER_AMI_NAME_PART,
    PARALLELCLUSTER_AMI_OWNER,
    ImageManifest,
    parallelcluster_ami_name_filter,
)
from fmcluster.resolved.cluster import ResolvedCluster, ResolvedGroup

#: Prefix of the ``cdk.context.json`` keys ``fmcluster image lookup`` writes.
LOOKUP_CONTEXT_PREFIX = "fmcluster:parallelcluster-ami"
LOOKUP_COMMAND = "fmcluster image lookup"

ParentKind = Literal["ami", "ssm", "lookup", "unknown"]


def lookup_context_key(region: str, version: str, os_name: str, arch: str) -> str:
    """``cdk.context.json`` key of ParallelCluster ``version``'s official AMI for ``os_name`` / ``arch`` in
    ``region``, e.g. ``fmcluster:parallelcluster-ami:us-east-1:3.16.3:ubuntu-22.04:x86_64``."""
    return f"{LOOKUP_CONTEXT_PREFIX}:{region}:{version}:{os_name}:{arch}"


@dataclass(frozen=True)
class ParentImage:
    """The parent image of a baked AMI.

    Attributes:
        kind: ``ami`` (pinned by ``parent_ami_id``), ``ssm`` (``ssm:<parameter>``, resolved by Image Builder),
            ``lookup`` (ParallelCluster AMI cached in ``cdk.context.json``) or ``unknown``.
        value: the ``ParentImage`` of the recipe when known at synth (``None`` for ``lookup`` without a cached
            value and for ``unknown``).
        context_key: the ``cdk.context.json`` key for ``lookup``, else ``None``.
        name_filter: the DescribeImages name filter for ``lookup``, else ``None``.
        problem: why ``value`` is ``None`` (a synth error), else ``None``.
    """

    kind: ParentKind
    value: str | None
    context_key: str | None = None
    name_filter: str | None = None
    problem: str | None = None


def parent_image(rc: ResolvedCluster, manifest: ImageManifest | None, arch: str,
                 context: Mapping[str, Any] | None = None) -> ParentImage:
    """The parent image for ``arch`` (``x86_64`` / ``arm64``); ``context`` is the CDK context
    (``cdk.context.json`` values) to read a cached ParallelCluster AMI from."""
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
        key = lookup_context_key(bp.region, manifest.parallelcluster_version, os_name, arch)
        name = parallelcluster_ami_name_filter(manifest.parallelcluster_version, os_name, arch)
        cached = (context or {}).get(key)
        if isinstance(cached, str) and cached.startswith("ami-"):
            return ParentImage("lookup", cached, key, name)
        return ParentImage("lookup", None, key, name, problem=(
            f"the parent AMI ({name}, owner {PARALLELCLUSTER_AMI_OWNER}) is not in cdk.context.json ({key}); run "
            f"'{LOOKUP_COMMAND} <blueprint>' with AWS credentials once (it caches the AMI id), or set "
            "software.image.parent_ami_id"))
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
        if g.image.mode != "bake":
            continue
        key = (g.instance.cpu_architecture, repr(sorted(g.image.lock.items())))
        out.setdefault(key, []).append(g)
    return [BakeTarget(gs[0].name, arch, tuple(gs), dict(gs[0].image.lock), gs[0].image.manifest)
            for (arch, _), gs in out.items()]
