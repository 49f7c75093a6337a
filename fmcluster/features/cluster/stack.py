"""``<name>-cluster``: the orchestrator, bootstrap assets and IAM."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmcluster.blueprint.model import LustreSpec, OrchestratorSpec
from fmcluster.constructs.orchestrator import HEAD_NODE_SCRIPT
from fmcluster.features.accounting.construct import SlurmAccountingDatabase
from fmcluster.features.accounting.stack import AccountingStack
from fmcluster.features.cluster.stack_inputs import OrchestratorInputs
from fmcluster.features.network.stack import NetworkStack
from fmcluster.features.node.construct_bootstrap import NodeBootstrap, ScriptAsset, node_mirror
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.node.render_context import NodeContext, blueprint_node_contexts
from fmcluster.features.node.stack_image import ImageStack, node_images
from fmcluster.features.observability.construct import monitoring_heartbeat_alarm
from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
from fmcluster.features.observability.stack import ObservabilityStack
from fmcluster.features.registry import admin_node_scripts
from fmcluster.features.storage.construct import CheckpointAccess, LustreMount
from fmcluster.features.storage.stack import StorageStack
from fmcluster.orchestrators.registry import ORCHESTRATORS, ClusterPlan
from fmcluster.resolved import OrchestratorProfile, ResolvedGroup
from fmcluster.stacks import access_outputs
from fmcluster.stacks.context import StackContext


class ClusterStack(Stack):
    """Composes the orchestrator construct of ``profile.key``: its slice's ``stack.build`` (the registry row,
    :data:`fmcluster.orchestrators.registry.ORCHESTRATORS`) with :class:`OrchestratorInputs`.

    ``groups`` are the resolved compute groups; ``node_contexts`` maps every compute group name to its
    render context (HyperPod also reads the contexts of its controller/login groups when present;
    they run no GPU bootstrap). ``orchestrator`` is the blueprint's orchestrator section (the
    construct takes its kind's settings). ``vpc`` is required when ``profile.needs_vpc`` (ValueError
    otherwise). How scripts travel is the profile's: ``node_bootstrap_delivery == "s3_asset"`` renders
    one :class:`NodeBootstrap` asset per group under ``Bootstrap``; ``"lifecycle"`` leaves the node
    scripts to the orchestrator construct.

    ``head_node_script`` (text) and ``head_node_policy`` go to the node that runs Prometheus: the
    ParallelCluster head node, the HyperPod controller group (Slurm only) or the PCS login node group.
    The script becomes an S3 asset (``HeadNodeScript``) or travels as text with the lifecycle scripts, per
    ``profile.head_node_script_delivery``; a profile without head-node delivery (HyperPod EKS) gets
    neither script nor policy. Default: none (no metrics layer).

    HyperPod EKS: ``eks_plan`` (the resolved EKS side) adds the add-ons that need nodes after the HyperPod cluster;
    ``eks_cluster_arn`` is the ARN of the EKS cluster the ``<name>-eks`` stack creates (a cross-stack token).
    Default: none (an imported cluster's ARN comes from the blueprint).
    ``images`` (:class:`fmcluster.features.node.construct_image.NodeImages`): the AMI of each compute group (bake: the
    ``<name>-image`` stack's, read from its SSM parameter at deploy; custom: ``software.image.ami_id``). Default:
    the orchestrator's official image everywhere.
    ``accounting_database``: the ``<name>-accounting`` stack's database (ParallelCluster with Slurm accounting,
    :mod:`fmcluster.features.accounting.construct`). Default: none.
    ``heartbeat_topic_arn``: the alert topic of the monitoring host's heartbeat alarm (self-hosted metrics:
    :func:`fmcluster.features.observability.construct.monitoring_heartbeat_alarm`, ``HeartbeatAlarm``), created after
    the orchestrator's resources so that it does not fire while the cluster is being created. Default: none.
    ``admin_scripts``: file name -> text of the features' scripts for the node that administers Slurm
    (:func:`fmcluster.features.registry.admin_node_scripts`: the acceptance gate's watcher), run there by the
    orchestrator's slice. Default: none.
    ``alert_topic_arn``: the alert receivers' topic (any metrics mode with a topic), which the capacity window's
    warning also reaches. Default: none. ``lustre_spec``: the blueprint's ``storage.lustre`` (the capacity window's
    preload). Default: none. ``budget_stop_topic_arn``: the topic of the budget's stop notification, which the
    orchestrator's slice subscribes its fleet stop to (docs/capacity.md "Budget"). Default: none.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        profile: OrchestratorProfile,
        orchestrator: OrchestratorSpec,
        cluster_name: str,
        os: str,
        groups: Sequence[ResolvedGroup],
        node_contexts: Mapping[str, NodeContext],
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        placement_groups: Mapping[str, ec2.PlacementGroup],
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
        tags: Mapping[str, str],
        vpc: ec2.IVpc | None = None,
        head_node_script: str | None = None,
        head_node_policy: iam.IManagedPolicy | None = None,
        eks_plan: ClusterPlan | None = None,
        eks_cluster_arn: str | None = None,
        images: NodeImages | None = None,
        accounting_database: SlurmAccountingDatabase | None = None,
        heartbeat_topic_arn: str | None = None,
        admin_scripts: Mapping[str, str] | None = None,
        alert_topic_arn: str | None = None,
        lustre_spec: LustreSpec | None = None,
        budget_stop_topic_arn: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        if profile.needs_vpc and vpc is None:
            raise ValueError(f"orchestrator.kind {profile.kind!r} needs the VPC (ClusterStack(vpc=...))")
        self.bootstraps: dict[str, NodeBootstrap] = {}
        if profile.node_bootstrap_delivery == "s3_asset":
            bootstrap_root = Construct(self, "Bootstrap")
            self.bootstraps = {
                g.name: NodeBootstrap(bootstrap_root, g.name, context=node_contexts[g.name]) for g in groups
            }
        delivery = profile.head_node_script_delivery if head_node_script is not None else None
        inputs = OrchestratorInputs(
            orchestrator=orchestrator, profile=profile, cluster_name=cluster_name, os=os, groups=groups,
            node_contexts=node_contexts, subnet=subnet, security_group=security_group, vpc=vpc,
            placement_groups=placement_groups, lustre=lustre, checkpoints=checkpoints, tags=tags,
            bootstraps=self.bootstraps,
            head_node_asset=(
                ScriptAsset(self, "HeadNodeScript", text=head_node_script, file_name=HEAD_NODE_SCRIPT)
                if head_node_script is not None and delivery == "s3_asset" else None
            ),
            head_node_text=head_node_script if delivery == "lifecycle" else None,
            head_node_policy=head_node_policy if profile.head_node_script_delivery is not None else None,
            images=images, eks_plan=eks_plan, eks_cluster_arn=eks_cluster_arn, accounting_database=accounting_database,
            admin_scripts=dict(admin_scripts or {}),
            alert_topic_arn=alert_topic_arn, lustre_spec=lustre_spec, budget_stop_topic_arn=budget_stop_topic_arn,
        )
        access_outputs.cluster_name(self, cluster_name)
        # what the boot reads from S3 instead of the internet, copied at deploy before any node starts (issue 23)
        self.mirror = node_mirror(self, node_contexts.values())
        self.orchestrator: Construct = ORCHESTRATORS[profile.key].build(self, inputs)
        if self.mirror is not None:
            self.orchestrator.node.add_dependency(self.mirror.copy)
        self.heartbeat_alarm: Construct | None = None
        if heartbeat_topic_arn is not None and inputs.head_node_policy is not None:
            self.heartbeat_alarm = monitoring_heartbeat_alarm(
                self, "HeartbeatAlarm", topic_arn=heartbeat_topic_arn, cluster_name=cluster_name)
            self.heartbeat_alarm.node.add_dependency(self.orchestrator)


