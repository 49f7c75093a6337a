"""``<name>-cluster``: the orchestrator, bootstrap assets and IAM."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.constructs.accounting import SlurmAccountingDatabase
from fmcluster.constructs.bootstrap import NodeBootstrap, ScriptAsset
from fmcluster.constructs.image import NodeImages
from fmcluster.constructs.orchestrators.common import HEAD_NODE_SCRIPT
from fmcluster.constructs.orchestrators.parallelcluster import ParallelClusterCluster
from fmcluster.constructs.storage import CheckpointAccess, LustreMount
from fmcluster.resolved import OrchestratorProfile, ResolvedGroup
from fmcluster.resolved.eks import EksPlan
from fmcluster.resolved.profiles import PCS_LOGIN_GROUP
from fmcluster.stacks import access_outputs
from fmcluster.templates.context import NodeContext

if TYPE_CHECKING:  # imported where used: a synth loads only its own orchestrator's CDK modules
    from typing import TypeAlias

    from fmcluster.constructs.orchestrators.hyperpod import HyperPodCluster
    from fmcluster.constructs.orchestrators.pcs import PcsCluster

    OrchestratorConstruct: TypeAlias = ParallelClusterCluster | HyperPodCluster | PcsCluster


@dataclass(frozen=True)
class _Parts:
    """What the cluster stack built before the orchestrator construct, for the builders below.

    ``head_node_asset`` is set when the profile delivers the head-node script as an S3 asset,
    ``head_node_text`` when it travels with the lifecycle scripts; at most one of them is set.
    """

    orchestrator: OrchestratorSpec
    profile: OrchestratorProfile
    os: str
    vpc: ec2.IVpc | None
    placement_groups: Mapping[str, ec2.PlacementGroup]
    node_contexts: Mapping[str, NodeContext]
    bootstraps: Mapping[str, NodeBootstrap]
    head_node_asset: ScriptAsset | None
    head_node_text: str | None
    eks_plan: EksPlan | None = None
    eks_cluster_arn: str | None = None
    accounting_database: SlurmAccountingDatabase | None = None

    def require_vpc(self) -> ec2.IVpc:
        """The VPC (ClusterStack refuses a ``needs_vpc`` profile without one before building anything)."""
        assert self.vpc is not None
        return self.vpc


def _parallelcluster(stack: ClusterStack, parts: _Parts, shared: dict[str, Any]) -> OrchestratorConstruct:
    pc = ParallelClusterCluster(
        stack, "ParallelCluster", spec=parts.orchestrator.parallelcluster, profile=parts.profile, region=stack.region,
        os=parts.os, placement_groups=parts.placement_groups, bootstraps=parts.bootstraps,
        head_node_script=parts.head_node_asset, accounting=parts.accounting_database, **shared,
    )
    access_outputs.parallelcluster(stack, pc.resource, region=stack.region)
    return pc


def _hyperpod(stack: ClusterStack, parts: _Parts, shared: dict[str, Any]) -> OrchestratorConstruct:
    from fmcluster.constructs.orchestrators.hyperpod import HyperPodCluster

    hp = HyperPodCluster(
        stack, "HyperPod", spec=parts.orchestrator.hyperpod, profile=parts.profile, node_contexts=parts.node_contexts,
        vpc=parts.require_vpc(), head_node_script=parts.head_node_text, eks_cluster_arn=parts.eks_cluster_arn,
        **shared,
    )
    if parts.eks_plan is not None and parts.eks_plan.addons_after_nodes:
        from fmcluster.constructs.orchestrators.eks import EksWorkloadAddons

        EksWorkloadAddons(stack, "EksAddons", plan=parts.eks_plan, cluster_name=parts.eks_plan.cluster_name,
                          after=[hp.cluster], tags=shared["tags"])
    CfnOutput(stack, "ClusterArn", value=hp.cluster.attr_cluster_arn)
    CfnOutput(stack, "LifecycleBucket", value=hp.bucket.bucket_name)
    access_outputs.hyperpod(stack, hp.cluster, profile=parts.profile, region=stack.region)
    return hp


def _pcs(stack: ClusterStack, parts: _Parts, shared: dict[str, Any]) -> OrchestratorConstruct:
    from fmcluster.constructs.orchestrators.pcs import PcsCluster

    pcs = PcsCluster(
        stack, "Pcs", spec=parts.orchestrator.pcs, profile=parts.profile, os=parts.os, vpc=parts.require_vpc(),
        placement_groups=parts.placement_groups, bootstraps=parts.bootstraps, head_node_script=parts.head_node_asset,
        accounting=parts.orchestrator.slurm.accounting, **shared,
    )
    CfnOutput(stack, "PcsClusterId", value=pcs.cluster.attr_id)
    access_outputs.pcs(stack, pcs.node_groups[PCS_LOGIN_GROUP], region=stack.region)
    return pcs


#: The orchestrator construct (and its stack outputs) per ``OrchestratorProfile.kind``. Adding an
#: orchestrator means adding its profile (``fmcluster.resolved.profiles``), its construct and a row here.
ORCHESTRATOR_BUILDERS: Mapping[str, Callable[[ClusterStack, _Parts, dict[str, Any]], OrchestratorConstruct]] = {
    "parallelcluster": _parallelcluster,
    "hyperpod": _hyperpod,
    "pcs": _pcs,
}


class ClusterStack(Stack):
    """Composes the orchestrator construct of ``profile.kind`` (:data:`ORCHESTRATOR_BUILDERS`).

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
    ``images`` (:class:`fmcluster.constructs.image.NodeImages`): the AMI of each compute group (bake: the
    ``<name>-image`` stack's, read from its SSM parameter at deploy; custom: ``software.image.ami_id``). Default:
    the orchestrator's official image everywhere.
    ``accounting_database``: the ``<name>-accounting`` stack's database (ParallelCluster with Slurm accounting,
    :mod:`fmcluster.constructs.accounting`). Default: none.
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
        eks_plan: EksPlan | None = None,
        eks_cluster_arn: str | None = None,
        images: NodeImages | None = None,
        accounting_database: SlurmAccountingDatabase | None = None,
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
        parts = _Parts(
            orchestrator=orchestrator, profile=profile, os=os, vpc=vpc, placement_groups=placement_groups,
            node_contexts=node_contexts, bootstraps=self.bootstraps,
            head_node_asset=(
                ScriptAsset(self, "HeadNodeScript", text=head_node_script, file_name=HEAD_NODE_SCRIPT)
                if head_node_script is not None and delivery == "s3_asset" else None
            ),
            head_node_text=head_node_script if delivery == "lifecycle" else None,
            eks_plan=eks_plan, eks_cluster_arn=eks_cluster_arn, accounting_database=accounting_database,
        )
        # What every orchestrator construct receives; each builder adds only what differs.
        shared: dict[str, Any] = {
            "cluster_name": cluster_name, "groups": groups, "subnet": subnet, "security_group": security_group,
            "lustre": lustre, "checkpoints": checkpoints, "tags": tags,
            "head_node_policy": head_node_policy if profile.head_node_script_delivery is not None else None,
            "images": images,
        }
        access_outputs.cluster_name(self, cluster_name)
        self.orchestrator: OrchestratorConstruct = ORCHESTRATOR_BUILDERS[profile.kind](self, parts, shared)
