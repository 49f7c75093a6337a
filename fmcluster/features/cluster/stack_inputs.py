"""What every orchestrator's stack wiring receives from ``<name>-cluster`` (:class:`OrchestratorInputs`): the typed
contract between :class:`fmcluster.features.cluster.stack.ClusterStack` and the orchestrator slices' ``stack.py``
builders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam

from fmcluster.blueprint.model import LustreSpec, OrchestratorSpec
from fmcluster.features.accounting.construct import SlurmAccountingDatabase
from fmcluster.features.node.construct_bootstrap import NodeBootstrap, ScriptAsset
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.node.render_context import NodeContext
from fmcluster.features.storage.construct import CheckpointAccess, LustreMount
from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.orchestrators.registry import ClusterPlan
from fmcluster.resolved import ResolvedGroup


@dataclass(frozen=True)
class OrchestratorInputs:
    """Everything the orchestrator construct of a cluster is built from.

    Attributes:
        orchestrator: the blueprint's orchestrator section (a construct takes its kind's settings).
        profile: the orchestrator's profile.
        cluster_name: the blueprint name.
        os: the blueprint's ``software.os`` name.
        groups: the resolved compute groups.
        node_contexts: render context per compute group (HyperPod also: controller/login groups).
        subnet, security_group: the GPU subnet and the EFA security group.
        vpc: the VPC (``None`` only for profiles without ``needs_vpc``; :meth:`require_vpc`).
        placement_groups: cluster placement group per EFA group name.
        lustre, checkpoints: the file system mount and the checkpoint bucket access, or ``None``.
        tags: the blueprint's tags.
        bootstraps: the per-group S3 bootstrap assets (profiles delivering by ``s3_asset``), else empty.
        head_node_asset: the head-node script as an S3 asset (``s3_asset`` delivery), else ``None``.
        head_node_text: the head-node script as text (``lifecycle`` delivery), else ``None``.
        head_node_policy: the observability policy of the node that runs Prometheus, or ``None``.
        images: the AMI per compute group (:class:`fmcluster.features.node.construct_image.NodeImages`), or ``None``.
        eks_plan, eks_cluster_arn: HyperPod EKS: the resolved EKS side and the created cluster's ARN, or ``None``.
        accounting_database: the Slurm accounting database (ParallelCluster), or ``None``.
        admin_scripts: file name -> text of the scripts for the node that administers Slurm (the acceptance gate's
            watcher), which each Slurm orchestrator runs as root there after Slurm is configured; empty: none.
        alert_topic_arn: the alert receivers' SNS topic (created or ``observability.alert_topic_arn``), or ``None``
            without one; the capacity window's rule publishes its warning there (docs/capacity.md).
        lustre_spec: the blueprint's ``storage.lustre`` (the capacity window's preload reads its data repositories,
            mount point and throughput), or ``None``.
        budget_stop_topic_arn: the SNS topic of the budget's stop notification (``budget.stop_compute_at_percent``),
            or ``None``: each Slurm orchestrator's slice subscribes its fleet stop to it
            (:class:`fmcluster.features.capacity_window.construct_fleet_stop.FleetStopAction`).
    """

    orchestrator: OrchestratorSpec
    profile: OrchestratorProfile
    cluster_name: str
    os: str
    groups: Sequence[ResolvedGroup]
    node_contexts: Mapping[str, NodeContext]
    subnet: ec2.ISubnet
    security_group: ec2.ISecurityGroup
    vpc: ec2.IVpc | None
    placement_groups: Mapping[str, ec2.PlacementGroup]
    lustre: LustreMount | None
    checkpoints: CheckpointAccess | None
    tags: Mapping[str, str]
    bootstraps: Mapping[str, NodeBootstrap]
    head_node_asset: ScriptAsset | None
    head_node_text: str | None
    head_node_policy: iam.IManagedPolicy | None
    images: NodeImages | None
    eks_plan: ClusterPlan | None = None
    eks_cluster_arn: str | None = None
    accounting_database: SlurmAccountingDatabase | None = None
    admin_scripts: Mapping[str, str] = field(default_factory=dict)
    alert_topic_arn: str | None = None
    lustre_spec: LustreSpec | None = None
    budget_stop_topic_arn: str | None = None

    def require_vpc(self) -> ec2.IVpc:
        """The VPC (ClusterStack refuses a ``needs_vpc`` profile without one before building anything)."""
        assert self.vpc is not None
        return self.vpc
