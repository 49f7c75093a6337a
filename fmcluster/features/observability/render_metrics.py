"""Every metric name the dashboards and alert rules may use, with the exporter that publishes it.

Tests parse each PromQL expression and check its metric names against :func:`known_metric_names`, so a
dashboard cannot quietly query a series no exporter publishes.

Sources:
- DCGM exporter publishes each field of its counters CSV under the field's own name (``DCGM_FI_*``):
  github.com/NVIDIA/dcgm-exporter etc/default-counters.csv and etc/dcp-metrics-included.csv list the
  fields and types used below; we install our own CSV (:data:`DCGM_FIELDS`) with ``-f``.
- EFA hardware counters: Linux drivers/infiniband/hw/efa/efa_verbs.c (``EFA_DEFINE_PORT_STATS``: tx/rx
  bytes/pkts, rx_drops, send/recv bytes/wrs, rdma_read_*; rdma_write_* added with RDMA write support;
  retrans_* and *_remote_* events on newer drivers), read from /sys/class/infiniband/<dev>/ports/<port>/
  hw_counters and written by our textfile collector as ``fmcluster_efa_<counter>_total``.
- node_exporter (github.com/prometheus/node_exporter collectors cpu, meminfo, loadavg, filesystem,
  textfile): ``node_cpu_seconds_total``, ``node_memory_MemAvailable_bytes``, ``node_memory_MemTotal_bytes``,
  ``node_load1``, ``node_filesystem_avail_bytes``, ``node_filesystem_size_bytes``,
  ``node_textfile_scrape_error``.
- Slurm exporter: :data:`SLURM_EXPORTER_SOURCES` (file and line per metric at the pinned commit).
- ``up``: set by Prometheus for every scrape target
  (https://prometheus.io/docs/concepts/jobs_instances/#automatically-generated-labels-and-time-series).
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.catalog.dcgm_exporter import published_fields, schema_problems
from fmcluster.features.observability.pins import DCGM_EXPORTER


@dataclass(frozen=True)
class DcgmField:
    name: str
    kind: str  # gauge | counter
    help: str


#: The DCGM exporter counters file we install (``-f``). All fields appear in NVIDIA's default-counters.csv or
#: dcp-metrics-included.csv (some commented out there, enabled here: SM activity, ECC, row remapping).
DCGM_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    DcgmField("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    DcgmField("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    DcgmField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."
    ),
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    DcgmField("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    DcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    # dcgm-exporter's own XID collector (etc/default-counters.csv at tag 4.4.2-4.7.1 line 40, commented out
    # there): the number of XIDs per ``xid`` label within the last --xid-count-window-size ms (default 5 min,
    # pkg/cmd/app.go), internal/pkg/collector/xid_collector.go.
    DcgmField("DCGM_EXP_XID_ERRORS_COUNT", "counter", "reported XIDs during last window"),
    DcgmField("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    DcgmField("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    DcgmField("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    DcgmField(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    DcgmField(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"
    ),
    DcgmField("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
    ),
    DcgmField("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    DcgmField("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    DcgmField("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM."),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."
    ),
    DcgmField(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    DcgmField("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
)

#: EFA port hardware counters exported by the textfile collector (file name under hw_counters/).
EFA_COUNTERS: tuple[str, ...] = (
    "tx_bytes",
    "tx_pkts",
    "rx_bytes",
    "rx_pkts",
    "rx_drops",
    "send_bytes",
    "send_wrs",
    "recv_bytes",
    "recv_wrs",
    "rdma_read_bytes",
    "rdma_read_wrs",
    "rdma_read_wr_err",
    "rdma_read_resp_bytes",
    "rdma_write_bytes",
    "rdma_write_wrs",
    "rdma_write_wr_err",
    "rdma_write_recv_bytes",
    "retrans_bytes",
    "retrans_pkts",
    "retrans_timeout_events",
    "unresponsive_remote_events",
    "impaired_remote_conn_events",
)
EFA_METRIC_PREFIX = "fmcluster_efa_"

#: Gauges our textfile collector writes besides the counters (names are ours).
FMCLUSTER_GAUGES: dict[str, str] = {
    "fmcluster_node_info": "1, labelled with blueprint, group, role and instance_type of the node",
    "fmcluster_gpus_expected": "GPUs this node should have (instance catalog)",
    "fmcluster_efa_devices_expected": "EFA devices this node should have (instance catalog, 0 when EFA is off)",
    "fmcluster_efa_devices": "EFA devices found under /sys/class/infiniband",
    "fmcluster_slurm_job_steps": "Slurm job steps running on the node (slurmstepd processes)",
    "fmcluster_slurm_job_step_oldest_age_seconds": "age of the node's oldest job step, 0 without one",
    "fmcluster_textfile_last_run_timestamp_seconds": "when the collector last wrote its file",
}

NODE_EXPORTER_METRICS: tuple[str, ...] = (
    "node_cpu_seconds_total",
    "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes",
    "node_load1",
    "node_filesystem_avail_bytes",
    "node_filesystem_size_bytes",
    "node_textfile_scrape_error",
)

#: Metrics of the pinned Slurm exporter (rivosinc/prometheus-slurm-exporter, pins.SLURM_EXPORTER at commit
#: 529aabaa, tag v1.7.0) that rules and dashboards may use: name -> (source file at that tag, line of the
#: ``prometheus.NewDesc`` / ``CounterOpts`` that names it). ``make verify-pins`` re-reads these lines from
#: GitHub at the pinned commit. Node states are sinfo ``%T`` strings (idle, allocated, mixed, down, drained,
#: draining, ...), job states squeue ``%T`` (RUNNING, PENDING, ...), per exporter/server.go's cli-fallback
#: format strings (line 154 and 157).
SLURM_EXPORTER_SOURCES: dict[str, tuple[str, int]] = {
    "slurm_node_count_per_state": ("exporter/nodes.go", 350),
    "slurm_cpus_per_state": ("exporter/nodes.go", 349),
    "slurm_cpus_total": ("exporter/nodes.go", 346),
    "slurm_cpus_idle": ("exporter/nodes.go", 347),
    "slurm_partition_node_count": ("exporter/nodes.go", 341),
    "slurm_partition_job_state_total": ("exporter/jobs.go", 366),
    "slurm_pending_reason_total": ("exporter/jobs.go", 373),
    "slurm_node_scrape_error": ("exporter/nodes.go", 324),
    "slurm_job_scrape_error": ("exporter/jobs.go", 376),
}
SLURM_EXPORTER_METRICS: tuple[str, ...] = tuple(SLURM_EXPORTER_SOURCES)

#: Gauges a training job publishes through the node's textfile collector (``fmcluster-publish-throughput``,
#: written by the exporter script): tokens per second of the job's ranks on this node, and when it last
#: wrote them (stale files are ignored by the dashboard after THROUGHPUT_STALE_S).
TRAINING_GAUGES: dict[str, str] = {
    "fmcluster_training_tokens_per_second": "tokens/s the job reports for this node, labelled job_id",
    "fmcluster_training_last_update_timestamp_seconds": "when the job last published its throughput",
}
THROUGHPUT_STALE_S = 300

#: Slurm node states (sinfo %T, optionally with a trailing flag character such as * or ~) by dashboard group.
SLURM_NODE_STATE_GROUPS: dict[str, str] = {
    "allocated": "allocated.*|mixed.*|completing.*",
    "idle": "idle.*",
    "drain": "drain.*",
    "down": "down.*|fail.*|not_responding.*",
    "other": "maint.*|reserved.*|planned.*|future.*|reboot.*|power.*|inval.*|unknown.*",
}


def slurm_nodes(group: str) -> str:
    """PromQL: nodes in a state group of :data:`SLURM_NODE_STATE_GROUPS` (0 when none)."""
    return f'sum(slurm_node_count_per_state{{state=~"{SLURM_NODE_STATE_GROUPS[group]}"}}) or vector(0)'


def slurm_jobs(state: str) -> str:
    """PromQL: jobs in one squeue state (RUNNING, PENDING, ...) over all partitions (0 when none)."""
    return f'sum(slurm_partition_job_state_total{{state="{state}"}}) or vector(0)'


def training_tokens_per_second(by: str = "job_id") -> str:
    """PromQL: tokens/s jobs publish (fmcluster-publish-throughput), summed over nodes, fresh values only."""
    fresh = (
        f"(time() - fmcluster_training_last_update_timestamp_seconds < {THROUGHPUT_STALE_S})"
    )
    return f"sum by ({by}) (fmcluster_training_tokens_per_second and on (instance, job_id) {fresh})"

PROMETHEUS_BUILTIN: tuple[str, ...] = ("up",)


def efa_metric(counter: str) -> str:
    """``tx_bytes`` -> ``fmcluster_efa_tx_bytes_total`` (counters end in ``_total``)."""
    if counter not in EFA_COUNTERS:
        raise KeyError(f"unknown EFA hardware counter {counter!r}; allowed {', '.join(EFA_COUNTERS)}")
    return f"{EFA_METRIC_PREFIX}{counter}_total"


def dcgm_metric_names(exporter: str = DCGM_EXPORTER.version) -> frozenset[str]:
    """The metrics of :data:`DCGM_FIELDS` that dcgm-exporter ``exporter`` (default: the pinned one, the exporter
    that runs) publishes, per the catalog's table (``fmcluster.catalog.dcgm_exporter``); none for a release whose
    names are not verified. Alert rules and dashboards may query only these."""
    published = published_fields(exporter) or {}
    return frozenset(f.name for f in DCGM_FIELDS if f.kind != "label" and f.name in published)


def dcgm_schema_problems(exporter: str = DCGM_EXPORTER.version) -> list[str]:
    """Fields of the counters file fmcluster installs that dcgm-exporter ``exporter`` would not publish (empty: all
    exist). ``tests/features/observability/test_observability_render.py`` requires it empty for the pinned exporter."""
    return schema_problems(exporter, [f.name for f in DCGM_FIELDS])


def known_metric_names() -> dict[str, str]:
    """Metric name -> exporter that publishes it."""
    out: dict[str, str] = {}
    out.update({m: "dcgm-exporter" for m in dcgm_metric_names()})
    out.update({efa_metric(c): "fmcluster EFA textfile collector" for c in EFA_COUNTERS})
    out.update({m: "fmcluster textfile collector" for m in FMCLUSTER_GAUGES})
    out.update({m: "node_exporter" for m in NODE_EXPORTER_METRICS})
    out.update({m: "prometheus-slurm-exporter" for m in SLURM_EXPORTER_METRICS})
    out.update({m: "training job via fmcluster-publish-throughput" for m in TRAINING_GAUGES})
    out.update({m: "prometheus" for m in PROMETHEUS_BUILTIN})
    # fleet acceptance gate textfile (fmcluster/acceptance/metrics.py, docs/acceptance.md)
    from fmcluster.acceptance.metrics import METRIC_NAMES as ACCEPTANCE_METRICS
    from fmcluster.acceptance.metrics import WATCH_METRIC_NAMES

    out.update({m: "fmcluster acceptance gate (textfile)" for m in ACCEPTANCE_METRICS})
    out.update({m: "fmcluster-gate-watch (textfile)" for m in WATCH_METRIC_NAMES})
    return out


def dcgm_counters_csv() -> str:
    """The counters file for ``dcgm-exporter -f`` (format: field, Prometheus type, help)."""
    lines = [
        "# fmcluster DCGM exporter counters (rendered; do not edit).",
        "# Format: DCGM FIELD, Prometheus metric type, help message",
    ]
    lines += [f"{f.name}, {f.kind}, {f.help}" for f in DCGM_FIELDS]
    return "\n".join(lines) + "\n"
