"""Alert rules, in Prometheus rule-file format: loaded by the self-hosted Prometheus and stored as the rule
groups namespace of the AMP workspace (same YAML, https://docs.aws.amazon.com/prometheus/latest/userguide/
AMP-rules-upload.html).

Facts behind the rules:
- XID 79 is "GPU has fallen off the bus" (NVIDIA XID catalogue,
  https://docs.nvidia.com/deploy/xid-errors/index.html); DCGM_FI_DEV_XID_ERRORS holds the last XID seen.
- Double-bit (uncorrectable) ECC errors and row-remap failures mean the GPU needs a reset or replacement
  (NVIDIA GPU memory error management, https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html).
- EFA work-request errors come from the device's hardware counters (efa_verbs.c, see metrics.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from fmcluster.templates.observability.context import ObservabilityContext
from fmcluster.templates.observability.metrics import efa_metric

XID_FALLEN_OFF_BUS = 79
#: A node whose EFA transmit rate falls below this share of its own rate 30 minutes earlier.
THROUGHPUT_DROP_RATIO = 0.2
#: A node whose EFA transmit rate is below this share of the cluster median (a straggler).
STRAGGLER_RATIO = 0.5
#: Only judge throughput when the reference rate is real traffic (1 GB/s), not an idle cluster.
THROUGHPUT_FLOOR_BYTES_PER_S = 1e9


@dataclass(frozen=True)
class AlertRule:
    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"alert": self.alert, "expr": self.expr}
        if self.for_ != "0m":
            d["for"] = self.for_
        d["labels"] = {"severity": self.severity}
        d["annotations"] = {"summary": self.summary, "description": self.description}
        return d


def _tx_rate(window: str = "5m", offset: str = "") -> str:
    off = f" offset {offset}" if offset else ""
    return f"sum by (instance) (rate({efa_metric('tx_bytes')}[{window}]{off}))"


def alert_groups(ctx: ObservabilityContext) -> dict[str, list[AlertRule]]:
    """Rule groups by name. Thresholds that depend on the node come from the textfile gauges the exporter
    script writes from the instance catalog (``fmcluster_gpus_expected``, ``fmcluster_efa_devices_expected``)."""
    gpu = [
        AlertRule(
            "GpuXidError",
            "max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0",
            "0m",
            "critical",
            "XID {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
            "The GPU driver reported an XID error. Drain the node in Slurm and check `dmesg` and the "
            "NVIDIA XID catalogue before returning it to service.",
        ),
        AlertRule(
            "GpuFallenOffBus",
            f"max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS) == {XID_FALLEN_OFF_BUS}",
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
            f"({_tx_rate()} < {THROUGHPUT_DROP_RATIO} * {_tx_rate(offset='30m')}) and on (instance) "
            f"({_tx_rate(offset='30m')} > {THROUGHPUT_FLOOR_BYTES_PER_S:.0f})",
            "10m",
            "warning",
            "EFA transmit rate of {{ $labels.instance }} dropped by more than 80%",
            "If no job ended on this node, look for a degraded link, a GPU stall or a hung rank.",
        ),
        AlertRule(
            "EfaThroughputStraggler",
            f"({_tx_rate()} < {STRAGGLER_RATIO} * scalar(quantile(0.5, {_tx_rate()}))) and on () "
            f"(quantile(0.5, {_tx_rate()}) > {THROUGHPUT_FLOOR_BYTES_PER_S:.0f})",
            "15m",
            "warning",
            "{{ $labels.instance }} sends less than half the cluster median over EFA",
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
            "ExporterDown",
            'up{job=~"dcgm|slurm|head-node"} == 0',
            "5m",
            "warning",
            "{{ $labels.job }} exporter on {{ $labels.instance }} is down",
            "GPU or Slurm metrics of this target are missing.",
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
            "slurm_nodes_down > 0",
            "10m",
            "warning",
            "{{ $value }} Slurm nodes are down",
            "Slurm marks nodes down when slurmd stops responding or a health check fails.",
        ),
    ]
    name = ctx.blueprint_name
    groups = {f"{name}-gpu": gpu, f"{name}-efa": efa, f"{name}-nodes": nodes}
    # fleet acceptance gate (docs/acceptance.md): rules in their own module and group
    from fmcluster.templates.observability.acceptance import acceptance_alert_rules

    groups[f"{name}-acceptance"] = acceptance_alert_rules()
    return groups


def render_alert_rules(ctx: ObservabilityContext) -> str:
    """Prometheus rule file (also the ``Data`` of the AMP rule groups namespace)."""
    interval = f"{ctx.scrape_interval_s}s"
    doc = {
        "groups": [
            {"name": group, "interval": interval, "rules": [r.as_dict() for r in rules]}
            for group, rules in alert_groups(ctx).items()
        ]
    }
    header = (
        f"# fmcluster alert rules for {ctx.blueprint_name}. Rendered by fmcluster; do not edit by hand.\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, width=100000)
