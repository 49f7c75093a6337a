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

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"alert": self.alert, "expr": self.expr}
        if self.for_ != "0m":
            d["for"] = self.for_
        d["labels"] = {"severity": self.severity}
        d["annotations"] = {"summary": self.summary, "description": self.description}
        return d
