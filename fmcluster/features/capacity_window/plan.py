"""The capacity windows of a cluster and their timings, computed once (docs/capacity.md "The capacity window").

A window is a compute group whose capacity ends at a time EC2 announces (``ComputeGroup.announced_end``: Capacity
Blocks). Forty minutes before a Capacity Block ends, EC2 sends an EventBridge event (source ``aws.ec2``) saying that
the instances still running in the reservation begin to terminate 10 minutes later; its ``detail`` carries
``capacity-reservation-id`` and ``end-date``. The EC2 user guide spells the detail type two ways in different versions
of the page ("Capacity Block Expiration Warning" in the current English page, "Capacity Block Reservation Expiration
Warning" in older and translated ones), so the rule matches both.
Source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html (and its docs.amazonaws.cn
copy for the second spelling).

Timings (seconds), one home each: :data:`WARNING_BEFORE_END_S` (2400), :data:`TERMINATION_AFTER_WARNING_S` (600: the
jobs' whole budget), :data:`REQUEUE_MARGIN_S` (what the end script keeps for requeue and for Slurm to stop the
steps before the instances go), :data:`CHECKPOINT_GRACE_S` = 600 - 180 = 420 (how long jobs get to write their
checkpoint after the signal). How long a real checkpoint takes depends on the model and the file system; 420 s is
what the 10 minutes leave, not a measurement: a job that needs longer must checkpoint periodically as well.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fmcluster.blueprint.model import ComputeGroup, LustreSpec

#: EventBridge source and detail types of the expiration warning (both spellings the EC2 user guide has used).
EVENT_SOURCE = "aws.ec2"
EXPIRATION_WARNING_DETAIL_TYPES = ("Capacity Block Expiration Warning", "Capacity Block Reservation Expiration Warning")
#: The event EC2 sends when a Capacity Block starts ("indicates your capacity is ready to use"; same page, both
#: spellings: "Capacity Block Delivered" in the current English page, "Capacity Block Reservation Delivered" in others),
#: with the same ``detail.capacity-reservation-id``.
DELIVERED_DETAIL_TYPES = ("Capacity Block Delivered", "Capacity Block Reservation Delivered")
#: The warning arrives this long before the block ends (EC2 user guide, capacity-blocks-monitor: "Forty minutes").
WARNING_BEFORE_END_S = 40 * 60
#: Instances begin to terminate this long after the warning (same page: "will begin to terminate in 10 minutes").
TERMINATION_AFTER_WARNING_S = 10 * 60
#: Kept back from the 10 minutes for the requeue, Slurm's own step teardown and the Run Command's delivery.
REQUEUE_MARGIN_S = 3 * 60
#: How long jobs get to checkpoint after the signal before the end script requeues them.
CHECKPOINT_GRACE_S = TERMINATION_AFTER_WARNING_S - REQUEUE_MARGIN_S
#: The default preload lead: the estimated load time (size / the file system's baseline throughput) times
#: PRELOAD_FACTOR, plus PRELOAD_MARGIN_S. An assumption, not a measurement: S3 request rates, the number of files and
#: the metadata import are not modelled, so fmcluster plan labels it an estimate; set preload_lead_minutes to measure.
PRELOAD_FACTOR = 1.5
PRELOAD_MARGIN_S = 15 * 60
#: How the drain reason of earlier versions of the end script began (``<prefix><reservation> ends <end date>``). The end
#: script no longer drains; the start script still resumes nodes drained with this reason, and only those, so that a
#: cluster whose last window ended under the old script gets its nodes back (docs/capacity.md "Why a hold, not a
#: drain").
WINDOW_END_REASON_PREFIX = "fmcluster: capacity block "
#: How the end script's hold reservation is named (``<prefix><group>``, :func:`window_hold_reservation`).
WINDOW_HOLD_PREFIX = "fmcluster-window-end-"
#: The hold's default length in minutes from the warning (``FMC_WINDOW_HOLD_MIN`` overrides it on the head node): the
#: 40 minutes to the block's end plus 20, which covers ParallelCluster's own reservation of an expired Capacity Block's
#: nodes (``pcluster-<reservation id>``, created at clustermgtd's next look at the block, every 10 minutes:
#: aws/aws-parallelcluster-node src/slurm_plugin/capacity_block_manager.py, CAPACITY_BLOCK_RESERVATION_UPDATE_PERIOD).
WINDOW_HOLD_DEFAULT_MIN = WARNING_BEFORE_END_S // 60 + 20
#: The signal jobs get (``scancel --signal=USR1 --full``; the rendered FSDP job traps it: docs/first-job.md).
CHECKPOINT_SIGNAL = "USR1"


@dataclass(frozen=True)
class Window:
    """One compute group whose capacity ends at an announced time.

    Attributes:
        group: the compute group's name (also its Slurm partition on every Slurm orchestrator).
        index: the group's position in ``compute`` (names its preload schedule).
        reservation_id: the Capacity Block's reservation id (``cr-...``), what the event's
            ``detail.capacity-reservation-id`` carries.
        grace_s: seconds jobs get to checkpoint after the signal (:data:`CHECKPOINT_GRACE_S`).
        starts_at, ends_at: the blueprint's times of the block (``capacity.starts_at`` / ``ends_at``), or ``None``.
        preload_paths: absolute paths on the nodes of the data repositories that set ``preload_gib`` (mount point +
            ``file_system_path``), in blueprint order.
        preload_gib: their total size in GiB (0: no preload).
        preload_estimate_s: seconds to read ``preload_gib`` at the file system's baseline throughput
            (``LustreSpec.throughput_mbps``; GiB = 2^30 B, MB = 10^6 B), or ``None`` without a preload.
        lead_s: seconds before ``starts_at`` the preload starts: ``capacity.preload_lead_minutes``, else
            :func:`default_lead_s` of the estimate; ``None`` without a preload.
        lead_is_default: ``lead_s`` is fmcluster's estimate, not the blueprint's.
    """

    group: str
    reservation_id: str
    grace_s: int = CHECKPOINT_GRACE_S
    index: int = 0
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    preload_paths: tuple[str, ...] = ()
    preload_gib: int = 0
    preload_estimate_s: float | None = None
    lead_s: int | None = None
    lead_is_default: bool = False

    @property
    def partition(self) -> str:
        return self.group

    @property
    def hold_reservation(self) -> str:
        """The Slurm reservation that holds the window's nodes at its end (:func:`window_hold_reservation`)."""
        return window_hold_reservation(self.group)

    @property
    def preload_starts_at(self) -> datetime | None:
        """When the preload starts (``starts_at - lead_s``), or ``None`` without a start time or a preload."""
        if self.starts_at is None or self.lead_s is None:
            return None
        return self.starts_at - timedelta(seconds=self.lead_s)


