"""Preflight checks: small functions that each ask the account one question.

Every check takes the boto3 client(s) it needs plus plain values (never the whole blueprint) and
returns :class:`CheckResult` rows; :mod:`fmcluster.preflight.runner` decides what to check.
AWS errors are not handled here: the runner turns an unexpected ``ClientError`` into an ``unknown``
row (the check could not run) so a check function only interprets answers it understands.

Statuses (:data:`fmcluster.severity.CheckStatus`): ``ok``, ``error`` (checked and wrong),
``warning``, ``skipped``, ``unknown``. Facts and their sources are next to the constants below;
facts that are unverified make a check report a warning instead of an error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ClientError

from fmcluster.severity import CheckStatus

# ---- sources --------------------------------------------------------------------------------------
OFFERINGS_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html"
AZ_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html"
CR_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html"
QUOTA_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-on-demand-instances.html#ec2-on-demand-instances-limits"
TRAINING_PLAN_API = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingPlan.html"
HEAD_BUCKET_API = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html"
#: Amazon Managed Grafana's AWS_SSO sign-in needs IAM Identity Center enabled; sso-admin ListInstances lists the
#: account's instances (https://docs.aws.amazon.com/singlesignon/latest/APIReference/API_ListInstances.html;
#: https://docs.aws.amazon.com/grafana/latest/userguide/authentication-in-AMG-SSO.html).
IDENTITY_CENTER_API = "https://docs.aws.amazon.com/singlesignon/latest/APIReference/API_ListInstances.html"
AMG_SSO_DOC = "https://docs.aws.amazon.com/grafana/latest/userguide/authentication-in-AMG-SSO.html"
SUBNET_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Subnet.html"

#: EC2 vCPU quotas for P instances: (code, the quota's name as Service Quotas reports it).
#: Codes from several independent code bases (e.g. aws/karpenter-provider-aws and aws/aws-parallelcluster, marked
#: unverified there; e.g. geyang/jaynes-starter-kit 02_ec2_docker_guide/setup/spot_limit.md lists
#: L-7212CCBC "All P Spot Instance Requests"). The check confirms the name the API returns before it
#: fails anything; an unconfirmed name only warns.
P_ON_DEMAND_QUOTA = ("L-417A185B", "Running On-Demand P instances")
P_SPOT_QUOTA = ("L-7212CCBC", "All P Spot Instance Requests")

#: FSx for Lustre storage-capacity quotas (GiB) per deployment type. Source: NVIDIA/ai-cloud-validation
#: isvctl/configs/providers/aws/scripts/storage/README.md (a third-party tool, not AWS documentation):
#: unverified, so this check never fails, it warns.
FSX_LUSTRE_QUOTAS = {
    "PERSISTENT_2": "L-8F1B9C74",
    "PERSISTENT_1": "L-C8640C82",
    "SCRATCH_1": "L-AD2FC696",
    "SCRATCH_2": "L-AD2FC696",
}

#: Reservation states that can still launch instances (``active`` now, ``scheduled`` later).
#: Source: botocore ec2 service-2.json CapacityReservationState;
#: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html ("is in the active state").
USABLE_RESERVATION_STATES = ("active", "scheduled")
#: Platform fmcluster nodes run (Ubuntu and Amazon Linux AMIs); a reservation for another platform
#: never matches them (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html).
NODE_PLATFORM = "Linux/UNIX"


@dataclass(frozen=True)
class CheckResult:
    """One row of the preflight report."""

    check: str
    subject: str
    status: CheckStatus
    detail: str
    source: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"check": self.check, "subject": self.subject, "status": self.status, "detail": self.detail,
                "source": self.source}


@dataclass(frozen=True)
class Zone:
    """An Availability Zone (or Local Zone) with both of its names."""

    name: str
    zone_id: str

    def __str__(self) -> str:
        return f"{self.zone_id} ({self.name})"


@dataclass(frozen=True)
class GroupDemand:
    """What one compute group asks of a reservation or quota (no blueprint types cross this line)."""

    index: int
    name: str
    instance_type: str
    count: int
    vcpus_per_node: int = 0

    @property
    def label(self) -> str:
        return f"compute[{self.index}] {self.name}"


def _utc(ts: dt.datetime) -> dt.datetime:
    return ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def _when(ts: dt.datetime) -> str:
    return _utc(ts).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _instances(n: int) -> str:
    return f"{n} instance" + ("" if n == 1 else "s")


def error_code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


# ---- identity and zone ------------------------------------------------------------------------------
def check_identity_center(sso_admin: Any, *, region: str) -> CheckResult:
    """IAM Identity Center for a Grafana workspace with ``AWS_SSO`` sign-in: ``ok`` when ListInstances in ``region``
    returns an instance, ``warning`` when it returns none (the sign-in would fail; but an organization instance
    managed elsewhere may not be listed to this account, which fmcluster cannot tell, so not an error)."""
    instances = sso_admin.list_instances().get("Instances", [])
    subject = f"IAM Identity Center in {region}"
    if instances:
        first = instances[0]
        return CheckResult("Identity Center", subject, "ok",
                           f"instance {first.get('InstanceArn', '?')} ({first.get('Status', 'status not reported')})",
                           IDENTITY_CENTER_API)
    return CheckResult(
        "Identity Center", subject, "warning",
        f"no IAM Identity Center instance visible to this account in {region}, got none; the Grafana workspace's "
        "AWS_SSO sign-in needs one: enable IAM Identity Center, or set observability.grafana_authentication: SAML. "
        "Cannot tell: an organization instance in another Region or account is not listed here", AMG_SSO_DOC)


def check_identity(sts: Any) -> tuple[CheckResult, str]:
    """Who the credentials belong to (sts:GetCallerIdentity needs no permission)."""
    ident = sts.get_caller_identity()
    account = str(ident.get("Account", "?"))
    return CheckResult("credentials", f"account {account}", "ok", str(ident.get("Arn", ""))), account


def resolve_zone(
    ec2: Any, *, region: str, name: str | None, zone_id: str | None
) -> tuple[CheckResult, Zone | None]:
    """Find the blueprint's zone by name or ID (Local Zones included) and check it can be used."""
    wanted = name or zone_id or ""
    zones = ec2.describe_availability_zones(AllAvailabilityZones=True)["AvailabilityZones"]
    for z in zones:
        if wanted in (z.get("ZoneName"), z.get("ZoneId")):
            zone = Zone(z["ZoneName"], z["ZoneId"])
            if z.get("OptInStatus") == "not-opted-in":
                return CheckResult(
                    "availability zone", wanted, "error",
                    f"{zone} is not opted in; opt in to zone group {z.get('GroupName', '?')} "
                    "(EC2 console > Settings > Zones) before deploying", AZ_API), zone
            return CheckResult("availability zone", wanted, "ok", f"{zone}", AZ_API), zone
    regular = [z for z in zones if z.get("ZoneType") != "local-zone"]
    known = ", ".join(sorted(f"{z['ZoneName']}={z['ZoneId']}" for z in regular))
    return CheckResult("availability zone", wanted, "error",
                       f"no zone {wanted!r} in {region}; allowed {known}", AZ_API), None


