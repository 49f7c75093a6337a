"""The metrics layer's rendered files: Prometheus config, alert rules, dashboards, exporter scripts.

Public API:
- :func:`render_observability_files` - relative path -> text, for ``fmcluster render``;
- :func:`render_exporter_script` with :func:`exporter_context` - the node install script per role;
- :func:`observability_endpoints` - what to list in ``fmcluster plan``.
"""

from __future__ import annotations

from fmcluster.resolved import ResolvedCluster
from fmcluster.templates.observability.context import ObservabilityContext, observability_context
from fmcluster.templates.observability.endpoints import Endpoint, observability_endpoints
from fmcluster.templates.observability.exporters import (
    ExporterContext,
    exporter_context,
    render_exporter_script,
)
from fmcluster.templates.observability.grafana import dashboard_provider, datasources, grafana_ini
from fmcluster.templates.observability.metrics import dcgm_counters_csv
from fmcluster.templates.observability.prometheus import render_prometheus_config
from fmcluster.templates.observability.rules import render_alert_rules

__all__ = [
    "Endpoint",
    "ExporterContext",
    "ObservabilityContext",
    "exporter_context",
    "observability_context",
    "observability_endpoints",
    "render_alert_rules",
    "render_exporter_script",
    "render_observability_files",
]

ROOT = "observability"


def alert_rules_file(blueprint_name: str) -> str:
    return f"{ROOT}/rules/{blueprint_name}-alerts.yml"


def render_observability_files(rc: ResolvedCluster) -> dict[str, str]:
    """Every observability file of ``rc`` as relative path -> text; empty when ``metrics`` is ``none``.

    The tree checks as is: ``promtool check config observability/prometheus.yml`` (rule files and
    file_sd paths are relative to it) and ``promtool check rules observability/rules/*.yml``.
    """
    if not rc.blueprint.observability.enabled:
        return {}
    ctx = observability_context(rc)
    files = {
        f"{ROOT}/prometheus.yml": render_prometheus_config(ctx),
        alert_rules_file(rc.name): render_alert_rules(ctx),
        f"{ROOT}/dcgm-counters.csv": dcgm_counters_csv(),
        f"{ROOT}/exporters/head.sh": render_exporter_script(exporter_context(rc, role="head")),
    }
    for g in rc.groups:
        files[f"{ROOT}/exporters/compute-{g.name}.sh"] = render_exporter_script(
            exporter_context(rc, role="compute", group=g)
        )
    from fmcluster.templates.observability.dashboards import render_dashboards  # grafana-foundation-sdk: only when used

    files.update({f"{ROOT}/dashboards/{name}": text for name, text in render_dashboards(ctx).items()})
    if ctx.metrics == "self_hosted":
        files[f"{ROOT}/grafana/grafana.ini"] = grafana_ini()
        files[f"{ROOT}/grafana/provisioning/datasources/fmcluster.yaml"] = datasources(ctx)
        files[f"{ROOT}/grafana/provisioning/dashboards/fmcluster.yaml"] = dashboard_provider()
    return files
