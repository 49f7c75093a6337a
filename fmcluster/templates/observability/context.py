"""Typed render context for the metrics layer, built once from the blueprint and the instance catalog.

Everything downstream (Prometheus config, alert rules, dashboards, exporter scripts) renders from
:class:`ObservabilityContext`, never from YAML, so expected GPU and EFA counts come from one place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from fmcluster.blueprint.model import Blueprint, ObservabilitySpec
from fmcluster.catalog import get_instance

Discovery = Literal["ec2", "slurm"]
MetricsMode = Literal["managed", "self_hosted"]

#: Tag every cluster node carries (build.py tags the whole app with it); EC2 service discovery filters on it.
BLUEPRINT_TAG = "fmcluster:blueprint"
#: Written into the rendered Prometheus agent config in place of the AMP remote-write URL; the head-node
#: script replaces it with the URL it reads from the SSM parameter at boot.
REMOTE_WRITE_PLACEHOLDER = "FMCLUSTER_AMP_WORKSPACE"


def ssm_parameter_name(blueprint_name: str) -> str:
    """SSM parameter (String, JSON) that nodes read at boot: mode, region, remote-write URL, Grafana URL."""
    return f"/fmcluster/{blueprint_name}/observability"


def effective_discovery(spec: ObservabilitySpec, orchestrator_kind: str) -> Discovery:
    """``auto`` -> ``slurm`` for HyperPod (nodes are not EC2 instances of the account), else ``ec2``."""
    if spec.node_discovery != "auto":
        return spec.node_discovery
    return "slurm" if orchestrator_kind == "hyperpod" else "ec2"


@dataclass(frozen=True)
class GroupFacts:
    """One compute group as the dashboards and exporters see it (per-node values from the catalog)."""

    name: str
    instance_type: str
    count: int
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gib: int
    efa_devices_per_node: int
    network_gbps_per_node: int
    cpu_architecture: str

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

    @property
    def ssm_parameter(self) -> str:
        return ssm_parameter_name(self.blueprint_name)

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


def observability_context(bp: Blueprint) -> ObservabilityContext:
    """Build the context; raises ValueError when the blueprint has no metrics layer (metrics: none)."""
    spec = bp.observability
    if spec.metrics == "none":
        raise ValueError("observability.metrics is 'none': there is no metrics layer to render")
    groups = []
    for g in bp.compute:
        inst = get_instance(g.instance_type)
        groups.append(
            GroupFacts(
                name=g.name,
                instance_type=inst.name,
                count=g.count,
                gpu_model=inst.gpu.model,
                gpus_per_node=inst.gpu.count,
                gpu_memory_gib=inst.gpu.memory_gib,
                efa_devices_per_node=inst.efa_interface_count if g.efa_enabled else 0,
                network_gbps_per_node=inst.network_gbps,
                cpu_architecture=inst.cpu_architecture,
            )
        )
    fs = bp.storage.lustre
    lustre = (
        None
        if fs is None
        else LustreFacts(
            storage_capacity_gib=fs.storage_capacity_gib,
            throughput_mbps=fs.throughput_mbps,
            mount_point=fs.mount_point,
        )
    )
    return ObservabilityContext(
        blueprint_name=bp.name,
        region=bp.region,
        orchestrator=bp.orchestrator.kind,
        metrics=spec.metrics,
        scrape_interval_s=spec.scrape_interval_seconds,
        scrape_timeout_s=spec.scrape_timeout_seconds,
        discovery=effective_discovery(spec, bp.orchestrator.kind),
        groups=tuple(groups),
        lustre=lustre,
        os=bp.software.os,
    )
