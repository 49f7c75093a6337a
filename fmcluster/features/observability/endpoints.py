"""Where the metrics layer can be reached, for ``fmcluster plan`` and the docs.

Deploy-time values (AMP and Grafana URLs) are stack outputs of ``<name>-observability``; this module says
which output holds what, so it needs no AWS call.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fmcluster.features.observability.pins import GRAFANA_PORT, PROMETHEUS_PORT
from fmcluster.resolved import ResolvedCluster

#: Output names of the observability stack (fmcluster.features.observability.stack).
OUTPUT_REMOTE_WRITE_URL = "RemoteWriteUrl"
OUTPUT_QUERY_URL = "QueryUrl"
OUTPUT_GRAFANA_URL = "GrafanaUrl"
OUTPUT_NODE_POLICY_ARN = "NodePolicyArn"
OUTPUT_SSM_PARAMETER = "ParameterName"
OUTPUT_ALERT_TOPIC_ARN = "AlertTopicArn"
#: CloudWatch Logs group of the AMP workspace's alert-manager and ruler logs (managed only).
OUTPUT_AMP_LOG_GROUP = "AmpLogGroup"
#: The line the head-node exporter script logs when it is done (also in /var/lib/fmcluster/monitoring-state).
MONITORING_STATE_LOG_PREFIX = "fmcluster-monitoring-state:"
MONITORING_STATE_FILE = "/var/lib/fmcluster/monitoring-state"

# ---- the monitoring host's heartbeat (self-hosted: Prometheus and Alertmanager run on the Slurm admin node) ----
# One mechanism for every orchestrator (docs/decisions.md "XX"): a systemd timer on that node publishes one data point
# a minute when Prometheus and Alertmanager are ready and the Watchdog fires; a CloudWatch alarm, outside the node,
# treats missing data as breaching, so a dead node, a dead Prometheus or a broken rule evaluation alarms alike.
#: CloudWatch namespace of the heartbeat (also the ``cloudwatch:namespace`` condition of the node's permission).
HEARTBEAT_NAMESPACE = "fmcluster"
#: The heartbeat's metric name; value 1 (unit Count) per healthy check.
HEARTBEAT_METRIC = "MonitoringHeartbeat"
#: The heartbeat's one dimension; its value is the blueprint name.
HEARTBEAT_DIMENSION = "ClusterName"
#: Seconds between two checks (the timer); one data point per one-minute alarm period.
HEARTBEAT_INTERVAL_S = 60
#: The alarm's period in seconds: standard-resolution custom metrics are stored per minute, and PutMetricAlarm accepts
#: 10, 20, 30 or a multiple of 60, where 10/20/30 only suit high-resolution metrics
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html, ``Period``).
HEARTBEAT_ALARM_PERIOD_S = 60
#: Consecutive missing (or zero) one-minute periods before the alarm fires: one late timer run is not an alarm, five
#: minutes of silence is. Period x periods = 300 s, within PutMetricAlarm's one-day limit for periods under an hour.
HEARTBEAT_ALARM_PERIODS = 5


def heartbeat_alarm_name(cluster_name: str) -> str:
    """``fmcluster-<name>-monitoring-heartbeat``: the dead-man alarm's name, also in the alert topic's policy."""
    return f"fmcluster-{cluster_name}-monitoring-heartbeat"


@dataclass(frozen=True)
class Endpoint:
    name: str
    address: str
    access: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def port_forward_command(port: int, region: str, target: str = "<head-node-instance-id>") -> str:
    return (
        f"aws ssm start-session --region {region} --target {target} "
        f"--document-name AWS-StartPortForwardingSession --parameters portNumber={port},localPortNumber={port}"
    )


def heartbeat_endpoint(cluster_name: str, head: str) -> Endpoint:
    """What watches the node that runs Prometheus and Alertmanager (self-hosted), for ``fmcluster plan``."""
    minutes = HEARTBEAT_ALARM_PERIODS * HEARTBEAT_ALARM_PERIOD_S // 60
    return Endpoint(
        "Monitoring host watch",
        f"CloudWatch alarm {heartbeat_alarm_name(cluster_name)} on {HEARTBEAT_NAMESPACE} {HEARTBEAT_METRIC} "
        f"({HEARTBEAT_DIMENSION}={cluster_name})",
        f"the {head} publishes a heartbeat every {HEARTBEAT_INTERVAL_S} s while Prometheus and Alertmanager are ready "
        f"and the Watchdog fires (fmcluster-heartbeat.timer); {minutes} min without one (node, Prometheus or "
        "Alertmanager down) mails ALARM to the alert topic, and OK when it resumes",
    )


def observability_endpoints(rc: ResolvedCluster) -> list[Endpoint]:
    """The observability endpoints of ``rc`` (empty when ``observability.metrics`` is ``none``): the stack's
    outputs (``rc.stacks.observability``), the port-forwarded self-hosted UIs on the node that runs
    Prometheus (``rc.profile.head_node_label``) and the SSM parameter nodes read (``rc.observability_parameter``).
    Where the profile has no head node (HyperPod EKS) no line names one: the HyperPod observability add-on writes to the
    workspace, and the SSM parameter is described as being for the user's own collector."""
    bp = rc.blueprint
    o = bp.observability
    stack = rc.stacks.observability
    if stack is None:  # observability.metrics: none
        return []
    head = rc.profile.head_node_label
    out: list[Endpoint] = [
        Endpoint(
            "Alerts",
            f"SNS topic in stack output {stack}.{OUTPUT_ALERT_TOPIC_ARN}",
            (f"email {o.alert_email} (confirm the subscription email)" if o.alert_email else
             "subscribe a person to the topic" if not o.alert_topic_arn else "your topic's subscribers")
            + ("; routed by the AMP workspace's alert manager" if o.metrics == "managed" else
               f"; routed by Alertmanager on the {head}")
            + "; a Watchdog alert arrives daily while the pipeline works",
        )
    ]
    if head is not None:
        out.append(
            Endpoint(
                "Monitoring state",
                f"{MONITORING_STATE_FILE} on the {head}",
                f"one line '{MONITORING_STATE_LOG_PREFIX} prometheus=ok ...', also printed as the exporter "
                "script's last log line (journalctl -t fmcluster-exporters)",
            )
        )
    if o.metrics == "self_hosted" and head is not None:
        out.append(heartbeat_endpoint(rc.name, head))
    if o.metrics == "managed":
        out += [
            Endpoint(
                "AMP workspace remote write",
                f"stack output {stack}.{OUTPUT_REMOTE_WRITE_URL} (known at deploy)",
                (f"SigV4 from the Prometheus agent on the {head}" if head else
                 "SigV4 from the HyperPod observability add-on's collector (its Pod Identity role in "
                 f"{rc.stacks.addons or 'the add-ons stack'})")
                + (f"; needs the managed policy in output {stack}.{OUTPUT_NODE_POLICY_ARN}" if head else ""),
            ),
            Endpoint(
                "AMP workspace query",
                f"stack output {stack}.{OUTPUT_QUERY_URL} (known at deploy)",
                "SigV4 (aps:QueryMetrics), e.g. the Grafana workspace's data source",
            ),
            Endpoint(
                "Grafana workspace",
                f"stack output {stack}.{OUTPUT_GRAFANA_URL} (known at deploy)",
                f"{o.grafana_authentication} sign-in; assign users in the Amazon Managed Grafana console",
            ),
        ]
    elif head is not None:  # self-hosted Prometheus and Grafana run on the head node; none without one
        out += [
            Endpoint(
                "Grafana (self-hosted)",
                f"http://localhost:{GRAFANA_PORT}",
                f"{port_forward_command(GRAFANA_PORT, bp.region, rc.profile.ssm_target)}; user admin, password in "
                f"/etc/grafana/admin-password on the {head}",
            ),
            Endpoint(
                "Prometheus (self-hosted)",
                f"http://localhost:{PROMETHEUS_PORT}",
                port_forward_command(PROMETHEUS_PORT, bp.region, rc.profile.ssm_target),
            ),
        ]
    out.append(
        Endpoint(
            "Node settings (SSM parameter)",
            rc.observability_parameter,
            f"read at boot by the {head} (mode, region, remote-write URL)" if head else
            "mode, region, remote-write URL for your own collector (no node of fmcluster's reads it on HyperPod EKS)",
        )
    )
    return out