# ---- offerings and quotas ---------------------------------------------------------------------------
def check_offering(ec2: Any, *, instance_type: str, zone: Zone) -> CheckResult:
    """Is ``instance_type`` offered in the zone? (One paginated call, by AZ ID, across the Region.)"""
    offered: set[str] = set()
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone-id", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
    )
    for page in pages:
        offered |= {o["Location"] for o in page.get("InstanceTypeOfferings", [])}
    subject = f"{instance_type} in {zone.zone_id}"
    if zone.zone_id in offered:
        return CheckResult("instance offering", subject, "ok", f"offered in {zone}", OFFERINGS_API)
    where = f"offered in {', '.join(sorted(offered))}" if offered else "offered in no zone of this Region"
    return CheckResult("instance offering", subject, "error",
                       f"{instance_type} is not offered in {zone}; {where}", OFFERINGS_API)


def check_vcpu_quota(quotas: Any, *, quota: tuple[str, str], demands: Iterable[GroupDemand]) -> CheckResult:
    """Does the EC2 vCPU quota cover Σ count × vCPUs of ``demands``?"""
    code, expected_name = quota
    demands = list(demands)
    needed = sum(d.count * d.vcpus_per_node for d in demands)
    breakdown = " + ".join(f"{d.count} x {d.instance_type} x {d.vcpus_per_node}" for d in demands)
    subject = f"{expected_name} ({code})"
    q = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
    value = int(q.get("Value", 0))
    name = str(q.get("QuotaName", ""))
    confirmed = name.lower() == expected_name.lower()
    src = f"{QUOTA_DOC}; quota codes as several independent code bases use them (unverified against the Service Quotas docs)"
    if value >= needed:
        return CheckResult("vCPU quota", subject, "ok",
                           f"quota {value} vCPUs covers {needed} ({breakdown})", src)
    detail = (f"quota {value} vCPUs is below the {needed} needed ({breakdown}); request an increase of "
              f"{code} in Service Quotas (vCPUs already running in the Region count against it too)")
    if not confirmed:
        return CheckResult("vCPU quota", subject, "warning",
                           f"{detail}; the quota is named {name!r}, not {expected_name!r}, so this is not an "
                           "error", src)
    return CheckResult("vCPU quota", subject, "error", detail, src)


