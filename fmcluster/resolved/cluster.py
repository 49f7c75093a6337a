"""Resolve a blueprint once: every derived fact, computed in one place and frozen.

:func:`resolve` is fmcluster's expand step (the model of Cluster Toolkit's ``pkg/config/expand.go``):
defaults and wiring are applied once, and everything downstream (the rules that need derived values,
templates, constructs, stacks, the plan and preflight) reads the :class:`ResolvedCluster` instead of
recomputing. Only facts that depend on more than one blueprint field, on the catalog or on the
orchestrator live here; a section's own defaults stay properties of the model
(``ComputeGroup.efa_enabled``, ``LustreSpec.throughput_mbps``).

Resolving never raises on a shape-valid blueprint: what cannot be resolved (a catalog stack whose
downloads are missing, say) is left for the rules to report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fmcluster.blueprint.model import Blueprint, ComputeGroup, SoftwareSpec
from fmcluster.catalog import InstanceSpec, get_instance
from fmcluster.catalog.networking import InterfaceSlot, describe_layout, interface_layout, layout_ipv4
from fmcluster.catalog.software import SoftwareStack, get_stack
from fmcluster.features.registry import FEATURES
from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.orchestrators.registry import ClusterPlan, profile_for, row_for
from fmcluster.resolved.slots import AccountingSlot, ContainerSlot, ImageSlot, SubnetSlot
from fmcluster.resolved.support import SupportPin, support_pins

#: Where fmcluster puts its own files on a node (scripts, job environment, observability).
NODE_DIR = "/opt/fmcluster"
#: Tag every cluster resource and node carries (``Tags.of(app)``); EC2 service discovery filters on it.
BLUEPRINT_TAG = "fmcluster:blueprint"


@dataclass(frozen=True)
class StackNames:
    """CloudFormation stack names of one blueprint (``<name>-network`` ...); ``observability`` is
    ``None`` when ``observability.metrics`` is ``none``; ``image`` (``<name>-image``, the baked AMIs) is ``None``
    unless ``software.image.mode`` is ``bake``."""

    network: str
    storage: str
    cluster: str
    observability: str | None
    #: ``<name>-eks``: the EKS cluster fmcluster creates for HyperPod EKS orchestration, else ``None``.
    eks: str | None = None
    #: ``<name>-image``: the EC2 Image Builder stack of bake mode, else ``None``.
    image: str | None = None
    #: ``<name>-accounting``: the Slurm accounting database (ParallelCluster with accounting on), else ``None``.
    accounting: str | None = None
    #: ``<name>-addons``: what the orchestrator installs after its cluster stack (HyperPod EKS: the add-ons that need
    #: nodes, in a stack whose failure leaves the cluster: docs/decisions.md 50), else ``None``.
    addons: str | None = None

    def all(self) -> list[str]:
        """Every stack, in the order ``fmcluster plan`` lists them (network, storage, accounting, observability, image,
        eks, cluster, addons)."""
        return [self.network, self.storage, *([self.accounting] if self.accounting else []),
                *([self.observability] if self.observability else []),
                *([self.image] if self.image else []), *([self.eks] if self.eks else []), self.cluster,
                *([self.addons] if self.addons else [])]


@dataclass(frozen=True)
class ResolvedGroup:
    """One compute group with its derived facts.

    Attributes:
        spec: the blueprint's ``compute[index]``.
        index: position in ``compute`` (for YAML paths such as ``compute[2].count``).
        instance: catalog facts of ``spec.instance_type``.
        interfaces: launch-template network interfaces of one node (``catalog.networking.interface_layout``
            for the profile's EFA interface type).
        efa_devices: EFA devices per node (0 when EFA is off).
        ipv4_per_node: private IPv4 addresses one node takes from the GPU subnet.
        placement_group: True when the network stack creates a cluster placement group for this group.
        imex: True when the group's nodes get the IMEX domain set per job: an NVLink-domain type (catalog ``imex``)
            whose capacity type the orchestrator wires (:meth:`fmcluster.orchestrators.profile.ImexWiring.wires`).
            The one fact R-IMEX-1 and the orchestrator constructs read.
        cpu_options: launch-template ``CpuOptions`` turning SMT off (``threads_per_core: 1`` on x86), else None.
        image: what the group boots, the lock it is verified against and the boot-time estimate: the node
            feature's group plan (``fmcluster.features.node.plan_image.ResolvedImage``; the core reads
            :class:`fmcluster.resolved.slots.ImageSlot`).
    """

    spec: ComputeGroup
    index: int
    instance: InstanceSpec
    interfaces: tuple[InterfaceSlot, ...]
    efa_devices: int
    ipv4_per_node: int
    placement_group: bool
    imex: bool
    cpu_options: dict[str, int] | None
    image: ImageSlot

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def path(self) -> str:
        """YAML path of the group, e.g. ``compute[0]``."""
        return f"compute[{self.index}]"

    @property
    def interface_summary(self) -> str:
        """Short form of :attr:`interfaces`, e.g. ``1 interface + 32 efa-only``."""
        return describe_layout(self.interfaces)


@dataclass(frozen=True)
class ResolvedCluster:
    """A blueprint with every derived fact (see module docstring). Build with :func:`resolve`.

    Attributes:
        blueprint: the validated blueprint it was resolved from.
        profile: the orchestrator's profile (:mod:`fmcluster.orchestrators.profile`).
        groups: one :class:`ResolvedGroup` per compute group, in blueprint order.
        software: the catalog stack with ``software.overrides`` applied, or ``None`` when the stack name
            is unknown (the model reports that).
        stacks: CloudFormation stack names.
        subnet: GPU-subnet IPv4 usage (the network feature's plan; :class:`fmcluster.resolved.slots.SubnetSlot`).
        observability_parameter: SSM parameter (String, JSON) nodes read at boot for the metrics layer.
        node_dir: where fmcluster keeps its files on nodes (:data:`NODE_DIR`).
        tags: tags on every resource: ``fmcluster:blueprint`` plus the blueprint's tags.
        eks: the orchestrator's own plan (its registry row's ``plan``; HyperPod EKS: the EKS side,
            :func:`fmcluster.orchestrators.hyperpod_eks.plan.eks_plan`), else ``None``.
        containers: the blueprint's container images (the containers feature's plan;
            :class:`fmcluster.resolved.slots.ContainerSlot`).
        accounting: Slurm accounting (the accounting feature's plan; :class:`fmcluster.resolved.slots.AccountingSlot`).
        support: the components the support calendar covers, with version and YAML path
            (:func:`fmcluster.resolved.support.support_pins`).

    ``subnet``, ``containers`` and ``accounting`` (and each group's ``image``) are filled by the registered features'
    ``plan`` (``group_plan``) hooks, named by their rows' ``plan_slot`` (:data:`fmcluster.features.registry.FEATURES`).
    """

    blueprint: Blueprint
    profile: OrchestratorProfile
    groups: tuple[ResolvedGroup, ...]
    software: SoftwareStack | None
    stacks: StackNames
    subnet: SubnetSlot
    observability_parameter: str
    node_dir: str
    tags: dict[str, str]
    eks: ClusterPlan | None = None
    containers: tuple[ContainerSlot, ...] = ()
    accounting: AccountingSlot | None = None
    support: tuple[SupportPin, ...] = ()

    @property
    def name(self) -> str:
        return self.blueprint.name

    @property
    def efa_interface_type(self) -> str:
        return self.profile.efa_interface_type

    @property
    def cpu_architectures(self) -> set[str]:
        """CPU architectures of the compute groups (:func:`cpu_architectures`)."""
        return {g.instance.cpu_architecture for g in self.groups}

    @property
    def placement_group_names(self) -> list[str]:
        """Groups that get a cluster placement group (:attr:`ResolvedGroup.placement_group`)."""
        return [g.name for g in self.groups if g.placement_group]

    def group(self, name: str) -> ResolvedGroup:
        """The resolved group called ``name``. Raises KeyError for an unknown name."""
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(name)


def observability_parameter_name(blueprint_name: str) -> str:
    """SSM parameter (String, JSON) that nodes read at boot: mode, region, remote-write URL, Grafana URL."""
    return f"/fmcluster/{blueprint_name}/observability"


def stack_names(bp: Blueprint, accounting: AccountingSlot | None) -> StackNames:
    """The stack names of ``bp``; ``accounting``: its accounting plan (``<name>-accounting`` exists when it creates
    a database)."""
    plan = row_for(bp.orchestrator).plan_for(bp)
    return StackNames(
        network=f"{bp.name}-network", storage=f"{bp.name}-storage", cluster=f"{bp.name}-cluster",
        observability=f"{bp.name}-observability" if bp.observability.enabled else None,
        eks=f"{bp.name}-eks" if plan is not None and plan.creates_cluster else None,
        addons=f"{bp.name}-addons" if plan is not None and plan.has_late_stack else None,
        image=f"{bp.name}-image" if bp.software.image.mode == "bake" else None,
        accounting=f"{bp.name}-accounting" if accounting is not None and accounting.creates_database else None,
    )


def smt_off_cpu_options(inst: InstanceSpec, threads_per_core: int) -> dict[str, int] | None:
    """Launch-template ``CpuOptions`` that turn SMT off (``threads_per_core == 1``) on x86; ``None``
    otherwise (arm64 Grace cores have one thread each already)."""
    if threads_per_core == 2 or inst.cpu_architecture != "x86_64":
        return None
    return {"CoreCount": inst.vcpus // 2, "ThreadsPerCore": 1}


def resolve_group(index: int, group: ComputeGroup, profile: OrchestratorProfile, bp: Blueprint,
                  stack: SoftwareStack | None) -> ResolvedGroup:
    inst = get_instance(group.instance_type)
    slots = interface_layout(inst, efa=group.efa_enabled, interface_type=profile.efa_interface_type)
    return ResolvedGroup(
        spec=group, index=index, instance=inst, interfaces=slots,
        efa_devices=inst.efa_interface_count if group.efa_enabled else 0,
        ipv4_per_node=layout_ipv4(slots),
        # Orchestrators that place nodes themselves (HyperPod) have no placement-group setting.
        placement_group=group.uses_placement_group and not profile.places_nodes_itself,
        imex=inst.imex and profile.imex.wires(group.capacity.type),
        cpu_options=smt_off_cpu_options(inst, group.threads_per_core),
        **group_plans(bp, inst, stack, efa_enabled=group.efa_enabled),
    )


def group_plans(bp: Blueprint, inst: InstanceSpec, stack: SoftwareStack | None, *,
                efa_enabled: bool) -> dict[str, Any]:
    """``{ResolvedGroup field: plan}`` of one compute group of ``inst``: every registered feature's ``group_plan``
    hook, in registry order."""
    return {f.group_plan_slot: f.resolve_group_plan(bp, inst, stack, efa_enabled=efa_enabled)
            for f in FEATURES.values() if f.group_plan is not None and f.group_plan_slot is not None}


def feature_plans(bp: Blueprint, profile: OrchestratorProfile) -> dict[str, Any]:
    """``{ResolvedCluster field: plan}``: every registered feature's ``plan`` hook, in registry order."""
    return {f.plan_slot: f.resolve_plan(bp, profile)
            for f in FEATURES.values() if f.plan is not None and f.plan_slot is not None}


def software_stack(spec: SoftwareSpec) -> SoftwareStack:
    """The catalog stack ``spec.stack`` with ``spec.overrides`` applied. Raises KeyError for an unknown
    stack name (the model refuses those)."""
    return get_stack(spec.stack_name).with_overrides(spec.overrides.as_dict())


def resolved_software(bp: Blueprint) -> SoftwareStack | None:
    """:func:`software_stack` of the blueprint, or ``None`` for an unknown stack name."""
    try:
        return software_stack(bp.software)
    except KeyError:
        return None


def cpu_architectures(bp: Blueprint) -> set[str]:
    """The CPU architectures of the blueprint's compute groups (``x86_64``, ``arm64``; more than one is
    R-CAP-9's error)."""
    return {get_instance(g.instance_type).cpu_architecture for g in bp.compute}


def resolve(bp: Blueprint) -> ResolvedCluster:
    """Resolve ``bp`` (a shape-valid blueprint) into a frozen :class:`ResolvedCluster`."""
    profile = profile_for(bp.orchestrator)
    software = resolved_software(bp)
    cluster_plan = row_for(bp.orchestrator).plan_for(bp)
    plans = feature_plans(bp, profile)
    return ResolvedCluster(
        blueprint=bp,
        profile=profile,
        groups=tuple(resolve_group(i, g, profile, bp, software) for i, g in enumerate(bp.compute)),
        software=software,
        stacks=stack_names(bp, plans.get("accounting")),
        observability_parameter=observability_parameter_name(bp.name),
        node_dir=NODE_DIR,
        tags={BLUEPRINT_TAG: bp.name, **bp.tags},
        eks=cluster_plan,
        support=support_pins(bp, software, cluster_plan),
        **plans,
    )
