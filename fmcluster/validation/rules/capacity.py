"""Capacity rules (EC2 User Guide placement groups and Capacity Blocks, botocore ec2, aws-parallelcluster validators).

Each rule covers its whole kind: every compute group, every reservation-backed capacity type,
every instance type the catalog marks (UltraServer sizes, Capacity-Block-only, CPU architecture),
not just the example that motivated it.

Enforced by the model's shape rather than a rule (a rule could never fire):

- one instance type per group (``ComputeGroup.instance_type`` is a single string);
- no spot options on a Capacity Block (``capacity`` is a union tagged by ``type`` and a
  ``capacity_block`` entry takes only ``reservation_id``: any other key is "unknown key");
- reservation ids are ``cr-`` + 17 hex digits (``RESERVATION_ID_PATTERN``);
- exactly one of ``reservation_id`` / ``resource_group_arn`` for ``odcr``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC

from fmcluster.blueprint.model import Blueprint, ComputeGroup
from fmcluster.catalog import get_instance
from fmcluster.catalog.images import bakeable_stacks
from fmcluster.catalog.regions import recorded_zone_ids
from fmcluster.catalog.software import get_stack
from fmcluster.catalog.support import evaluation_date
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule

PC_VALIDATORS = "aws/aws-parallelcluster cli/src/pcluster/validators/"
CB_LAUNCH_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html"
ULTRASERVER_DOC = "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html"

#: Why a new placement group is a bad idea, per reservation-backed capacity type (R-CAP-3).
_PLACEMENT_REASON = {
    "capacity_block": "Capacity Block instances are already co-located in an EC2 UltraCluster, "
                      "and a new placement group can make launches fail with insufficient capacity",
    "odcr": "the reserved instances are not guaranteed to fit in a new placement group, "
            "so launches can fail with insufficient capacity "
            "(create the reservation in a cluster placement group instead)",
    "training_plan": "HyperPod places training-plan capacity itself and has no placement-group setting, "
                     "so the setting is ignored",
}


TRAINING_PLAN_DOC = "https://docs.aws.amazon.com/sagemaker/latest/dg/reserve-capacity-with-training-plans.html"


@rule("R-CAP-1", scope="cluster", source=f"{TRAINING_PLAN_DOC} (training plans are SageMaker capacity)")
def training_plan_only_on_hyperpod(rc: ResolvedCluster) -> Iterator[Violation]:
    """Training plans need an orchestrator whose profile accepts them (HyperPod)."""
    bp = rc.blueprint
    for i, g in enumerate(bp.compute):
        if g.capacity.type == "training_plan" and not rc.profile.accepts("training_plan"):
            yield f"compute[{i}].capacity.type", (
                f"training plans only work with HyperPod, got orchestrator.kind {bp.orchestrator.kind!r}; "
                "allowed on_demand, spot, odcr or capacity_block (or orchestrator.kind: hyperpod)"
            )


@rule("R-CAP-2", source=f"{PC_VALIDATORS}cluster_validators.py (CAPACITY_BLOCK: MinCount == MaxCount > 0); "
      f"{CB_LAUNCH_DOC}", scope="compute")
def capacity_block_static_count(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """A Capacity Block is a fixed set of instances for a fixed term: its nodes are static.

    ``count > 0`` is guaranteed by the model (``ge=1``); an omitted ``min_count`` means ``count``.
    """
    for i, g in enumerate(groups):
        if g.capacity.type == "capacity_block" and g.min_count is not None and g.min_count != g.count:
            yield f"compute[{i}].min_count", (
                "a Capacity Block runs a fixed number of nodes for its whole term, "
                f"got min_count {g.min_count} with count {g.count}; allowed min_count {g.count} or no min_count"
            )


@rule("R-CAP-3", level="warning",
      source=f"{PC_VALIDATORS}ec2_validators.py (PlacementGroupCapacityTypeValidator); "
      "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/limitations-placement-groups.html "
      "(reserve capacity explicitly in the cluster placement group)", scope="compute")
def no_new_placement_group_for_reservations(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """Reservation-backed groups get no new placement group by default; forcing one warns."""
    for i, g in enumerate(groups):
        if g.reservation_backed and g.placement_group is True:
            yield f"compute[{i}].placement_group", (
                f"{_PLACEMENT_REASON[g.capacity.type]}, "
                f"got placement_group true with capacity type {g.capacity.type!r}; "
                "allowed false or no placement_group (the default)"
            )


@rule("R-CAP-4", scope="cluster", orchestrators=("hyperpod",),
      source="botocore sagemaker service-2.json ClusterInstanceGroupSpecification (TrainingPlanArn, "
      "CapacityRequirements with Spot or OnDemand; no EC2 reservation target); CloudFormation resource schema "
      "AWS::SageMaker::Cluster ClusterCapacityRequirements; "
      "https://docs.aws.amazon.com/sagemaker/latest/dg/reserve-capacity-with-training-plans.html; "
      "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-spot.html")
def hyperpod_capacity_types(rc: ResolvedCluster) -> Iterator[Violation]:
    """HyperPod instance groups take on-demand capacity, Spot (``CapacityRequirements.Spot``) or a SageMaker
    training plan, as the profile lists them. They cannot target EC2 reservations (Capacity Blocks, ODCRs):
    reserved HyperPod capacity is a training plan."""
    bp, accepted = rc.blueprint, rc.profile.capacity_types
    names = {"capacity_block": "EC2 Capacity Blocks", "odcr": "EC2 On-Demand Capacity Reservations"}
    types = list(accepted)
    allowed = f"{', '.join(types[:-1])} or {types[-1]}" if len(types) > 1 else types[0]
    for i, g in enumerate(bp.compute):
        if g.capacity.type in names:
            yield f"compute[{i}].capacity.type", (
                f"HyperPod cannot launch into {names[g.capacity.type]}; "
                "reserve HyperPod capacity with a SageMaker training plan, "
                f"got {g.capacity.type!r} with orchestrator.kind 'hyperpod'; "
                f"allowed {allowed} - did you mean training_plan?"
            )
        elif g.capacity.type not in accepted:
            yield f"compute[{i}].capacity.type", (
                "HyperPod instance groups do not take this capacity type, "
                f"got {g.capacity.type!r} with orchestrator.kind 'hyperpod'; allowed {allowed}"
            )


@rule("R-HP-7", level="warning", scope="cluster", orchestrators=("hyperpod-slurm",),
      source="unverified: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-spot.html describes Spot "
      "with EKS orchestration (continuous provisioning, Karpenter); the API (botocore sagemaker "
      "ClusterInstanceGroupSpecification.CapacityRequirements) does not limit it to EKS")
def hyperpod_slurm_spot_unverified(rc: ResolvedCluster) -> Iterator[Violation]:
    """Spot on HyperPod Slurm worker groups is accepted by the API shape but not documented: a warning."""
    for i, g in enumerate(rc.blueprint.compute):
        if g.capacity.type == "spot":
            yield f"compute[{i}].capacity.type", (
                "Spot on HyperPod is documented for EKS orchestration only; "
                "with Slurm it is unverified and the cluster request may be refused, "
                "got 'spot' with orchestration slurm; allowed spot (at your risk), on_demand or training_plan"
            )


@rule("R-CAP-5", source=f"{ULTRASERVER_DOC} (u-p6e-gb200x36 = 9 instances, u-p6e-gb200x72 = 18)",
      scope="compute")
def ultraserver_count(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """Instance types sold only as UltraServers come in whole UltraServers."""
    for i, g in enumerate(groups):
        sizes = get_instance(g.instance_type).ultraserver_sizes
        if not sizes:
            continue
        step = min(sizes)  # every catalog size is a multiple of the smallest (9, 18)
        if g.count % step:
            lower = (g.count // step) * step
            hint = f"{lower} or {lower + step}" if lower else f"{step}"
            yield f"compute[{i}].count", (
                f"{g.instance_type} is sold only as UltraServers of {' or '.join(map(str, sizes))} instances, "
                f"got count {g.count}; allowed a multiple of {step} - did you mean {hint}?"
            )


@rule("R-CAP-6", scope="cluster",
      source=f"{ULTRASERVER_DOC} (P6e-GB200 UltraServers are obtained through Capacity Blocks); "
             f"{CB_LAUNCH_DOC}")
def capacity_block_only_types(rc: ResolvedCluster) -> Iterator[Violation]:
    """Types the catalog marks ``capacity_block_only`` need reserved UltraServer capacity: a Capacity
    Block (ParallelCluster, PCS) or a training plan (HyperPod), whichever the profile accepts."""
    bp = rc.blueprint
    allowed = next(t for t in ("capacity_block", "training_plan") if rc.profile.accepts(t))
    for i, g in enumerate(bp.compute):
        reserved = g.capacity.type in ("capacity_block", "training_plan")
        if get_instance(g.instance_type).capacity_block_only and not reserved:
            yield f"compute[{i}].capacity.type", (
                f"{g.instance_type} is sold only as reserved UltraServer capacity, got {g.capacity.type!r}; "
                f"allowed {allowed} on orchestrator.kind {bp.orchestrator.kind!r} - did you mean {allowed}?"
            )


@rule("R-CAP-7", source=f"{ULTRASERVER_DOC} (arm64 AMIs for P6e-GB200); "
      f"{CB_LAUNCH_DOC} (the AMI platform must match the reservation); catalog/data/software.yaml "
      "cpu_architectures", suppressed_by=("R-CAP-9",))
def stack_matches_cpu_architecture(bp: Blueprint) -> Iterator[Violation]:
    """The software stack must be built for every group's CPU architecture (p6e-gb200: arm64 Grace).

    Suppressed when the groups mix architectures: no single stack can fit, R-CAP-9 reports the mix,
    and advice to switch stacks would only move this error to the other group."""
    stack = get_stack(bp.software.stack_name)
    for i, g in enumerate(bp.compute):
        arch = get_instance(g.instance_type).cpu_architecture
        if arch not in stack.cpu_architectures:
            fits = [s for s in bakeable_stacks() if arch in get_stack(s).cpu_architectures]
            yield "software.stack", (
                f"{g.instance_type} (compute[{i}]) has {arch} CPUs and stack {stack.name!r} is built for "
                f"{', '.join(stack.cpu_architectures)}, "
                f"got {stack.name!r}; allowed {', '.join(fits) or 'none'}"
            )


@rule("R-CAP-8",
      source=f"{PC_VALIDATORS}ec2_validators.py (CapacityReservationValidator: reservation instance type "
      "equals the queue's); "
      "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html",
      scope="compute")
def shared_reservation_consistent(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """Groups that share a reservation id must agree on its instance type and kind (one reservation
    holds one instance type, and is either an ODCR or a Capacity Block)."""
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        rid = g.reservation_id
        if rid is None:
            continue
        if rid not in first:
            first[rid] = i
            continue
        j = first[rid]
        other = groups[j]
        if other.instance_type != g.instance_type:
            yield f"compute[{i}].instance_type", (
                f"reservation {rid} is also used by compute[{j}] with {other.instance_type} and a reservation holds one instance type, "
                f"got {g.instance_type}; allowed {other.instance_type}"
            )
        if other.capacity.type != g.capacity.type:
            yield f"compute[{i}].capacity.type", (
                f"reservation {rid} is also used by compute[{j}] as {other.capacity.type!r}, "
                f"got {g.capacity.type!r}; allowed {other.capacity.type!r}"
            )


#: The purchase page: "Each Capacity Block can have up to 64 instances, and you can have up to 256 instances across
#: Capacity Blocks"; the Capacity Blocks overview: "The total number of instances that can be reserved in Capacity
#: Blocks across all accounts in your AWS Organization can't exceed 256 instances on a particular date".
CB_PURCHASE_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html"
CB_OVERVIEW_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html"
CAPACITY_BLOCK_MAX_INSTANCES = 64
CAPACITY_BLOCK_MAX_TOTAL_INSTANCES = 256


@rule("R-CAP-13", source=f"{CB_PURCHASE_DOC} (each Capacity Block can have up to 64 instances; UltraServer "
      "Capacity Blocks are bought by UltraServer count, for which the page states no instance limit)",
      scope="compute")
def capacity_block_size(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """The groups on one Capacity Block (one ``reservation_id``) run at most 64 instances between them: a
    block holds no more, so the nodes past 64 would never launch.

    Instance types sold only as UltraServers (catalog ``ultraserver_sizes``: p6e-gb200) are skipped: their
    blocks are bought by UltraServer count and the page gives no per-block instance limit for them."""
    total: dict[str, int] = {}
    for i, g in enumerate(groups):
        rid = g.reservation_id
        if g.capacity.type != "capacity_block" or rid is None or get_instance(g.instance_type).ultraserver_sizes:
            continue
        before = total.get(rid, 0)
        total[rid] = before + g.count
        if before <= CAPACITY_BLOCK_MAX_INSTANCES < total[rid]:
            users = [f"compute[{j}] {h.count}" for j, h in enumerate(groups[: i + 1]) if h.reservation_id == rid]
            got = f"count {g.count}" if len(users) == 1 else f"{total[rid]} instances ({' + '.join(users)})"
            yield f"compute[{i}].count", (
                f"a Capacity Block holds at most {CAPACITY_BLOCK_MAX_INSTANCES} instances, got {got} on reservation "
                f"{rid}; allowed at most {CAPACITY_BLOCK_MAX_INSTANCES} instances per reservation_id (for more nodes, "
                "buy more blocks and give each group its own reservation_id)"
            )


@rule("R-CAP-14", level="warning", scope="compute",
      source=f"{CB_PURCHASE_DOC} (up to 256 instances across Capacity Blocks); {CB_OVERVIEW_DOC} (Considerations: "
      "at most 256 instances in Capacity Blocks across all accounts of an AWS Organization on a particular date)")
def capacity_blocks_total(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """More than 256 instances on Capacity Blocks in one blueprint: more than EC2 lets an AWS Organization hold
    in Capacity Blocks on one date. A warning: the limit counts the Organization's other blocks too, and blocks
    of different dates do not add up, which the blueprint does not always say. Every Capacity Block group
    counts, UltraServer ones included (the limit names no exception)."""
    blocks = [g for g in groups if g.capacity.type == "capacity_block"]
    everything = sum(g.count for g in blocks)
    total = 0
    limit = CAPACITY_BLOCK_MAX_TOTAL_INSTANCES
    for i, g in enumerate(groups):
        if g.capacity.type != "capacity_block":
            continue
        total += g.count
        if total - g.count <= limit < total:
            yield f"compute[{i}].count", (
                f"an AWS Organization can hold at most {limit} instances in Capacity Blocks on a date, "
                f"got {everything} instances in this blueprint's capacity_block groups; "
                f"allowed at most {limit} on any date across your Organization "
                "(fewer nodes, or blocks whose dates do not overlap)"
            )


@rule("R-CAP-15", scope="cluster", suppressed_by=("R-AZ-1", "R-CAP-4"),
      source=f"{CB_OVERVIEW_DOC} (Supported instance types and Regions: P6e-GB200 UltraServer Capacity Blocks in "
      f"US East (Dallas) Local Zone us-east-1-dfw-2a only); {CB_LAUNCH_DOC} (an instance launches only in the "
      "zone of its Capacity Block); catalog/data/instances.yaml capacity_block_zones")
def capacity_block_zone(rc: ResolvedCluster) -> Iterator[Violation]:
    """A Capacity Block group of a type EC2 sells only in certain zones (catalog ``capacity_block_zones``:
    p6e-gb200 in the Dallas Local Zone) must be in one of them: the blueprint's one zone is the GPU subnet's, and
    instances cannot launch into a block of another zone. Suppressed when the blueprint sets no zone or two
    (R-AZ-1 reports that), and on an orchestrator that takes no Capacity Block (R-CAP-4: HyperPod, where the
    advice is a training plan, whose zone this rule does not judge)."""
    bp = rc.blueprint
    field, zone = ("availability_zone", bp.availability_zone) if bp.availability_zone else (
        "availability_zone_id", bp.availability_zone_id)
    if not zone:
        return
    for i, g in enumerate(bp.compute):
        zones = get_instance(g.instance_type).capacity_block_zones
        if g.capacity.type == "capacity_block" and zones and zone not in zones:
            names = [z for z in zones if _ZONE_NAME.match(z)]
            ids = [z for z in zones if z not in names]
            matches = [m for m in map(_ZONE_NAME.match, names) if m]
            regions = sorted({m.group("region") for m in matches})
            local = any(len(m.group(0)) > len(m.group("region")) + 1 for m in matches)
            yield field, (
                f"EC2 sells {g.instance_type} Capacity Blocks (compute[{i}]) only in {', '.join(zones)}, got {zone!r}; "
                f"allowed availability_zone {' or '.join(names)} or availability_zone_id {' or '.join(ids)}, "
                f"with region {' or '.join(regions)}"
                + (" (a Local Zone: opt in to it, bring a VPC with a subnet there, R-LZ-1, "
                   "and an orchestrator that runs in Local Zones, R-LZ-2)" if local else "")
            )
            return


#: A zone name: its Region (``us-east-1``) then a letter (``us-east-1a``) or a Local Zone location
#: (``us-east-1-dfw-2a``); zone IDs (``use1-az6``, ``use1-dfw2-az1``) do not match.
_ZONE_NAME = re.compile(r"(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)(?:[a-z]|-[a-z]+-\d+[a-z])$")


@rule("R-CAP-9", source="fmcluster: one software stack (driver, CUDA, EFA, AMI) per blueprint, and "
      "catalog/data/software.yaml builds each stack for its cpu_architectures; "
      "https://docs.aws.amazon.com/parallelcluster/latest/ug/HeadNode-v3.html (one architecture per cluster)")
def one_cpu_architecture(bp: Blueprint) -> Iterator[Violation]:
    """All compute groups share one CPU architecture: the blueprint has one software stack, so x86_64
    and arm64 groups (p5.48xlarge + p6e-gb200.36xlarge) cannot both be served. Reported once per group
    whose architecture differs from the first group's; R-CAP-7, R-SW-1 and R-PC-2 are suppressed by it."""
    if not bp.compute:
        return
    first = bp.compute[0]
    first_arch = get_instance(first.instance_type).cpu_architecture
    for i, g in enumerate(bp.compute[1:], start=1):
        arch = get_instance(g.instance_type).cpu_architecture
        if arch != first_arch:
            yield f"compute[{i}].instance_type", (
                "all compute groups must share one CPU architecture (one software stack per blueprint), "
                f"got {g.instance_type} ({arch}) in group {g.name!r} and {first.instance_type} ({first_arch}) in group "
                f"{first.name!r} (compute[0]); "
                f"allowed {first_arch} instance types here, or a separate blueprint for the {arch} groups"
            )


