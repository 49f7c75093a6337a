"""Cost per hour of a resolved cluster, from the dated price table (:mod:`fmcluster.catalog.prices`).

Per compute group: ``count`` nodes at the group's purchase option, i.e. the cluster at full size (ParallelCluster
and PCS scale idle nodes down to ``min_count``, so their bill is lower while jobs do not fill the queues).
On-demand and ODCR groups use the EC2 On-Demand rate (an ODCR is billed at that rate whether or not instances
run in it); Spot, Capacity Block, training-plan and HyperPod (``ml.*``) groups are unknown: the table has no
current price for them (:func:`fmcluster.catalog.prices.not_in_table_reason`). Then the management nodes
(ParallelCluster head node, PCS login node; HyperPod's are ``ml.*``, unknown), the FSx file system (GB-month
rate / hours per month x capacity), the Slurm accounting database fmcluster creates (Aurora Serverless v2: not in
the table, unknown), the NAT gateway of a created VPC (hourly rate, data processing not
included) and, with ``metrics: managed``, approximations of Amazon Managed Grafana (editors x editor-month
rate / hours per month) and Amazon Managed Service for Prometheus (assumed series per node x samples per
hour x rate). AWS PCS's own per-cluster fee is not in the table: unknown.

An unknown price is ``None`` everywhere, never zero: a total with an unknown part is ``None`` and
``known_usd_per_hour`` is the sum of what is known.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from fmcluster.catalog import prices
from fmcluster.resolved import ResolvedCluster

Scope = Literal["group", "cluster"]


@dataclass(frozen=True)
class CostLine:
    """One priced item. ``usd_per_hour`` None: unknown (``basis`` says why)."""

    item: str
    scope: Scope
    quantity: str
    usd_per_hour: float | None
    basis: str
    source: str = ""
    as_of: str = ""
    group: str | None = None
    source_detail: str = ""


@dataclass
class CostEstimate:
    """Cost lines of a cluster and their sums (USD per hour)."""

    table_date: str
    lines: list[CostLine] = field(default_factory=list)

    @property
    def total_usd_per_hour(self) -> float | None:
        """Sum of every line, or ``None`` when any line is unknown."""
        return None if self.unknown else round(sum(line.usd_per_hour or 0.0 for line in self.lines), 4)

    @property
    def known_usd_per_hour(self) -> float:
        return round(sum(line.usd_per_hour for line in self.lines if line.usd_per_hour is not None), 4)

    @property
    def unknown(self) -> list[str]:
        return [line.item for line in self.lines if line.usd_per_hour is None]

    def group_usd_per_hour(self, group: str) -> float | None:
        lines = [line for line in self.lines if line.group == group]
        return None if not lines or any(line.usd_per_hour is None for line in lines) else round(
            sum(line.usd_per_hour or 0.0 for line in lines), 4)

    def as_dict(self) -> dict[str, Any]:
        groups = sorted({line.group for line in self.lines if line.group})
        return {
            "currency": "USD", "table_date": self.table_date, "total_usd_per_hour": self.total_usd_per_hour,
            "known_usd_per_hour": self.known_usd_per_hour, "unknown": self.unknown,
            "groups": {g: self.group_usd_per_hour(g) for g in groups},
            "lines": [asdict(line) for line in self.lines],
        }


def _cite(p: prices.Price) -> dict[str, str]:
    confidence = f" ({p.confidence})" if p.confidence and p.confidence != "primary" else ""
    return {"source": p.source_key + confidence, "as_of": p.as_of, "source_detail": p.source}


def _instances(item: str, scope: Scope, region: str, instance_type: str, n: int, group: str | None = None) -> CostLine:
    p = prices.ec2_on_demand(region, instance_type)
    if p.value is None:
        return CostLine(item, scope, f"{n} x {instance_type}", None, f"unknown: {p.note}", group=group)
    return CostLine(item, scope, f"{n} x {instance_type}", round(p.value * n, 4), f"on-demand ${p.value:g}/h each",
                    group=group, **_cite(p))


#: Why the accounting database has no price: the table holds no Aurora rate (billed per ACU-hour, at least the
#: minimum capacity while the cluster runs: https://aws.amazon.com/rds/aurora/pricing/), so turning accounting on
#: makes the total unknown, never ``+$0.00``.
AURORA_UNKNOWN = ("the price table has no Aurora Serverless v2 ACU-hour rate (https://aws.amazon.com/rds/aurora/pricing/); "
                  "at least the minimum capacity is billed while the database runs")


def estimate(rc: ResolvedCluster) -> CostEstimate:
    """The cost lines of ``rc`` (see the module docstring)."""
    bp = rc.blueprint
    region = bp.region
    hpm = prices.hours_per_month()
    est = CostEstimate(prices.table_date())
    sagemaker = not rc.profile.ec2_capacity  # instances SageMaker runs: ml.* prices, not EC2's
    for rg in rc.groups:
        g = rg.spec
        ctype = g.capacity.type
        item = f"compute {rg.name}"
        if sagemaker:
            est.lines.append(CostLine(item, "group", f"{g.count} x ml.{g.instance_type}", None,
                                      f"unknown: {prices.not_in_table_reason('sagemaker')}", group=rg.name))
        elif ctype in ("on_demand", "odcr"):
            line = _instances(item, "group", region, g.instance_type, g.count, rg.name)
            if ctype == "odcr" and line.usd_per_hour is not None:
                line = CostLine(line.item, line.scope, line.quantity, line.usd_per_hour,
                                line.basis + "; ODCR billed at the On-Demand rate, used or not", line.source, line.as_of, line.group,
                                line.source_detail)
            est.lines.append(line)
        else:
            est.lines.append(CostLine(item, "group", f"{g.count} x {g.instance_type} ({ctype})", None,
                                      f"unknown: {prices.not_in_table_reason(ctype)}", group=rg.name))
    for label, instance_type in rc.profile.management_instance_types:
        est.lines.append(_instances(label, "cluster", region, instance_type, 1))
    fee = rc.profile.cluster_fee
    if fee is not None:
        est.lines.append(CostLine(fee.item, "cluster", fee.quantity, fee.usd_per_hour, fee.basis, fee.source))
    if sagemaker and rc.profile.management:
        est.lines.append(CostLine("management nodes", "cluster", ", ".join(rc.profile.management), None,
                                  f"unknown: {prices.not_in_table_reason('sagemaker')}"))
    fs = bp.storage.lustre
    if fs is not None:
        p = prices.fsx_lustre(region, fs.deployment_type, fs.throughput_tier)
        qty = f"{fs.storage_capacity_gib} GiB {fs.deployment_type}" + (f" {fs.throughput_tier} MB/s/TiB" if fs.throughput_tier else "")
        if p.value is None:
            est.lines.append(CostLine("FSx for Lustre", "cluster", qty, None, f"unknown: {p.note}"))
        else:
            est.lines.append(CostLine("FSx for Lustre", "cluster", qty, round(p.value * fs.storage_capacity_gib / hpm, 4),
                                      f"${p.value:g}/GB-month / {hpm} h", **_cite(p)))
    if rc.accounting is not None and rc.accounting.creates_database:
        est.lines.append(CostLine("Slurm accounting database", "cluster", rc.accounting.database_capacity, None,
                                  f"unknown: {AURORA_UNKNOWN}"))
    if bp.network.vpc_id is None:
        p = prices.nat_gateway(region)
        est.lines.append(CostLine("NAT gateway", "cluster", "1", p.value,
                                  "hourly rate; data processing per GB not included" if p.known else f"unknown: {p.note}", **_cite(p)))
    if bp.observability.metrics == "managed":
        g_price, editors = prices.amg()
        est.lines.append(CostLine(
            "Amazon Managed Grafana (approx.)", "cluster", f"{editors} editor", None if g_price.value is None else
            round(g_price.value * editors / hpm, 4), f"${g_price.value}/editor-month / {hpm} h; viewers extra", **_cite(g_price)))
        a_price, per_gpu_node, per_mgmt = prices.amp()
        nodes = sum(rg.spec.count for rg in rc.groups)
        series = nodes * per_gpu_node + len(rc.profile.management) * per_mgmt
        interval = bp.observability.scrape_interval_seconds
        samples_per_hour = series * 3600 / interval
        est.lines.append(CostLine(
            "Amazon Managed Prometheus (approx.)", "cluster", f"~{series:,} series every {interval} s",
            None if a_price.value is None else round(a_price.value * samples_per_hour / 1e7, 4),
            f"${a_price.value}/10M samples; series per node assumed ({per_gpu_node} per GPU node, {per_mgmt} per "
            "management node), not measured", **_cite(a_price)))
    return est


def money(x: float | None) -> str:
    """``$1,234.56``, ``$0.045`` (three decimals below one dollar) or ``unknown``."""
    if x is None:
        return "unknown"
    return f"${x:,.2f}" if abs(x) >= 1 or x == 0 else f"${x:.3f}"


def _unknown_lines(cost: dict[str, Any]) -> set[tuple[str, str]]:
    return {(line["item"], line["quantity"]) for line in cost["lines"] if line["usd_per_hour"] is None}


def delta(old: dict[str, Any] | None, new: dict[str, Any] | None) -> tuple[float | None, str]:
    """Cost delta between two :meth:`CostEstimate.as_dict` forms: (USD per hour or None, one line of text).

    Exact when both totals are known. When the same items are unknown on both sides with the same quantities,
    they cancel out and the delta of the priced items is the delta (said so); otherwise unknown."""
    if old is None or new is None:
        return None, "cost: unknown (one side is a cdk.out folder or missing; compare blueprints to see the cost delta)"
    date = new.get("table_date", "?")
    a, b = old["total_usd_per_hour"], new["total_usd_per_hour"]
    if a is not None and b is not None:
        d = round(b - a, 4)
        return d, f"cost {money(a)}/h -> {money(b)}/h ({'+' if d >= 0 else '-'}{money(abs(d))}/h; price table {date})"
    ka, kb = old["known_usd_per_hour"], new["known_usd_per_hour"]
    unknown_a, unknown_b = _unknown_lines(old), _unknown_lines(new)
    names = ", ".join(sorted({item for item, _ in unknown_a | unknown_b}))
    if unknown_a == unknown_b:
        d = round(kb - ka, 4)
        return d, (f"cost {'+' if d >= 0 else '-'}{money(abs(d))}/h (priced items {money(ka)}/h -> {money(kb)}/h; "
                   f"unchanged and unpriced: {names}; price table {date})")
    return None, (f"cost delta unknown: priced items {money(ka)}/h -> {money(kb)}/h, and unpriced items change "
                  f"({names}; price table {date})")


def delta_text(old: CostEstimate | None, new: CostEstimate | None) -> str:
    """One line for diff (see :func:`delta`)."""
    return delta(None if old is None else old.as_dict(), None if new is None else new.as_dict())[1]


def blueprint_cost(path: str, org: str | None = None) -> CostEstimate:
    """The estimate of the blueprint file ``path`` (loaded as every command loads it). Raises BlueprintError."""
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint

    return estimate(resolve(load_blueprint(path, org=org)))


def cost_delta(old: CostEstimate | None, new: CostEstimate | None) -> dict[str, Any]:
    """``{"text", "old_usd_per_hour", "new_usd_per_hour", "delta_usd_per_hour", "table_date"}``; amounts None
    when unknown."""
    d, text = delta(None if old is None else old.as_dict(), None if new is None else new.as_dict())
    return {"text": text, "old_usd_per_hour": None if old is None else old.total_usd_per_hour,
            "new_usd_per_hour": None if new is None else new.total_usd_per_hour, "delta_usd_per_hour": d,
            "table_date": prices.table_date()}