def check_fsx_quota(quotas: Any, fsx: Any, *, deployment_type: str, storage_capacity_gib: int) -> CheckResult:
    """Headroom in the FSx for Lustre storage quota: quota - existing file systems of the same type.

    Warning level only: the quota codes come from a third-party tool (see :data:`FSX_LUSTRE_QUOTAS`)."""
    code = FSX_LUSTRE_QUOTAS[deployment_type]
    subject = f"Lustre {deployment_type} storage ({code})"
    src = ("NVIDIA/ai-cloud-validation isvctl/configs/providers/aws/scripts/storage/README.md "
           "(unverified quota code)")
    try:
        q = quotas.get_service_quota(ServiceCode="fsx", QuotaCode=code)["Quota"]
    except ClientError as e:
        if error_code(e) == "NoSuchResourceException":
            return CheckResult("FSx storage quota", subject, "warning",
                               f"quota {code} not found (the code is unverified); check the FSx for Lustre "
                               "storage "
                               f"quota by hand: {storage_capacity_gib} GiB needed", src)
        raise
    used = 0
    for page in fsx.get_paginator("describe_file_systems").paginate():
        for fs in page.get("FileSystems", []):
            if fs.get("FileSystemType") == "LUSTRE" and \
                    (fs.get("LustreConfiguration") or {}).get("DeploymentType") == deployment_type:
                used += int(fs.get("StorageCapacity") or 0)
    value = int(q.get("Value", 0))
    free = value - used
    detail = f"quota {value} GiB ({q.get('QuotaName', code)}), {used} GiB in use, {free} GiB free"
    if free >= storage_capacity_gib:
        return CheckResult("FSx storage quota", subject, "ok",
                           f"{detail}; {storage_capacity_gib} GiB needed", src)
    return CheckResult("FSx storage quota", subject, "warning",
                       f"{detail}, below the {storage_capacity_gib} GiB needed; request an increase of "
                       f"{code} "
                       "(warning only: the quota code is unverified)", src)


