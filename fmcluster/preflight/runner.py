"""Decide which preflight checks a blueprint needs, run them, and summarise the result.

Exit codes (docs/preflight.md): 0 every check passed (``warning`` and ``skipped`` allowed), 1 a
check found an ``error``, 2 preflight could not run or a check could not run (``unknown``: AWS
error, missing permission).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from fmcluster.blueprint.errors import Problem
from fmcluster.blueprint.model import HYPERPOD_EKS_KUBERNETES_VERSIONS, OdcrCapacity, TrainingPlanCapacity
from fmcluster.blueprint.placeholders import REASON as PLACEHOLDER_REASON
from fmcluster.blueprint.placeholders import is_placeholder, placeholder_ids
from fmcluster.catalog.instances import InstanceSpec
from fmcluster.preflight.checks import (
    FSX_LUSTRE_QUOTAS,
    P_ON_DEMAND_QUOTA,
    P_SPOT_QUOTA,
    CheckResult,
    GroupDemand,
    NetworkLayout,
    Zone,
    check_bucket,
    check_capacity_reservation,
    check_eks_cluster,
    check_fsx_quota,
    check_gpu_subnet,
    check_identity,
    check_identity_center,
    check_network_layout,
    check_offering,
    check_training_plan,
    check_vcpu_quota,
    error_code,
    resolve_zone,
)
from fmcluster.preflight.clients import NO_CREDENTIALS, Clients, PreflightCannotRun
from fmcluster.resolved import ResolvedCluster, ResolvedGroup

#: IAM action each check needs; named in the row when AWS denies it (docs/preflight.md lists them all).
PERMISSIONS = {
    "availability zone": "ec2:DescribeAvailabilityZones",
    "instance offering": "ec2:DescribeInstanceTypeOfferings",
    "vCPU quota": "servicequotas:GetServiceQuota",
    "capacity reservation": "ec2:DescribeCapacityReservations",
    "training plan": "sagemaker:DescribeTrainingPlan",
    "S3 bucket": "s3:ListBucket",
    "FSx storage quota": "servicequotas:GetServiceQuota and fsx:DescribeFileSystems",
    "GPU subnet": "ec2:DescribeSubnets",
    "network layout": "ec2:DescribeInstanceTypes",
    "Identity Center": "sso:ListInstances",
}
_REJECTED = ("InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken", "ExpiredTokenException",
             "UnrecognizedClientException", "InvalidAccessKeyId", "AuthFailure")
_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess")

ProgressFn = Callable[[str, int, int], None]

#: EC2 purchase option (the profile's capacity term, :attr:`OrchestratorProfile.capacity_types`) -> the
#: EC2 vCPU quota it draws on; ``None``: not counted (whether Capacity Block instances use the On-Demand
#: P quota is unverified).
QUOTA_BY_PURCHASE_OPTION: dict[str, tuple[str, str] | None] = {
    "ONDEMAND": P_ON_DEMAND_QUOTA, "SPOT": P_SPOT_QUOTA, "CAPACITY_BLOCK": None,
}


@dataclass
class PreflightReport:
    """Every check's row, plus the verdict."""

    file: str
    region: str
    account: str | None = None
    results: list[CheckResult] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        statuses = {r.status for r in self.results}
        if "error" in statuses:
            return 1
        return 2 if "unknown" in statuses else 0

    @property
    def verdict(self) -> str:
        return {0: "passed", 1: "failed", 2: "incomplete"}[self.exit_code]

    def problems(self) -> list[Problem]:
        """Every check that did not pass as a :class:`Problem`, in report order, for the JSON envelope's ``problems``
        (README.md "The CLI"); the full report stays its ``result``. ``path``: the check's subject (``compute[0]
        gpu``, a bucket, a zone); ``message``: ``<check>: <detail>``; ``level``: the check's status, ``unknown`` (could
        not be checked, exit 2) as ``error`` (the verdict is not given); ``rule_id``: ``preflight-<check>`` in
        lower case with dashes (``preflight-vcpu-quota``); ``source``: the check's; ``value``: ``None`` (a check
        judges the account, not a value of the blueprint)."""
        return [Problem(r.subject, f"{r.check}: {r.detail}", level="warning" if r.status == "warning" else "error",
                        rule_id="preflight-" + "-".join(r.check.lower().split()), source=r.source, value=None)
                for r in self.results if r.status in ("error", "warning", "unknown")]

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "region": self.region, "account": self.account, "verdict": self.verdict,
                "exit_code": self.exit_code, "checks": [r.as_dict() for r in self.results]}


