"""GPU subnet sizing: how many IPv4 addresses the cluster takes, and rules when a new subnet is too small.

:func:`subnet_usage` is the one computation; ``fmcluster plan`` reports it, R-SUBNET-1/2 judge it
for a new VPC, and preflight compares it with an imported subnet's free addresses. The math and
its sources live in :mod:`fmcluster.catalog.networking`.

What is counted (docs/capacity.md "Subnet sizing"):

- **required** (verified facts; too small is an error): every compute group's nodes at their
  maximum ``count`` x addresses per node for the blueprint's EFA interface type
  (``OrchestratorSpec.efa_interface_type``: ``efa`` takes one address per EFA card, ``efa-only``
  none beyond the ENA primary), the management nodes (ParallelCluster head node; PCS login node;
  HyperPod controller and login nodes; one address each, assumed to share the GPU subnet) and AWS's
  five reserved addresses.
- **headroom** (policy and estimates; too small is a warning): 10% of the node addresses for
  replacement and growth, the FSx for Lustre interfaces (estimate) and an allowance for interface
  VPC endpoints and service ENIs.

When a subnet is too small and the blueprint chooses ``efa`` (PCS, HyperPod), the advice also names
``efa-only`` through the orchestrator's own setting; ParallelCluster has no such setting (it renders
``efa-only`` itself, ``PCLUSTER_EFA_INTERFACE_TYPE``), so it is never advised there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog import get_instance
from fmcluster.catalog.networking import (
    AWS_RESERVED_PER_SUBNET,
    SERVICE_ENI_ALLOWANCE,
    SUBNET_SIZING_DOC,
    describe_layout,
    fsx_lustre_interfaces_estimate,
    headroom_for,
    interface_layout,
    longest_prefix_for,
    subnet_size,
)
from fmcluster.validation.rules import Violation, rule

#: Shortest prefix the model allows for the GPU subnet (NetworkSpec.gpu_subnet_prefix_length ge=16).
MIN_PREFIX = 16
#: AWS's smallest subnet.
MAX_PREFIX = 28

#: Where a blueprint chooses its EFA interface type, per orchestrator, and what to say when advising
#: ``efa-only`` there. ParallelCluster is absent: it picks the type itself (``PCLUSTER_EFA_INTERFACE_TYPE``).
EFA_INTERFACE_TYPE_SETTING: dict[str, tuple[str, str]] = {
    "pcs": ("orchestrator.pcs.efa_interface_type", "; unverified on PCS, R-PCS-3"),
    "hyperpod": ("orchestrator.hyperpod.efa_interface_type", ""),
}


@dataclass(frozen=True)
class GroupAddresses:
    """Addresses one compute group takes at its maximum size."""

    name: str
    instance_type: str
    nodes: int
    interfaces: str
    ipv4_per_node: int

    @property
    def ipv4_total(self) -> int:
        return self.nodes * self.ipv4_per_node


@dataclass(frozen=True)
class SubnetUsage:
    """IPv4 demand on the GPU subnet, and how it compares with the subnet (None: imported subnet)."""

    orchestrator: str
    efa_interface_type: str
    groups: tuple[GroupAddresses, ...]
    management: tuple[tuple[str, int], ...]
    headroom: tuple[tuple[str, int], ...]
    prefix_length: int | None
    notes: tuple[str, ...] = ()
    aws_reserved: int = AWS_RESERVED_PER_SUBNET

    @property
    def node_addresses(self) -> int:
        return sum(g.ipv4_total for g in self.groups)

    @property
    def required(self) -> int:
        """Addresses the subnet must hold, AWS's five included (the error threshold)."""
        return self.node_addresses + sum(n for _, n in self.management) + self.aws_reserved

    @property
    def recommended(self) -> int:
        """``required`` plus headroom (the warning threshold)."""
        return self.required + sum(n for _, n in self.headroom)

    @property
    def subnet_addresses(self) -> int | None:
        return None if self.prefix_length is None else subnet_size(self.prefix_length)

    @property
    def min_prefix_length(self) -> int:
        """Longest prefix whose subnet holds ``required`` (may be shorter than /16: then nothing fits)."""
        return min(MAX_PREFIX, longest_prefix_for(self.required - self.aws_reserved))

    @property
    def recommended_prefix_length(self) -> int:
        return min(MAX_PREFIX, longest_prefix_for(self.recommended - self.aws_reserved))

    @property
    def fits(self) -> bool | None:
        size = self.subnet_addresses
        return None if size is None else self.required <= size

    @property
    def fits_with_headroom(self) -> bool | None:
        size = self.subnet_addresses
        return None if size is None else self.recommended <= size

    def rows(self) -> list[tuple[str, int]]:
        """(item, addresses) lines for a report, in order, ending with the totals."""
        out = [(f"compute {g.name}: {g.nodes} x {g.instance_type} x {g.ipv4_per_node} ({g.interfaces})",
                g.ipv4_total) for g in self.groups]
        out += list(self.management)
        out.append(("reserved by AWS", self.aws_reserved))
        out.append(("required", self.required))
        out += [(f"headroom: {what}", n) for what, n in self.headroom]
        out.append(("recommended", self.recommended))
        return out

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.update(
            node_addresses=self.node_addresses, required=self.required, recommended=self.recommended,
            subnet_addresses=self.subnet_addresses, min_prefix_length=self.min_prefix_length,
            recommended_prefix_length=self.recommended_prefix_length, fits=self.fits,
            fits_with_headroom=self.fits_with_headroom,
        )
        for g, row in zip(self.groups, d["groups"], strict=True):  # type: ignore[call-overload]
            row["ipv4_total"] = g.ipv4_total
        return d


