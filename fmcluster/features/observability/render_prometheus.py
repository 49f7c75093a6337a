"""The head-node Prometheus configuration (agent mode for AMP remote write, server mode when self-hosted).

Reference: https://prometheus.io/docs/prometheus/latest/configuration/configuration/ (ec2_sd_config,
file_sd_config, remote_write.sigv4, relabel_config); agent mode:
https://prometheus.io/docs/prometheus/latest/feature_flags/#prometheus-agent (no rule_files, no alerting);
AMP remote write endpoint ``<PrometheusEndpoint>api/v1/remote_write`` with SigV4 signing:
https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-ingest-metrics-remote-write.html.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from fmcluster.features.observability.pins import (
    ALERTMANAGER_PORT,
    DCGM_EXPORTER_PORT,
    NODE_EXPORTER_PORT,
    PROMETHEUS_PORT,
    SLURM_EXPORTER_PORT,
)
from fmcluster.features.observability.render_context import REMOTE_WRITE_PLACEHOLDER, ObservabilityContext
from fmcluster.resolved import BLUEPRINT_TAG

RULES_DIR = "rules"
FILE_SD_DIR = "file_sd"
#: rivosinc/prometheus-slurm-exporter README (v1.7.0): scrape_interval "should be at least 2x POLL_LIMIT"
#: (-slurm.poll-limit, default 10 s); sinfo/squeue load slurmctld, so never faster than 30 s.
SLURM_MIN_SCRAPE_INTERVAL_S = 30
#: Relabel rule that sets ``instance`` to the host without the port, so node_exporter (:9100) and
#: DCGM exporter (:9400) series of one node join ``on(instance)``.
_INSTANCE_FROM_ADDRESS = {
    "source_labels": ["__address__"],
    "regex": "([^:]+)(?::\\d+)?",
    "target_label": "instance",
    "replacement": "$1",
}


def remote_write_url_placeholder(region: str) -> str:
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{REMOTE_WRITE_PLACEHOLDER}/api/v1/remote_write"


def _ec2_job(
    ctx: ObservabilityContext, job: str, port: int, instance_types: tuple[str, ...] | None
) -> dict[str, Any]:
    relabel: list[dict[str, Any]] = [
        {"source_labels": ["__meta_ec2_private_ip"], "target_label": "instance"},
        {"source_labels": ["__meta_ec2_instance_id"], "target_label": "instance_id"},
    ]
    if instance_types is not None:
        relabel.insert(
            0,
            {
                "source_labels": ["__meta_ec2_instance_type"],
                "action": "keep",
                "regex": "|".join(re.escape(t) for t in instance_types),
            },
        )
    return {
        "job_name": job,
        "ec2_sd_configs": [
            {
                "region": ctx.region,
                "port": port,
                "refresh_interval": "60s",
                "filters": [
                    {"name": f"tag:{BLUEPRINT_TAG}", "values": [ctx.blueprint_name]},
                    {"name": "instance-state-name", "values": ["running"]},
                ],
            }
        ],
        "relabel_configs": relabel,
    }


def _file_sd_job(job: str, file_name: str) -> dict[str, Any]:
    return {
        "job_name": job,
        "file_sd_configs": [{"files": [f"{FILE_SD_DIR}/{file_name}"], "refresh_interval": "1m"}],
        "relabel_configs": [dict(_INSTANCE_FROM_ADDRESS)],
    }


def scrape_jobs(ctx: ObservabilityContext) -> tuple[str, ...]:
    """Names of the scrape jobs :func:`prometheus_config` writes (the dead-man's switch watches each)."""
    return tuple(j["job_name"] for j in prometheus_config(ctx)["scrape_configs"])


def prometheus_config(ctx: ObservabilityContext) -> dict[str, Any]:
    """The configuration as a mapping (see :func:`render_prometheus_config`)."""
    if ctx.scrape_timeout_s > ctx.scrape_interval_s:  # R-OBS-1 rejects this at load; keep the renderer honest
        raise ValueError(
            f"scrape_timeout {ctx.scrape_timeout_s}s exceeds scrape_interval {ctx.scrape_interval_s}s"
        )
    agent = ctx.metrics == "managed"
    glob: dict[str, Any] = {
        "scrape_interval": f"{ctx.scrape_interval_s}s",
        "scrape_timeout": f"{ctx.scrape_timeout_s}s",
        "external_labels": {"cluster": ctx.blueprint_name},
    }
    if not agent:
        glob["evaluation_interval"] = f"{ctx.scrape_interval_s}s"
    jobs: list[dict[str, Any]] = [
        {"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{PROMETHEUS_PORT}"]}]},
    ]
    gpus = bool(ctx.gpu_instance_types)  # no dcgm job (and no absent() alert for it) without GPU groups
    if ctx.discovery == "ec2":
        jobs.append(_ec2_job(ctx, "node", NODE_EXPORTER_PORT, None))
        if gpus:
            jobs.append(_ec2_job(ctx, "dcgm", DCGM_EXPORTER_PORT, ctx.gpu_instance_types))
    else:
        jobs.append(_file_sd_job("node", "node.json"))
        if gpus:
            jobs.append(_file_sd_job("dcgm", "dcgm.json"))
        jobs += [
            {
                "job_name": "head-node",
                "static_configs": [{"targets": [f"127.0.0.1:{NODE_EXPORTER_PORT}"]}],
                "relabel_configs": [dict(_INSTANCE_FROM_ADDRESS)],
            },
        ]
    slurm_interval = max(ctx.scrape_interval_s, SLURM_MIN_SCRAPE_INTERVAL_S)
    jobs.append(
        {
            "job_name": "slurm",
            "scrape_interval": f"{slurm_interval}s",
            "scrape_timeout": f"{ctx.scrape_timeout_s}s",
            "static_configs": [{"targets": [f"127.0.0.1:{SLURM_EXPORTER_PORT}"]}],
        }
    )
    config: dict[str, Any] = {"global": glob}
    if not agent:
        config["rule_files"] = [f"{RULES_DIR}/*.yml"]
        # Self-hosted: the head node's Alertmanager routes to SNS (render_alertmanager.py).
        config["alerting"] = {
            "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{ALERTMANAGER_PORT}"]}]}]
        }
    config["scrape_configs"] = jobs
    if agent:
        config["remote_write"] = [
            {
                "url": remote_write_url_placeholder(ctx.region),
                "sigv4": {"region": ctx.region},
                "queue_config": {"max_samples_per_send": 1000, "max_shards": 200, "capacity": 2500},
            }
        ]
    return config


def render_prometheus_config(ctx: ObservabilityContext) -> str:
    """``prometheus.yml`` for the head node. Relative paths (rules/, file_sd/) resolve against its folder."""
    mode = (
        "agent, remote write to Amazon Managed Service for Prometheus"
        if ctx.metrics == "managed"
        else "server, local TSDB and alert rules"
    )
    header = (
        f"# fmcluster Prometheus for {ctx.blueprint_name} ({mode}); node discovery: {ctx.discovery}.\n"
        "# Rendered by fmcluster; do not edit by hand.\n"
    )
    return header + yaml.safe_dump(prometheus_config(ctx), sort_keys=False, default_flow_style=False)
