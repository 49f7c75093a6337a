"""Bake-mode rules: what the ``<name>-image`` stack needs from the blueprint (``fmcluster.features.node.plan_bake``)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint
from fmcluster.validation.rules import Violation, rule

HP_IMAGE_ID = ("botocore sagemaker service-2.json ClusterInstanceGroupSpecification.ImageId (HyperPodPublicAmiId, "
               "CustomAmiId or default; a custom AMI must be unencrypted and owned by the account: "
               "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html)")
PC_PARENT = ("https://docs.aws.amazon.com/parallelcluster/latest/ug/Build-v3.html (ParentImage: a non-ParallelCluster "
             "AMI or an official AWS ParallelCluster AMI for the same version, never one of another version)")


@rule("R-BAKE-1", source=f"{HP_IMAGE_ID}; fmcluster knows no public SSM parameter or name filter for HyperPod's AMIs "
      "(unverified that none exists)", scope="blueprint", orchestrators=("hyperpod",))
def hyperpod_bake_needs_parent(bp: Blueprint) -> Iterator[Violation]:
    image = bp.software.image
    if image.mode == "bake" and image.parent_ami_id is None:
        yield "software.image.parent_ami_id", (
            "bake mode on SageMaker HyperPod needs the parent AMI pinned, got none; allowed a HyperPod public AMI id "
            "(ami- followed by 8 or 17 hex digits) for the OS and CPU architecture of the compute groups"
        )


@rule("R-BAKE-2", level="warning", source=PC_PARENT, scope="blueprint", orchestrators=("parallelcluster",))
def parallelcluster_parent_same_version(bp: Blueprint) -> Iterator[Violation]:
    image = bp.software.image
    if image.mode == "bake" and image.parent_ami_id is not None:
        version = bp.orchestrator.parallelcluster.version
        yield "software.image.parent_ami_id", (
            f"the parent AMI must be ParallelCluster {version}'s official AMI for {bp.software.os_name}, "
            f"got {image.parent_ami_id!r}, which fmcluster cannot inspect offline; "
            "allowed that AMI (leave parent_ami_id unset and the deployment finds it; 'fmcluster image lookup' shows "
            "which)"
        )
