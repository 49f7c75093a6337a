"""``<name>-image``: the AMIs of the compute groups in bake mode (EC2 Image Builder), created only when a group
bakes. Nothing in it holds data; AMIs stay registered and their SSM parameters are retained on deletion and
replacement, so no node group or rollback ever points at a deregistered AMI (``fmcluster.features.node.construct_image``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.features.network.stack import NetworkStack
from fmcluster.features.node.construct_image import ImageBuild, NodeImages
from fmcluster.features.node.plan_bake import BakeTarget, ParentImage, bake_targets, parent_image
from fmcluster.features.node.render_image_build import ImageBuildStep, image_build_steps
from fmcluster.resolved import ResolvedCluster
from fmcluster.stacks.context import StackContext


class ImageStack(Stack):
    """One :class:`fmcluster.features.node.construct_image.ImageBuild` (``Images``) and an output per image with the SSM
    parameter that carries its AMI id. ``group_amis``: compute group name -> the AMI reference its nodes boot."""

    def __init__(self, scope: Construct, id: str, *, cluster_name: str, os: str,
                 targets: Sequence[BakeTarget], steps: Mapping[str, Sequence[ImageBuildStep]],
                 parents: Mapping[str, ParentImage], vpc: ec2.IVpc, subnet: ec2.ISubnet, tags: Mapping[str, str],
                 ami_tags: Mapping[str, str] | None = None, encryption_allowed: bool = True, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.build = ImageBuild(
            self, "Images", cluster_name=cluster_name, os=os, targets=targets,
            steps=steps, parents=parents, vpc=vpc, subnet=subnet, tags=tags, ami_tags=ami_tags,
            encryption_allowed=encryption_allowed,
        )
        self.group_amis: dict[str, str] = dict(self.build.group_amis)
        for key, built in self.build.images.items():
            CfnOutput(self, f"AmiParameter{''.join(c for c in key.title() if c.isalnum())}",
                      value=built.parameter_name, description=f"SSM parameter with the AMI of image {key}")


def build_stack(ctx: StackContext) -> ImageStack | None:
    """The feature registry's ``stack`` hook: ``<name>-image`` when some group bakes (``software.image.mode: bake``),
    else ``None``; builds in the ``network`` stack's GPU subnet. A ParallelCluster parent is found at deploy time
    (:mod:`fmcluster.features.node.construct_parent_ami`), never at synthesis."""
    rc = ctx.rc
    if rc.stacks.image is None:
        return None
    bp = rc.blueprint
    net = ctx.stack("network", NetworkStack).network
    targets = bake_targets(rc)
    parents = {t.key: parent_image(rc, t.manifest, t.arch) for t in targets}
    return ImageStack(
        ctx.app, rc.stacks.image, env=ctx.env, cluster_name=rc.name, os=bp.software.os_name, targets=targets,
        steps={t.key: image_build_steps(rc, t.groups[0]) for t in targets}, parents=parents,
        vpc=net.vpc, subnet=net.gpu_subnet, tags=rc.tags,
        ami_tags=rc.profile.baked_ami_tags(bp.software.os_name) if rc.profile.baked_ami_tags else None,
        encryption_allowed=rc.profile.encrypted_custom_ami,
        description=f"fmcluster {rc.name}: baked AMIs (EC2 Image Builder) of the bake-mode compute groups",
    )


def node_images(rc: ResolvedCluster, image: ImageStack | None) -> NodeImages:
    """The AMI per compute group: the image stack's in bake mode, ``software.image.ami_id`` everywhere in custom
    mode, none (the official image) in official mode."""
    spec = rc.blueprint.software.image
    if spec.mode == "custom" and spec.ami_id:
        return NodeImages({g.name: spec.ami_id for g in rc.groups}, others=spec.ami_id)
    if spec.mode == "bake" and image is not None:
        return NodeImages(dict(image.group_amis))
    return NodeImages({})
