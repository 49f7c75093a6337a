"""``<name>-cluster``: the orchestrator, bootstrap assets and IAM."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmcluster.blueprint.model import ComputeGroup, OrchestratorSpec
from fmcluster.constructs.bootstrap import NodeBootstrap, ScriptAsset
from fmcluster.constructs.orchestrators.common import HEAD_NODE_SCRIPT, CheckpointAccess
from fmcluster.constructs.orchestrators.parallelcluster import ParallelClusterCluster
from fmcluster.constructs.storage import LustreMount
from fmcluster.templates.context import NodeContext

if TYPE_CHECKING:  # imported where used: a synth loads only its own orchestrator's CDK modules
    from fmcluster.constructs.orchestrators.hyperpod import HyperPodCluster
    from fmcluster.constructs.orchestrators.pcs import PcsCluster


class ClusterStack(Stack):
    """Composes one orchestrator construct from ``orchestrator.kind``.

    ``node_contexts`` maps every compute group name to its render context; HyperPod also reads the
    contexts of its controller/login groups when present (they run no GPU bootstrap).

    ``head_node_script`` (text) and ``head_node_policy`` go to the node that runs Prometheus: the
    ParallelCluster head node, the HyperPod controller group (Slurm only) or the PCS login node group.
    Default: none (no metrics layer).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        orchestrator: OrchestratorSpec,
        cluster_name: str,
        os: str,
        groups: Sequence[ComputeGroup],
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
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        kind = orchestrator.kind
        if kind in ("hyperpod", "pcs") and vpc is None:
            raise ValueError(f"orchestrator.kind {kind!r} needs the VPC (ClusterStack(vpc=...))")
        self.bootstraps: dict[str, NodeBootstrap] = {}
        if kind in ("parallelcluster", "pcs"):
            # HyperPod ships the node scripts with its lifecycle scripts instead of separate assets.
            bootstrap_root = Construct(self, "Bootstrap")
            self.bootstraps = {
                g.name: NodeBootstrap(bootstrap_root, g.name, context=node_contexts[g.name]) for g in groups
            }
        # ParallelCluster and PCS download the head-node script from an S3 asset; HyperPod ships it with the
        # controller group's lifecycle scripts.
        head_asset = (
            ScriptAsset(self, "HeadNodeScript", text=head_node_script, file_name=HEAD_NODE_SCRIPT)
            if head_node_script and kind in ("parallelcluster", "pcs")
            else None
        )
        # What every orchestrator construct receives; each call below adds only what differs.
        shared: dict[str, Any] = {
            "cluster_name": cluster_name, "groups": groups, "subnet": subnet, "security_group": security_group,
            "lustre": lustre, "checkpoints": checkpoints, "tags": tags, "head_node_policy": head_node_policy,
        }
        self.orchestrator: ParallelClusterCluster | HyperPodCluster | PcsCluster
        if kind == "parallelcluster":
            self.orchestrator = ParallelClusterCluster(
                self, "ParallelCluster", spec=orchestrator.parallelcluster, region=self.region, os=os,
                placement_groups=placement_groups, bootstraps=self.bootstraps, head_node_script=head_asset, **shared,
            )
        elif kind == "hyperpod":
            from fmcluster.constructs.orchestrators.hyperpod import HyperPodCluster

            assert vpc is not None
            self.orchestrator = HyperPodCluster(
                self, "HyperPod", spec=orchestrator.hyperpod, node_contexts=node_contexts, vpc=vpc,
                head_node_script=head_node_script, **shared,
            )
            CfnOutput(self, "ClusterArn", value=self.orchestrator.cluster.attr_cluster_arn)
            CfnOutput(self, "LifecycleBucket", value=self.orchestrator.bucket.bucket_name)
        else:
            from fmcluster.constructs.orchestrators.pcs import PcsCluster

            assert vpc is not None
            self.orchestrator = PcsCluster(
                self, "Pcs", spec=orchestrator.pcs, os=os, vpc=vpc, placement_groups=placement_groups,
                bootstraps=self.bootstraps, head_node_script=head_asset, **shared,
            )
            CfnOutput(self, "PcsClusterId", value=self.orchestrator.cluster.attr_id)