_DIRECTIONS = {"east": "e", "west": "w", "north": "n", "south": "s", "central": "c", "northeast": "ne",
               "southeast": "se", "northwest": "nw", "southwest": "sw", "gov": "g"}


def az_id_prefix(region: str) -> str:
    """The AZ-ID prefix of a Region: ``us-east-1`` -> ``use1``, ``ap-northeast-1`` -> ``apne1``,
    ``us-gov-west-1`` -> ``usgw1``. Derived, not documented: matches every zone in moto's table
    (moto/ec2/models/availability_zones_and_regions.py; checked by tests/test_capacity_rules.py)."""
    parts = region.split("-")
    return parts[0] + "".join(_DIRECTIONS.get(p, p) for p in parts[1:-1]) + parts[-1]


@rule("R-CAP-10", level="warning", scope="cluster",
      source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html (the expiration "
      "warning 40 minutes before the end); fmcluster wires the window where its stack knows the head node's "
      "instance id (OrchestratorProfile.window_automation)")
def window_not_automated(rc: ResolvedCluster) -> Iterator[Violation]:
    """A Capacity Block group on an orchestrator whose stack does not wire the capacity window: nothing checkpoints,
    requeues or preloads on its own (docs/capacity.md "The capacity window")."""
    if rc.profile.window_automation:
        return
    for i, g in enumerate(rc.blueprint.compute):
        if g.announced_end:
            yield f"compute[{i}].capacity", (
                f"the Capacity Block's end is not automated on orchestrator.kind {rc.profile.kind!r}, got "
                f"{g.capacity.type!r}; allowed as is "
                "(run capacity-window/fmcluster-window-end from fmcluster render on the login node at EC2's warning) "
                "or orchestrator.kind: parallelcluster, which automates it"
            )


@rule("R-CAP-11", level="warning", scope="compute",
      source="https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html (one-time at() schedules: "
      "fmcluster's preload and start schedules); the evaluation date is today in UTC or FMCLUSTER_SUPPORT_DATE "
      "(fmcluster/catalog/support.py); whether Scheduler refuses an at() in the past is not verified")
def window_in_the_past(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """A Capacity Block whose ``ends_at`` (or ``starts_at``) is before today: the window is over (or has started),
    so its preload and start-gate schedules would lie in the past and never run; usually a copied or stale date."""
    try:
        today = evaluation_date()
    except ValueError:
        return  # R-SUP-1 reports a bad FMCLUSTER_SUPPORT_DATE
    for i, g in enumerate(groups):
        cap = g.capacity
        if cap.type != "capacity_block":
            continue
        for field in ("ends_at", "starts_at"):
            when = getattr(cap, field)
            if when is not None and when.astimezone(UTC).date() < today:
                yield f"compute[{i}].capacity.{field}", (
                    f"in the past (today is {today.isoformat()}), got {when.isoformat()}; "
                    "allowed the dates of a block still ahead (EC2 DescribeCapacityReservations StartDate/EndDate); "
                    "the preload and start schedules of a past date never run"
                )
                break


@rule("R-AZ-3",
      source="https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html; "
      "prefix derivation checked against getmoto/moto moto/ec2/models/availability_zones_and_regions.py",
      suppressed_by=("R-REGION-1",))
def zone_id_in_region(bp: Blueprint) -> Iterator[Violation]:
    """An AZ ID starts with its Region's short form (use1-az6 is in us-east-1; Local Zone IDs such as
    use1-dfw2-az1 too); capacity reservations are bound to AZ IDs, so a wrong one would surface only at
    deploy time. An error, like an AZ name of another Region (R-AZ-2).

    No zone number is suggested: AZ numbers of different Regions do not correspond (R-AZ-4 then checks the number
    against the recorded zones). Suppressed for an unknown Region (R-REGION-1 reports it)."""
    zid = bp.availability_zone_id
    if not zid:
        return
    prefix = az_id_prefix(bp.region)
    if zid.split("-")[0] != prefix:
        yield "availability_zone_id", (
            f"not an AZ ID of region {bp.region}, got {zid!r}; allowed {prefix}-az1, {prefix}-az2, ... "
            f"(AZ IDs of {bp.region} start with {prefix}-)"
        )


@rule("R-AZ-4", level="warning",
      source="fmcluster/catalog/data/availability_zone_ids.yaml (EC2 DescribeInstanceTypeOfferings by AZ ID, recorded "
      "by getmoto/moto, tools/record_az_ids.py); https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html "
      "(an AZ ID names the same zone in every account)",
      suppressed_by=("R-REGION-1", "R-AZ-3"))
def zone_id_recorded(bp: Blueprint) -> Iterator[Violation]:
    """An Availability Zone ID (``use1-az6``; not a Local Zone ID such as ``use1-dfw2-az1``) should be one of its
    Region's recorded zones. A warning, not an error: the recording is one account's view, and an older account can
    still use a zone new accounts do not get; ``fmcluster preflight`` checks the account's own list."""
    zid = bp.availability_zone_id
    known = recorded_zone_ids(bp.region)
    if not zid or known is None or not re.fullmatch(r"[a-z0-9]+-az\d+", zid) or zid in known:
        return
    yield "availability_zone_id", (
        f"not an Availability Zone ID recorded for {bp.region}, got {zid!r}; allowed {', '.join(known)} "
        f"(or a zone your account has: fmcluster preflight checks it)"
    )


#: The durations EC2 sells a Capacity Block for, in days: "1-day increments up to 14 days, and in 7-day increments up
#: to 182 days" (CB_PURCHASE_DOC; an extension follows the same steps to "182 days (26 weeks) total",
#: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-extend.html).
CAPACITY_BLOCK_DAYS = (*range(1, 15), *range(21, 183, 7))


def nearest_block_days(days: float) -> list[int]:
    """The purchasable durations (``CAPACITY_BLOCK_DAYS``) nearest to ``days``: one, or two at equal distance."""
    best = min(abs(d - days) for d in CAPACITY_BLOCK_DAYS)
    return [d for d in CAPACITY_BLOCK_DAYS if abs(d - days) == best]


@rule("R-CAP-12", level="warning", scope="compute",
      source=f"{CB_PURCHASE_DOC} (durations in 1-day increments up to 14 days and 7-day increments up to 182 days; "
      "all blocks end at 11:30 UTC, so a block is slightly shorter or longer than the duration asked); "
      "botocore ec2 service-2.json CapacityBlockOffering.CapacityBlockDurationHours (a block that starts at 04:55 "
      "and ends at 11:30 lasts 6 hours and 35 minutes); https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
      "capacity-blocks-extend.html (no limit to the number of extensions, up to 182 days in total: an extended "
      "block can have other lengths, so this only warns)")
def window_length_outside_capacity_blocks(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """A Capacity Block whose ``starts_at``..``ends_at`` is not a duration EC2 sells: 1 to 14 days in 1-day steps,
    then 21 to 182 days in 7-day steps. A block starts at any time of its first day and ends at 11:30 UTC, so
    its length is within one day of such a duration (a 14-day block lasts more than 13 and less than 15 days);
    anything else (15 to 20 days, more than 183) is a mistyped date, and the plan's window, preload and
    instance-hours follow the dates."""
    for i, g in enumerate(groups):
        cap = g.capacity
        if cap.type != "capacity_block" or cap.starts_at is None or cap.ends_at is None:
            continue
        days = (cap.ends_at - cap.starts_at).total_seconds() / 86400
        near = nearest_block_days(days)
        if abs(near[0] - days) >= 1:
            yield f"compute[{i}].capacity.ends_at", (
                f"the block lasts {days:g} days from starts_at {cap.starts_at.isoformat()}, got "
                f"{cap.ends_at.isoformat()}; allowed 1 to 14 days in 1-day steps or 21 to 182 days in 7-day steps "
                "(EC2 Capacity Blocks for ML; within a day of one, as blocks end at 11:30 UTC), nearest "
                f"{' or '.join(map(str, near))} days, unless the block was extended "
                "(extensions add their own lengths, up to 182 days in total); copy both dates from DescribeCapacityReservations "
                "(StartDate, EndDate)"
            )
