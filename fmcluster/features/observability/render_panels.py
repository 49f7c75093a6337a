"""The dashboard builder the dashboards (:mod:`.render_dashboards`) and the acceptance gate's panels
(:mod:`.render_acceptance`) share: panels and queries numbered so the JSON is stable (grafana-foundation-sdk)."""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus as pq
from grafana_foundation_sdk.builders import stat, text, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, Threshold, ThresholdsMode
from grafana_foundation_sdk.models.text import TextMode

PROM = DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["fmcluster"]


class DashboardBuilder:
    """Numbers panels and their queries so the JSON is stable and every target has a refId."""

    def __init__(self, title: str, uid: str, description: str) -> None:
        self.dash = (
            db.Dashboard(title)
            .uid(uid)
            .description(description)
            .tags(TAGS)
            .refresh("1m")
            .time("now-6h", "now")
            .timezone("browser")
            .editable()
        )
        self._next_id = 1

    def _id(self) -> int:
        i = self._next_id
        self._next_id += 1
        return i

    def prometheus_variable(self) -> None:
        self.dash.with_variable(db.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))

    def row(self, title: str) -> None:
        self.dash.with_row(db.Row(title).id(self._id()))

    def text(self, title: str, markdown: str, height: int = 6) -> None:
        self.dash.with_panel(
            text.Panel()
            .id(self._id())
            .title(title)
            .mode(TextMode.MARKDOWN)
            .content(markdown)
            .height(height)
            .span(24)
        )

    def timeseries(
        self,
        title: str,
        unit: str,
        queries: list[tuple[str, str]],
        *,
        description: str = "",
        max_value: float | None = None,
        min_value: float | None = 0,
        span: int = 12,
    ) -> None:
        panel = (
            timeseries.Panel()
            .id(self._id())
            .title(title)
            .description(description)
            .datasource(PROM)
            .unit(unit)
            .span(span)
            .height(8)
        )
        if min_value is not None:
            panel.min(min_value)
        if max_value is not None:
            panel.max(max_value)
        for ref, (expr, legend) in zip("ABCDEFGH", queries, strict=False):
            panel.with_target(pq.Dataquery().ref_id(ref).expr(expr).legend_format(legend))
        self.dash.with_panel(panel)

    def _stat(self, title: str, expr: str, *, description: str, span: int) -> stat.Panel:
        """An instant-query stat panel; the three stat kinds below differ only in units and thresholds."""
        return (
            stat.Panel()
            .id(self._id())
            .title(title)
            .description(description)
            .datasource(PROM)
            .span(span)
            .height(5)
            .with_target(pq.Dataquery().ref_id("A").expr(expr).instant())
        )

    def _threshold_stat(self, title: str, expr: str, steps: list[Threshold], *, description: str, span: int) -> None:
        panel = self._stat(title, expr, description=description, span=span).decimals(0).thresholds(
            db.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(steps)
        )
        self.dash.with_panel(panel)

    def expect(self, title: str, expr: str, expected: int, *, description: str, span: int = 6) -> None:
        """Stat that turns green only when the value reaches the catalog's expected count."""
        steps = [Threshold(value=None, color="red"), Threshold(value=float(expected), color="green")]
        self._threshold_stat(title, expr, steps, description=description, span=span)

    def zero_is_good(self, title: str, expr: str, *, description: str, span: int = 6) -> None:
        """Stat that is green at zero and red from one (errors, XIDs, nodes down)."""
        steps = [Threshold(value=None, color="green"), Threshold(value=1.0, color="red")]
        self._threshold_stat(title, expr, steps, description=description, span=span)

    def value(self, title: str, expr: str, unit: str, *, description: str, span: int = 6) -> None:
        self.dash.with_panel(self._stat(title, expr, description=description, span=span).unit(unit))

    def build(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(json.dumps(self.dash.build(), cls=JSONEncoder))
        return out