def build_stack(ctx: StackContext) -> ClusterStack:
    """The feature registry's ``stack`` hook: ``<name>-cluster`` from the stacks built before it (``network``,
    ``storage``, and when present ``accounting``, ``observability``, the orchestrator's extra stack and ``image``).
    With metrics on, the head node gets the exporter script and the observability node policy; with self-hosted
    metrics the stack also holds the alarm on that node's heartbeat; every feature's script for the node that administers Slurm
    (:func:`fmcluster.features.registry.admin_node_scripts`: the gate's watcher) goes to the orchestrator. In bake mode
    the cluster depends on ``<name>-image`` explicitly: the AMI travels as an SSM parameter, not an export."""
    rc, bp = ctx.rc, ctx.rc.blueprint
    net = ctx.stack("network", NetworkStack).network
    st = ctx.stack("storage", StorageStack).storage
    accounting = ctx.find("accounting", AccountingStack)
    observability = ctx.find("observability", ObservabilityStack)
    image = ctx.find("image", ImageStack)
    obs = observability.observability if observability is not None else None
    cluster = ClusterStack(
        ctx.app, rc.stacks.cluster, env=ctx.env, profile=rc.profile, orchestrator=bp.orchestrator,
        cluster_name=bp.name, os=bp.software.os_name, groups=rc.groups, node_contexts=blueprint_node_contexts(rc),
        vpc=net.vpc, subnet=net.gpu_subnet, security_group=net.efa_security_group,
        placement_groups=net.placement_groups, lustre=st.mount, checkpoints=st.checkpoint_access, tags=rc.tags,
        description=f"fmcluster {bp.name}: {bp.orchestrator.kind} cluster and node bootstrap",
        head_node_script=render_exporter_script(exporter_context(rc, role="head")) if obs is not None else None,
        head_node_policy=obs.node_policy if obs is not None else None,
        eks_plan=rc.eks, eks_cluster_arn=ctx.extra.cluster_arn if ctx.extra is not None else None,
        images=node_images(rc, image),
        accounting_database=accounting.database if accounting is not None else None,
        heartbeat_topic_arn=(
            obs.alert_topic_arn if obs is not None and bp.observability.metrics == "self_hosted" else None),
        admin_scripts=admin_node_scripts(rc),
        alert_topic_arn=obs.alert_topic_arn if obs is not None else None,
        budget_stop_topic_arn=obs.budget_stop_topic_arn if obs is not None else None,
        lustre_spec=bp.storage.lustre,
    )
    if image is not None:
        cluster.add_stack_dependency(image)
    return cluster