# ---- reservations -----------------------------------------------------------------------------------
def check_capacity_reservation(
    ec2: Any, *, reservation_id: str, kind: Literal["odcr", "capacity_block"], demands: list[GroupDemand],
    zone: Zone, until: dt.date | None, now: dt.datetime | None = None,
) -> CheckResult:
    """Does reservation ``reservation_id`` exist, is it usable, and does it hold what ``demands`` need?

    Checked: state active or scheduled; Capacity Block vs ODCR; instance type; zone (by AZ ID);
    total instance count >= Σ group counts; Linux/UNIX platform; end date not before ``until``.
    """
    needed = sum(d.count for d in demands)
    types = sorted({d.instance_type for d in demands})
    subject = f"{reservation_id} ({', '.join(d.label for d in demands)})"
    try:
        answer = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
        found = answer["CapacityReservations"]
    except ClientError as e:
        if error_code(e).startswith("InvalidCapacityReservationId"):
            return CheckResult("capacity reservation", subject, "error",
                               f"{reservation_id} not found in this account and Region ({error_code(e)}); a "
                               "reservation "
                               "shared from another account must be shared with this one", CR_API)
        raise
    if not found:
        return CheckResult("capacity reservation", subject, "error", f"{reservation_id} not found", CR_API)
    cr = found[0]
    problems: list[str] = []
    state = cr.get("State", "?")
    if state not in USABLE_RESERVATION_STATES:
        problems.append(f"state {state}; allowed {' or '.join(USABLE_RESERVATION_STATES)}")
    is_block = cr.get("ReservationType") == "capacity-block"
    if kind == "capacity_block" and not is_block:
        problems.append("is an On-Demand Capacity Reservation, not a Capacity Block; use capacity type odcr")
    if kind == "odcr" and is_block:
        problems.append("is a Capacity Block; use capacity type capacity_block")
    if cr.get("InstanceType") not in types:
        problems.append(f"reserves {cr.get('InstanceType')}, the blueprint uses {', '.join(types)}")
    cr_zone_id, cr_zone = cr.get("AvailabilityZoneId"), cr.get("AvailabilityZone")
    if (cr_zone_id and cr_zone_id != zone.zone_id) or (not cr_zone_id and cr_zone != zone.name):
        problems.append(f"is in {cr_zone_id or '?'} ({cr_zone or '?'}), the blueprint in {zone}")
    total = int(cr.get("TotalInstanceCount", 0))
    if total < needed:
        problems.append(f"holds {_instances(total)}, the blueprint needs {needed}")
    platform = cr.get("InstancePlatform")
    if platform and platform != NODE_PLATFORM:
        problems.append(f"is for platform {platform!r}; fmcluster nodes run {NODE_PLATFORM}")
    end = cr.get("EndDate") if cr.get("EndDateType", "limited") == "limited" else None
    if end is not None and until is not None and _utc(end) < _day_start(until):
        problems.append(f"ends {_when(end)}, before --until {until.isoformat()}")
    kind_name = "Capacity Block" if is_block else "ODCR"
    summary = (f"{kind_name} {state}, {cr.get('InstanceType')} x {total} in {cr_zone_id or cr_zone}"
               + (f", ends {_when(end)}" if end is not None else ", no end date"))
    if problems:
        return CheckResult("capacity reservation", subject, "error", "; ".join(problems), CR_API)
    notes = []
    start = cr.get("StartDate")
    now = now or dt.datetime.now(dt.UTC)
    if state == "scheduled" and start is not None and _utc(start) > now:
        notes.append(f"starts {_when(start)}; nodes launch from then")
    available = cr.get("AvailableInstanceCount")
    if state == "active" and available is not None and int(available) < needed:
        return CheckResult("capacity reservation", subject, "warning",
                           f"{summary}; only {available} of {total} instances free now (running instances, "
                           "maybe this "
                           f"cluster's, use the rest), the blueprint needs {needed}", CR_API)
    return CheckResult("capacity reservation", subject, "ok", "; ".join([summary, *notes]), CR_API)


def check_training_plan(
    sagemaker: Any, *, arn: str, demands: list[GroupDemand], zone: Zone, until: dt.date | None,
) -> CheckResult:
    """Does training plan ``arn`` exist, is it active or scheduled, for HyperPod, with enough of the type?"""
    needed = sum(d.count for d in demands)
    ml_types = sorted({f"ml.{d.instance_type}" for d in demands})
    subject = f"{arn.rsplit('/', 1)[-1]} ({', '.join(d.label for d in demands)})"
    try:
        plan = sagemaker.describe_training_plan(TrainingPlanName=arn)
    except ClientError as e:
        if error_code(e) in ("ResourceNotFound", "ValidationException"):
            return CheckResult("training plan", subject, "error", f"{arn} not found ({error_code(e)})",
                               TRAINING_PLAN_API)
        raise
    problems = []
    status = plan.get("Status", "?")
    if status not in ("Active", "Scheduled"):
        problems.append(f"status {status}; allowed Active or Scheduled")
    targets = plan.get("TargetResources") or []
    if "hyperpod-cluster" not in targets:
        problems.append(f"targets {', '.join(targets) or 'nothing'}, not hyperpod-cluster")
    matching = [s for s in plan.get("ReservedCapacitySummaries") or [] if s.get("InstanceType") in ml_types]
    if not matching:
        summaries = plan.get("ReservedCapacitySummaries") or []
        reserved = ", ".join(sorted({str(s.get("InstanceType")) for s in summaries}))
        problems.append(f"reserves {reserved or 'no instances'}, the blueprint uses {', '.join(ml_types)}")
    else:
        total = sum(int(s.get("TotalInstanceCount", 0)) for s in matching)
        if total < needed:
            problems.append(f"holds {_instances(total)}, the blueprint needs {needed}")
        zones = {s.get("AvailabilityZoneId") or s.get("AvailabilityZone") for s in matching} - {None}
        if zones and not zones & {zone.zone_id, zone.name}:
            problems.append(f"is in {', '.join(sorted(zones))}, the blueprint in {zone}")
    end = plan.get("EndTime")
    if end is not None and until is not None and _utc(end) < _day_start(until):
        problems.append(f"ends {_when(end)}, before --until {until.isoformat()}")
    if problems:
        return CheckResult("training plan", subject, "error", "; ".join(problems), TRAINING_PLAN_API)
    ends = f", ends {_when(end)}" if end is not None else ""
    return CheckResult("training plan", subject, "ok",
                       f"{status}, {plan.get('TotalInstanceCount')} instances{ends}", TRAINING_PLAN_API)


