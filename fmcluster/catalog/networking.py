"""Network-interface layouts and IPv4 address math for GPU nodes and their subnet.

One place for the numbers that subnet sizing (rules), ``fmcluster plan`` and preflight share, and
for the interface layout the launch-template constructs render (style anchor 12: derived values
computed once). Pure functions over catalog facts and plain values: no blueprint import.

Facts and their sources:

- An ``efa`` interface (EFA + ENA) takes one private IPv4 address from the subnet; an ``efa-only``
  interface takes none; the primary interface (card 0, device 0) is never ``efa-only``
  (R2.3, R2.4; https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html).
- Which interface type a node's EFA interfaces get is the orchestrator's choice
  (``OrchestratorSpec.efa_interface_type``: ParallelCluster 3.16 renders ``efa-only`` itself, PCS and
  HyperPod take the blueprint's setting); the layout for each type is :func:`interface_layout`.
- ``efa-only`` layout (AWS's recommendation): ENA primary on card 0 device 0, ``efa-only`` on card 0
  device 1 (when card 0 has EFA) and on device 0 of every other EFA card (efa-acc-inst-types;
  HyperPod ``ClusterNetworkInterface.InterfaceType`` accepts ``efa-only``, botocore sagemaker service-2.json).
- AWS reserves five addresses in every subnet (network, VPC router, DNS, future use, broadcast):
  https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from fmcluster.catalog.instances import InstanceSpec

SUBNET_SIZING_DOC = "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html"

#: Addresses AWS keeps in every subnet (first four and the last one).
AWS_RESERVED_PER_SUBNET = 5

InterfaceType = Literal["interface", "efa", "efa-only"]
EfaInterfaceType = Literal["efa", "efa-only"]

# ---- headroom policy (documented in docs/capacity.md "Subnet sizing") --------------------------
#: Extra addresses as a fraction of the node addresses: node replacement launches the new node
#: while the old one's interfaces are still being released, and groups grow.
HEADROOM_FRACTION = 0.10
#: Interface VPC endpoints and service ENIs that may live in the GPU subnet (SSM, logs, ECR, STS,
#: orchestrator control planes). An allowance, not a count of what the network stack creates.
SERVICE_ENI_ALLOWANCE = 8
#: FSx for Lustre estimate: FSx does not document how many interfaces a file system places in its
#: subnet (``FileSystem.NetworkInterfaceIds`` may hold more than one, FSx API reference). fmcluster
#: assumes one per 2400 GiB of storage plus two for metadata/management. [UNVERIFIED] - used for
#: the headroom warning only, never for the error.
FSX_GIB_PER_INTERFACE = 2400
FSX_FIXED_INTERFACES = 2


@dataclass(frozen=True)
class InterfaceSlot:
    """One network interface in a launch template: where it sits and what it is."""

    card: int
    device: int
    interface_type: InterfaceType

    @property
    def is_efa(self) -> bool:
        return self.interface_type in ("efa", "efa-only")

    @property
    def ipv4_addresses(self) -> int:
        """Private IPv4 addresses this interface takes from the subnet (``efa-only``: none)."""
        return 0 if self.interface_type == "efa-only" else 1


def interface_layout(instance: InstanceSpec, *, efa: bool, interface_type: str) -> tuple[InterfaceSlot, ...]:
    """The interfaces of one node of ``instance``.

    * ``efa=False`` (or no EFA card): only the primary ENA interface (card 0, device 0).
    * ``interface_type="efa-only"``: ENA primary on card 0 device 0; ``efa-only`` on card 0 device 1
      when card 0 has EFA; ``efa-only`` on device 0 of every other EFA card. p6-b300 (card 0 ENA
      only) gets ENA on card 0 and EFA on cards 1-16.
    * ``interface_type="efa"``: the primary is ``efa`` when card 0 has EFA (else ENA), and every other
      EFA card gets ``efa`` on device 0.

    Raises:
        ValueError: unknown ``interface_type``, or the catalog entry cannot hold the layout (duplicate
            (card, device), a card outside ``network_cards``, more interfaces on a card than
            ``max_enis_per_card``, EFA count different from the catalog's). The last ones are catalog bugs.
    """
    if interface_type not in ("efa", "efa-only"):
        raise ValueError(f"unknown EFA interface type, got {interface_type!r}; allowed efa, efa-only")
    slots: list[InterfaceSlot] = []
    card0_efa = efa and instance.card0_has_efa
    if card0_efa and interface_type == "efa":
        slots.append(InterfaceSlot(0, 0, "efa"))
    else:
        slots.append(InterfaceSlot(0, 0, "interface"))
        if card0_efa:
            slots.append(InterfaceSlot(0, 1, "efa-only"))
    if efa:
        slots += [InterfaceSlot(card, 0, interface_type) for card in instance.efa_cards if card != 0]  # type: ignore[arg-type]
    _check_layout(instance, slots, efa)
    return tuple(slots)


def _check_layout(inst: InstanceSpec, slots: list[InterfaceSlot], efa: bool) -> None:
    pairs = [(n.card, n.device) for n in slots]
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"{inst.name}: duplicate (card, device) pairs in {pairs}")
    per_card = Counter(n.card for n in slots)
    for card, used in per_card.items():
        if not 0 <= card < inst.network_cards:
            raise ValueError(f"{inst.name}: network card {card} outside 0..{inst.network_cards - 1}")
        if used > inst.max_enis_per_card:
            raise ValueError(f"{inst.name}: {used} interfaces on card {card}, catalog allows {inst.max_enis_per_card}")
    efa_per_card = Counter(n.card for n in slots if n.is_efa)
    if any(v > 1 for v in efa_per_card.values()):
        raise ValueError(f"{inst.name}: more than one EFA on a card: {dict(efa_per_card)}")
    expected = inst.efa_interface_count if efa else 0
    if sum(efa_per_card.values()) != expected:
        raise ValueError(f"{inst.name}: {sum(efa_per_card.values())} EFA interfaces, catalog says {expected}")


def layout_ipv4(slots: tuple[InterfaceSlot, ...]) -> int:
    """Private IPv4 addresses a node with the interfaces ``slots`` takes from its subnet (the one definition:
    1 per ``interface`` or ``efa`` interface, none per ``efa-only``)."""
    return sum(slot.ipv4_addresses for slot in slots)


def ipv4_per_node(instance: InstanceSpec, *, efa: bool, interface_type: str) -> int:
    """Private IPv4 addresses one node takes from its subnet: 1 primary + 1 per ``efa`` interface."""
    return layout_ipv4(interface_layout(instance, efa=efa, interface_type=interface_type))


def describe_layout(slots: tuple[InterfaceSlot, ...]) -> str:
    """Short human form, e.g. ``1 interface + 32 efa-only`` or ``32 efa``."""
    counts: dict[str, int] = {}
    for slot in slots:
        counts[slot.interface_type] = counts.get(slot.interface_type, 0) + 1
    return " + ".join(f"{n} {kind}" for kind, n in counts.items())


def subnet_size(prefix_length: int) -> int:
    """All IPv4 addresses in a subnet of this prefix length (/20: 4096)."""
    if not 0 <= prefix_length <= 32:
        raise ValueError(f"prefix length out of range, got {prefix_length}; allowed 0..32")
    return 2 ** (32 - prefix_length)


def usable_addresses(prefix_length: int) -> int:
    """Addresses left for interfaces after AWS's five (/20: 4091)."""
    return subnet_size(prefix_length) - AWS_RESERVED_PER_SUBNET


def longest_prefix_for(addresses: int) -> int:
    """The longest prefix length (smallest subnet) whose usable addresses cover ``addresses``."""
    if addresses < 0:
        raise ValueError(f"address count must not be negative, got {addresses}")
    total = addresses + AWS_RESERVED_PER_SUBNET
    return 32 - max(0, math.ceil(math.log2(total)))


def fsx_lustre_interfaces_estimate(storage_capacity_gib: int) -> int:
    """Estimated subnet addresses an FSx for Lustre file system uses ([UNVERIFIED], see constants)."""
    return math.ceil(storage_capacity_gib / FSX_GIB_PER_INTERFACE) + FSX_FIXED_INTERFACES


def headroom_for(node_addresses: int) -> int:
    """Growth/replacement headroom on top of the node addresses (:data:`HEADROOM_FRACTION`, rounded up)."""
    return math.ceil(node_addresses * HEADROOM_FRACTION)
