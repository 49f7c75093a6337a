"""Typed render context for the metrics layer, built once from the resolved cluster.

Everything downstream (Prometheus config, alert rules, dashboards, exporter scripts) renders from
:class:`ObservabilityContext`, never from YAML, so expected GPU and EFA counts come from one place
(:class:`fmcluster.resolved.ResolvedGroup`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from fmcluster.blueprint.model import LustreSpec, ObservabilitySpec
from fmcluster.orchestrators.profile import Discovery, MetricsCollector, OrchestratorProfile
from fmcluster.resolved import ResolvedCluster, ResolvedGroup

MetricsMode = Literal["managed", "self_hosted"]

#: Written into the rendered Prometheus agent config in place of the AMP remote-write URL; the head-node
#: script replaces it with the URL it reads from the SSM parameter at boot.
REMOTE_WRITE_PLACEHOLDER = "FMCLUSTER_AMP_WORKSPACE"


def node_discovery(spec: ObservabilitySpec, profile: OrchestratorProfile) -> Discovery:
    """How Prometheus finds the nodes: ``observability.node_discovery``, with ``auto`` meaning the
    orchestrator's default (:attr:`OrchestratorProfile.default_node_discovery`)."""
    return profile.default_node_discovery if spec.node_discovery == "auto" else spec.node_discovery


@dataclass(frozen=True)
class GroupFacts:
    """One compute group as the dashboards see it (per-node values from the resolved group)."""

    name: str
    instance_type: str
    count: int
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gib: int
    efa_devices_per_node: int
    network_gbps_per_node: int
    cpu_architecture: str
    #: Nodes the orchestrator keeps running (``ComputeGroup.effective_min_count``; 0: the group can scale to zero).
    min_count: int = 0
    #: EFA devices the instance type has (the catalog's count), whether or not the group uses them
    #: (``efa_devices_per_node`` is 0 when EFA is off): what an exporter of the host's devices lists.
    efa_interfaces_per_node: int = 0

    @property
    def gpus_total(self) -> int:
        return self.gpus_per_node * self.count

    @property
    def efa_devices_total(self) -> int:
        return self.efa_devices_per_node * self.count


@dataclass(frozen=True)
class LustreFacts:
    storage_capacity_gib: int
    throughput_mbps: int
    mount_point: str


@dataclass(frozen=True)
class ObservabilityContext:
    blueprint_name: str
    region: str
    orchestrator: str
    metrics: MetricsMode
    scrape_interval_s: int
    scrape_timeout_s: int
    discovery: Discovery
    groups: tuple[GroupFacts, ...]
    lustre: LustreFacts | None
    os: str
    #: SSM parameter nodes read at boot (:attr:`ResolvedCluster.observability_parameter`).
    ssm_parameter: str
    #: What writes the metrics (:attr:`OrchestratorProfile.metrics_collector`); the alert rules depend on it.
    collector: MetricsCollector = "head_node"

    @property
    def uid_suffix(self) -> str:
        """Stable short id for dashboard uids (Grafana uids are at most 40 characters)."""
        return hashlib.sha1(self.blueprint_name.encode()).hexdigest()[:8]

    @property
    def gpu_instance_types(self) -> tuple[str, ...]:
        return tuple(sorted({g.instance_type for g in self.groups if g.gpus_per_node > 0}))

    @property
    def nodes_total(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def gpus_total(self) -> int:
        return sum(g.gpus_total for g in self.groups)

    @property
    def efa_devices_total(self) -> int:
        return sum(g.efa_devices_total for g in self.groups)


def group_facts(g: ResolvedGroup) -> GroupFacts:
    inst = g.instance
    return GroupFacts(
        name=g.name,
        instance_type=inst.name,
        count=g.spec.count,
        gpu_model=inst.gpu.model,
        gpus_per_node=inst.gpu.count,
        gpu_memory_gib=inst.gpu.memory_gib,
        efa_devices_per_node=g.efa_devices,
        network_gbps_per_node=inst.network_gbps,
        cpu_architecture=inst.cpu_architecture,
        min_count=g.spec.effective_min_count,
        efa_interfaces_per_node=inst.efa_interface_count,
    )


def lustre_facts(fs: LustreSpec | None) -> LustreFacts | None:
    if fs is None:
        return None
    return LustreFacts(storage_capacity_gib=fs.storage_capacity_gib, throughput_mbps=fs.throughput_mbps,
                       mount_point=fs.mount_point)


def observability_context(rc: ResolvedCluster) -> ObservabilityContext:
    """Build the context; raises ValueError when the blueprint has no metrics layer (metrics: none)."""
    bp = rc.blueprint
    spec = bp.observability
    if spec.metrics == "none":
        raise ValueError("observability.metrics is 'none': there is no metrics layer to render")
    return ObservabilityContext(
        blueprint_name=rc.name,
        region=bp.region,
        orchestrator=rc.profile.kind,
        metrics=spec.metrics,
        scrape_interval_s=spec.scrape_interval_seconds,
        scrape_timeout_s=spec.scrape_timeout_seconds,
        discovery=node_discovery(spec, rc.profile),
        groups=tuple(group_facts(g) for g in rc.groups),
        lustre=lustre_facts(bp.storage.lustre),
        os=bp.software.os_name,
        ssm_parameter=rc.observability_parameter,
        collector=rc.profile.metrics_collector,
    )