@dataclass(frozen=True)
class _Step:
    check: str
    subject: str
    run: Callable[[], CheckResult]


def _guard(step: _Step) -> CheckResult:
    """Run one check; AWS errors become an ``unknown`` row instead of a crash or a false pass."""
    try:
        return step.run()
    except NoCredentialsError:
        raise PreflightCannotRun(NO_CREDENTIALS) from None
    except ClientError as e:
        code = error_code(e)
        if code in _REJECTED:
            raise PreflightCannotRun(f"AWS rejected the credentials ({code}); {NO_CREDENTIALS}") from None
        msg = e.response.get("Error", {}).get("Message", "")
        hint = f"; needs {PERMISSIONS.get(step.check, 'permission for this call')}" if code in _DENIED else ""
        return CheckResult(step.check, step.subject, "unknown", f"could not check: {code}: {msg}{hint}")
    except BotoCoreError as e:
        return CheckResult(step.check, step.subject, "unknown", f"could not check: {e}")


def network_layout(inst: InstanceSpec) -> NetworkLayout:
    """The catalog's network layout of ``inst`` for :func:`check_network_layout`, with its unverified fields."""
    fields = ("network_cards", "max_efa_interfaces", "efa_cards", "max_enis_per_card", "ipv4_per_interface",
              "network_gbps")
    return NetworkLayout(inst.name, inst.network_cards, inst.max_efa_interfaces, inst.efa_cards, inst.max_enis_per_card,
                         inst.ipv4_per_interface, inst.network_gbps,
                         frozenset(f for f in fields if not inst.is_verified(f)))


def _demand(rg: ResolvedGroup) -> GroupDemand:
    return GroupDemand(rg.index, rg.name, rg.spec.instance_type, rg.spec.count, rg.instance.vcpus)


