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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fmcluster.blueprint.model import ComputeGroup

#: EventBridge source and detail types of the expiration warning (both spellings the EC2 user guide has used).
EVENT_SOURCE = "aws.ec2"
EXPIRATION_WARNING_DETAIL_TYPES = ("Capacity Block Expiration Warning", "Capacity Block Reservation Expiration Warning")
#: The warning arrives this long before the block ends (EC2 user guide, capacity-blocks-monitor: "Forty minutes").
WARNING_BEFORE_END_S = 40 * 60
#: Instances begin to terminate this long after the warning (same page: "will begin to terminate in 10 minutes").
TERMINATION_AFTER_WARNING_S = 10 * 60
#: Kept back from the 10 minutes for the requeue, Slurm's own step teardown and the Run Command's delivery.
REQUEUE_MARGIN_S = 3 * 60
#: How long jobs get to checkpoint after the signal before the end script requeues them.
CHECKPOINT_GRACE_S = TERMINATION_AFTER_WARNING_S - REQUEUE_MARGIN_S
#: The signal jobs get (``scancel --signal=USR1 --full``; the rendered FSDP job traps it: docs/first-job.md).
CHECKPOINT_SIGNAL = "USR1"


@dataclass(frozen=True)
class Window:
    """One compute group whose capacity ends at an announced time.

    Attributes:
        group: the compute group's name (also its Slurm partition on every Slurm orchestrator).
        reservation_id: the Capacity Block's reservation id (``cr-...``), what the event's
            ``detail.capacity-reservation-id`` carries.
        grace_s: seconds jobs get to checkpoint after the signal (:data:`CHECKPOINT_GRACE_S`).
    """

    group: str
    reservation_id: str
    grace_s: int = CHECKPOINT_GRACE_S

    @property
    def partition(self) -> str:
        return self.group


def windows(groups: Iterable[ComputeGroup]) -> tuple[Window, ...]:
    """The :class:`Window` of every group whose capacity end EC2 announces, in blueprint order (empty: none)."""
    return tuple(Window(g.name, g.reservation_id) for g in groups if g.announced_end and g.reservation_id)


def window_end_rule_name(cluster_name: str) -> str:
    """``fmcluster-<name>-window-end``: the EventBridge rule's name, also named by the alert topic's policy."""
    return f"fmcluster-{cluster_name}-window-end"


def expiration_warning_pattern(ws: Sequence[Window]) -> dict[str, Any]:
    """The EventBridge event pattern of the expiration warning of the reservations of ``ws``
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html: a list matches any of its
    values)."""
    return {
        "source": [EVENT_SOURCE],
        "detail-type": list(EXPIRATION_WARNING_DETAIL_TYPES),
        "detail": {"capacity-reservation-id": sorted({w.reservation_id for w in ws})},
    }
