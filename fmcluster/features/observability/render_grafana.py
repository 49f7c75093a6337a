"""Self-hosted Grafana: server settings and provisioning files (datasources, dashboard provider).

Grafana listens on 127.0.0.1 only; reach it with SSM port forwarding (docs/observability.md).
Provisioning file formats: https://grafana.com/docs/grafana/latest/administration/provisioning/.
"""

from __future__ import annotations

import yaml

from fmcluster.features.observability.pins import GRAFANA_PORT, PROMETHEUS_PORT
from fmcluster.features.observability.render_context import ObservabilityContext

DASHBOARDS_DIR = "/var/lib/grafana/dashboards/fmcluster"
PROMETHEUS_DATASOURCE_UID = "fmcluster-prometheus"
CLOUDWATCH_DATASOURCE_UID = "fmcluster-cloudwatch"


def grafana_ini() -> str:
    return f"""# fmcluster self-hosted Grafana. Rendered by fmcluster; do not edit by hand.
[server]
http_addr = 127.0.0.1
http_port = {GRAFANA_PORT}

[paths]
data = /var/lib/grafana
logs = /var/log/grafana
plugins = /var/lib/grafana/plugins
provisioning = /etc/grafana/provisioning

[analytics]
reporting_enabled = false
check_for_updates = false

[users]
allow_sign_up = false

[auth.anonymous]
enabled = false
"""


def prometheus_json_data(ctx: ObservabilityContext) -> dict[str, str]:
    """``jsonData`` of the Prometheus data source: ``timeInterval`` is the scrape interval, so $__rate_interval
    and the minimum step match it (https://grafana.com/docs/grafana/latest/datasources/prometheus/configure/,
    "Scrape interval ... timeInterval")."""
    return {"timeInterval": f"{ctx.scrape_interval_s}s"}


def datasources(ctx: ObservabilityContext) -> str:
    doc = {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "Prometheus",
                "type": "prometheus",
                "uid": PROMETHEUS_DATASOURCE_UID,
                "access": "proxy",
                "url": f"http://127.0.0.1:{PROMETHEUS_PORT}",
                "isDefault": True,
                "editable": False,
                "jsonData": prometheus_json_data(ctx),
            },
            {
                "name": "CloudWatch",
                "type": "cloudwatch",
                "uid": CLOUDWATCH_DATASOURCE_UID,
                "access": "proxy",
                "editable": False,
                "jsonData": {"authType": "default", "defaultRegion": ctx.region},
            },
        ],
    }
    return "# Rendered by fmcluster; do not edit by hand.\n" + yaml.safe_dump(doc, sort_keys=False)


def dashboard_provider() -> str:
    doc = {
        "apiVersion": 1,
        "providers": [
            {
                "name": "fmcluster",
                "folder": "fmcluster",
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "updateIntervalSeconds": 60,
                "options": {"path": DASHBOARDS_DIR},
            },
        ],
    }
    return "# Rendered by fmcluster; do not edit by hand.\n" + yaml.safe_dump(doc, sort_keys=False)
