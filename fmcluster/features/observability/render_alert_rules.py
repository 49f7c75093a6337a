"""Alert rules, in Prometheus rule-file format: loaded by the self-hosted Prometheus and stored as the rule
groups namespace of the AMP workspace (same YAML, https://docs.aws.amazon.com/prometheus/latest/userguide/
AMP-rules-upload.html).

Facts behind the rules:
- XID 79 is "GPU has fallen off the bus"; 13, 31 and 43 are application faults (NVIDIA XID catalogue,
  https://docs.nvidia.com/deploy/xid-errors/index.html). DCGM_FI_DEV_XID_ERRORS holds the last XID and never
  clears (NVIDIA/dcgm-exporter #500), so the rules read DCGM_EXP_XID_ERRORS_COUNT: per ``xid`` label, the
  number of XIDs within the exporter's window (5 min). It is a windowed count, not a monotonic counter:
  ``increase()`` would miss the first XID of each code (a new series starts at 1 and increase() needs two
  samples) and count window expiry as resets, so "> 0" on the count itself is the alert condition.
- Double-bit (uncorrectable) ECC errors and row-remap failures mean the GPU needs a reset or replacement
  (NVIDIA GPU memory error management, https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html).
- EFA work-request errors come from the device's hardware counters (efa_verbs.c, see render_metrics.py).
"""

from __future__ import annotations

import yaml

from fmcluster.features.observability.render_acceptance import acceptance_alert_rules
from fmcluster.features.observability.render_addon_rules import addon_alert_groups
from fmcluster.features.observability.render_alert_types import AlertRule
from fmcluster.features.observability.render_context import ObservabilityContext
from fmcluster.features.observability.render_metrics import SLURM_NODE_STATE_GROUPS, efa_metric
from fmcluster.features.observability.render_prometheus import scrape_jobs

XID_FALLEN_OFF_BUS = 79
#: XIDs the NVIDIA catalogue attributes to the user application (13 Graphics Engine Exception, 31 GPU memory
#: page fault, 43 GPU stopped processing): a warning, not a node fault.
APPLICATION_XIDS = (13, 31, 43)
#: dcgm-exporter's --xid-count-window-size default (5 minutes, pkg/cmd/app.go at tag 4.4.2-4.7.1).
XID_WINDOW_MIN = 5
WATCHDOG_ALERT = "Watchdog"
WATCHDOG_REPEAT = "24h"


def _xid_regex(xids: tuple[int, ...]) -> str:
    return "|".join(str(x) for x in xids)
#: A node whose EFA transmit rate falls below this share of its own rate 30 minutes earlier.
THROUGHPUT_DROP_RATIO = 0.2
#: A node whose EFA transmit rate is below this share of the cluster median (a straggler).
STRAGGLER_RATIO = 0.5
#: Only judge throughput when the reference rate is real traffic (1 GB/s), not an idle cluster.
THROUGHPUT_FLOOR_BYTES_PER_S = 1e9
#: EfaThroughputDrop compares with the rate this long ago ...
DROP_REFERENCE_OFFSET = "30m"
#: ... so it judges only a node whose oldest job step is older than the offset plus the 5 m rate window: the
#: reference rate then belongs to the job still running (a job that ended, or a new job, stays quiet).
DROP_MIN_STEP_AGE_S = 35 * 60
#: A node runs a job when it has a slurmstepd (textfile gauge, node_facts.sh.j2).
NODE_IN_JOB = "(max by (instance) (fmcluster_slurm_job_steps) > 0)"


def _tx_rate(window: str = "5m", offset: str = "") -> str:
    off = f" offset {offset}" if offset else ""
    return f"sum by (instance) (rate({efa_metric('tx_bytes')}[{window}]{off}))"


def throughput_drop_expr() -> str:
    """EfaThroughputDrop: the node's EFA transmit rate (bytes/s, 5 m) fell below ``THROUGHPUT_DROP_RATIO`` of its
    rate ``DROP_REFERENCE_OFFSET`` ago, that rate was real traffic (> ``THROUGHPUT_FLOOR_BYTES_PER_S``), and the
    node still runs a job step that already ran then (oldest step > ``DROP_MIN_STEP_AGE_S``). At a normal job
    end the node's slurmstepd processes exit, so the rule stays quiet."""
    now, before = _tx_rate(), _tx_rate(offset=DROP_REFERENCE_OFFSET)
    return (
        f"({now} < {THROUGHPUT_DROP_RATIO} * {before}) and on (instance) "
        f"({before} > {THROUGHPUT_FLOOR_BYTES_PER_S:.0f}) and on (instance) "
        f"(max by (instance) (fmcluster_slurm_job_step_oldest_age_seconds) > {DROP_MIN_STEP_AGE_S})"
    )