def preload_seconds(gib: int, throughput_mbps: int) -> float:
    """Seconds to read ``gib`` GiB at ``throughput_mbps`` MB/s (GiB = 2^30 B, MB = 10^6 B; inf at 0 MB/s)."""
    return round(gib * 2**30 / (throughput_mbps * 10**6), 1) if throughput_mbps else math.inf


def default_lead_s(estimate_s: float) -> int:
    """The default lead time: ``estimate_s * PRELOAD_FACTOR + PRELOAD_MARGIN_S``, rounded up to whole minutes."""
    return int(math.ceil((estimate_s * PRELOAD_FACTOR + PRELOAD_MARGIN_S) / 60) * 60)


def _window(index: int, g: ComputeGroup, lustre: LustreSpec | None) -> Window:
    repos = [r for r in (lustre.data_repositories if lustre is not None else []) if r.preload_gib]
    gib = sum(r.preload_gib or 0 for r in repos)
    estimate = preload_seconds(gib, lustre.throughput_mbps) if gib and lustre is not None else None
    lead_minutes = getattr(g.capacity, "preload_lead_minutes", None)
    lead = None if estimate is None else (lead_minutes * 60 if lead_minutes else default_lead_s(estimate))
    mount = lustre.mount_point.rstrip("/") if lustre is not None else ""
    return Window(
        g.name, g.reservation_id or "", index=index, starts_at=getattr(g.capacity, "starts_at", None),
        ends_at=getattr(g.capacity, "ends_at", None), preload_paths=tuple(mount + r.file_system_path for r in repos),
        preload_gib=gib, preload_estimate_s=estimate, lead_s=lead, lead_is_default=lead is not None and not lead_minutes,
    )


def windows(groups: Iterable[ComputeGroup], lustre: LustreSpec | None = None) -> tuple[Window, ...]:
    """The :class:`Window` of every group whose capacity end EC2 announces, in blueprint order (empty: none);
    ``lustre`` (the blueprint's file system) gives the preload paths, size and lead time."""
    return tuple(_window(i, g, lustre) for i, g in enumerate(groups) if g.announced_end and g.reservation_id)


def plan_rows(rc: Any) -> list[dict[str, str]]:
    """The feature registry's ``plan`` hook: one row per window for ``fmcluster plan`` (start, end, the preload's
    start, lead, size and estimated time, the warning and the checkpoint grace)."""
    bp = rc.blueprint
    budget = "none" if bp.budget is None else budget_text(bp.budget, rc.profile.fleet_stop)
    counts = {g.name: g.count for g in bp.compute}
    return [{**window_row(w), "instance-hours": instance_hours(w, counts[w.group]), "budget": budget}
            for w in windows(bp.compute, bp.storage.lustre)]


