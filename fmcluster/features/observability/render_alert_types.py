"""The alert rule type the alert rules (:mod:`.render_alert_rules`) and the acceptance gate's rules
(:mod:`.render_acceptance`) share, in Prometheus rule-file format."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AlertRule:
    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str

    def as_dict(self, cluster: str | None = None) -> dict[str, object]:
        """The rule as a rule-file mapping. ``cluster`` adds a static ``cluster`` label ("Labels to add or
        overwrite for each alert", https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/):
        an expression such as ``vector(1)`` or ``absent()`` has no series labels, and AMP evaluates rules in the
        workspace, where the agent's external labels do not reach them, so the mail subject would read ``()``."""
        d: dict[str, object] = {"alert": self.alert, "expr": self.expr}
        if self.for_ != "0m":
            d["for"] = self.for_
        d["labels"] = {"severity": self.severity} | ({"cluster": cluster} if cluster else {})
        d["annotations"] = {"summary": self.summary, "description": self.description}
        return d