def straggler_expr() -> str:
    """EfaThroughputStraggler: among the nodes that run a job (``NODE_IN_JOB``), one whose EFA transmit rate is below
    ``STRAGGLER_RATIO`` of their median, when that median is real traffic. Idle nodes are neither judged nor part
    of the median. Nodes of different jobs share one median (the textfile has no job id): two jobs with very
    different traffic on one cluster can still make the smaller one look slow."""
    busy = f"({_tx_rate()} and on (instance) {NODE_IN_JOB})"
    median = f"quantile(0.5, {busy})"
    return f"({busy} < {STRAGGLER_RATIO} * scalar({median})) and on () ({median} > {THROUGHPUT_FLOOR_BYTES_PER_S:.0f})"


def alert_groups(ctx: ObservabilityContext) -> dict[str, list[AlertRule]]:
    """Rule groups by name. Thresholds that depend on the node come from the textfile gauges the exporter
    script writes from the instance catalog (``fmcluster_gpus_expected``, ``fmcluster_efa_devices_expected``)."""
    gpu = [
        AlertRule(
            "GpuXidHardwareError",
            f'max by (instance, gpu, xid) (DCGM_EXP_XID_ERRORS_COUNT{{xid!~"{_xid_regex(APPLICATION_XIDS)}"}}) > 0',
            "0m",
            "critical",
            "XID {{ $labels.xid }} on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
            "The GPU driver reported an XID that is not an application fault in the last "
            f"{XID_WINDOW_MIN} minutes. Drain the node in Slurm and check `dmesg` and the NVIDIA XID catalogue "
            "before returning it to service.",
        ),
        AlertRule(
            "GpuXidApplicationError",
            f'max by (instance, gpu, xid) (DCGM_EXP_XID_ERRORS_COUNT{{xid=~"{_xid_regex(APPLICATION_XIDS)}"}}) > 0',
            "0m",
            "warning",
            "Application XID {{ $labels.xid }} on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
            "XID 13/31/43 are usually caused by the user application (illegal memory access, page fault, "
            "GPU stopped processing); check the job's logs before suspecting the node.",
        ),
        AlertRule(
            "GpuFallenOffBus",
            f'max by (instance, gpu) (DCGM_EXP_XID_ERRORS_COUNT{{xid="{XID_FALLEN_OFF_BUS}"}}) > 0',
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} of {{ $labels.instance }} has fallen off the bus (XID 79)",
            "The GPU is no longer reachable over PCIe. The node needs a reboot or replacement.",
        ),
        AlertRule(
            "GpuMissing",
            "(count by (instance) (DCGM_FI_DEV_GPU_TEMP) < on (instance) max by (instance) "
            "(fmcluster_gpus_expected)) or (max by (instance) (fmcluster_gpus_expected) > 0 unless on "
            "(instance) count by (instance) (DCGM_FI_DEV_GPU_TEMP))",
            "5m",
            "critical",
            "{{ $labels.instance }} reports fewer GPUs than its instance type has",
            "DCGM sees fewer GPUs than the instance catalog expects (or none: exporter down or GPU "
            "fallen off the bus).",
        ),
        AlertRule(
            "GpuEccDoubleBitErrors",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "0m",
            "critical",
            "Uncorrectable ECC errors on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
            "Double-bit ECC errors corrupt results; drain the node and reset the GPU.",
        ),
        AlertRule(
            "GpuRowRemapFailure",
            "max by (instance, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            "0m",
            "critical",
            "Row remapping failed on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
            "The GPU ran out of spare memory rows; it must be replaced.",
        ),
    ]
    efa = [
        AlertRule(
            "EfaDeviceMissing",
            "max by (instance) (fmcluster_efa_devices) < max by (instance) (fmcluster_efa_devices_expected)",
            "5m",
            "critical",
            "{{ $labels.instance }} has fewer EFA devices than its instance type",
            "NCCL would use fewer network cards (or fall back to TCP). Replace the node.",
        ),
        AlertRule(
            "EfaWorkRequestErrors",
            f"(sum by (instance, device) (increase({efa_metric('rdma_read_wr_err')}[10m])) > 0) or "
            f"(sum by (instance, device) (increase({efa_metric('rdma_write_wr_err')}[10m])) > 0)",
            "0m",
            "warning",
            "RDMA work-request errors on {{ $labels.device }} of {{ $labels.instance }}",
            "The EFA device completed RDMA reads or writes with errors in the last 10 minutes.",
        ),
        AlertRule(
            "EfaUnresponsiveRemote",
            f"sum by (instance, device) (increase({efa_metric('unresponsive_remote_events')}[10m])) > 0",
            "0m",
            "warning",
            "{{ $labels.instance }} lost contact with a remote EFA peer",
            "A peer stopped responding on {{ $labels.device }}; a node of the job may be unhealthy.",
        ),
        AlertRule(
            "EfaThroughputDrop",
            throughput_drop_expr(),
            "10m",
            "warning",
            "EFA transmit rate of {{ $labels.instance }} dropped by more than 80%",
            "The node still runs the job it ran 30 minutes ago; look for a degraded link, a GPU stall or a hung rank.",
        ),
        AlertRule(
            "EfaThroughputStraggler",
            straggler_expr(),
            "15m",
            "warning",
            "{{ $labels.instance }} sends less than half the median of the nodes running jobs over EFA",
            "In data-parallel training every node moves about the same bytes; a slow node holds back all.",
        ),
    ]
    nodes = [
        AlertRule(
            "NodeDown",
            'up{job="node"} == 0',
            "5m",
            "critical",
            "{{ $labels.instance }} is not answering",
            "node_exporter on the node has not answered scrapes for 5 minutes.",
        ),
        AlertRule(
            "DcgmExporterDown",
            # Only nodes that should run it: the textfile gauge says how many GPUs the node has.
            '(up{job="dcgm"} == 0) and on (instance) (max by (instance) (fmcluster_gpus_expected) > 0)',
            "5m",
            "warning",
            "dcgm-exporter on {{ $labels.instance }} is down",
            "GPU metrics of this GPU node are missing (the exporter script reports why in its log).",
        ),
        AlertRule(
            "SlurmExporterDown",
            'up{job="slurm"} == 0',
            "5m",
            "warning",
            "The Slurm exporter on the head node is down",
            "Slurm node and job metrics are missing.",
        ),
        AlertRule(
            "NodeTextfileCollectorStale",
            "time() - fmcluster_textfile_last_run_timestamp_seconds > 300",
            "5m",
            "warning",
            "EFA and node facts of {{ $labels.instance }} are stale",
            "The fmcluster textfile collector timer has not run for 5 minutes.",
        ),
        AlertRule(
            "SlurmNodesDown",
            f'sum(slurm_node_count_per_state{{state=~"{SLURM_NODE_STATE_GROUPS["down"]}"}}) > 0',
            "10m",
            "warning",
            "{{ $value }} Slurm nodes are down",
            "Slurm marks nodes down when slurmd stops responding or a health check fails.",
        ),
        AlertRule(
            "SlurmNodesDrained",
            # sinfo %T drained (idle, out of service) and draining (jobs still finishing), per the exporter's
            # cli-fallback; the exporter counts nodes per state without host names (exporter/nodes.go).
            f'sum(slurm_node_count_per_state{{state=~"{SLURM_NODE_STATE_GROUPS["drain"]}"}}) > 0',
            "10m",
            "warning",
            "{{ $value }} Slurm nodes are drained or draining",
            "A health check, the acceptance gate or an operator took nodes out of service; `sinfo -R` lists them "
            "with the reason. They stay drained until replaced or resumed (`scontrol update nodename=<n> "
            "state=resume`).",
        ),
    ]
    if ctx.discovery == "slurm":
        nodes.insert(
            1,
            AlertRule(
                "HeadNodeExporterDown",
                'up{job="head-node"} == 0',
                "5m",
                "warning",
                "node_exporter on the head node is down",
                "Head-node CPU, memory and disk metrics are missing.",
            ),
        )
    name = ctx.blueprint_name
    if ctx.collector == "eks_addon":
        # the HyperPod observability add-on collects: the DCGM-only GPU rules plus the add-on's own series
        return addon_alert_groups(ctx, [r for r in gpu if reads_only_addon_metrics(r)], watchdog_rules())
    groups = {f"{name}-gpu": gpu, f"{name}-efa": efa, f"{name}-nodes": nodes, f"{name}-pipeline": pipeline_rules(ctx)}
    # fleet acceptance gate (docs/acceptance.md): rules in their own module and group
    groups[f"{name}-acceptance"] = acceptance_alert_rules()
    return groups


