"""Every rendered file of the metrics layer, by relative path, for ``fmcluster render``: Prometheus config, alert
rules, dashboards, exporter scripts and (self-hosted) Grafana provisioning."""

from __future__ import annotations

from fmcluster.features.observability.render_alert_rules import render_alert_rules
from fmcluster.features.observability.render_context import observability_context
from fmcluster.features.observability.render_exporters import (
    exporter_context,
    render_exporter_script,
    render_heartbeat_script,
)
from fmcluster.features.observability.render_grafana import dashboard_provider, datasources, grafana_ini
from fmcluster.features.observability.render_metrics import dcgm_counters_csv
from fmcluster.features.observability.render_prometheus import render_prometheus_config
from fmcluster.resolved import ResolvedCluster

ROOT = "observability"


def alert_rules_file(blueprint_name: str) -> str:
    return f"{ROOT}/rules/{blueprint_name}-alerts.yml"


def render_observability_files(rc: ResolvedCluster) -> dict[str, str]:
    """Every observability file of ``rc`` as relative path -> text; empty when ``metrics`` is ``none``, only the alert
    rules where the HyperPod observability add-on collects (``ObservabilityContext.collector`` ``eks_addon``).

    The tree checks as is: ``promtool check config observability/prometheus.yml`` (rule files and
    file_sd paths are relative to it) and ``promtool check rules observability/rules/*.yml``.
    """
    if not rc.blueprint.observability.enabled:
        return {}
    ctx = observability_context(rc)
    if ctx.collector != "head_node":
        # The HyperPod observability add-on collects (HyperPod EKS): no Prometheus, exporter or dashboard of
        # fmcluster's runs; only the rules stored in the workspace are fmcluster's.
        return {alert_rules_file(rc.name): render_alert_rules(ctx)}
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
    from fmcluster.features.observability.render_dashboards import render_dashboards  # grafana-foundation-sdk: only when used

    files.update({f"{ROOT}/dashboards/{name}": text for name, text in render_dashboards(ctx).items()})
    if ctx.metrics == "self_hosted":
        files[f"{ROOT}/heartbeat.sh"] = render_heartbeat_script(exporter_context(rc, role="head"))
        files[f"{ROOT}/grafana/grafana.ini"] = grafana_ini()
        files[f"{ROOT}/grafana/provisioning/datasources/fmcluster.yaml"] = datasources(ctx)
        files[f"{ROOT}/grafana/provisioning/dashboards/fmcluster.yaml"] = dashboard_provider()
    return files