# ---- storage and network ----------------------------------------------------------------------------
def check_bucket(s3: Any, *, bucket: str, purpose: str, region: str) -> CheckResult:
    """Does the bucket exist and can these credentials reach it (s3:ListBucket via HeadBucket)?"""
    subject = f"s3://{bucket} ({purpose})"
    try:
        head = s3.head_bucket(Bucket=bucket)
    except ClientError as e:
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = error_code(e)
        if status == 404 or code in ("404", "NoSuchBucket"):
            return CheckResult("S3 bucket", subject, "error", f"bucket {bucket} does not exist",
                               HEAD_BUCKET_API)
        if status == 403 or code in ("403", "AccessDenied"):
            return CheckResult("S3 bucket", subject, "error",
                               f"bucket {bucket} exists but these credentials cannot reach it (403): it "
                               "belongs to "
                               "another account or s3:ListBucket is denied", HEAD_BUCKET_API)
        raise
    bucket_region = head.get("BucketRegion") or head.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get(
        "x-amz-bucket-region")
    if bucket_region and bucket_region != region:
        return CheckResult("S3 bucket", subject, "warning",
                           f"reachable, but in {bucket_region} while the cluster is in {region} "
                           "(cross-Region traffic "
                           "is slower and billed)", HEAD_BUCKET_API)
    return CheckResult("S3 bucket", subject, "ok", f"reachable, in {bucket_region or region}",
                       HEAD_BUCKET_API)


def check_gpu_subnet(ec2: Any, *, subnet_id: str, vpc_id: str | None, zone: Zone, required: int,
                     recommended: int) -> CheckResult:
    """An imported GPU subnet: in the blueprint's VPC and zone, with enough free IPv4 addresses.

    ``required``/``recommended`` exclude AWS's five reserved addresses (AvailableIpAddressCount does too).
    """
    subject = subnet_id
    try:
        subnets = ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
    except ClientError as e:
        if error_code(e) == "InvalidSubnetID.NotFound":
            return CheckResult("GPU subnet", subject, "error", f"{subnet_id} not found", SUBNET_API)
        raise
    sn = subnets[0]
    problems = []
    if vpc_id and sn.get("VpcId") != vpc_id:
        problems.append(f"is in {sn.get('VpcId')}, not network.vpc_id {vpc_id}")
    if sn.get("AvailabilityZoneId") != zone.zone_id:
        where = f"{sn.get('AvailabilityZoneId')} ({sn.get('AvailabilityZone')})"
        problems.append(f"is in {where}, the blueprint in {zone}")
    free = int(sn.get("AvailableIpAddressCount", 0))
    if free < required:
        problems.append(f"has {free} free IPv4 addresses, the cluster needs {required}")
    if problems:
        return CheckResult("GPU subnet", subject, "error", "; ".join(problems), SUBNET_API)
    if free < recommended:
        return CheckResult("GPU subnet", subject, "warning",
                           f"{free} free IPv4 addresses cover the {required} needed but not the "
                           f"{recommended} "
                           "recommended with headroom", SUBNET_API)
    return CheckResult("GPU subnet", subject, "ok", f"{free} free IPv4 addresses, {required} needed",
                       SUBNET_API)


