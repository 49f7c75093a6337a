"""``<name>-image``: the AMIs of the compute groups in bake mode (EC2 Image Builder), created only when a group
bakes. Nothing in it holds data; AMIs stay registered and their SSM parameters are retained on deletion and
replacement, so no node group or rollback ever points at a deregistered AMI (``fmcluster.features.node.construct_image``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.features.node.construct_image import ImageBuild
from fmcluster.features.node.plan_bake import BakeTarget, ParentImage
from fmcluster.features.node.render_image_build import ImageBuildStep


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
