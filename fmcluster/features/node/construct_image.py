"""Bake mode: an AMI per :class:`fmcluster.features.node.plan_bake.BakeTarget`, built with EC2 Image Builder (L1s).

Per image: one ``AWS::ImageBuilder::Component`` per build step (:mod:`fmcluster.features.node.render_image_build`), an
``AWS::ImageBuilder::ImageRecipe`` whose parent is the orchestrator's official image (``fmcluster.features.node.plan_bake``),
and an ``AWS::ImageBuilder::Image`` (tests on) whose ``ImageId`` is published as an SSM parameter the cluster stack
resolves at deploy. Shared by every image: the build instance role and profile, a security group and one
``AWS::ImageBuilder::InfrastructureConfiguration`` per CPU architecture in the cluster's GPU subnet.

Decisions (docs/decisions.md, "Baking an image"):

- Component documents: AWSTOE schema 1.0, phases ``build``, ``validate``, ``test`` with one ``ExecuteBash`` step
  each (https://docs.aws.amazon.com/imagebuilder/latest/userguide/toe-use-documents.html, "Document schema and
  definitions"; awsdocs/ec2-image-builder-user-guide ``doc_source/image-builder-application-documents.md``).
  Image Builder runs ``build`` and ``validate`` on the build instance and ``test`` on an instance launched from the
  new AMI. Inline ``Data`` is at most 16,000 characters (botocore imagebuilder ``CreateComponentRequest.data``
  ``InlineComponentData``); a longer document is a synth error.
- Names and versions: components and recipes are immutable and named + versioned (``<major>.<minor>.<patch>``, each
  0 to 2^30-1: https://docs.aws.amazon.com/imagebuilder/latest/userguide/ibhow-semantic-versioning.html). Every
  property replaces them, and CloudFormation creates the replacement before deleting the old one, so the version is
  derived from the content (:func:`content_version`): a changed step gets a new version, an unchanged one keeps it.
- Hand-over to the cluster stack: an SSM parameter ``/fmcluster/<name>/image/<key>/<version>`` per image, read with
  a ``{{resolve:ssm:...}}`` dynamic reference. A CloudFormation export could not change while the cluster stack
  imports it ("you can't ... modify the exported output value",
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-importvalue.html),
  so a rebuilt image would fail the image stack's update. The parameter name carries the recipe version, so the
  cluster stack's template changes with the image (``fmcluster diff`` shows it) and a rollback still resolves the
  old name: parameters are RETAINED and AMIs stay registered (see Teardown).
- Teardown: ``AWS::ImageBuilder::Image`` has no ``DeletionSettings`` (the property that makes Image Builder delete
  "its AMIs, snapshots" with the resource,
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-imagebuilder-image-deletionsettings.html),
  and deleting the image resource "does not delete any EC2 AMIs" (DeleteImage,
  https://docs.aws.amazon.com/imagebuilder/latest/APIReference/API_DeleteImage.html): deleting the stack or
  replacing an image never deregisters an AMI a node group may still launch, while the image resource, recipe and
  components go with the stack. The SSM parameters are retained (a rollback of the cluster stack resolves the old
  name). Old AMIs (tagged ``fmcluster:blueprint``) are deregistered by hand once no node uses them
  (docs/software.md).
- Encryption: the AMI's root snapshot is NOT encrypted: SageMaker HyperPod requires "The custom AMI must be
  unencrypted" and owned by the same account (botocore sagemaker ``ClusterInstanceGroupSpecification.ImageId``;
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html), and the
  image holds only public software. ParallelCluster and PCS nodes encrypt their root volumes at launch.
  ``encrypted=True`` with HyperPod is refused (ValueError).
- Build instance: a GPU-less compute type of the image's architecture (:data:`BUILD_INSTANCE_TYPES`). Installing
  the driver needs no GPU when its kernel modules are built with DKMS for the image's kernel and not loaded
  (nvidia-installer's module test load is skipped); whether every pinned driver's installer offers that option is
  UNVERIFIED by fmcluster (NVIDIA documents the option in ``nvidia-installer --advanced-options``), so the step
  templates must check it. The ``test`` phase runs on the same GPU-less type: it checks packages, modules built
  for the kernel, the initramfs and the lock file, never ``nvidia-smi`` (the node check does that at boot).
- Build instance role: ``AmazonSSMManagedInstanceCore`` and ``EC2InstanceProfileForImageBuilder`` only, the AWS
  managed policies Image Builder documents for the instance profile
  (https://docs.aws.amazon.com/imagebuilder/latest/userguide/image-builder-setting-up.html).
- Parent image: ``CreateImageRecipe`` ``parentImage`` accepts an AMI id or ``ssm:<parameter>``
  (https://docs.aws.amazon.com/imagebuilder/latest/APIReference/API_CreateImageRecipe.html). For ParallelCluster the
  official AMI of its version is the documented base of a custom AMI: ``Build.ParentImage`` "can be either a non
  AWS ParallelCluster AMI or an official AWS ParallelCluster AMI for the same version. You can't use an AWS
  ParallelCluster official or custom AMI from a different version"
  (https://docs.aws.amazon.com/parallelcluster/latest/ug/Build-v3.html). Building FROM the official AMI keeps what
  ``pcluster build-image`` installs (cookbook, Slurm, its services), so fmcluster's build only adds the GPU stack.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_imagebuilder as imagebuilder
from constructs import Construct

from fmcluster.constructs.capacity import ROOT_DEVICE, ROOT_VOLUME_GIB
from fmcluster.constructs.orchestrator import acknowledge
from fmcluster.constructs.parameter import string_parameter
from fmcluster.features.node.construct_parent_ami import ParentAmiLookups
from fmcluster.features.node.plan_bake import BakeTarget, ParentImage
from fmcluster.features.node.render_image_build import ImageBuildStep, placeholder_steps

#: GPU-less build (and test) instance type per CPU architecture: 16 vCPUs for the driver's DKMS build, the CUDA
#: toolkit and nccl-tests; a fraction of a GPU instance's price.
BUILD_INSTANCE_TYPES = {"x86_64": "c6i.4xlarge", "arm64": "c7g.4xlarge"}
#: Root volume of the built AMI (GiB): the parent's contents plus the CUDA toolkit, NCCL, driver DKMS trees and
#: nccl-tests. It must not exceed the nodes' root volume (``ROOT_VOLUME_GIB``) and must be at least the parent's
#: root snapshot (the official images' sizes are not published by fmcluster's sources: unverified).
IMAGE_ROOT_VOLUME_GIB = 100
assert IMAGE_ROOT_VOLUME_GIB <= ROOT_VOLUME_GIB
#: Image Builder's limit on inline component data (characters).
COMPONENT_DATA_LIMIT = 16_000
#: Minutes the test phase may take (``ImageTestsConfiguration.TimeoutMinutes``, 60-1440).
TEST_TIMEOUT_MINUTES = 120
#: Component schema version (AWSTOE document ``schemaVersion``).
SCHEMA_VERSION = "1.0"
#: AWS managed policies of the build instance role.
BUILD_INSTANCE_POLICIES = ("AmazonSSMManagedInstanceCore", "EC2InstanceProfileForImageBuilder")
#: Prefix of the SSM parameters that hand an image's AMI id to the cluster stack.
PARAMETER_PREFIX = "/fmcluster"


def content_version(*parts: str) -> str:
    """``1.<minor>.<patch>`` from the SHA-256 of ``parts``: Image Builder's semantic version (each node at most
    2^30-1), equal for equal content."""
    h = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return f"1.{int(h[:8], 16) % 2**30}.{int(h[8:16], 16) % 2**30}"


def _step_name(component: str) -> str:
    """AWSTOE step name from a component name (``nvidia-driver`` -> ``NvidiaDriver``)."""
    return "".join(p.capitalize() for p in component.split("-"))


def component_document(step: ImageBuildStep, *, description: str) -> dict[str, Any]:
    """The AWSTOE document of one step: schema 1.0, phases build / validate / test, one ExecuteBash step each
    (``onFailure: Abort``, one attempt, ``timeoutSeconds`` = the step's timeout)."""
    def phase(name: str, verb: str, script: str) -> dict[str, Any]:
        return {"name": name, "steps": [{
            "name": f"{verb}{_step_name(step.component)}", "action": "ExecuteBash",
            "timeoutSeconds": step.timeout_s, "onFailure": "Abort", "maxAttempts": 1,
            "inputs": {"commands": [script]},
        }]}

    return {
        "name": step.component,
        "description": description,
        "schemaVersion": SCHEMA_VERSION,
        "phases": [phase("build", "Install", step.build), phase("validate", "Check", step.validate),
                   phase("test", "Test", step.test)],
    }


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings (the scripts) as literal blocks: a quoted scalar would double every line break and push
    a component past Image Builder's 16,000-character inline limit."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.split("\n")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _str_representer)


def component_yaml(document: Mapping[str, Any]) -> str:
    """``document`` as the YAML text Image Builder receives (block style, scripts as literal blocks, key order
    kept)."""
    return yaml.dump(dict(document), Dumper=_LiteralDumper, sort_keys=False, default_flow_style=False, width=1000)


@dataclass(frozen=True)
class NodeImages:
    """The AMIs the orchestrator construct puts on its node groups.

    Attributes:
        groups: compute group name -> AMI: bake mode the image stack's ``{{resolve:ssm:...}}`` reference, custom
            mode ``software.image.ami_id``. A group not listed boots the orchestrator's official image.
        others: the AMI of the cluster's other nodes (PCS login group, HyperPod controller and login groups) in
            custom mode; ``None`` = the official image. ParallelCluster's head node always keeps the official AMI
            (the cluster-level ``Image.CustomAmi`` has update policy UNSUPPORTED, the queue-level one
            QUEUE_UPDATE_STRATEGY: aws-parallelcluster 3.16.1 ``cli/src/pcluster/schemas/cluster_schema.py``
            ``ImageSchema`` / ``QueueImageSchema``).
    """

    groups: Mapping[str, str]
    others: str | None = None

    def for_group(self, name: str) -> str | None:
        return self.groups.get(name)


@dataclass(frozen=True)
class BuiltImage:
    """One image: its ``image`` (CfnImage), ``recipe``, ``components`` (component name -> CfnComponent),
    ``documents`` (component name -> YAML text), ``parameter_name`` (SSM parameter with the AMI id) and
    ``ami`` (the ``{{resolve:ssm:...}}`` reference node groups use)."""

    image: imagebuilder.CfnImage
    recipe: imagebuilder.CfnImageRecipe
    components: dict[str, imagebuilder.CfnComponent]
    documents: dict[str, str]
    parameter_name: str
    ami: str


class ImageBuild(Construct):
    """Every AMI of a cluster's bake-mode groups.

    ``targets`` are the images (:func:`fmcluster.features.node.plan_bake.bake_targets`), ``steps`` the build steps per target
    key, ``parents`` the parent image per target key. ``os`` is ``software.os``; the build runs in ``subnet`` (the
    GPU subnet; it needs outbound access to the package repositories and to SSM) of ``vpc``. ``encrypted`` must stay
    False when ``encryption_allowed`` is False (the orchestrator refuses an encrypted custom AMI: HyperPod). A
    ParallelCluster parent is found at deploy time (``ParentAmi``, :mod:`fmcluster.features.node.construct_parent_ami`).
    An ``unknown`` parent or a document over the inline limit is a synth error; placeholder steps are a synth
    warning.

    Attributes: ``role``, ``instance_profile``, ``security_group``, ``infrastructure`` (arch ->
    CfnInfrastructureConfiguration), ``images`` (target key -> :class:`BuiltImage`), ``group_amis`` (compute
    group name -> AMI reference).
    """

    def __init__(
        self, scope: Construct, id: str, *, cluster_name: str, os: str,
        targets: Sequence[BakeTarget], steps: Mapping[str, Sequence[ImageBuildStep]],
        parents: Mapping[str, ParentImage], vpc: ec2.IVpc, subnet: ec2.ISubnet, tags: Mapping[str, str],
        ami_tags: Mapping[str, str] | None = None, encrypted: bool = False, encryption_allowed: bool = True,
    ) -> None:
        super().__init__(scope, id)
        self._ami_tags = dict(ami_tags or {})
        if encrypted and not encryption_allowed:
            raise ValueError("the orchestrator needs an unencrypted custom AMI (SageMaker HyperPod); encrypted=True is refused")
        self.role = iam.Role(
            self, "BuildInstanceRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"fmcluster {cluster_name}: EC2 Image Builder build and test instances",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in BUILD_INSTANCE_POLICIES],
        )
        acknowledge(self.role, *(
            (f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{p}]",
             "The AWS managed policies EC2 Image Builder documents for its build instance profile (SSM agent and "
             "Image Builder's component download and logging); nothing else is granted.")
            for p in BUILD_INSTANCE_POLICIES))
        self.instance_profile = iam.InstanceProfile(self, "BuildInstanceProfile", role=self.role)
        self.security_group = ec2.SecurityGroup(
            self, "BuildSecurityGroup", vpc=vpc, allow_all_outbound=True,
            description="EC2 Image Builder build instances: no inbound, outbound to package repositories and SSM",
        )
        self.infrastructure: dict[str, imagebuilder.CfnInfrastructureConfiguration] = {}
        for arch in sorted({t.arch for t in targets}):
            self.infrastructure[arch] = imagebuilder.CfnInfrastructureConfiguration(
                self, f"Infrastructure{arch.replace('_', '')}",
                name=f"{cluster_name}-image-{arch}", instance_profile_name=self.instance_profile.instance_profile_name,
                instance_types=[BUILD_INSTANCE_TYPES[arch]], subnet_id=subnet.subnet_id,
                security_group_ids=[self.security_group.security_group_id], terminate_instance_on_failure=True,
                instance_metadata_options=imagebuilder.CfnInfrastructureConfiguration.InstanceMetadataOptionsProperty(
                    http_tokens="required", http_put_response_hop_limit=2),
                description=f"fmcluster {cluster_name}: GPU-less {arch} build instance in the GPU subnet",
                resource_tags=dict(tags), tags=dict(tags),
            )
        self.parent_lookups: ParentAmiLookups | None = None
        self.images: dict[str, BuiltImage] = {}
        self.group_amis: dict[str, str] = {}
        for t in targets:
            built = self._image(cluster_name, os, t, list(steps[t.key]), parents[t.key], encrypted, tags)
            self.images[t.key] = built
            for g in t.groups:
                self.group_amis[g.name] = built.ami

    def _parent(self, target: BakeTarget, parent: ParentImage) -> tuple[str, str]:
        """(the recipe's ``ParentImage``, the text its version is derived from): a ``lookup`` parent is the
        deploy-time AMI of a ``Custom::FmclusterParentAmi`` (``ParentAmi/<key>``) and versions by its name filter."""
        if parent.kind == "lookup" and parent.name_filter:
            if self.parent_lookups is None:
                self.parent_lookups = ParentAmiLookups(self, "ParentAmi")
            return self.parent_lookups.image_id(target.key, parent.name_filter, target.arch), \
                f"describe:{parent.name_filter}"
        value = parent.value or "ami-00000000000000000"  # never deployed: the synth error of an unknown parent stops it
        return value, value

    def _image(self, cluster_name: str, os: str, target: BakeTarget, steps: list[ImageBuildStep],
               parent: ParentImage, encrypted: bool, tags: Mapping[str, str]) -> BuiltImage:
        scope = Construct(self, target.key)
        groups = ", ".join(g.name for g in target.groups)
        if parent.kind == "unknown":
            Annotations.of(scope).add_error(f"image for compute group(s) {groups}: {parent.problem}")
        placeholders = placeholder_steps(steps)
        if placeholders:
            Annotations.of(scope).add_warning(
                f"image for compute group(s) {groups}: build steps {', '.join(placeholders)} are placeholders until "
                "the node step templates land (issue 11 item 3); the image build fails at the first of them")
        components: dict[str, imagebuilder.CfnComponent] = {}
        documents: dict[str, str] = {}
        for step in steps:
            text = component_yaml(component_document(
                step, description=f"fmcluster {cluster_name}/{target.key}: {step.summary}"[:1024]))
            if len(text) > COMPONENT_DATA_LIMIT:
                Annotations.of(scope).add_error(
                    f"image {target.key}: component {step.component} is {len(text)} characters; Image Builder takes "
                    f"at most {COMPONENT_DATA_LIMIT} inline")
            documents[step.component] = text
            components[step.component] = imagebuilder.CfnComponent(
                scope, f"Component-{step.component}", name=f"{cluster_name}-{target.key}-{step.component}",
                platform="Linux", version=content_version(text), data=text,
                description=step.summary[:1024], tags=dict(tags),
            )
        parent_value, parent_identity = self._parent(target, parent)
        block = imagebuilder.CfnImageRecipe.InstanceBlockDeviceMappingProperty(
            device_name=ROOT_DEVICE[os],
            ebs=imagebuilder.CfnImageRecipe.EbsInstanceBlockDeviceSpecificationProperty(
                volume_size=IMAGE_ROOT_VOLUME_GIB, volume_type="gp3", delete_on_termination=True, encrypted=encrypted),
        )
        recipe_version = content_version(parent_identity, ROOT_DEVICE[os], str(IMAGE_ROOT_VOLUME_GIB), str(encrypted),
                                         *(f"{c.name}@{c.version}" for c in components.values()))
        recipe = imagebuilder.CfnImageRecipe(
            scope, "Recipe", name=f"{cluster_name}-{target.key}", version=recipe_version, parent_image=parent_value,
            components=[imagebuilder.CfnImageRecipe.ComponentConfigurationProperty(component_arn=c.attr_arn)
                        for c in components.values()],
            block_device_mappings=[block], working_directory="/tmp",
            description=f"fmcluster {cluster_name}: compute group(s) {groups} ({target.arch}, {os})",
            ami_tags={**tags, **self._ami_tags, "fmcluster:image": target.key, "fmcluster:recipe-version": recipe_version},
            tags=dict(tags),
        )
        image = imagebuilder.CfnImage(
            scope, "Image", image_recipe_arn=recipe.attr_arn,
            infrastructure_configuration_arn=self.infrastructure[target.arch].attr_arn,
            image_tests_configuration=imagebuilder.CfnImage.ImageTestsConfigurationProperty(
                image_tests_enabled=True, timeout_minutes=TEST_TIMEOUT_MINUTES),
            enhanced_image_metadata_enabled=True, tags=dict(tags),
        )
        # No DeletionSettings: deleting or replacing the Image Builder image resource leaves its AMI registered
        # (DeleteImage "does not delete any EC2 AMIs ... created during the image build process",
        # https://docs.aws.amazon.com/imagebuilder/latest/APIReference/API_DeleteImage.html), so a node group or a
        # rollback never points at a deregistered AMI, and the recipe and components it uses can be deleted.
        name = f"{PARAMETER_PREFIX}/{cluster_name}/image/{target.key}/{recipe_version}"
        parameter = string_parameter(
            scope, "AmiParameter", parameter_name=name, string_value=image.attr_image_id,
            description=f"fmcluster {cluster_name}: AMI of compute group(s) {groups} (recipe {recipe_version})",
        )
        parameter.apply_removal_policy(RemovalPolicy.RETAIN)
        return BuiltImage(image, recipe, components, documents, name, "{{resolve:ssm:" + name + "}}")
