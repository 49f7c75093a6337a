"""Grafana dashboards as code (grafana-foundation-sdk), generated per blueprint from the instance catalog.

Each compute group gets its own rows with the counts its instance type implies (GPUs, EFA devices, line
rate), so a p5.48xlarge group expects 8 GPUs and 32 EFA devices per node and a p6-b200.48xlarge group 8 and 8.
Queries use two dashboard variables, ``datasource`` (Prometheus/AMP) and, for FSx, ``cloudwatch``, so the
same JSON loads into Amazon Managed Grafana and into the self-hosted Grafana.

Target: Grafana 10.4 (Amazon Managed Grafana workspace version and the pinned self-hosted version).
FSx metrics: AWS/FSx namespace, dimension FileSystemId, throughput = Sum / period
(https://docs.aws.amazon.com/fsx/latest/LustreGuide/fs-metrics.html).
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import cloudwatch as cwq
from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import timeseries
from grafana_foundation_sdk.models import cloudwatch as cwm
from grafana_foundation_sdk.models.common import GraphThresholdsStyleMode
from grafana_foundation_sdk.models.dashboard import DataSourceRef, Threshold, ThresholdsMode

from fmcluster.features.observability.render_acceptance import acceptance_panels
from fmcluster.features.observability.render_context import GroupFacts, ObservabilityContext
from fmcluster.features.observability.render_metrics import (
    SLURM_NODE_STATE_GROUPS,
    efa_metric,
    slurm_jobs,
    slurm_nodes,
    training_tokens_per_second,
)
from fmcluster.features.observability.render_panels import DashboardBuilder

CLOUDWATCH = DataSourceRef(type_val="cloudwatch", uid="${cloudwatch}")
RATE = "$__rate_interval"
FSX_PERIOD_S = 60


def in_group(expr: str, group: str) -> str:
    """Keep only series of nodes in ``group`` (joins on the textfile ``fmcluster_node_info`` gauge)."""
    return f'{expr} * on (instance) group_left () max by (instance) (fmcluster_node_info{{group="{group}"}})'


def _uid(ctx: ObservabilityContext, kind: str) -> str:
    return f"fmc-{kind}-{ctx.uid_suffix}"


def _group_line(g: GroupFacts) -> str:
    efa = f"{g.efa_devices_per_node} EFA devices" if g.efa_devices_per_node else "EFA off"
    return (
        f"{g.count} x {g.instance_type} ({g.gpus_per_node} x {g.gpu_model} {g.gpu_memory_gib} GiB, {efa}, "
        f"{g.network_gbps_per_node} Gbps per node)"
    )


def overview(ctx: ObservabilityContext) -> dict[str, Any]:
    b = DashboardBuilder(
        f"{ctx.blueprint_name} / cluster overview",
        _uid(ctx, "overview"),
        f"fmcluster {ctx.blueprint_name}: nodes, GPUs and EFA devices against the instance catalog.",
    )
    b.prometheus_variable()
    table = "\n".join(
        f"| {g.name} | {g.instance_type} | {g.count} | {g.gpus_total} | {g.efa_devices_total} |"
        for g in ctx.groups
    )
    b.text(
        "Blueprint",
        f"**{ctx.blueprint_name}** in {ctx.region}, orchestrator **{ctx.orchestrator}**, metrics "
        f"**{ctx.metrics}**\n\n| group | instance type | nodes | GPUs | EFA devices |\n|---|---|---|---|---|\n"
        f"{table}\n",
    )
    b.expect(
        "Compute nodes reporting",
        'count(max by (instance) (fmcluster_node_info{role="compute"})) or vector(0)',
        ctx.nodes_total,
        description=f"Expected {ctx.nodes_total} nodes (sum of the compute groups' counts).",
    )
    b.expect(
        "GPUs reporting",
        "count(DCGM_FI_DEV_GPU_TEMP) or vector(0)",
        ctx.gpus_total,
        description=f"Expected {ctx.gpus_total} GPUs from the instance catalog.",
    )
    b.expect(
        "EFA devices reporting",
        "sum(fmcluster_efa_devices) or vector(0)",
        ctx.efa_devices_total,
        description=f"Expected {ctx.efa_devices_total} EFA devices from the instance catalog.",
    )
    b.value(
        "Average GPU utilization",
        "avg(DCGM_FI_DEV_GPU_UTIL)",
        "percent",
        description="Mean over all GPUs of DCGM_FI_DEV_GPU_UTIL.",
    )
    b.timeseries(
        "EFA throughput, whole cluster",
        "bps",
        [
            (f"8 * sum(rate({efa_metric('tx_bytes')}[{RATE}]))", "transmit"),
            (f"8 * sum(rate({efa_metric('rx_bytes')}[{RATE}]))", "receive"),
        ],
        description="Sum over every EFA device of every node (hardware counters).",
    )
    b.timeseries(
        "GPU utilization by group",
        "percent",
        [(f"avg({in_group('DCGM_FI_DEV_GPU_UTIL', g.name)})", g.name) for g in ctx.groups],
        max_value=100,
    )
    b.timeseries(
        "Slurm jobs", "short", [(slurm_jobs("RUNNING"), "running"), (slurm_jobs("PENDING"), "pending")]
    )
    b.timeseries(
        "Slurm nodes",
        "short",
        [(slurm_nodes(s), s) for s in ("allocated", "idle", "drain", "down")],
    )
    # Training throughput hook: jobs publish tokens/s with fmcluster-publish-throughput (docs/observability.md).
    b.timeseries(
        "Training throughput (tokens/s)",
        "short",
        [(training_tokens_per_second(), "{{job_id}}")],
        description="Published by training jobs through the node textfile collector "
        "(fmcluster-publish-throughput TOKENS_PER_SECOND); summed over the job's nodes.",
    )
    # fleet acceptance gate (docs/acceptance.md): its panels live in their own module
    acceptance_panels(b)
    return b.build()


def gpu(ctx: ObservabilityContext) -> dict[str, Any]:
    b = DashboardBuilder(
        f"{ctx.blueprint_name} / GPUs",
        _uid(ctx, "gpu"),
        "DCGM exporter: utilization, SM activity, memory, temperature, power, XID and ECC errors.",
    )
    b.prometheus_variable()
    for g in ctx.groups:
        b.row(f"{g.name}: {_group_line(g)}")
        b.expect(
            f"{g.name}: GPUs reporting",
            f"count({in_group('DCGM_FI_DEV_GPU_TEMP', g.name)}) or vector(0)",
            g.gpus_total,
            description=f"{g.count} nodes x {g.gpus_per_node} {g.gpu_model} = {g.gpus_total}.",
        )
        b.zero_is_good(
            f"{g.name}: GPUs with XID errors (5 min)",
            f"count(max by (instance, gpu) ({in_group('DCGM_EXP_XID_ERRORS_COUNT', g.name)}) > 0) or vector(0)",
            description="GPUs with an XID in dcgm-exporter's 5-minute window (the alerts separate application "
            "XIDs 13/31/43 from hardware ones; XID 79: fallen off the bus).",
        )
        b.zero_is_good(
            f"{g.name}: uncorrectable ECC errors (1h)",
            f"sum({in_group('increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h])', g.name)}) or vector(0)",
            description="Double-bit volatile ECC errors in the last hour.",
        )
        b.zero_is_good(
            f"{g.name}: row remap failures",
            f"sum({in_group('DCGM_FI_DEV_ROW_REMAP_FAILURE', g.name)}) or vector(0)",
            description="GPUs that ran out of spare memory rows.",
        )
        b.timeseries(
            f"{g.name}: GPU utilization",
            "percent",
            [(f"avg by (instance) ({in_group('DCGM_FI_DEV_GPU_UTIL', g.name)})", "{{instance}}")],
            max_value=100,
        )
        b.timeseries(
            f"{g.name}: SM activity",
            "percentunit",
            [(f"avg by (instance) ({in_group('DCGM_FI_PROF_SM_ACTIVE', g.name)})", "{{instance}}")],
            max_value=1,
            description="DCGM profiling field: share of cycles with at least one warp on an SM.",
        )
        b.timeseries(
            f"{g.name}: tensor core activity",
            "percentunit",
            [(f"avg by (instance) ({in_group('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', g.name)})", "{{instance}}")],
            max_value=1,
        )
        used = "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"
        b.timeseries(
            f"{g.name}: GPU memory used",
            "percentunit",
            [(f"max by (instance) ({in_group(f'({used})', g.name)})", "{{instance}}")],
            max_value=1,
            description=f"Busiest GPU per node, of {g.gpu_memory_gib} GiB per {g.gpu_model}.",
        )
        b.timeseries(
            f"{g.name}: GPU temperature (hottest per node)",
            "celsius",
            [(f"max by (instance) ({in_group('DCGM_FI_DEV_GPU_TEMP', g.name)})", "{{instance}}")],
        )
        b.timeseries(
            f"{g.name}: GPU power per node",
            "watt",
            [(f"sum by (instance) ({in_group('DCGM_FI_DEV_POWER_USAGE', g.name)})", "{{instance}}")],
        )
    return b.build()


def efa(ctx: ObservabilityContext) -> dict[str, Any]:
    b = DashboardBuilder(
        f"{ctx.blueprint_name} / EFA",
        _uid(ctx, "efa"),
        "EFA hardware counters (/sys/class/infiniband/*/ports/1/hw_counters) per node and device.",
    )
    b.prometheus_variable()
    tx, rx = efa_metric("tx_bytes"), efa_metric("rx_bytes")
    rd, wr = efa_metric("rdma_read_bytes"), efa_metric("rdma_write_bytes")
    rd_err = efa_metric("rdma_read_wr_err")
    for g in ctx.groups:
        if g.efa_devices_per_node == 0:
            continue
        line_rate = g.network_gbps_per_node * 1e9
        b.row(f"{g.name}: {_group_line(g)}")
        b.expect(
            f"{g.name}: EFA devices reporting",
            f"sum({in_group('fmcluster_efa_devices', g.name)}) or vector(0)",
            g.efa_devices_total,
            description=f"{g.count} nodes x {g.efa_devices_per_node} EFA devices = {g.efa_devices_total}.",
        )
        b.zero_is_good(
            f"{g.name}: nodes with fewer than {g.efa_devices_per_node} EFA devices",
            f"count(({in_group('fmcluster_efa_devices', g.name)}) < {g.efa_devices_per_node}) or vector(0)",
            description="A node with missing EFA devices slows every collective it joins.",
        )
        b.zero_is_good(
            f"{g.name}: RDMA read errors (1h)",
            f"sum({in_group(f'increase({rd_err}[1h])', g.name)}) or vector(0)",
            description="rdma_read_wr_err over the last hour, all devices.",
        )
        b.value(
            f"{g.name}: transmit now",
            f"8 * sum({in_group(f'rate({tx}[5m])', g.name)})",
            "bps",
            description=f"All nodes of the group; line rate {g.network_gbps_per_node} Gbps per node.",
        )
        for direction, metric in (("transmit", tx), ("receive", rx)):
            b.timeseries(
                f"{g.name}: {direction} per node",
                "bps",
                [(f"8 * sum by (instance) ({in_group(f'rate({metric}[{RATE}])', g.name)})", "{{instance}}")],
                max_value=line_rate,
                description=f"Line rate {g.network_gbps_per_node} Gbps per node.",
            )
        b.timeseries(
            f"{g.name}: transmit per device",
            "bps",
            [
                (
                    f"8 * sum by (instance, device) ({in_group(f'rate({tx}[{RATE}])', g.name)})",
                    "{{instance}} {{device}}",
                )
            ],
            description=f"{g.efa_devices_per_node} devices per node; an idle device while others carry "
            "traffic points at a NIC NCCL does not use.",
        )
        b.timeseries(
            f"{g.name}: RDMA read and write per node",
            "Bps",
            [
                (f"sum by (instance) ({in_group(f'rate({rd}[{RATE}])', g.name)})", "{{instance}} read"),
                (f"sum by (instance) ({in_group(f'rate({wr}[{RATE}])', g.name)})", "{{instance}} write"),
            ],
        )
        errors = (
            "rdma_read_wr_err",
            "rdma_write_wr_err",
            "rx_drops",
            "retrans_timeout_events",
            "unresponsive_remote_events",
        )
        b.timeseries(
            f"{g.name}: errors and drops per node",
            "short",
            [
                (
                    f"sum by (instance) ({in_group(f'rate({efa_metric(c)}[{RATE}])', g.name)})",
                    "{{instance}} " + c,
                )
                for c in errors
            ],
            description="Per-second rates of the EFA error counters.",
        )
    return b.build()


def _cw_query(ref: str, metric: str, *, hide: bool = False) -> cwq.CloudWatchMetricsQuery:
    return (
        cwq.CloudWatchMetricsQuery()
        .ref_id(ref)
        .id(ref.lower())
        .datasource(CLOUDWATCH)
        .query_mode(cwm.CloudWatchQueryMode.METRICS)
        .metric_query_type(cwm.MetricQueryType.SEARCH)
        .metric_editor_mode(cwm.MetricEditorMode.BUILDER)
        .region("default")
        .namespace("AWS/FSx")
        .metric_name(metric)
        .dimensions({"FileSystemId": "$filesystem_id"})
        .statistic("Sum")
        .period(str(FSX_PERIOD_S))
        .match_exact(True)
        .hide(hide)
    )


def _cw_math(ref: str, expression: str, label: str) -> cwq.CloudWatchMetricsQuery:
    return (
        cwq.CloudWatchMetricsQuery()
        .ref_id(ref)
        .id(ref.lower())
        .datasource(CLOUDWATCH)
        .query_mode(cwm.CloudWatchQueryMode.METRICS)
        .metric_query_type(cwm.MetricQueryType.SEARCH)
        .metric_editor_mode(cwm.MetricEditorMode.CODE)
        .expression(expression)
        .label(label)
        .region("default")
    )


def fsx(ctx: ObservabilityContext) -> dict[str, Any]:
    if ctx.lustre is None:
        raise ValueError("the blueprint has no FSx for Lustre file system")
    fs = ctx.lustre
    b = DashboardBuilder(
        f"{ctx.blueprint_name} / FSx for Lustre",
        _uid(ctx, "fsx"),
        f"FSx for Lustre on {fs.mount_point} from CloudWatch (AWS/FSx).",
    )
    b.dash.with_variable(db.DatasourceVariable("cloudwatch").label("CloudWatch").type("cloudwatch"))
    b.dash.with_variable(
        db.TextBoxVariable("filesystem_id")
        .label("File system id")
        .description("fs-... (output FileSystemId of the storage stack)")
    )
    baseline = fs.throughput_mbps * 1_000_000
    panel = (
        timeseries.Panel()
        .id(b._id())
        .title("Client throughput")
        .datasource(CLOUDWATCH)
        .unit("Bps")
        .span(12)
        .height(8)
        .min(0)
        .description(
            f"Baseline {fs.throughput_mbps} MB/s ({fs.storage_capacity_gib} GiB at the "
            "per-unit throughput of the blueprint); dashed line."
        )
        .thresholds(
            db.ThresholdsConfig()
            .mode(ThresholdsMode.ABSOLUTE)
            .steps([Threshold(value=None, color="green"), Threshold(value=float(baseline), color="orange")])
        )
        .thresholds_style(cb.GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.DASHED))
        .with_target(_cw_query("R", "DataReadBytes", hide=True))
        .with_target(_cw_query("W", "DataWriteBytes", hide=True))
        .with_target(_cw_math("A", f"r/{FSX_PERIOD_S}", "read"))
        .with_target(_cw_math("B", f"w/{FSX_PERIOD_S}", "write"))
    )
    b.dash.with_panel(panel)
    ops = (
        timeseries.Panel()
        .id(b._id())
        .title("Operations per second")
        .datasource(CLOUDWATCH)
        .unit("ops")
        .span(12)
        .height(8)
        .min(0)
        .with_target(_cw_query("R", "DataReadOperations", hide=True))
        .with_target(_cw_query("W", "DataWriteOperations", hide=True))
        .with_target(_cw_query("M", "MetadataOperations", hide=True))
        .with_target(_cw_math("A", f"r/{FSX_PERIOD_S}", "read"))
        .with_target(_cw_math("B", f"w/{FSX_PERIOD_S}", "write"))
        .with_target(_cw_math("C", f"m/{FSX_PERIOD_S}", "metadata"))
    )
    b.dash.with_panel(ops)
    free = (
        timeseries.Panel()
        .id(b._id())
        .title("Free data storage")
        .datasource(CLOUDWATCH)
        .unit("bytes")
        .span(12)
        .height(8)
        .min(0)
        .max(float(fs.storage_capacity_gib) * 2**30)
        .description(f"Of {fs.storage_capacity_gib} GiB.")
        .with_target(_cw_query("A", "FreeDataStorageCapacity"))
    )
    b.dash.with_panel(free)
    return b.build()


def slurm(ctx: ObservabilityContext) -> dict[str, Any]:
    b = DashboardBuilder(
        f"{ctx.blueprint_name} / Slurm",
        _uid(ctx, "slurm"),
        "prometheus-slurm-exporter on the head node: node states and the job queue.",
    )
    b.prometheus_variable()
    b.zero_is_good("Nodes down", slurm_nodes("down"), description="Nodes Slurm marked down or failed.")
    b.zero_is_good(
        "Nodes draining or drained", slurm_nodes("drain"), description="Nodes taken out of service."
    )
    b.value("Running jobs", slurm_jobs("RUNNING"), "short", description="squeue state RUNNING.")
    b.value("Pending jobs", slurm_jobs("PENDING"), "short", description="squeue state PENDING.")
    b.timeseries(
        "Nodes by state",
        "short",
        [(slurm_nodes(s), s) for s in SLURM_NODE_STATE_GROUPS],
        description=f"{ctx.nodes_total} compute nodes in the blueprint (sinfo states).",
    )
    b.timeseries(
        "Jobs by state",
        "short",
        [
            (slurm_jobs(s), s.lower())
            for s in ("RUNNING", "PENDING", "COMPLETING", "FAILED", "TIMEOUT", "NODE_FAIL")
        ],
    )
    return b.build()


def build_dashboards(ctx: ObservabilityContext) -> dict[str, dict[str, Any]]:
    """Dashboard name -> Grafana dashboard JSON model."""
    out = {"overview": overview(ctx), "gpu": gpu(ctx), "efa": efa(ctx), "slurm": slurm(ctx)}
    if ctx.lustre is not None:
        out["fsx"] = fsx(ctx)
    return out


def render_dashboards(ctx: ObservabilityContext) -> dict[str, str]:
    """File name -> JSON text (sorted keys: byte-identical output for the same blueprint)."""
    return {
        f"{name}.json": json.dumps(model, indent=2, sort_keys=True) + "\n"
        for name, model in build_dashboards(ctx).items()
    }
