"""P-series instance catalog: GPUs, network cards, EFA layout, NVMe, vCPUs.

Data lives in ``catalog/data/instances.yaml``; each value keeps its source key and the file's
``sources`` table maps keys to URLs (EC2 DescribeInstanceTypes data as in getmoto/moto
``moto/ec2/resources/instance_types.json``, aws/karpenter-provider-aws ``zz_generated.bandwidth.go``,
aws/amazon-vpc-cni-k8s ``vpc_ip_resource_limit.go``).
Values listed in an entry's ``unverified`` list could not be confirmed from a primary source;
rules built on them must warn, not fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from fmcluster.severity import closest_names

#: libyaml's safe loader when PyYAML has it (same result, ~10x faster on the catalog; every synth reads it).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DATA = "data/instances.yaml"


class UnknownInstanceType(KeyError):
    """Raised by :func:`get_instance` for a type the catalog does not hold. The message lists the catalog's types, then
    the sizes of the name's family when the catalog has that family and no spelling of it is close (``p5.8xlarge``:
    `` - p5 comes in: p5.4xlarge, p5.48xlarge``: another size is another type, never guessed), else the one suggestion
    policy's did-you-mean (:func:`closest_instance_type`). A real EC2 type outside the catalog (botocore's
    ``InstanceType`` enum: ``g5.48xlarge``, ``trn1.32xlarge``) is said to be one, with no guess."""

    def __init__(self, name: str) -> None:
        from fmcluster.catalog.instance_types import ec2_instance_types

        self.name = name
        known = known_instance_types()
        lowered = str(name).lower()
        if lowered in ec2_instance_types() and lowered not in {k.lower() for k in known}:  # g5.48xlarge: not a typo
            super().__init__(f"not an instance type fmcluster builds training clusters of, got {name!r} (an EC2 type "
                             f"outside its catalog of P-series GPU instances); allowed {', '.join(known)}")
            return
        close = closest_instance_type(str(name), known)
        sizes = family_sizes(str(name), known)
        if close:
            hint = f" - did you mean {close!r}?"
        elif sizes:
            hint = f" - {str(name).lower().partition('.')[0]} comes in: {', '.join(sizes)}"
        else:
            hint = ""
        super().__init__(f"unknown instance type, got {name!r}; allowed {', '.join(known)}{hint}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


def family_sizes(name: str, known: list[str]) -> list[str]:
    """The types of ``known`` in ``name``'s family (the part before the dot, any case), smallest first
    (``p5.8xlarge`` -> ``[p5.4xlarge, p5.48xlarge]``); ``[]`` when the family is not known."""
    family = name.lower().partition(".")[0]
    return sorted((k for k in known if k.lower().partition(".")[0] == family), key=_size_rank)


def closest_instance_type(name: str, known: list[str]) -> str | None:
    """The catalog type a misspelt ``name`` plausibly meant, by the one suggestion policy
    (:func:`fmcluster.severity.closest_names`: close in spelling, the same digits): among its family's types when the
    catalog has the family (``p5.4xlarg`` -> ``p5.4xlarge``; ``p6-b200.96xlarge`` gets none, not another family's
    closer string), else among all (``p6b300.48xlarge`` -> ``p6-b300.48xlarge``; ``p3.16xlarge`` gets none). Another
    size of the family is never a guess: :class:`UnknownInstanceType` lists the family's sizes instead."""
    match = closest_names(name, family_sizes(name, known) or known)
    return match[0] if match else None


def _size_rank(name: str) -> int:
    """``48xlarge`` -> 48 (``xlarge`` -> 1) for ordering the sizes of one family."""
    size = name.partition(".")[2]
    digits = size.split("xlarge")[0]
    return int(digits) if digits.isdigit() else 1


@dataclass(frozen=True)
class GpuSpec:
    model: str
    count: int
    memory_gib: int


@dataclass(frozen=True)
class NvmeSpec:
    count: int
    size_gb: int


@dataclass(frozen=True)
class InstanceSpec:
    """Facts about one EC2 instance type.

    Units: memory in GiB, network in Gbps (the type's headline ``NetworkPerformance``), NVMe in GB
    as EC2 reports instance storage. ``efa_cards`` lists the network-card indices that take one EFA
    interface each (p6-b300: cards 1-16, card 0 is ENA only). ``capacity_block_zones``: the only zones (names
    and IDs, either of which a blueprint may give) where EC2 sells the type's Capacity Blocks, when a Local Zone
    is the only place (p6e-gb200: the Dallas Local Zone); empty when the type is sold in Regions' AZs.
    """

    name: str
    family: str
    gpu: GpuSpec
    vcpus: int
    memory_gib: int
    network_cards: int
    max_efa_interfaces: int
    efa_cards: tuple[int, ...]
    max_enis_per_card: int
    ipv4_per_interface: int
    network_gbps: int
    nvme: NvmeSpec
    nvswitch: bool
    nvlsm: bool
    imex: bool
    gdr_required: bool
    cpu_architecture: str
    cpu_vendor: str
    hyperpod_name: str
    efa_generation: int
    ultraserver_sizes: tuple[int, ...]
    capacity_block_only: bool
    capacity_block_zones: tuple[str, ...]
    sources: dict[str, str]
    unverified: frozenset[str]

    @property
    def efa_interface_count(self) -> int:
        """Number of EFA interfaces a launch template attaches: one per EFA-capable card."""
        return len(self.efa_cards)

    @property
    def fabric_manager(self) -> bool:
        """NVIDIA Fabric Manager applies (NVSwitch-connected HGX board)."""
        return self.nvswitch

    @property
    def card0_has_efa(self) -> bool:
        return 0 in self.efa_cards

    def source_of(self, field: str) -> str:
        """URL or reference for one field's value."""
        return self.sources.get(field.split(".")[0], self.sources["_default"])

    def is_verified(self, field: str) -> bool:
        return field not in self.unverified and field.split(".")[0] not in self.unverified