def plan_steps(rc: ResolvedCluster, clients: Clients, zone: Zone | None, *, until: dt.date | None,
               now: dt.datetime | None = None) -> list[_Step]:
    """The checks the resolved cluster ``rc`` needs once the zone is known (see docs/preflight.md for the list)."""
    bp, profile = rc.blueprint, rc.profile
    steps: list[_Step] = []

    def skip(check: str, subject: str, detail: str) -> None:
        steps.append(_Step(check, subject, partial(CheckResult, check, subject, "skipped", detail)))

    def add(check: str, subject: str, fn: Callable[..., CheckResult], *args: Any, **kwargs: Any) -> None:
        if zone is None and "zone" in kwargs:
            skip(check, subject, "zone unknown, see the availability zone row")
        else:
            steps.append(_Step(check, subject, partial(fn, *args, **kwargs)))

    # instance offerings (capacity from a reservation is checked through the reservation instead)
    if not profile.ec2_capacity:
        skip("instance offering", "HyperPod instance groups",
             "HyperPod runs nodes on SageMaker capacity: EC2 offerings do not apply")
    elif zone is not None:
        for t in sorted({rg.spec.instance_type for rg in rc.groups if not rg.spec.reservation_backed}):
            add("instance offering", f"{t} in {zone.zone_id}", check_offering, clients.ec2, instance_type=t,
                zone=zone)
        # the head / login node launches in the GPU subnet too: a Local Zone offers few types (R-LZ-4)
        for t in sorted({t for _label, t in profile.management_instance_types if t}):
            add("instance offering", f"{t} in {zone.zone_id}", check_offering, clients.ec2, instance_type=t,
                zone=zone)

    # the catalog's network layout against DescribeInstanceTypes (launch templates and subnet sizing use it)
    layouts = {rg.spec.instance_type: network_layout(rg.instance) for rg in rc.groups}
    for t in sorted(layouts):
        add("network layout", t, check_network_layout, clients.ec2, expected=layouts[t], region=bp.region)

    # vCPU quotas, by the EC2 purchase option each group launches with
    if not profile.ec2_capacity:
        skip("vCPU quota", "HyperPod instance groups",
             "SageMaker 'ml.<type> for cluster usage' quotas apply, not EC2's; check them in Service Quotas")
    else:
        by_quota: dict[tuple[str, str], list[GroupDemand]] = {}
        blocks = []
        for rg in rc.groups:
            term = profile.capacity_term(rg.spec.capacity.type)
            if term is None:  # a type the orchestrator does not accept: the capacity rules refuse it
                continue
            quota = QUOTA_BY_PURCHASE_OPTION[term]
            if quota is None:
                blocks.append(rg.name)
            else:
                by_quota.setdefault(quota, []).append(_demand(rg))
        for quota in (P_ON_DEMAND_QUOTA, P_SPOT_QUOTA):
            if quota in by_quota:
                add("vCPU quota", f"{quota[1]} ({quota[0]})", check_vcpu_quota, clients.service_quotas,
                    quota=quota, demands=by_quota[quota])
        if blocks:
            skip("vCPU quota", f"Capacity Block groups ({', '.join(blocks)})",
                 "not counted: whether Capacity Block instances use the On-Demand P quota is unverified")

    # reservations and training plans, each checked once for every group that uses it
    by_reservation: dict[str, list[GroupDemand]] = {}
    kinds: dict[str, str] = {}
    by_plan: dict[str, list[GroupDemand]] = {}
    for rg in rc.groups:
        g, cap = rg.spec, rg.spec.capacity
        if g.reservation_id:
            by_reservation.setdefault(g.reservation_id, []).append(_demand(rg))
            kinds.setdefault(g.reservation_id, cap.type)
        elif isinstance(cap, OdcrCapacity):
            skip("capacity reservation", f"{cap.resource_group_arn} ({rg.path} {g.name})",
                 "resource-group targets are not checked: make sure the group holds active "
                 f"{g.instance_type} reservations in the blueprint's zone")
        elif isinstance(cap, TrainingPlanCapacity):
            by_plan.setdefault(cap.arn, []).append(_demand(rg))
    for path, value in placeholder_ids(bp):  # an example's placeholder: say so, not "not found"
        subject = f"{value} ({path})"
        steps.append(_Step("placeholder id", subject, partial(CheckResult, "placeholder id", subject, "error",
                                                              PLACEHOLDER_REASON)))
    for rid, demands in by_reservation.items():
        if is_placeholder(rid):
            continue
        add("capacity reservation", f"{rid} ({', '.join(d.label for d in demands)})",
            check_capacity_reservation, clients.ec2, reservation_id=rid, kind=kinds[rid], demands=demands,
            zone=zone, until=until, now=now)
    for arn, demands in by_plan.items():
        add("training plan", f"{arn.rsplit('/', 1)[-1]} ({', '.join(d.label for d in demands)})",
            check_training_plan, clients.sagemaker, arn=arn, demands=demands, zone=zone, until=until)

    # buckets the blueprint names (created buckets need no check)
    buckets: dict[str, str] = {}
    if bp.storage.lustre is not None:
        for j, repo in enumerate(bp.storage.lustre.data_repositories):
            if repo.s3_uri:
                buckets.setdefault(repo.s3_uri[len("s3://"):].split("/", 1)[0], f"data_repositories[{j}]")
    if bp.storage.checkpoints is not None and bp.storage.checkpoints.bucket != "create":
        buckets.setdefault(bp.storage.checkpoints.bucket, "checkpoints")
    for bucket, purpose in buckets.items():
        add("S3 bucket", f"s3://{bucket} ({purpose})", check_bucket, clients.s3, bucket=bucket,
            purpose=purpose, region=bp.region)

    # FSx quota
    fs = bp.storage.lustre
    if fs is not None:
        code = FSX_LUSTRE_QUOTAS[fs.deployment_type]
        add("FSx storage quota", f"Lustre {fs.deployment_type} storage ({code})", check_fsx_quota,
            clients.service_quotas, clients.fsx, deployment_type=fs.deployment_type,
            storage_capacity_gib=fs.storage_capacity_gib)

    # IAM Identity Center for a managed Grafana workspace signing in with AWS_SSO (created only where a collector
    # node runs: the profile's head node)
    o = bp.observability
    if o.metrics == "managed" and o.grafana_authentication == "AWS_SSO" and rc.profile.head_node_label is not None:
        if clients.sso_admin is None:
            skip("Identity Center", f"IAM Identity Center in {bp.region}", "no sso-admin client")
        else:
            add("Identity Center", f"IAM Identity Center in {bp.region}", check_identity_center, clients.sso_admin,
                region=bp.region)

    # an existing EKS cluster of HyperPod EKS: Region, VPC, version, authentication mode (R-EKS-2 checks what it can
    # offline)
    if rc.eks is not None and not rc.eks.creates_cluster:
        if clients.eks is None:
            skip("EKS cluster", rc.eks.cluster_name, "no EKS client")
        else:
            add("EKS cluster", rc.eks.cluster_name, check_eks_cluster, clients.eks, name=rc.eks.cluster_name,
                vpc_id=bp.network.vpc_id, versions=HYPERPOD_EKS_KUBERNETES_VERSIONS)

    # an imported GPU subnet (a new one is sized by rule R-SUBNET-1)
    if bp.network.gpu_subnet_id:
        usage = rc.subnet
        add("GPU subnet", bp.network.gpu_subnet_id, check_gpu_subnet, clients.ec2,
            subnet_id=bp.network.gpu_subnet_id, vpc_id=bp.network.vpc_id, zone=zone,
            required=usage.required - usage.aws_reserved, recommended=usage.recommended - usage.aws_reserved)
    return steps