def budget_rows(rc: Any) -> list[dict[str, str]]:
    """The feature registry's ``plan_budget`` hook: the blueprint's ``budget`` as one row (monthly limit, alert
    thresholds, the stop threshold and what the stop does on this orchestrator), or none without a budget."""
    b = rc.blueprint.budget
    if b is None:
        return []
    stop = b.stop_compute_at_percent
    return [{"USD per month": f"{b.monthly_usd:,}", "alerts at": ", ".join(f"{p}%" for p in b.thresholds_percent),
             "stops compute at": "-" if stop is None else f"{stop}%",
             "stop": "-" if stop is None else f"{rc.profile.fleet_stop}; data kept"}]


def budget_text(budget: Any, fleet_stop: str) -> str:
    """The blueprint's ``budget`` as the plan shows it: the limit, the alert thresholds and, with
    ``stop_compute_at_percent``, the stop and what it does on this orchestrator (``OrchestratorProfile.fleet_stop``)."""
    text = f"{budget.monthly_usd:,} USD/month, alerts at " + ", ".join(f"{p}%" for p in budget.thresholds_percent)
    if budget.stop_compute_at_percent is not None:
        text += f"; stops the compute fleet at {budget.stop_compute_at_percent}% ({fleet_stop}; data kept)"
    return text


def instance_hours(w: Window, count: int) -> str:
    """The window's length times its instances, the quantity a Capacity Block is paid for up front (its price is
    quoted at purchase, so fmcluster's price table has none: docs/cost.md); "unknown" without both times."""
    if w.starts_at is None or w.ends_at is None:
        return "unknown (set starts_at and ends_at)"
    hours = (w.ends_at - w.starts_at).total_seconds() / 3600
    return f"{hours:g} h x {count} = {hours * count:g} (price quoted at purchase)"


def _when(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M %Z").strip() if t is not None else "not given"


def window_row(w: Window) -> dict[str, str]:
    """One window as the plan shows it (text per column)."""
    lead = "-" if w.lead_s is None else f"{w.lead_s // 60} min" + (" (estimate)" if w.lead_is_default else "")
    estimate = "-" if w.preload_estimate_s is None else f"{w.preload_estimate_s / 60:.1f} min"
    return {
        "group": w.group, "reservation": w.reservation_id, "starts": _when(w.starts_at), "ends": _when(w.ends_at),
        "preload": f"{w.preload_gib} GiB: " + ", ".join(w.preload_paths) if w.preload_gib else "none",
        "preload time": estimate, "lead": lead,
        "preload starts": _when(w.preload_starts_at) if w.lead_s is not None else "-",
        "end warning": f"{WARNING_BEFORE_END_S // 60} min before the end",
        "checkpoint grace": f"{w.grace_s} s (requeue {REQUEUE_MARGIN_S} s before termination)",
    }


def window_hold_reservation(group: str) -> str:
    """``fmcluster-window-end-<group>``: the Slurm reservation in which the end script holds a window's nodes (no job
    that does not ask for it starts there) from the warning until after the block ends; the next window's start
    deletes it if it is still there."""
    return f"{WINDOW_HOLD_PREFIX}{group}"


def window_start_rule_name(cluster_name: str) -> str:
    """``fmcluster-<name>-window-start``: the EventBridge rule on EC2's Capacity Block Delivered event."""
    return f"fmcluster-{cluster_name}-window-start"


def delivered_pattern(ws: Sequence[Window]) -> dict[str, Any]:
    """The EventBridge event pattern of the Capacity Block Delivered event of the reservations of ``ws``."""
    return {
        "source": [EVENT_SOURCE],
        "detail-type": list(DELIVERED_DETAIL_TYPES),
        "detail": {"capacity-reservation-id": sorted({w.reservation_id for w in ws})},
    }


def window_end_rule_name(cluster_name: str) -> str:
    """``fmcluster-<name>-window-end``: the EventBridge rule's name, also named by the alert topic's policy."""
    return f"fmcluster-{cluster_name}-window-end"


def preload_schedule_name(cluster_name: str, index: int) -> str:
    """``fmcluster-<name>-preload-<n>``: the EventBridge Scheduler schedule of the preload of ``compute[n]``'s window
    (at most 10 + 32 + 9 + 2 = 53 characters: Scheduler allows 64, and a group name would not fit)."""
    return f"fmcluster-{cluster_name}-preload-{index}"


def expiration_warning_pattern(ws: Sequence[Window]) -> dict[str, Any]:
    """The EventBridge event pattern of the expiration warning of the reservations of ``ws``
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html: a list matches any of its
    values)."""
    return {
        "source": [EVENT_SOURCE],
        "detail-type": list(EXPIRATION_WARNING_DETAIL_TYPES),
        "detail": {"capacity-reservation-id": sorted({w.reservation_id for w in ws})},
    }
