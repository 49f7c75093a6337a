"""Fleet acceptance figures per instance type: the 2-node NCCL all_reduce bus bandwidth floor and the
published measurements of a healthy pair (``catalog/data/acceptance_floors.yaml``).

Units: message sizes in bytes (the nccl-tests ``size (B)`` column), bandwidth in GB/s (1e9 bytes/s, the
nccl-tests ``busbw`` column). A floor is *enforced* only when the entry is ``verified``; an unverified
floor (or none at all) is reported and never failed on (docs/acceptance.md). Sources: the file's
``sources`` table (aws-parallelcluster's EFA integration test, awsome-distributed-ai's nccl-tests README,
skypilot #8391).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from fmcluster.catalog.instances import get_instance

_DATA = "data/acceptance_floors.yaml"
#: The size the gate judges at when the catalog names none: 1 GiB, ParallelCluster's floor size.
DEFAULT_REFERENCE_SIZE_BYTES = 1 << 30


@dataclass(frozen=True)
class BandwidthFigure:
    """One published figure: ``busbw_gbps`` (GB/s, ``None`` when not published) at ``size_bytes``."""

    size_bytes: int
    busbw_gbps: float | None
    source: str
    date: str | None
    note: str = ""


@dataclass(frozen=True)
class AcceptanceFigures:
    """The acceptance figures of one instance type.

    ``floor`` is judged at ``floor.size_bytes`` (the reference size); ``enforced`` is true when the floor
    has a value and the entry is verified. ``efa_devices`` and ``gpus`` come from the instance catalog.
    """

    instance_type: str
    verified: bool
    floor: BandwidthFigure
    expected: tuple[BandwidthFigure, ...]
    notes: tuple[str, ...]
    efa_devices: int
    gpus: int

    @property
    def enforced(self) -> bool:
        return self.verified and self.floor.busbw_gbps is not None

    @property
    def reference_size_bytes(self) -> int:
        return self.floor.size_bytes

    def expected_at(self, size_bytes: int) -> float | None:
        """The published healthy-pair busbw at ``size_bytes`` (GB/s), ``None`` when there is none."""
        for f in self.expected:
            if f.size_bytes == size_bytes:
                return f.busbw_gbps
        return None


def _figure(d: dict[str, Any], sources: dict[str, str]) -> BandwidthFigure:
    key = d["source"]
    return BandwidthFigure(
        size_bytes=int(d["size_bytes"]),
        busbw_gbps=None if d.get("busbw_gbps") is None else float(d["busbw_gbps"]),
        source=sources[key] if key != "NONE" else sources["NONE"],
        date=None if d.get("date") is None else str(d["date"]),
        note=str(d.get("note", "")),
    )


@cache
def _load() -> dict[str, AcceptanceFigures]:
    raw = yaml.safe_load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text())
    sources: dict[str, str] = raw["sources"]
    out: dict[str, AcceptanceFigures] = {}
    for name, d in raw["floors"].items():
        inst = get_instance(name)
        out[name] = AcceptanceFigures(
            instance_type=name,
            verified=bool(d["verified"]),
            floor=_figure(d["floor"], sources),
            expected=tuple(_figure(e, sources) for e in d.get("expected", [])),
            notes=tuple(d.get("notes", [])),
            efa_devices=inst.efa_interface_count,
            gpus=inst.gpu.count,
        )
    return out


def acceptance_instance_types() -> list[str]:
    """Instance types that have an acceptance entry (every catalog type does; tests enforce it)."""
    return list(_load())


def acceptance_figures(instance_type: str) -> AcceptanceFigures:
    """The acceptance figures of ``instance_type``.

    Raises:
        UnknownInstanceType: the catalog does not hold the type (message lists the known types and a
            did-you-mean).
    """
    try:
        return _load()[instance_type]
    except KeyError:
        pass
    # a catalog type without an entry yet (tests require one for every type): no figure, nodes are compared
    # with each other only
    inst = get_instance(instance_type)  # raises UnknownInstanceType for a type the catalog does not hold
    return AcceptanceFigures(
        instance_type=instance_type,
        verified=False,
        floor=BandwidthFigure(DEFAULT_REFERENCE_SIZE_BYTES, None, "no published figure", None,
                              "no entry in acceptance_floors.yaml"),
        expected=(),
        notes=(),
        efa_devices=inst.efa_interface_count,
        gpus=inst.gpu.count,
    )
