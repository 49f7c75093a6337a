"""``<name>-cluster``: the orchestrator, bootstrap assets and IAM."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.blueprint.model import ComputeGroup, OrchestratorSpec
from fmcluster.constructs.bootstrap import NodeBootstrap
from fmcluster.constructs.orchestrators.parallelcluster import CheckpointAccess, ParallelClusterCluster
from fmcluster.constructs.storage import LustreMount
from fmcluster.templates.context import NodeContext


class ClusterStack(Stack):
    def __init__(
        self, scope: Construct, id: str, *, orchestrator: OrchestratorSpec, cluster_name: str, os: str,
        groups: Sequence[ComputeGroup], node_contexts: Mapping[str, NodeContext], subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup, placement_groups: Mapping[str, ec2.PlacementGroup],
        lustre: LustreMount | None, checkpoints: CheckpointAccess | None, tags: Mapping[str, str], **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        bootstrap_root = Construct(self, "Bootstrap")
        self.bootstraps = {g.name: NodeBootstrap(bootstrap_root, g.name, context=node_contexts[g.name]) for g in groups}
        if orchestrator.kind == "parallelcluster":
            self.orchestrator = ParallelClusterCluster(
                self, "ParallelCluster", spec=orchestrator.parallelcluster, cluster_name=cluster_name,
                region=self.region, os=os, groups=groups, subnet=subnet, security_group=security_group,
                placement_groups=placement_groups, bootstraps=self.bootstraps, lustre=lustre,
                checkpoints=checkpoints, tags=tags,
            )
        else:
            raise NotImplementedError(f"orchestrator.kind {orchestrator.kind!r} is not implemented yet")
