"""``fmcluster catalog refresh-prices``: rewrite the EC2 On-Demand part of the price table from the AWS Price List API.

The Price List Query API (``pricing:GetProducts``, https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html)
answers from ``us-east-1`` (also ``eu-central-1``, ``ap-south-1``) for every Region. For each Region and instance type
of the table (and every catalog instance type in those Regions) it asks for ``ServiceCode=AmazonEC2`` products with
``regionCode``, ``instanceType``, ``operatingSystem=Linux``, ``tenancy=Shared``, ``preInstalledSw=NA``,
``capacitystatus=Used`` and ``marketoption=OnDemand`` (the plain On-Demand Linux SKU; Capacity Block SKUs carry
``marketoption=CapacityBlock``), and reads ``terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`` of the ``Hrs``
dimension. Every refreshed entry gets ``source: PRICE-LIST-API`` and ``as_of`` = the day it ran; an instance type
without such a product gets ``usd_per_hour: null`` (unknown). Only the ``ec2_on_demand`` block and ``table_date``
of the file are rewritten; everything else (comments, FSx, NAT, approximations) stays as it is.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

#: Region of the Price List Query API endpoint used.
PRICING_ENDPOINT_REGION = "us-east-1"
SOURCE_KEY = "PRICE-LIST-API"
SOURCE_TEXT = "AWS Price List Query API (pricing:GetProducts, ServiceCode AmazonEC2, Linux, Shared, OnDemand)"


class RefreshError(Exception):
    """The Price List API could not be asked (no credentials, no network, access denied) or the file is unusable."""


def _filters(region: str, instance_type: str) -> list[dict[str, str]]:
    pairs = {"regionCode": region, "instanceType": instance_type, "operatingSystem": "Linux", "tenancy": "Shared",
             "preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs.items()]


def on_demand_price(client: Any, region: str, instance_type: str) -> float | None:
    """USD per hour of the On-Demand Linux SKU, or None when the Price List has none (not offered there)."""
    kwargs: dict[str, Any] = {"ServiceCode": "AmazonEC2", "Filters": _filters(region, instance_type), "MaxResults": 100}
    found: list[float] = []
    while True:
        resp = client.get_products(**kwargs)
        for raw in resp.get("PriceList", []):
            item = json.loads(raw) if isinstance(raw, str) else raw
            for term in (item.get("terms", {}).get("OnDemand") or {}).values():
                for dim in (term.get("priceDimensions") or {}).values():
                    usd = (dim.get("pricePerUnit") or {}).get("USD")
                    if dim.get("unit") == "Hrs" and usd is not None and float(usd) > 0:
                        found.append(float(usd))
        token = resp.get("NextToken")
        if not token:
            break
        kwargs["NextToken"] = token
    return max(found) if found else None  # one SKU expected; never under-state if the filters leave several


def _block(entries: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["ec2_on_demand:"]
    for region in sorted(entries):
        lines.append(f"  {region}:")
        for it in sorted(entries[region]):
            lines.append(f"    {it}: {json.dumps(entries[region][it], separators=(', ', ': '))}")
    return "\n".join(lines) + "\n"


def refresh(path: Path, client: Any, *, instance_types: Iterable[str] = (), today: dt.date | None = None) -> dict[str, int]:
    """Rewrite ``path``'s ``ec2_on_demand`` block and ``table_date`` from the Price List. Returns counts
    ``{"priced": n, "unknown": m}``. Raises :class:`RefreshError` (with the API's message) when a call fails."""
    from botocore.exceptions import BotoCoreError, ClientError

    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    table = data.get("ec2_on_demand") or {}
    if not isinstance(table, dict) or not table:
        raise RefreshError(f"{path}: no ec2_on_demand table to refresh")
    day = (today or dt.date.today()).isoformat()
    wanted = {r: sorted(set(types or {}) | set(instance_types)) for r, types in table.items()}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    counts = {"priced": 0, "unknown": 0}
    for region, types in wanted.items():
        out[region] = {}
        for it in types:
            try:
                price = on_demand_price(client, region, it)
            except (ClientError, BotoCoreError) as e:
                raise RefreshError(f"could not get the price of {it} in {region} from the AWS Price List API: {e}") from None
            if price is None:
                out[region][it] = {"usd_per_hour": None, "as_of": day, "source": SOURCE_KEY,
                                   "note": "no On-Demand Linux product in the Price List for this Region"}
                counts["unknown"] += 1
            else:
                out[region][it] = {"usd_per_hour": price, "as_of": day, "source": SOURCE_KEY, "confidence": "primary"}
                counts["priced"] += 1
    block = re.compile(r"^ec2_on_demand:\n(?:(?:[ #].*)?\n)*?(?=^\S)", re.M)
    if not block.search(text):
        raise RefreshError(f"{path}: cannot find the ec2_on_demand block followed by another top-level key")
    text = block.sub(lambda _: _block(out) + "\n", text, count=1)
    text = re.sub(r'^table_date: .*$', f'table_date: "{day}"', text, count=1, flags=re.M)
    if f"  {SOURCE_KEY}:" not in text:
        text = text.replace("sources:\n", f"sources:\n  {SOURCE_KEY}: {json.dumps(SOURCE_TEXT)}\n", 1)
    yaml.safe_load(text)  # never leave a file the plan cannot read
    path.write_text(text, encoding="utf-8")
    return counts