#: What only fmcluster's own collection writes: its textfile gauges (``fmcluster_*``: expected GPU and EFA counts, EFA
#: hardware counters, Slurm job steps, acceptance verdicts), the Slurm exporter (``slurm_*``) and the scrape jobs of
#: its Prometheus (``up{job=...}``). A rule that reads one of them never fires on what the HyperPod observability
#: add-on writes (or, for ``absent()``, always fires).
FMCLUSTER_ONLY_SERIES = ("fmcluster_", "slurm_", "up{")


def reads_only_addon_metrics(rule: AlertRule) -> bool:
    """True when ``rule`` reads none of :data:`FMCLUSTER_ONLY_SERIES` (its expression reads DCGM series only): the GPU
    rules kept where the HyperPod observability add-on collects (:mod:`.render_addon_rules`; whether the add-on enables
    the XID count and row-remap fields is NOT VERIFIED: R-EKS-9)."""
    return not any(series in rule.expr for series in FMCLUSTER_ONLY_SERIES)


def watchdog_rules() -> list[AlertRule]:
    """The dead-man's switch alone: a Watchdog that always fires."""
    return [
        AlertRule(
            WATCHDOG_ALERT,
            "vector(1)",
            "0m",
            "none",
            "Alerting pipeline of the cluster works",
            "Always firing. Its notification repeats every "
            f"{WATCHDOG_REPEAT}; when it stops arriving, rule evaluation or notification delivery is broken.",
        )
    ]


