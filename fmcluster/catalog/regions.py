"""AWS Region names, read offline from botocore's bundled endpoints data.

Source: ``botocore.loaders.create_loader().load_data("endpoints")`` -> ``partitions[*].regions``
(botocore/data/endpoints.json, shipped with botocore, which boto3 - a runtime dependency - pulls in).
The list is as current as the installed botocore; no network call is made.
"""

from __future__ import annotations

import difflib
from functools import cache, lru_cache

from fmcluster.severity import closest_names


@lru_cache(maxsize=1)
def known_regions() -> tuple[str, ...]:
    """Every Region of every partition in botocore's endpoints data, sorted."""
    from botocore.loaders import create_loader

    data = create_loader().load_data("endpoints")
    return tuple(sorted({r for p in data["partitions"] for r in p.get("regions", {})}))


def is_known_region(region: str) -> bool:
    return region in known_regions()


#: The spelling closeness (difflib ratio) a Region suggestion needs: Region names share most of their letters
#: (``us-east-3`` is 0.62 from ``ap-northeast-3``), so a one-letter slip (0.89) passes and another Region does not.
REGION_CUTOFF = 0.85


def closest_regions(region: str, limit: int = 3) -> list[str]:
    """The known Regions ``region`` plausibly misspells (:func:`fmcluster.severity.closest_names`: close in spelling,
    the same digits): best difflib ratio (at least :data:`REGION_CUTOFF`), ties broken by the number of differing
    positions, then by name; at most ``limit``. ``us-esat-1`` -> ``[us-east-1]``; ``us-east-9`` -> ``[]`` (another
    number is another Region, not a typo); ``ap-south-3`` -> ``[]`` (``ap-southeast-3`` is another Region)."""

    def key(r: str) -> tuple[float, int]:
        low = region.lower()  # ranked as closest_names filters: case-insensitively (US-EAST-1 -> us-east-1)
        ratio = difflib.SequenceMatcher(None, low, r).ratio()
        differing = sum(a != b for a, b in zip(low, r, strict=False)) + abs(len(low) - len(r))
        return (-round(ratio, 6), differing)

    plausible = closest_names(region, known_regions(), limit=len(known_regions()), cutoff=REGION_CUTOFF)
    scored = sorted((key(r), r) for r in plausible)
    if not scored:
        return []
    return [r for k, r in scored if k == scored[0][0]][:limit]


@cache
def partition_of(region: str) -> str | None:
    """The partition (``aws``, ``aws-cn``, ``aws-us-gov``, ...) whose botocore endpoints data lists ``region``,
    else the partition whose ``regionRegex`` matches it; ``None`` when none does."""
    import re

    from botocore.loaders import create_loader

    partitions = create_loader().load_data("endpoints")["partitions"]
    for p in partitions:
        if region in p.get("regions", {}):
            return str(p["partition"])
    for p in partitions:
        if re.match(p.get("regionRegex", "$^"), region):
            return str(p["partition"])
    return None


@cache
def service_regions(service: str) -> tuple[str, ...]:
    """Regions where botocore's endpoints data lists an endpoint of ``service`` (its endpoint prefix, e.g.
    ``grafana`` for Amazon Managed Grafana, ``aps`` for Amazon Managed Service for Prometheus), every
    partition, FIPS and other non-Region endpoints left out; sorted. Empty when the data lists none."""
    from botocore.loaders import create_loader

    out: set[str] = set()
    for p in create_loader().load_data("endpoints")["partitions"]:
        regions = p.get("regions", {})
        out.update(r for r in p.get("services", {}).get(service, {}).get("endpoints", {}) if r in regions)
    return tuple(sorted(out))


@cache
def _recorded_offerings() -> dict[str, object]:
    from importlib import resources

    import yaml

    data: dict[str, object] = yaml.safe_load(
        resources.files("fmcluster.catalog").joinpath("data/region_offerings.yaml").read_text())
    return data


def recorded_regions_of(instance_type: str) -> tuple[str, ...] | None:
    """Regions that offered ``instance_type`` when EC2's DescribeInstanceTypeOfferings was recorded
    (``catalog/data/region_offerings.yaml``, moto 5.2.5's recording, a snapshot: use for warnings only);
    ``None`` when the type was not recorded."""
    data = _recorded_offerings()
    if instance_type not in data["recorded_types"]:  # type: ignore[operator]
        return None
    regions: dict[str, list[str]] = data["regions"]  # type: ignore[assignment]
    return tuple(sorted(r for r, types in regions.items() if instance_type in types))


@cache
def recorded_zone_ids(region: str) -> tuple[str, ...] | None:
    """The Availability Zone IDs of ``region`` as recorded (``catalog/data/availability_zone_ids.yaml``, moto's
    recording of DescribeInstanceTypeOfferings by AZ ID; Local Zones not included); ``None`` for a Region not
    recorded. A snapshot of one account: an older account may see a zone new accounts no longer get (apne1-az3),
    so judge a zone ID against it with warnings only (R-AZ-4). The one error built on it is R-AZ-5, on an AZ name's
    letter beyond :func:`zone_letter_count` (the larger of the ID count and the highest ID number, which covers such
    legacy zones); its message offers ``availability_zone_id``, which only warns, for a zone opened since."""
    from importlib import resources

    import yaml

    data = yaml.safe_load(resources.files("fmcluster.catalog").joinpath("data/availability_zone_ids.yaml").read_text())
    ids = data["regions"].get(region)
    return tuple(ids) if ids is not None else None


def zone_letter_count(region: str) -> int | None:
    """How many letters the Availability Zone names of ``region`` can end with (``4``: a to d), from the recorded AZ IDs
    (:func:`recorded_zone_ids`); ``None`` for a Region not recorded.

    AZ names are mapped to AZ IDs per account (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html),
    so no letter names one zone, but an account sees one name per zone it has. The bound is the larger of the number
    of zones and the highest AZ ID number, not the count alone: a zone closed to new accounts keeps its number and its
    letter, and ap-northeast-1 (apne1-az1, az2, az4) is seen as ap-northeast-1a, c and d, ca-central-1 (cac1-az1,
    az2, az4) as a, b and d in moto's recording of EC2 DescribeInstanceTypeOfferings by AZ name
    (getmoto/moto ``moto/ec2/resources/instance_type_offerings/availability-zone/``). That the letters stop there is
    inferred from the recordings, not stated by AWS (tests/features/network/test_zone_letter_rules.py checks every
    recorded name against it)."""
    ids = recorded_zone_ids(region)
    if ids is None:
        return None
    numbers = [int(z.rsplit("-az", 1)[1]) for z in ids if z.rsplit("-az", 1)[1].isdigit()]
    return max(len(ids), *numbers)
