"""Placement and network rules."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, NetworkSpec
from fmcluster.catalog.regions import closest_regions, is_known_region
from fmcluster.validation.rules import Violation, rule

REGIONS_SOURCE = ("botocore data/endpoints.json (partitions[*].regions, bundled with botocore; read offline by "
                  "fmcluster.catalog.regions)")


@rule("R-REGION-1", source=f"{REGIONS_SOURCE}; https://docs.aws.amazon.com/global-infrastructure/latest/regions/"
      "aws-regions.html")
def region_exists(bp: Blueprint) -> Iterator[Violation]:
    """The Region must be one botocore knows. The AZ rules (R-AZ-2, R-AZ-3) are suppressed by it for an
    unknown Region, so they never suggest zones derived from a misspelt name."""
    if is_known_region(bp.region):
        return
    close = closest_regions(bp.region)
    hint = f" - did you mean {' or '.join(close)}?" if close else ""
    yield "region", (
        f"unknown AWS Region, got {bp.region!r}; "
        f"allowed a Region name from botocore's endpoints data such as us-east-1, us-west-2 or eu-west-1{hint}"
    )


@rule("R-AZ-1", source="https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html")
def one_availability_zone(bp: Blueprint) -> Iterator[Violation]:
    """Exactly one of availability_zone / availability_zone_id: EFA and cluster placement groups are single-AZ."""
    if bp.availability_zone and bp.availability_zone_id:
        yield "availability_zone_id", (
            "set either availability_zone or availability_zone_id, not both, "
            f"got {bp.availability_zone!r} and {bp.availability_zone_id!r}; "
            "allowed one of them (prefer availability_zone_id for reservations)"
        )
    elif not bp.availability_zone and not bp.availability_zone_id:
        yield "availability_zone", (
            "missing; allowed an AZ name such as us-east-1a or an availability_zone_id such as use1-az6 "
            "(EFA nodes, the placement group and FSx live in one AZ)"
        )


@rule("R-AZ-2", source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-regions-availability-zones.html",
      suppressed_by=("R-REGION-1",))
def zone_in_region(bp: Blueprint) -> Iterator[Violation]:
    """An AZ name is the Region name plus one letter; a Local Zone name is the Region, a location and a letter.
    Suppressed when the Region itself is unknown: R-REGION-1 reports it and zones of a misspelt Region mean nothing."""
    az = bp.availability_zone
    if az and az[:-1] != bp.region and not az.startswith(f"{bp.region}-"):
        yield "availability_zone", f"not in region {bp.region}, got {az!r}; allowed {bp.region}a, {bp.region}b, ..."


@rule("R-NET-1", source="fmcluster: an imported VPC needs its subnet id because synth never looks up the account",
      scope="network")
def import_needs_subnet(net: NetworkSpec) -> Iterator[Violation]:
    """An existing VPC is imported with its GPU subnet, and a subnet only with its VPC."""
    if net.vpc_id and not net.gpu_subnet_id:
        yield "network.gpu_subnet_id", f"required with vpc_id {net.vpc_id!r}, got nothing; allowed subnet-<hex> in the blueprint's AZ"
    if net.gpu_subnet_id and not net.vpc_id:
        yield "network.vpc_id", f"required with gpu_subnet_id {net.gpu_subnet_id!r}, got nothing; allowed vpc-<hex>"


#: Settings that shape a VPC fmcluster creates; an imported VPC (``network.vpc_id``) keeps its own.
NEW_VPC_ONLY = ("vpc_cidr", "gpu_subnet_prefix_length")


@rule("R-NET-2", level="warning", source="fmcluster: an imported VPC and its GPU subnet are used as they are (no "
      "lookup, no change at synth)", scope="network")
def new_vpc_settings_ignored(net: NetworkSpec) -> Iterator[Violation]:
    """``vpc_cidr`` and ``gpu_subnet_prefix_length`` size a VPC fmcluster creates; with ``vpc_id`` they are ignored."""
    ignored = [k for k in NEW_VPC_ONLY if k in net.model_fields_set]
    if net.vpc_id and ignored:
        yield f"network.{ignored[0]}", (
            f"ignored with an imported VPC ({net.vpc_id}), got {', '.join(f'{k}={getattr(net, k)}' for k in ignored)}; "
            "allowed these settings only for a VPC fmcluster creates (remove them, or remove vpc_id)"
        )