def run_preflight(rc: ResolvedCluster, clients: Clients, *, file: str = "<blueprint>", until: dt.date | None = None,
                  progress: ProgressFn | None = None, now: dt.datetime | None = None) -> PreflightReport:
    """Run every check the resolved cluster ``rc`` needs against the account behind ``clients``.

    Raises:
        PreflightCannotRun: credentials are missing or rejected.
    """
    bp = rc.blueprint
    report = PreflightReport(file=file, region=bp.region)
    tell = progress or (lambda label, i, n: None)

    tell("credentials", 0, 0)
    ident = _guard(_Step("credentials", "account", lambda: check_identity(clients.sts)[0]))
    report.results.append(ident)
    if ident.status == "ok":
        report.account = ident.subject.removeprefix("account ")

    tell("availability zone", 0, 0)
    zone_holder: list[Zone | None] = [None]

    def zone_step() -> CheckResult:
        row, zone_holder[0] = resolve_zone(clients.ec2, region=bp.region, name=bp.availability_zone,
                                           zone_id=bp.availability_zone_id)
        return row

    report.results.append(_guard(_Step("availability zone", bp.az_label, zone_step)))
    steps = plan_steps(rc, clients, zone_holder[0], until=until, now=now)
    for n, step in enumerate(steps, start=1):
        tell(f"{step.check}: {step.subject}", n, len(steps))
        report.results.append(_guard(step))
    return report