# ---- instance network layout ------------------------------------------------------------------------
INSTANCE_TYPES_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html"
#: Which cards take EFA: ``NetworkCards[].InterfaceTypes`` (``efa`` / ``efa-only``) when the API returns it;
#: otherwise ParallelCluster 3.16's inference: ``MaximumEfaInterfaces == MaximumNetworkCards`` means card 0
#: takes EFA, fewer means it does not (aws-parallelcluster cli/src/pcluster/templates/queues_stack.py,
#: "e.g., B300, GB200").
CARD_EFA_SOURCE = ("https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_NetworkCardInfo.html; "
                   "aws-parallelcluster 3.16.1 cli/src/pcluster/templates/queues_stack.py")


@dataclass(frozen=True)
class NetworkLayout:
    """The catalog's network facts for one instance type (plain values, compared field by field).

    ``unverified``: the catalog fields no primary source confirmed; a difference there is a warning,
    a difference in a verified field an error (fmcluster's launch templates and subnet sizing use them).
    """

    instance_type: str
    network_cards: int
    max_efa_interfaces: int
    efa_cards: tuple[int, ...]
    max_enis_per_card: int
    ipv4_per_interface: int
    network_gbps: int
    unverified: frozenset[str] = frozenset()


def _gbps(performance: str) -> int | None:
    """``"3200 Gigabit"`` -> 3200, ``"4x 100 Gigabit"`` -> 400; None for "Up to 25 Gigabit" and the like."""
    text = performance.strip()
    parts = text.removesuffix(" Gigabit").split("x ")
    if not text.endswith(" Gigabit") or not all(p.strip().isdigit() for p in parts) or len(parts) > 2:
        return None
    return int(parts[0]) * int(parts[1]) if len(parts) == 2 else int(parts[0])


def _ranges(cards: Iterable[int]) -> str:
    out: list[str] = []
    for c in sorted(cards):
        if out and out[-1].split("-")[-1] == str(c - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out) or "none"


def account_layout(info: dict[str, Any]) -> dict[str, Any]:
    """The comparable network facts of one DescribeInstanceTypes ``InstanceTypes[]`` entry."""
    net = info.get("NetworkInfo", {})
    cards = net.get("NetworkCards", [])
    max_cards = int(net.get("MaximumNetworkCards", len(cards) or 1))
    max_efa = int(net.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)) if net.get("EfaSupported") else 0
    if cards and all("InterfaceTypes" in c for c in cards):
        efa_cards = tuple(sorted(int(c["NetworkCardIndex"]) for c in cards
                                 if {"efa", "efa-only"} & set(c["InterfaceTypes"])))
    elif max_efa:
        first = 0 if max_efa >= max_cards else 1
        efa_cards = tuple(range(first, first + max_efa))
    else:
        efa_cards = ()
    return {
        "network_cards": max_cards,
        "max_efa_interfaces": max_efa,
        "efa_cards": efa_cards,
        "max_enis_per_card": max((int(c.get("MaximumNetworkInterfaces", 0)) for c in cards), default=None),
        "ipv4_per_interface": net.get("Ipv4AddressesPerInterface"),
        "network_gbps": _gbps(str(net.get("NetworkPerformance", ""))),
    }


