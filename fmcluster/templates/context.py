"""Typed render context for node scripts, built from validated blueprint sections and catalog facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fmcluster.blueprint.model import ComputeGroup, LustreSpec, SoftwareSpec
from fmcluster.catalog import get_instance
from fmcluster.catalog.software import get_stack


@dataclass(frozen=True)
class NodeContext:
    """Everything a node script needs for one compute group. Versions are fully resolved pins."""

    blueprint_name: str
    group_name: str
    orchestrator: str
    os: str
    instance_type: str
    family: str
    cpu_architecture: str
    gpu_model: str
    gpu_count: int
    efa_enabled: bool
    efa_device_count: int
    fabric_manager: bool
    nvlsm: bool
    imex: bool
    gdr_required: bool
    nvme_count: int
    scratch_path: str
    fsx_mount_point: str | None
    stack_name: str
    kernel_modules: str
    versions: dict[str, str | None]
    environment: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def node_context(
    *, blueprint_name: str, orchestrator: str, group: ComputeGroup, software: SoftwareSpec, lustre: LustreSpec | None
) -> NodeContext:
    """Build the context for ``group`` (pins = the named stack with the blueprint's overrides)."""
    inst = get_instance(group.instance_type)
    stack = get_stack(software.stack).with_overrides(software.overrides.as_dict())
    return NodeContext(
        blueprint_name=blueprint_name,
        group_name=group.name,
        orchestrator=orchestrator,
        os=software.os,
        instance_type=inst.name,
        family=inst.family,
        cpu_architecture=inst.cpu_architecture,
        gpu_model=inst.gpu.model,
        gpu_count=inst.gpu.count,
        efa_enabled=group.efa_enabled,
        efa_device_count=inst.efa_interface_count if group.efa_enabled else 0,
        fabric_manager=inst.fabric_manager,
        nvlsm=inst.nvlsm,
        imex=inst.imex,
        gdr_required=inst.gdr_required,
        nvme_count=inst.nvme.count,
        scratch_path=group.scratch_path,
        fsx_mount_point=lustre.mount_point if lustre else None,
        stack_name=stack.name,
        kernel_modules=stack.kernel_modules,
        versions=stack.versions(),
        environment=dict(software.environment),
    )