def _management(bp: Blueprint) -> tuple[tuple[str, int], ...]:
    kind = bp.orchestrator.kind
    if kind == "parallelcluster":
        return (("head node", 1),)
    if kind == "pcs":
        return (("login node", 1),)
    nodes = [("controller node", 1)]
    if bp.orchestrator.hyperpod.login_instance_type:
        nodes.append(("login node", 1))
    return tuple(nodes)


def subnet_usage(bp: Blueprint, *, efa_interface_type: str | None = None) -> SubnetUsage:
    """IPv4 addresses the blueprint's cluster takes from its GPU subnet (see module docstring).

    ``efa_interface_type`` computes the usage as if the EFA interfaces were of that type (the rules'
    ``efa-only`` advice); default: the orchestrator's, ``OrchestratorSpec.efa_interface_type``.
    """
    kind = bp.orchestrator.kind
    interface_type = efa_interface_type or bp.orchestrator.efa_interface_type
    groups = []
    for g in bp.compute:
        inst = get_instance(g.instance_type)
        slots = interface_layout(inst, efa=g.efa_enabled, interface_type=interface_type)
        groups.append(GroupAddresses(g.name, g.instance_type, g.count, describe_layout(slots),
                                     sum(s.ipv4_addresses for s in slots)))
    node_addresses = sum(g.ipv4_total for g in groups)
    headroom = [("10% of node addresses (replacement, growth)", headroom_for(node_addresses))]
    if bp.storage.lustre is not None:
        headroom.append(("FSx for Lustre interfaces (estimate)",
                         fsx_lustre_interfaces_estimate(bp.storage.lustre.storage_capacity_gib)))
    headroom.append(("VPC endpoint and service interfaces (allowance)", SERVICE_ENI_ALLOWANCE))
    notes = []
    if kind == "hyperpod" and bp.orchestrator.hyperpod.orchestration == "eks":
        notes.append("HyperPod on EKS: pods take VPC CNI addresses from this subnet; they are not counted")
    prefix = None if bp.network.gpu_subnet_id else bp.network.gpu_subnet_prefix_length
    return SubnetUsage(orchestrator=kind, efa_interface_type=interface_type, groups=tuple(groups),
                       management=_management(bp), headroom=tuple(headroom), prefix_length=prefix,
                       notes=tuple(notes))


