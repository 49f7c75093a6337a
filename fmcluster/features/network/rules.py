"""Placement and network rules."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

from fmcluster.blueprint.fields import text_fields
from fmcluster.blueprint.model import Blueprint, NetworkSpec
from fmcluster.catalog import get_instance
from fmcluster.catalog.regions import closest_regions, is_known_region, zone_letter_count
from fmcluster.resolved import ResolvedCluster
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


def zone_name_fields(bp: Blueprint) -> Iterator[tuple[str, str]]:
    """``(YAML path, value)`` of every AZ name field set in the blueprint: each text field named
    ``availability_zone`` or ``*_availability_zone`` at any depth (``availability_zone``, the EKS control plane's and
    the accounting database's second AZ; :func:`fmcluster.blueprint.fields.text_fields`). The second-AZ fields also
    take an AZ ID (``use1-az4``); the caller tells them apart."""
    for path, _name, value in text_fields(bp, lambda n: n == "availability_zone" or n.endswith("_availability_zone")):
        yield path, value


@rule("R-AZ-5", source="fmcluster/catalog/data/availability_zone_ids.yaml (the Region's AZ IDs, recorded by getmoto/moto "
      "from EC2 DescribeInstanceTypeOfferings, tools/record_az_ids.py); "
      "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-regions-availability-zones.html (an AZ name is the "
      "Region code and a letter); https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html (names "
      "map to zones per account)")
def zone_letter_exists(bp: Blueprint) -> Iterator[Violation]:
    """Every AZ name of the blueprint's Region (``us-east-1a``; every field :func:`zone_name_fields` finds) must end
    with a letter the Region has: us-west-2 has four zones, so us-west-2e is no zone in any account.

    Letters are mapped to zones per account, so the letter says nothing about which zone it is; only how many zones
    the Region has bounds it (:func:`fmcluster.catalog.regions.zone_letter_count`: the number of recorded zones, or
    the highest AZ ID number when a zone closed to new accounts left a gap, ap-northeast-1d). A Region not in the
    recording is not checked. An error: the recording is a snapshot, so a zone AWS opened since is refused until it is
    re-recorded; the message offers ``availability_zone_id``, which is only warned about (R-AZ-4). Names of another
    Region and Local Zone names are other rules' (R-AZ-2, the second-AZ rules R-EKS-3 / R-ACCT-2, R-LZ-1)."""
    count = zone_letter_count(bp.region)
    if count is None:
        return
    letters = string.ascii_lowercase[:count]
    for path, az in zone_name_fields(bp):
        if len(az) == len(bp.region) + 1 and az.startswith(bp.region) and az[-1] not in letters:
            yield path, (
                f"no such Availability Zone in {bp.region}, got {az!r}; allowed {bp.region}{letters[0]} to "
                f"{bp.region}{letters[-1]} (the letters your account has: aws ec2 describe-availability-zones "
                f"--region {bp.region}), or an AZ ID (availability_zone_id) for a zone opened since fmcluster's "
                "recording"
            )


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
    """``vpc_cidr`` and ``gpu_subnet_prefix_length`` size a VPC fmcluster creates; with ``vpc_id`` they are ignored.
    One warning per setting, at its own path with its own value."""
    if not net.vpc_id:
        return
    for key in (k for k in NEW_VPC_ONLY if k in net.model_fields_set):
        yield f"network.{key}", (
            f"ignored with an imported VPC ({net.vpc_id}), got {getattr(net, key)!r}; "
            "allowed this setting only for a VPC fmcluster creates (remove it, or remove vpc_id)"
        )


#: Why a Local Zone is refused with a VPC fmcluster creates (R-LZ-1).
NAT_IN_LOCAL_ZONES = "https://docs.aws.amazon.com/local-zones/latest/ug/local-zones-connectivity-nat.html"
#: The PCS control plane's subnet: "Subnets can't be in AWS Outposts, AWS Wavelength or an AWS Local Zone" (R-LZ-2).
PCS_CONTROL_PLANE_SUBNET = "https://docs.aws.amazon.com/pcs/latest/APIReference/API_NetworkingRequest.html"


def local_zone(bp: Blueprint) -> tuple[str, str] | None:
    """``(field, zone)`` when the blueprint's zone is not a regular Availability Zone (a Local Zone such as
    us-east-1-dfw-2a / use1-dfw2-az1, or a Wavelength Zone), else ``None``.

    A regular AZ name is the Region plus one letter (us-east-1a) and a regular AZ ID is ``<prefix>-az<n>``
    (use1-az6); Local Zone names and IDs carry a location between them
    (https://docs.aws.amazon.com/local-zones/latest/ug/how-local-zones-work.html: a Local Zone such as us-west-2-lax-1
    extends its parent Region)."""
    az, zid = bp.availability_zone, bp.availability_zone_id
    if az and az.startswith(f"{bp.region}-"):
        return "availability_zone", az
    if zid and not re.fullmatch(r"[a-z0-9]+-az\d+", zid):
        return "availability_zone_id", zid
    return None


def zone_bound_types(bp: Blueprint, zone: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(instance type, its zones)`` of the Capacity Block groups whose type EC2 sells only in certain zones
    (catalog ``capacity_block_zones``, R-CAP-15) that include ``zone``: for those, another zone is no way out."""
    found = [(g.instance_type, get_instance(g.instance_type).capacity_block_zones) for g in bp.compute
             if g.capacity.type == "capacity_block"]
    return [(t, zones) for t, zones in found if zone in zones]


def other_zone_advice(bp: Blueprint, zone: str) -> str:
    """``"a regular Availability Zone, or "`` as the first way out of a Local Zone, or ``""`` when a Capacity Block
    group's type is sold only in that zone (:func:`zone_bound_types`, R-CAP-15): another zone is no way out then."""
    return "" if zone_bound_types(bp, zone) else "a regular Availability Zone, or "


@rule("R-LZ-1", source=f"{NAT_IN_LOCAL_ZONES}; fmcluster: a VPC it creates has its public subnet, NAT gateway and "
      "GPU subnet in the blueprint's one zone (features/network/construct.py)")
def local_zone_needs_existing_vpc(bp: Blueprint) -> Iterator[Violation]:
    """A Local Zone with a VPC fmcluster creates would put the public subnet and the NAT gateway in the Local Zone,
    where NAT gateways exist only in some zones, and fmcluster has no subnet in the parent zone to put them in.
    The user brings a VPC whose GPU subnet in the Local Zone routes through the parent Region."""
    found = local_zone(bp)
    if found is None or bp.network.vpc_id:
        return
    field, zone = found
    other_zone = other_zone_advice(bp, zone)
    yield field, (
        f"a Local Zone with a VPC fmcluster creates, got {zone!r}: its NAT gateway and public subnet would be created in "
        f"the Local Zone, and NAT gateways exist only in some Local Zones; allowed {other_zone}an "
        "existing VPC (network.vpc_id and network.gpu_subnet_id: a subnet in the Local Zone whose route table reaches "
        "a NAT gateway or endpoints in the parent Region)"
    )


@rule("R-LZ-2", source=PCS_CONTROL_PLANE_SUBNET, orchestrators=("pcs",))
def local_zone_pcs_control_plane(bp: Blueprint) -> Iterator[Violation]:
    """PCS puts its control plane's network interface in the GPU subnet, and that subnet cannot be in a Local Zone.
    When the zone is there for a type whose Capacity Blocks are sold only in Local Zones (catalog
    ``capacity_block_zones``, R-CAP-15), a regular Availability Zone is no way out: ParallelCluster is."""
    found = local_zone(bp)
    if found is None:
        return
    field, zone = found
    only_here = zone_bound_types(bp, zone)
    allowed = ("allowed orchestrator.kind parallelcluster in the Local Zone: with PCS, fmcluster cannot run "
               f"{only_here[0][0]}, whose Capacity Blocks EC2 sells only in {', '.join(only_here[0][1])} (R-CAP-15)"
               if only_here else
               "allowed a regular Availability Zone with PCS, or ParallelCluster or HyperPod in the Local Zone")
    yield field, (
        f"AWS PCS cannot place its control plane in a Local Zone, got {zone!r} (fmcluster gives PCS the GPU subnet); "
        f"{allowed}"
    )


@rule("R-LZ-3", level="warning",
      source="UNVERIFIED: no AWS page found lists FSx for Lustre among the Local Zone services; the AWS Compute blog "
      "(https://aws.amazon.com/blogs/compute/deploying-low-latency-hybrid-cloud-storage-on-aws-local-zones-using-aws-"
      "storage-gateway/) describes using FSx in the parent Region")
def local_zone_lustre(bp: Blueprint) -> Iterator[Violation]:
    """fmcluster creates FSx for Lustre in the GPU subnet; in a Local Zone that may not be possible (unverified)."""
    found = local_zone(bp)
    if found is None or bp.storage.lustre is None:
        return
    field, zone = found
    other_zone = other_zone_advice(bp, zone)
    yield "storage.lustre", (
        f"created in the GPU subnet, which is in the Local Zone {zone!r} ({field}); FSx for Lustre in Local Zones is "
        f"not confirmed by AWS documentation and creation may fail; allowed {other_zone}storage.lustre as is (at "
        "your risk), or drop storage.lustre and mount a file system of the parent Region yourself"
    )


@rule("R-LZ-4", level="warning",
      source="https://docs.aws.amazon.com/local-zones/latest/ug/available-local-zones.html (each Local Zone offers its "
      "own, smaller set of instance types); fmcluster: the head / login node launches in the GPU subnet", scope="cluster")
def local_zone_management_node(rc: ResolvedCluster) -> Iterator[Violation]:
    """The head node (ParallelCluster) or login node (PCS) launches in the GPU subnet; in a Local Zone its type may not
    be offered. Which types a Local Zone offers is not recorded in the catalog, so this warns and ``fmcluster
    preflight`` checks the offering (DescribeInstanceTypeOfferings by zone ID)."""
    found = local_zone(rc.blueprint)
    if found is None:
        return
    field, zone = found
    for label, instance_type in rc.profile.management_instance_types:
        if instance_type:
            yield field, (
                f"the {label} ({instance_type}) launches in the GPU subnet, in the Local Zone {zone!r}, and a Local Zone "
                f"offers fewer instance types than its Region (not recorded in the catalog), got {zone!r}; allowed as "
                f"is after `fmcluster preflight` finds {instance_type} offered there, or another {label} type that is"
            )

