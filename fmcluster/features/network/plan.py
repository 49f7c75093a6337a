"""GPU subnet usage: how many IPv4 addresses the cluster takes from its GPU subnet.

:func:`subnet_usage` is the one computation; ``fmcluster plan`` reports it, the subnet rules
(R-SUBNET-1/2) judge it for a new VPC, and preflight compares it with an imported subnet's free
addresses. The address math and its sources live in :mod:`fmcluster.catalog.networking`.

What is counted (docs/capacity.md "Subnet sizing"):

- **required** (verified facts; too small is an error): every compute group's nodes at their
  maximum ``count`` x addresses per node for the cluster's EFA interface type
  (:attr:`OrchestratorProfile.efa_interface_type`: ``efa`` takes one address per EFA card,
  ``efa-only`` none beyond the ENA primary), the management nodes
  (:attr:`OrchestratorProfile.management`, one address each, assumed to share the GPU subnet) and
  AWS's five reserved addresses.
- **headroom** (policy and estimates; too small is a warning): 10% of the node addresses for
  replacement and growth, the FSx for Lustre interfaces (estimate) and an allowance for interface
  VPC endpoints and service ENIs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog import get_instance
from fmcluster.catalog.networking import (
    AWS_RESERVED_PER_SUBNET,
    SERVICE_ENI_ALLOWANCE,
    describe_layout,
    fsx_lustre_interfaces_estimate,
    headroom_for,
    interface_layout,
    layout_ipv4,
    longest_prefix_for,
    subnet_size,
)
from fmcluster.catalog.vpc_layout import MAX_PREFIX
from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.orchestrators.registry import profile_for


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


def subnet_usage(bp: Blueprint, *, efa_interface_type: str | None = None,
                 profile: OrchestratorProfile | None = None) -> SubnetUsage:
    """IPv4 addresses the blueprint's cluster takes from its GPU subnet (see module docstring).

    ``efa_interface_type`` computes the usage as if the EFA interfaces were of that type (the rules'
    ``efa-only`` advice); default: the profile's. ``profile``: default ``profile_for(bp.orchestrator)``.
    """
    profile = profile or profile_for(bp.orchestrator)
    interface_type = efa_interface_type or profile.efa_interface_type
    groups = []
    for g in bp.compute:
        slots = interface_layout(get_instance(g.instance_type), efa=g.efa_enabled, interface_type=interface_type)
        groups.append(GroupAddresses(g.name, g.instance_type, g.count, describe_layout(slots),
                                     layout_ipv4(slots)))
    node_addresses = sum(g.ipv4_total for g in groups)
    headroom = [("10% of node addresses (replacement, growth)", headroom_for(node_addresses))]
    if bp.storage.lustre is not None:
        headroom.append(("FSx for Lustre interfaces (estimate)",
                         fsx_lustre_interfaces_estimate(bp.storage.lustre.storage_capacity_gib)))
    headroom.append(("VPC endpoint and service interfaces (allowance)", SERVICE_ENI_ALLOWANCE))
    prefix = None if bp.network.gpu_subnet_id else bp.network.gpu_subnet_prefix_length
    return SubnetUsage(orchestrator=profile.kind, efa_interface_type=interface_type, groups=tuple(groups),
                       management=profile.management_nodes(), headroom=tuple(headroom), prefix_length=prefix,
                       notes=profile.notes)


def network_plan(bp: Blueprint, profile: OrchestratorProfile) -> SubnetUsage:
    """The feature registry's ``plan`` hook (slot ``ResolvedCluster.subnet``): :func:`subnet_usage` of ``bp`` for its
    orchestrator ``profile``."""
    return subnet_usage(bp, profile=profile)


def as_subnet_usage(plan: object) -> SubnetUsage:
    """``plan`` (``ResolvedCluster.subnet``, typed by the core as :class:`fmcluster.resolved.slots.SubnetSlot`) as
    this feature's :class:`SubnetUsage`.

    Raises:
        TypeError: ``plan`` is something else (the slot was filled by another hook: a wiring mistake).
    """
    if isinstance(plan, SubnetUsage):
        return plan
    raise TypeError(f"subnet usage expected, got {type(plan).__name__}")
