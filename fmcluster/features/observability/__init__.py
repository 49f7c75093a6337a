"""Observability (the metrics layer): Prometheus (AMP or self-hosted) and Grafana, exporters, dashboards, alert
rules, their pins, the blueprint rules, the construct and stack, stack outputs and Grafana provisioning
(docs/observability.md).

Modules by role: ``pins`` (pinned releases and their sources), ``endpoints`` (stack output names, what
``fmcluster plan`` lists), ``render_*`` (the rendered files: :mod:`.render_files` for ``fmcluster render``), ``rules``
(blueprint rules), ``construct`` / ``stack`` (CDK), ``provision_grafana`` (``fmcluster grafana``).
"""

USES = ("capacity_window", "network")
