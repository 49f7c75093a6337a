"""Write ``fmcluster/catalog/data/availability_zone_ids.yaml``: the Availability Zone IDs of each Region, from moto's
recording of EC2 DescribeInstanceTypeOfferings(LocationType=availability-zone-id) (getmoto/moto
``moto/ec2/resources/instance_type_offerings/availability-zone-id/<region>.json.gz``, written by its
``scripts/ec2_get_instance_type_offerings.py``). An AZ ID names the same physical zone in every account, so the table
holds for every user. Run: ``.venv/bin/python -m tools.record_az_ids`` (moto comes with the dev extras)."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import moto

OUT = Path(__file__).resolve().parent.parent / "fmcluster" / "catalog" / "data" / "availability_zone_ids.yaml"


def recorded() -> dict[str, list[str]]:
    folder = resources.files("moto").joinpath("ec2/resources/instance_type_offerings/availability-zone-id")
    out: dict[str, list[str]] = {}
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        region = item.name.removesuffix(".json.gz")
        offerings = json.loads(gzip.decompress(item.read_bytes()))
        out[region] = sorted({o["Location"] for o in offerings}, key=lambda z: (len(z), z))
    return out


def main() -> None:
    lines = [
        f"# Availability Zone IDs per Region, recorded by moto {moto.__version__} from EC2 DescribeInstanceTypeOfferings",
        "# (LocationType=availability-zone-id): getmoto/moto moto/ec2/resources/instance_type_offerings/availability-zone-id/.",
        "# Written by tools/record_az_ids.py; do not edit. Local Zone IDs (use1-dfw2-az1) are not in it. A snapshot: AWS",
        "# adds zones rarely; fmcluster preflight checks the account's own list at deploy time.",
        "regions:",
    ]
    lines += [f"  {region}: [{', '.join(ids)}]" for region, ids in recorded().items()]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
