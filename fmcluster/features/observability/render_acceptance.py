"""Alert rules and overview-dashboard panels for the fleet acceptance gate (docs/acceptance.md "Metrics").

The gate job writes its verdict as node_exporter textfile metrics on the node that ran the batch script
(``fmcluster_acceptance_<group>.prom``, fmcluster/acceptance/metrics.py). A later gate may run on another
node, so an older file can still be scraped elsewhere: every expression keeps only the newest run per
cluster and group (:data:`LATEST`, the series whose ``fmcluster_acceptance_last_run_timestamp_seconds`` is the
group's maximum).

Hooked into :mod:`fmcluster.features.observability.render_alert_rules` (one rule group, ``<name>-acceptance``) and
:mod:`fmcluster.features.observability.render_dashboards` (the overview's last row).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmcluster.acceptance.metrics import WATCH_BLOCKED
from fmcluster.features.observability.render_alert_types import AlertRule

if TYPE_CHECKING:  # the builder needs grafana-foundation-sdk, imported only where dashboards are built
    from fmcluster.features.observability.render_panels import DashboardBuilder

#: The textfile series of the newest gate run of each cluster and group.
LATEST = (
    "(fmcluster_acceptance_last_run_timestamp_seconds == on (cluster, group) group_left () "
    "max by (cluster, group) (fmcluster_acceptance_last_run_timestamp_seconds))"
)


FAILED_NODE = 'fmcluster_acceptance_node_verdict{verdict="fail"} == 1'
SUSPECT_NODE = 'fmcluster_acceptance_node_verdict{verdict="suspect"} == 1'


def latest(expr: str) -> str:
    """``expr`` restricted to the newest gate run's textfile (joined on the scraped instance and the group)."""
    return f"({expr}) and on (instance, group) {LATEST}"


def acceptance_alert_rules() -> list[AlertRule]:
    """A failed gate (critical), a group whose gate watcher stopped draining (critical), a node the gate drained
    (warning) and a suspect node (warning)."""
    return [
        AlertRule(
            "AcceptanceGateFailed",
            f"max by (cluster, group, instance_type) ({latest('fmcluster_acceptance_gate_passed == 0')})",
            "0m",
            "critical",
            "The fleet acceptance gate of {{ $labels.cluster }}/{{ $labels.group }} failed",
            "At least one node is below the NCCL bus bandwidth floor, far below the cluster median, or ran NCCL "
            "on sockets or on fewer EFA devices than its type has. See verdict.json of the gate run "
            "(docs/acceptance.md).",
        ),
        AlertRule(
            "AcceptanceNodeDrained",
            f"max by (cluster, group, node) ({latest('fmcluster_acceptance_node_drained == 1')})",
            "0m",
            "warning",
            "{{ $labels.node }} was drained by the fleet acceptance gate",
            "The gate took the node out of service (ParallelCluster, PCS: Slurm reason fmcluster-acceptance; "
            "HyperPod: Action:Replace). fmcluster-gate-watch gates the node again when a new instance boots behind "
            "its name and puts it back into service when it passes; otherwise replace or repair it "
            "(docs/acceptance.md \"When it runs\").",
        ),
        AlertRule(
            "AcceptanceGateBlocked",
            f"max by (cluster, group) ({WATCH_BLOCKED} == 1)",
            "0m",
            "critical",
            "The acceptance gate of {{ $labels.cluster }}/{{ $labels.group }} stopped draining nodes",
            "Drains repeat (a replacement failed like its predecessor, or most of the group failed), or a gate "
            "failed nodes without draining them or could not run: a cause no replacement fixes. The failing nodes "
            "are held in the Slurm reservation fmcluster-gate-hold-<group>. Fix the cause (see the gate's "
            "verdict.json), then `fmcluster-gate-watch release <group>` (docs/acceptance.md \"Loops\").",
        ),
        AlertRule(
            "AcceptanceNodeSuspect",
            f"max by (cluster, group, node) ({latest(SUSPECT_NODE)})",
            "0m",
            "warning",
            "{{ $labels.node }} is suspect in the fleet acceptance gate",
            "One of its pairs was slow but the gate could not blame it (one bad pair of two): re-run the gate "
            "with FMC_MIN_PARTNERS=3.",
        ),
    ]


def acceptance_panels(b: DashboardBuilder) -> None:
    """The overview dashboard's acceptance row: failed and drained node counts and per-node bus bandwidth."""
    b.row("Fleet acceptance gate (last run)")
    b.zero_is_good(
        "Nodes failed",
        f"count({latest(FAILED_NODE)}) or vector(0)",
        description="Nodes the last acceptance gate failed (node check, floor, cluster median or a named cause).",
    )
    b.zero_is_good(
        "Nodes drained by the gate",
        f"count({latest('fmcluster_acceptance_node_drained == 1')}) or vector(0)",
        description="Nodes the last gate drained in Slurm (reason fmcluster-acceptance: ...).",
    )
    b.timeseries(
        "Acceptance bus bandwidth per node",
        "GBs",
        [
            (f"max by (node) ({latest('fmcluster_acceptance_node_busbw_gbps')})", "{{node}}"),
            (f"max by (group) ({latest('fmcluster_acceptance_floor_busbw_gbps')})", "floor {{group}}"),
            (f"max by (group) ({latest('fmcluster_acceptance_cluster_median_busbw_gbps')})", "median {{group}}"),
        ],
        description="Median all_reduce_perf bus bandwidth (GB/s) of each node's pairs at the reference size, with "
                    "the instance type's floor and the cluster median.",
    )