def _expand_cards(items: list[Any]) -> tuple[int, ...]:
    cards: list[int] = []
    for item in items:
        if isinstance(item, str) and "-" in item:
            lo, hi = item.split("-")
            cards.extend(range(int(lo), int(hi) + 1))
        else:
            cards.append(int(item))
    return tuple(cards)


@cache
def _load() -> dict[str, InstanceSpec]:
    raw = yaml.load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text(), Loader=_YAML_LOADER)
    source_urls: dict[str, str] = raw["sources"]
    catalog: dict[str, InstanceSpec] = {}
    for name, d in raw["instances"].items():
        sources = {"_default": source_urls[d["source"]]}
        sources.update({k: source_urls[v] for k, v in d.get("value_sources", {}).items()})
        catalog[name] = InstanceSpec(
            name=name,
            family=d["family"],
            gpu=GpuSpec(**d["gpu"]),
            vcpus=d["vcpus"],
            memory_gib=d["memory_gib"],
            network_cards=d["network_cards"],
            max_efa_interfaces=d["max_efa_interfaces"],
            efa_cards=_expand_cards(d["efa_cards"]),
            max_enis_per_card=d["max_enis_per_card"],
            ipv4_per_interface=d["ipv4_per_interface"],
            network_gbps=d["network_gbps"],
            nvme=NvmeSpec(**d["nvme"]),
            nvswitch=d["nvswitch"],
            nvlsm=d["nvlsm"],
            imex=d["imex"],
            gdr_required=d["gdr_required"],
            cpu_architecture=d["cpu_architecture"],
            cpu_vendor=d["cpu_vendor"],
            hyperpod_name=d["hyperpod_name"],
            efa_generation=d["efa_generation"],
            ultraserver_sizes=tuple(d.get("ultraserver_sizes", ())),
            capacity_block_only=d.get("capacity_block_only", False),
            capacity_block_zones=tuple(d.get("capacity_block_zones", ())),
            sources=sources,
            unverified=frozenset(d.get("unverified", ())),
        )
    return catalog


def known_instance_types() -> list[str]:
    """All catalog instance type names, in catalog order."""
    return list(_load())


def get_instance(name: str) -> InstanceSpec:
    """Return the facts for ``name``.

    Raises:
        UnknownInstanceType: ``name`` is not in the catalog; the message lists the known types
            and a did-you-mean.
    """
    try:
        return _load()[name]
    except KeyError:
        raise UnknownInstanceType(name) from None


# ---- facts from EC2 instance type names (types outside the catalog: head, login nodes) ----------
_TYPE_NAME = re.compile(r"^(?P<family>[a-z]+)(?P<gen>\d+)(?P<attrs>[a-z-]*)\.(?P<size>[a-z0-9]+)$")
#: GiB of memory per vCPU of the general purpose (m), compute optimized (c) and memory optimized (r)
#: families from the 5th generation on: https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html,
#: .../co.html, .../mo.html (m: 4, c: 2, r: 8 GiB per vCPU).
_GIB_PER_VCPU = {"m": 4, "c": 2, "r": 8}
#: GiB of memory of the burstable T2, T3, T3a and T4g sizes (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html,
#: "Memory specifications"; the same in EC2 DescribeInstanceTypes as moto recorded it, tests/test_catalog.py).
_BURSTABLE_GIB = {"nano": 0.5, "micro": 1.0, "small": 2.0, "medium": 4.0, "large": 8.0, "xlarge": 16.0, "2xlarge": 32.0}
_BURSTABLE_FAMILIES = ("t2", "t3", "t3a", "t4g")


def cpu_architecture_of(instance_type: str) -> str | None:
    """``x86_64`` or ``arm64`` for an EC2 type: from the catalog when it knows the type, else from the
    naming convention (``g`` among the attribute letters = AWS Graviton,
    https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html). ``None`` when the
    name does not parse."""
    if instance_type in known_instance_types():
        return get_instance(instance_type).cpu_architecture
    m = _TYPE_NAME.match(instance_type.removeprefix("ml."))
    if not m:
        return None
    return "arm64" if "g" in m.group("attrs").split("-")[0] else "x86_64"


def memory_gib_of(instance_type: str) -> float | None:
    """Memory in GiB of m/c/r types (generation 5+, from their vCPU count) and of the burstable t2, t3, t3a and t4g
    types (``t3.nano``: 0.5); ``None`` for anything else."""
    family, _, size = instance_type.partition(".")
    if family in _BURSTABLE_FAMILIES:
        return _BURSTABLE_GIB.get(size)
    m = _TYPE_NAME.match(instance_type)
    if not m or m.group("family") not in _GIB_PER_VCPU or int(m.group("gen")) < 5:
        return None
    size = m.group("size")
    vcpus = {"medium": 1, "large": 2, "xlarge": 4}.get(size)
    if vcpus is None and size.endswith("xlarge") and size[:-6].isdigit():
        vcpus = 4 * int(size[:-6])
    return None if vcpus is None else float(vcpus * _GIB_PER_VCPU[m.group("family")])
