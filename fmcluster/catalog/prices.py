"""The dated price table (``catalog/data/prices.yaml``): typed look-ups for the plan's cost.

Every price is a :class:`Price` with its value (``None`` = unknown, never zero), unit, source and date. The
table's own date is :func:`table_date`. ``fmcluster catalog refresh-prices`` rewrites the EC2 entries from the
AWS Price List API (:mod:`fmcluster.catalog.refresh`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

_DATA = "data/prices.yaml"


@dataclass(frozen=True)
class Price:
    """One price. ``value`` None: unknown (``note`` says why). ``unit`` e.g. ``USD/hour``, ``USD/GB-month``."""

    value: float | None
    unit: str
    source: str = ""
    source_key: str = ""
    as_of: str = ""
    confidence: str = ""
    note: str = ""

    @property
    def known(self) -> bool:
        return self.value is not None


def data_file() -> Path:
    """Path of the price table inside the installed package (what refresh-prices rewrites)."""
    return Path(str(resources.files("fmcluster.catalog").joinpath(_DATA)))


@cache
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(data_file().read_text(encoding="utf-8"))
    return data


def table_date() -> str:
    """The date the table was compiled or last refreshed (YYYY-MM-DD)."""
    return str(_raw()["table_date"])


def hours_per_month() -> int:
    return int(_raw().get("hours_per_month", 730))


def _source(key: str) -> str:
    return str((_raw().get("sources") or {}).get(key, key))


def _price(entry: dict[str, Any] | None, field: str, unit: str, missing: str) -> Price:
    if not entry:
        return Price(None, unit, note=missing)
    value = entry.get(field)
    key = str(entry.get("source", ""))
    return Price(None if value is None else float(value), unit, _source(key), key,
                 str(entry.get("as_of", "")), str(entry.get("confidence", "")), str(entry.get("note", "")))


def ec2_on_demand(region: str, instance_type: str) -> Price:
    """EC2 On-Demand Linux price of ``instance_type`` in ``region``, USD per instance-hour."""
    entry = ((_raw().get("ec2_on_demand") or {}).get(region) or {}).get(instance_type)
    return _price(entry, "usd_per_hour", "USD/hour", f"no price for {instance_type} in {region} in the table")


def fsx_lustre(region: str, deployment_type: str, tier: int | None) -> Price:
    """FSx for Lustre storage price, USD per GB-month, by deployment type and throughput tier (MB/s/TiB)."""
    per_type = ((_raw().get("fsx_lustre") or {}).get(region) or {}).get(deployment_type) or {}
    entry = per_type.get(str(tier)) if tier is not None else per_type.get("default")
    at = f" at {tier} MB/s/TiB" if tier else ""  # SCRATCH_2 has no throughput tier
    return _price(entry, "usd_per_gb_month", "USD/GB-month", f"no price for FSx for Lustre {deployment_type}{at} in {region} in the table")


def nat_gateway(region: str) -> Price:
    """NAT gateway, USD per hour (data processing not included)."""
    return _price((_raw().get("nat_gateway") or {}).get(region), "usd_per_hour", "USD/hour", f"no NAT gateway price for {region}")


def amg() -> tuple[Price, int]:
    """Amazon Managed Grafana: (USD per editor-month, editors assumed)."""
    d = _raw().get("amg") or {}
    return _price(d, "usd_per_editor_month", "USD/editor-month", "no Grafana price"), int(d.get("editors", 1))


def amp() -> tuple[Price, int, int]:
    """Amazon Managed Service for Prometheus: (USD per 10M samples, assumed series per GPU node, per management node)."""
    d = _raw().get("amp") or {}
    return (_price(d, "usd_per_10m_samples", "USD/10M samples", "no Prometheus price"),
            int(d.get("series_per_gpu_node", 0)), int(d.get("series_per_management_node", 0)))


def not_in_table_reason(kind: str) -> str:
    """Why a purchase option (or ``sagemaker``: instances SageMaker runs, ``OrchestratorProfile.ec2_capacity`` False)
    has no price (the comment the table keeps for it)."""
    return {
        "capacity_block": "Capacity Block fees follow supply and demand and are quoted at purchase "
                          "(aws ec2 describe-capacity-block-offerings; https://aws.amazon.com/ec2/capacityblocks/pricing/)",
        "training_plan": "training plans are priced per offering (aws sagemaker search-training-plan-offerings)",
        "spot": "Spot prices change with supply and demand (aws ec2 describe-spot-price-history)",
        "sagemaker": "SageMaker HyperPod ml.* prices differ from EC2's and are not in the table (https://aws.amazon.com/sagemaker/pricing/)",
    }[kind]


def reload() -> None:
    """Forget the cached table (after refresh-prices rewrote it)."""
    _raw.cache_clear()
