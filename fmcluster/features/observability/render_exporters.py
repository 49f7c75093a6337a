"""Node-side install script for the metrics layer: one self-contained bash script per node role.

- ``compute`` nodes: node_exporter (all interfaces, port 9100) with the fmcluster textfile collector (node
  facts and EFA hardware counters, every 15 s) and, on GPU nodes, the DCGM exporter (port 9400) from its package file
  in the cluster's mirror, using the image's DCGM 4.
- ``head`` node (ParallelCluster head node, HyperPod controller, PCS login node): Prometheus first
  (127.0.0.1:9090; agent + AMP remote write when managed, server with the alert rules when self-hosted), on
  ParallelCluster after allowing its service users through the IMDS lockdown; Alertmanager to SNS
  (127.0.0.1:9093) and the heartbeat timer (``fmcluster-heartbeat``: a CloudWatch data point a minute while both
  are ready and the Watchdog fires) when self-hosted; then node_exporter, the Slurm-based target file when discovery is
  ``slurm``, the Slurm exporter (127.0.0.1:9092) and Grafana (127.0.0.1:3000) when self-hosted.

Every step is optional: a failed step is a warning, the script exits 0 and reports the state it reached.

Contract: :func:`render_exporter_script` is pure (no AWS calls); the script reads the SSM parameter
``/fmcluster/<name>/observability`` at boot (head node) for the AMP remote-write URL (managed) or the alert
topic (self-hosted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fmcluster.features.observability import pins
from fmcluster.features.observability.endpoints import (
    HEARTBEAT_DIMENSION,
    HEARTBEAT_INTERVAL_S,
    HEARTBEAT_METRIC,
    HEARTBEAT_NAMESPACE,
    MONITORING_STATE_FILE,
    MONITORING_STATE_LOG_PREFIX,
    heartbeat_alarm_name,
)
from fmcluster.features.observability.plan_mirror import dcgm_exporter_mirror_objects
from fmcluster.features.observability.render_alert_rules import WATCHDOG_ALERT, render_alert_rules
from fmcluster.features.observability.render_alertmanager import TOPIC_PLACEHOLDER, render_alertmanager_yml
from fmcluster.features.observability.render_context import (
    REMOTE_WRITE_PLACEHOLDER,
    ObservabilityContext,
    observability_context,
)
from fmcluster.features.observability.render_grafana import (
    DASHBOARDS_DIR,
    dashboard_provider,
    datasources,
    grafana_ini,
)
from fmcluster.features.observability.render_metrics import EFA_COUNTERS, THROUGHPUT_STALE_S, dcgm_counters_csv
from fmcluster.features.observability.render_prometheus import (
    remote_write_url_placeholder,
    render_prometheus_config,
)
from fmcluster.resolved import NODE_DIR, ResolvedCluster, ResolvedGroup
from fmcluster.resolved.mirror import mirror_bucket_suffix, mirror_key
from fmcluster.templates.render import render

Role = Literal["compute", "head"]
HEAD_GROUP = "head"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile"
NODE_FACTS_INTERVAL_S = 15
SLURM_SD_INTERVAL_S = 60
DCGM_COUNTERS_PATH = "/etc/dcgm-exporter/fmcluster-counters.csv"
#: ParallelCluster's IMDS access script on head and login nodes: cookbook attribute scripts_dir =
#: "#{base_dir}/scripts" (cookbooks/aws-parallelcluster-shared/attributes/cluster.rb) + "/imds/imds-access.sh"
#: (cookbooks/aws-parallelcluster-environment/recipes/config/imds.rb).
IMDS_ACCESS_SCRIPT = "/opt/parallelcluster/scripts/imds/imds-access.sh"


def imds_users(metrics: str) -> tuple[str, ...]:
    """Service users on the head node that need instance credentials: Prometheus (EC2 discovery, SigV4
    remote write), and when self-hosted Alertmanager (SNS) and Grafana (CloudWatch data source)."""
    return ("prometheus",) if metrics == "managed" else ("prometheus", "alertmanager", "grafana")


@dataclass(frozen=True)
class NodeFile:
    """A file the script writes verbatim (quoted heredoc, no shell expansion)."""

    path: str
    content: str
    mode: str = "0644"


@dataclass(frozen=True)
class ExporterContext:
    """Everything the exporter script needs for one node role. Expected counts come from the resolved
    group (0 on the head node)."""

    blueprint_name: str
    region: str
    orchestrator: str
    role: Role
    metrics: str
    discovery: str
    group_name: str
    instance_type: str
    gpus_expected: int
    efa_devices_expected: int
    ssm_parameter: str
    files: tuple[NodeFile, ...] = field(default_factory=tuple)
    #: The cluster's Slurm command directory (``OrchestratorProfile.slurm_bin_dir``), "" when unknown.
    slurm_bin_dir: str = ""
    #: The unit that restores the head node's IMDS lockdown at boot (``OrchestratorProfile.imds_lockdown_service``),
    #: "" when the orchestrator locks nothing down.
    imds_lockdown_service: str = ""
    #: Compute GPU nodes: the mirror keys of the dcgm-exporter package file(s) for the group's OS and architecture
    #: (:func:`fmcluster.features.observability.plan_mirror.dcgm_exporter_mirror_objects`), in the pin's order.
    dcgm_exporter_keys: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "blueprint_name": self.blueprint_name,
            "region": self.region,
            "orchestrator": self.orchestrator,
            "role": self.role,
            "metrics": self.metrics,
            "discovery": self.discovery,
            "group_name": self.group_name,
            "instance_type": self.instance_type,
            "gpus_expected": self.gpus_expected,
            "efa_devices_expected": self.efa_devices_expected,
            "ssm_parameter": self.ssm_parameter,
            "slurm_bin_dir": self.slurm_bin_dir,
            "imds_lockdown_service": self.imds_lockdown_service,
            "dcgm_exporter_keys": list(self.dcgm_exporter_keys),
            "files": [
                {"path": f.path, "content": f.content, "mode": f.mode, "delimiter": _delimiter(f)}
                for f in self.files
            ],
        }


def _delimiter(f: NodeFile) -> str:
    if not f.content.endswith("\n"):
        raise ValueError(f"content of {f.path} must end with a newline (it is written with a heredoc)")
    tag = "FMCLUSTER_" + "".join(c if c.isalnum() else "_" for c in f.path.upper()).strip("_")
    if tag in f.content:  # cannot happen with rendered configs; refuse rather than write a broken script
        raise ValueError(f"heredoc delimiter {tag} occurs in the content of {f.path}")
    return tag


def head_files(ctx: ObservabilityContext) -> tuple[NodeFile, ...]:
    """Configuration files of the head node: Prometheus (+ rules when self-hosted), Grafana when self-hosted."""
    files = [NodeFile("/etc/prometheus/prometheus.yml", render_prometheus_config(ctx))]
    if ctx.metrics == "self_hosted":
        files.append(
            NodeFile(f"/etc/prometheus/rules/{ctx.blueprint_name}-alerts.yml", render_alert_rules(ctx))
        )
        files.append(
            NodeFile("/etc/alertmanager/alertmanager.yml", render_alertmanager_yml(TOPIC_PLACEHOLDER, ctx.region))
        )
        files += [
            NodeFile("/etc/grafana/grafana.ini", grafana_ini()),
            NodeFile("/etc/grafana/provisioning/datasources/fmcluster.yaml", datasources(ctx)),
            NodeFile("/etc/grafana/provisioning/dashboards/fmcluster.yaml", dashboard_provider()),
        ]
        from fmcluster.features.observability.render_dashboards import render_dashboards  # grafana-foundation-sdk: only when used

        files += [NodeFile(f"{DASHBOARDS_DIR}/{name}", text) for name, text in render_dashboards(ctx).items()]
    return tuple(files)


def exporter_context(rc: ResolvedCluster, *, role: Role, group: ResolvedGroup | None = None) -> ExporterContext:
    """Context for a compute group's nodes (``role="compute"``, ``group`` required) or the head node.
    Raises ValueError when metrics are off (``observability.metrics: none``) or ``group`` is missing."""
    if role == "compute" and group is None:
        raise ValueError("role 'compute' needs the compute group")
    octx = observability_context(rc)
    node = group if role == "compute" else None
    return ExporterContext(
        blueprint_name=octx.blueprint_name,
        region=octx.region,
        orchestrator=octx.orchestrator,
        role=role,
        metrics=octx.metrics,
        discovery=octx.discovery,
        group_name=node.name if node else HEAD_GROUP,
        instance_type=node.instance.name if node else "",
        gpus_expected=node.instance.gpu.count if node else 0,
        efa_devices_expected=node.efa_devices if node else 0,
        ssm_parameter=octx.ssm_parameter,
        files=() if node else head_files(octx),
        slurm_bin_dir=rc.profile.slurm_bin_dir or "",
        imds_lockdown_service=rc.profile.imds_lockdown_service or "",
        dcgm_exporter_keys=tuple(o.key for o in dcgm_exporter_mirror_objects(rc, node)) if node else (),
    )


def mirror_keys() -> dict[str, str]:
    """The mirror key of each archive the script installs, with ``${FMC_ARCH}`` (the script's own architecture) in
    place of the architecture: the same keys :mod:`fmcluster.features.observability.plan_mirror` has copied."""
    keys = {a.name: mirror_key(a.name, a.url_for("${FMC_ARCH}"))
            for a in (pins.PROMETHEUS, pins.NODE_EXPORTER, pins.ALERTMANAGER, pins.GRAFANA)}
    se = pins.SLURM_EXPORTER
    return {**keys, "slurm_exporter": mirror_key(se.name, se.url_for("${FMC_ARCH}"))}


def _common(ctx: ExporterContext) -> dict[str, Any]:
    return {
        **ctx.as_dict(),
        "pins": pins,
        "efa_counters": EFA_COUNTERS,
        "textfile_dir": TEXTFILE_DIR,
        "work_dir": f"{NODE_DIR}/observability",
        "node_facts_interval_s": NODE_FACTS_INTERVAL_S,
        "slurm_sd_interval_s": SLURM_SD_INTERVAL_S,
        "dcgm_counters_path": DCGM_COUNTERS_PATH,
        "dcgm_counters_csv": dcgm_counters_csv(),
        "remote_write_placeholder": remote_write_url_placeholder(ctx.region),
        "remote_write_token": REMOTE_WRITE_PLACEHOLDER,
        "topic_placeholder": TOPIC_PLACEHOLDER,
        "state_prefix": MONITORING_STATE_LOG_PREFIX,
        "state_file": MONITORING_STATE_FILE,
        "imds_access_script": IMDS_ACCESS_SCRIPT,
        "imds_users": imds_users(ctx.metrics),
        "stale_s": THROUGHPUT_STALE_S,
        "heartbeat_namespace": HEARTBEAT_NAMESPACE,
        "heartbeat_metric": HEARTBEAT_METRIC,
        "heartbeat_dimension": HEARTBEAT_DIMENSION,
        "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
        "heartbeat_alarm": heartbeat_alarm_name(ctx.blueprint_name),
        "watchdog_alert": WATCHDOG_ALERT,
        # the cluster's mirror (fmcluster/resolved/mirror.py): every archive is read from S3, never from the internet
        "mirror_bucket_suffix": mirror_bucket_suffix(ctx.blueprint_name, ctx.region),
        "mirror_keys": mirror_keys(),
    }


def render_node_facts_script(ctx: ExporterContext) -> str:
    """The textfile collector (node facts + EFA hardware counters) on its own, for tests and review."""
    return render("observability/node_facts.sh.j2", _common(ctx))


def render_slurm_sd_script(ctx: ExporterContext) -> str:
    """Writes Prometheus file_sd targets from Slurm's node addresses (discovery ``slurm``)."""
    return render("observability/slurm_sd.sh.j2", _common(ctx))


def render_throughput_script(ctx: ExporterContext) -> str:
    """``fmcluster-publish-throughput``: a job writes its tokens/s into the textfile collector directory."""
    return render("observability/throughput.sh.j2", _common(ctx))


def render_heartbeat_script(ctx: ExporterContext) -> str:
    """``fmcluster-heartbeat`` (self-hosted metrics, on the node that runs Prometheus): checks that Prometheus and
    Alertmanager answer ``/-/ready`` and that the Watchdog fires, then publishes one data point with
    ``aws cloudwatch put-metric-data`` (:data:`HEARTBEAT_NAMESPACE` :data:`HEARTBEAT_METRIC`,
    :data:`HEARTBEAT_DIMENSION` = the blueprint name, value 1, Count); exit 0 sent, 1 not sent (the reason logged)."""
    return render("observability/heartbeat.sh.j2", _common(ctx))


def render_exporter_script(ctx: ExporterContext) -> str:
    """The self-contained install script for one node role (bash, shellcheck-clean, idempotent). It always
    exits 0 and reports the state it reached (``MONITORING_STATE_LOG_PREFIX`` line, ``MONITORING_STATE_FILE``)."""
    values: Mapping[str, Any] = {
        **_common(ctx),
        "node_facts_script": render_node_facts_script(ctx),
        "slurm_sd_script": render_slurm_sd_script(ctx),
        "throughput_script": render_throughput_script(ctx),
        "heartbeat_script": render_heartbeat_script(ctx) if ctx.role == "head" and ctx.metrics == "self_hosted" else "",
    }
    return render("observability/exporters.sh.j2", values)