def check_network_layout(ec2: Any, *, expected: NetworkLayout, region: str) -> CheckResult:
    """Compare the catalog's network layout of one type with DescribeInstanceTypes in the account.

    Compared: ``MaximumNetworkCards``, ``EfaInfo.MaximumEfaInterfaces``, the cards that take EFA (card 0
    included), the most interfaces a card takes, IPv4 addresses per interface and ``NetworkPerformance``.
    ``error`` when a value the catalog marks verified differs; ``warning`` when only unverified ones differ
    or the Region does not describe the type; ``ok`` otherwise.
    """
    subject = expected.instance_type
    src = f"{INSTANCE_TYPES_API}; {CARD_EFA_SOURCE}"
    try:
        found = ec2.describe_instance_types(InstanceTypes=[expected.instance_type]).get("InstanceTypes", [])
    except ClientError as e:
        if error_code(e) != "InvalidInstanceType":
            raise
        found = []
    if not found:
        return CheckResult("network layout", subject, "warning",
                           f"DescribeInstanceTypes in {region} does not describe {subject} (types sold only as "
                           "UltraServers or in Local Zones may be absent); the catalog's layout is used unchecked", src)
    got = account_layout(found[0])
    mine: dict[str, Any] = {
        "network_cards": expected.network_cards, "max_efa_interfaces": expected.max_efa_interfaces,
        "efa_cards": tuple(expected.efa_cards), "max_enis_per_card": expected.max_enis_per_card,
        "ipv4_per_interface": expected.ipv4_per_interface, "network_gbps": expected.network_gbps,
    }
    show = {"efa_cards": _ranges}
    diffs, confirmed = [], []
    for key, value in mine.items():
        theirs = got.get(key)
        if theirs is None:  # the API did not say
            continue
        fmt = show.get(key, str)
        if theirs != value:
            flag = " (unverified in the catalog)" if key in expected.unverified else ""
            diffs.append((key in expected.unverified, f"{key}: catalog {fmt(value)}, account {fmt(theirs)}{flag}"))
        elif key in expected.unverified:
            confirmed.append(key)
    if not diffs:
        note = f"; confirms the unverified {', '.join(confirmed)}" if confirmed else ""
        return CheckResult("network layout", subject, "ok",
                           f"{got['network_cards']} network cards, EFA on cards {_ranges(got['efa_cards'])}, "
                           f"{got['network_gbps']} Gbps: matches the catalog{note}", src)
    status: CheckStatus = "warning" if all(unverified for unverified, _ in diffs) else "error"
    return CheckResult("network layout", subject, status,
                       f"the catalog differs from DescribeInstanceTypes: {'; '.join(d for _, d in diffs)}; "
                       "fmcluster's launch templates and subnet sizing use the catalog "
                       "(fmcluster/catalog/data/instances.yaml)", src)


# ---- an existing EKS cluster (HyperPod EKS with eks_cluster_arn) ---------------------------------------------
EKS_DESCRIBE_API = "https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html"
#: Authentication modes HyperPod accepts and the Kubernetes versions it supports
#: (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html).
HYPERPOD_AUTH_MODES = ("API", "API_AND_CONFIG_MAP")


def check_eks_cluster(eks: Any, *, name: str, vpc_id: str | None, versions: Iterable[str]) -> CheckResult:
    """An existing EKS cluster for HyperPod: it exists in the Region, is in ``vpc_id`` (the blueprint's imported
    VPC), runs a Kubernetes version HyperPod supports (``versions``) and uses authentication mode API or
    API_AND_CONFIG_MAP."""
    check, subject = "EKS cluster", name
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except ClientError as e:
        if error_code(e) == "ResourceNotFoundException":
            return CheckResult(check, subject, "error", f"no EKS cluster {name} in this Region", EKS_DESCRIBE_API)
        raise
    problems = []
    cluster_vpc = cluster.get("resourcesVpcConfig", {}).get("vpcId")
    if vpc_id and cluster_vpc != vpc_id:
        problems.append(f"is in {cluster_vpc}, not network.vpc_id {vpc_id}")
    version = cluster.get("version")
    allowed = tuple(versions)
    if version not in allowed:
        problems.append(f"runs Kubernetes {version}; HyperPod supports {', '.join(allowed)}")
    mode = cluster.get("accessConfig", {}).get("authenticationMode")
    if mode is not None and mode not in HYPERPOD_AUTH_MODES:
        problems.append(f"authentication mode {mode}; HyperPod needs {' or '.join(HYPERPOD_AUTH_MODES)}")
    if problems:
        return CheckResult(check, subject, "error", "; ".join(problems), EKS_DESCRIBE_API)
    if mode is None:
        return CheckResult(check, subject, "warning", f"in {cluster_vpc}, Kubernetes {version}; the authentication "
                           "mode was not reported (HyperPod needs API or API_AND_CONFIG_MAP)", EKS_DESCRIBE_API)
    return CheckResult(check, subject, "ok", f"in {cluster_vpc}, Kubernetes {version}, authentication mode {mode}",
                       EKS_DESCRIBE_API)