def _efa_only(bp: Blueprint, usage: SubnetUsage, *, headroom: bool) -> tuple[str, str] | None:
    """(setting, "then N addresses ...") when the blueprint chooses ``efa`` where it could choose
    ``efa-only`` (PCS, HyperPod) and that saves addresses; None otherwise (always for ParallelCluster)."""
    if usage.orchestrator not in EFA_INTERFACE_TYPE_SETTING or usage.efa_interface_type != "efa":
        return None
    alt = subnet_usage(bp, efa_interface_type="efa-only")
    if alt.node_addresses == usage.node_addresses:  # no group has EFA: nothing to save
        return None
    setting, caveat = EFA_INTERFACE_TYPE_SETTING[usage.orchestrator]
    then = f"then {alt.recommended} recommended" if headroom else f"then {alt.required} needed"
    return setting, then + caveat


def _fix(usage: SubnetUsage, wanted: int, vpc_prefix: int, efa_only: tuple[str, str] | None) -> str:
    """The ``allowed ...`` part: a prefix that holds ``wanted`` addresses (or fewer nodes), and
    ``efa-only`` when :func:`_efa_only` advises it."""
    switch = "" if efa_only is None else f"{efa_only[0]}: efa-only ({efa_only[1]})"
    if wanted < MIN_PREFIX:
        text = f"fewer nodes (even a /{MIN_PREFIX} holds only {subnet_size(MIN_PREFIX)})"
        if efa_only is not None:
            text += f" or {switch} - did you mean {efa_only[0]}: efa-only?"
        return text
    text = f"/{wanted} or a shorter prefix"
    if wanted <= vpc_prefix:
        text += f" (the VPC must be larger than the subnet, got network.vpc_cidr /{vpc_prefix})"
    if switch:
        text += f", or {switch}"
    return text + f" - did you mean gpu_subnet_prefix_length: {wanted}?"


@rule("R-SUBNET-1", source=f"{SUBNET_SIZING_DOC} (5 reserved); "
      "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html (efa takes an address, "
      "efa-only none)")
def gpu_subnet_holds_cluster(bp: Blueprint) -> Iterator[Violation]:
    """A new VPC's GPU subnet must hold every node's addresses, the management nodes and AWS's five."""
    usage = subnet_usage(bp)
    if usage.fits is False:
        vpc_prefix = int(bp.network.vpc_cidr.split("/")[1])
        yield "network.gpu_subnet_prefix_length", (
            f"the GPU subnet is too small for the cluster: {usage.required} IPv4 addresses needed "
            f"({usage.node_addresses} for nodes, {sum(n for _, n in usage.management)} for management nodes, "
            f"{usage.aws_reserved} reserved by AWS), "
            f"got /{usage.prefix_length} ({usage.subnet_addresses} addresses); "
            f"allowed {_fix(usage, usage.min_prefix_length, vpc_prefix, _efa_only(bp, usage, headroom=False))}"
        )


@rule("R-SUBNET-2", level="warning",
      source="fmcluster headroom policy, docs/capacity.md (10% + FSx estimate + "
      "service interfaces; the FSx interface count is unverified)")
def gpu_subnet_headroom(bp: Blueprint) -> Iterator[Violation]:
    """Fits, but without room for replacement nodes, FSx interfaces and endpoints."""
    usage = subnet_usage(bp)
    if usage.fits and usage.fits_with_headroom is False:
        vpc_prefix = int(bp.network.vpc_cidr.split("/")[1])
        yield "network.gpu_subnet_prefix_length", (
            f"the GPU subnet leaves no headroom: {usage.recommended} IPv4 addresses recommended "
            f"({usage.required} required + {usage.recommended - usage.required} for replacement nodes, FSx and endpoints), "
            f"got /{usage.prefix_length} ({usage.subnet_addresses} addresses); "
            f"allowed {_fix(usage, usage.recommended_prefix_length, vpc_prefix, _efa_only(bp, usage, headroom=True))}"
        )
