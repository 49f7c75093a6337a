"""Blueprint -> stacks. The ONLY place that hands blueprint sections (and the resolved cluster's
derived facts) to constructs.

Stacks are region-bound and account-agnostic (``env`` has a region, no account), so synthesis
needs no credentials and makes no lookups: the AZ comes from the blueprint, never from context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Environment, Stack, Tags

from fmcluster.blueprint.model import Blueprint
from fmcluster.features.accounting.stack import AccountingStack
from fmcluster.features.network.construct import Placement
from fmcluster.features.network.stack import NetworkStack
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.node.plan_bake import bake_targets, parent_image
from fmcluster.features.node.render_context import blueprint_node_contexts
from fmcluster.features.node.render_image_build import image_build_steps
from fmcluster.features.node.stack_image import ImageStack
from fmcluster.features.observability.render_alert_rules import render_alert_rules
from fmcluster.features.observability.render_context import observability_context
from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
from fmcluster.features.observability.stack import ObservabilityStack
from fmcluster.features.storage.stack import StorageStack
from fmcluster.orchestrators.registry import row_for
from fmcluster.resolved import BLUEPRINT_TAG, ResolvedCluster, resolve
from fmcluster.stacks.cluster_stack import ClusterStack

ALLOW_DATA_DESTRUCTION = "fmcluster:allowDataDestruction"

#: CDK feature flags fmcluster relies on. Set here (not only in cdk.json) so that the CLI, tests,
#: `fmcluster plan` and library users synthesize the same templates.
FEATURE_FLAGS = {
    "@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": True,
    "@aws-cdk/aws-s3:createDefaultLoggingPolicy": True,
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/core:defaultCrossStackReferences": "strong",
}


#: Resource types whose ``Tags`` are create-only: a tag change REPLACES the resource. They get no
#: blueprint tags (a new or changed tag would replace e.g. a placement group whose name the cluster
#: stack imports, and CloudFormation cannot change an imported export). Source: the registry schema's
#: ``createOnlyProperties`` as shipped with cfn-lint (``AWS::EC2::PlacementGroup``: ``/properties/Tags``);
#: tests/test_diff_exports.py checks that this covers every synthesized type whose Tags are create-only.
REPLACE_ON_TAG_CHANGE = ("AWS::EC2::PlacementGroup",)


@dataclass(frozen=True)
class ClusterStacks:
    network: NetworkStack
    storage: StorageStack
    cluster: ClusterStack
    observability: ObservabilityStack | None = None
    eks: Stack | None = None
    image: ImageStack | None = None
    accounting: AccountingStack | None = None

    def all(self) -> list[Stack]:
        return [self.network, self.storage, self.cluster, *([self.observability] if self.observability else []),
                *([self.eks] if self.eks else []), *([self.image] if self.image else []),
                *([self.accounting] if self.accounting else [])]


def node_images(rc: ResolvedCluster, image: ImageStack | None) -> NodeImages:
    """The AMI per compute group: the image stack's in bake mode, ``software.image.ami_id`` everywhere in custom
    mode, none (the official image) in official mode."""
    spec = rc.blueprint.software.image
    if spec.mode == "custom" and spec.ami_id:
        return NodeImages({g.name: spec.ami_id for g in rc.groups}, others=spec.ami_id)
    if spec.mode == "bake" and image is not None:
        return NodeImages(dict(image.group_amis))
    return NodeImages({})


def _image_stack(app: App, rc: ResolvedCluster, env: Environment, net: Any) -> ImageStack | None:
    """The ``<name>-image`` stack when some group bakes (a ParallelCluster parent is found at deploy time)."""
    if rc.stacks.image is None:
        return None
    bp = rc.blueprint
    targets = bake_targets(rc)
    parents = {t.key: parent_image(rc, t.manifest, t.arch) for t in targets}
    return ImageStack(
        app, rc.stacks.image, env=env, cluster_name=rc.name, os=rc.blueprint.software.os_name, targets=targets,
        steps={t.key: image_build_steps(rc, t.groups[0]) for t in targets}, parents=parents,
        vpc=net.vpc, subnet=net.gpu_subnet, tags=rc.tags,
        ami_tags=rc.profile.baked_ami_tags(bp.software.os_name) if rc.profile.baked_ami_tags else None,
        encryption_allowed=rc.profile.encrypted_custom_ami,
        description=f"fmcluster {rc.name}: baked AMIs (EC2 Image Builder) of the bake-mode compute groups",
    )


def _accounting_stack(app: App, rc: ResolvedCluster, env: Environment, net: Any,
                      placement: Placement) -> AccountingStack | None:
    """The ``<name>-accounting`` stack when the orchestrator's accounting route is a database fmcluster creates
    (ParallelCluster with ``orchestrator.slurm.accounting.enabled``; docs/accounting.md)."""
    plan = rc.accounting
    if plan is None or rc.stacks.accounting is None:
        return None
    stack = AccountingStack(
        app, rc.stacks.accounting, env=env, spec=plan.spec, vpc=net.vpc, placement=placement, subnet_cidrs=plan.subnet_cidrs,
        cluster_name=rc.name,
        description=f"fmcluster {rc.name}: Slurm accounting database (Aurora MySQL, retained)",
    )
    # The retained database keeps its network interfaces in the VPC, so the VPC stays too (docs/accounting.md).
    net.retain_gpu_subnet()
    Tags.of(stack).add("fmcluster:stack", "accounting")
    return stack


def _flag(app: App, name: str) -> bool:
    value = app.node.try_get_context(name)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def build_app(app: App, bp: Blueprint) -> ClusterStacks:
    """Add the network, storage, observability (when ``observability.metrics`` is not ``none``), image (when
    ``software.image.mode`` is ``bake``), EKS (HyperPod EKS with an EKS cluster fmcluster creates) and cluster
    stacks of ``bp`` (a validated blueprint) to ``app``; returns them.

    Resolves ``bp`` once (:func:`fmcluster.resolved.resolve`) and hands each stack its blueprint section
    plus what the resolved cluster derived: stack names, tags, placement-group names, the resolved
    compute groups, the orchestrator profile and the observability SSM parameter name.

    Must be called before anything else is added to ``app`` (it sets CDK feature flags that the
    app's context does not already set).
    """
    for flag, value in FEATURE_FLAGS.items():
        if app.node.try_get_context(flag) is None:
            app.node.set_context(flag, value)
    rc = resolve(bp)
    env = Environment(region=bp.region)
    placement = Placement(az=bp.az_label, az_is_id=bp.availability_zone_id is not None)

    network = NetworkStack(
        app, rc.stacks.network, env=env, spec=bp.network, placement=placement,
        placement_group_names=rc.placement_group_names,
        description=f"fmcluster {bp.name}: VPC, GPU subnet, EFA security group, placement groups",
    )
    net = network.network
    storage = StorageStack(
        app, rc.stacks.storage, env=env, spec=bp.storage, vpc=net.vpc, subnet=net.gpu_subnet,
        client_security_group=net.efa_security_group, allow_destruction=_flag(app, ALLOW_DATA_DESTRUCTION),
        description=f"fmcluster {bp.name}: FSx for Lustre, data repositories, checkpoint bucket (retained)",
    )
    st = storage.storage
    if st.file_system_retained:
        # Teardown with retained data (docs/storage.md): the retained file system keeps its ENIs in the GPU subnet.
        net.retain_gpu_subnet()
    accounting = _accounting_stack(app, rc, env, net, placement)
    observability = None
    if rc.stacks.observability is not None:
        observability = ObservabilityStack(
            app, rc.stacks.observability, env=env, spec=bp.observability, cluster_name=bp.name,
            parameter_name=rc.observability_parameter, alert_rules=render_alert_rules(observability_context(rc)),
            collector=rc.profile.head_node_label is not None, vpc=net.vpc, subnet=net.gpu_subnet,
            security_group=net.efa_security_group, window_events=rc.profile.window_automation and any(g.announced_end for g in bp.compute),
            budget=bp.budget, budget_tag=(BLUEPRINT_TAG, bp.name),
            description=f"fmcluster {bp.name}: {bp.observability.metrics} metrics (Prometheus, Grafana, alert rules)",
        )
        Tags.of(observability).add("fmcluster:stack", "observability")
    extra = row_for(bp.orchestrator).build_extra_stack(app, rc, env, net, placement)
    image = _image_stack(app, rc, env, net)
    cluster = ClusterStack(
        app, rc.stacks.cluster, env=env, profile=rc.profile, orchestrator=bp.orchestrator, cluster_name=bp.name,
        os=bp.software.os_name, groups=rc.groups, node_contexts=blueprint_node_contexts(rc), vpc=net.vpc,
        subnet=net.gpu_subnet, security_group=net.efa_security_group, placement_groups=net.placement_groups,
        lustre=st.mount, checkpoints=st.checkpoint_access, tags=rc.tags,
        description=f"fmcluster {bp.name}: {bp.orchestrator.kind} cluster and node bootstrap",
        head_node_script=render_exporter_script(exporter_context(rc, role="head")) if observability else None,
        head_node_policy=observability.observability.node_policy if observability else None,
        eks_plan=rc.eks, eks_cluster_arn=extra.cluster_arn if extra else None,
        images=node_images(rc, image),
        accounting_database=accounting.database if accounting else None,
        head_node_alarm_topic_arn=(
            observability.observability.alert_topic_arn
            if observability is not None and bp.observability.metrics == "self_hosted" else None
        ),
        alert_topic_arn=observability.observability.alert_topic_arn if observability is not None else None,
        lustre_spec=bp.storage.lustre,
    )
    if image is not None:
        # The AMI travels as an SSM parameter (no export), so the order is explicit: images before nodes.
        cluster.add_stack_dependency(image)
        Tags.of(image).add("fmcluster:stack", "image")
    for stack, role in ((network, "network"), (storage, "storage"), (cluster, "cluster")):
        Tags.of(stack).add("fmcluster:stack", role)
    for k, v in rc.tags.items():
        # fmcluster's own tag is fixed for a blueprint name (a new name is a new set of stacks), so it stays
        # on every resource; the blueprint's tags stay off REPLACE_ON_TAG_CHANGE types.
        exclude = [] if k == BLUEPRINT_TAG else list(REPLACE_ON_TAG_CHANGE)
        Tags.of(app).add(k, v, exclude_resource_types=exclude)
    return ClusterStacks(network, storage, cluster, observability, eks=extra.stack if extra else None, image=image, accounting=accounting)