def pipeline_rules(ctx: ObservabilityContext) -> list[AlertRule]:
    """The dead-man's switch: a Watchdog that always fires (its regular notification proves that rules are
    evaluated and notifications are delivered) and, per scrape job, an alert when its ``up`` series is absent
    (the agent stopped writing, discovery found nothing, or the job was never scraped)."""
    rules = watchdog_rules()
    for job in scrape_jobs(ctx):
        if min_targets(ctx, job) == 0:
            continue  # every target may be scaled away: absence is normal, not a broken pipeline
        rules.append(
            AlertRule(
                f"MetricsAbsent_{job.replace('-', '_')}",
                f'absent(up{{job="{job}"}})',
                "10m",
                "critical",
                f"No metrics from scrape job {job}",
                f"Prometheus has written no up series for job {job} for 10 minutes: the head-node Prometheus is "
                "down, cannot reach AMP, or found no targets.",
            )
        )
    return rules


def min_targets(ctx: ObservabilityContext, job: str) -> int:
    """Fewest targets scrape job ``job`` has while the cluster runs: ``node`` the groups' minimum node counts
    (plus the head node, which EC2 discovery finds by the same tag), ``dcgm`` those of the GPU groups
    (``GroupFacts.min_count``; 0 when they can all scale to zero, e.g. ParallelCluster dynamic nodes or a PCS
    node group with ``min_count: 0``), every head-node job 1."""
    if job == "node":
        return sum(g.min_count for g in ctx.groups) + (1 if ctx.discovery == "ec2" else 0)
    if job == "dcgm":
        return sum(g.min_count for g in ctx.groups if g.gpus_per_node > 0)
    return 1


def render_alert_rules(ctx: ObservabilityContext) -> str:
    """Prometheus rule file (also the ``Data`` of the AMP rule groups namespace)."""
    interval = f"{ctx.scrape_interval_s}s"
    doc = {
        "groups": [
            {"name": group, "interval": interval, "rules": [r.as_dict(ctx.blueprint_name) for r in rules]}
            for group, rules in alert_groups(ctx).items()
        ]
    }
    header = (
        f"# fmcluster alert rules for {ctx.blueprint_name}. Rendered by fmcluster; do not edit by hand.\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, width=100000)
