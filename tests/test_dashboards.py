"""Generated Grafana dashboards and alert rules: valid JSON, the expected panels, expected counts from the
instance catalog, and PromQL that parses and queries only metrics the exporters publish."""

from __future__ import annotations

import json
import re
from typing import Any

import promql_parser
import pytest
import yaml

from fmcluster.resolved import resolve
from fmcluster.templates.observability import render_observability_files
from fmcluster.templates.observability.context import observability_context
from fmcluster.templates.observability.dashboards import build_dashboards
from fmcluster.templates.observability.metrics import DCGM_FIELDS, dcgm_counters_csv, known_metric_names
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT

EXAMPLES_WITH_METRICS = ["default.yaml", "p6-b200.yaml"]
#: Grafana variables replaced by a plausible value before parsing (promql-parser does not know them).
GRAFANA_VARIABLES = {"$__rate_interval": "1m"}


def _dashboards(name: str) -> dict[str, dict[str, Any]]:
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / name)))
    return {
        k.split("/")[-1]: json.loads(v) for k, v in files.items() if k.startswith("observability/dashboards/")
    }


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dash["panels"] if p["type"] != "row"]


def _by_title(dash: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["title"]: p for p in dash["panels"]}


def _promql(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", []) if "expr" in t]


def _metric_names(expr: str) -> set[str]:
    for var, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(var, value)
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def _expected_threshold(panel: dict[str, Any]) -> float:
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["color"] for s in steps] == ["red", "green"]
    return steps[1]["value"]


@pytest.mark.parametrize("blueprint", EXAMPLES_WITH_METRICS)
def test_dashboards_are_valid_json_with_unique_ids_and_ref_ids(blueprint: str) -> None:
    for name, dash in _dashboards(blueprint).items():
        ids = [p["id"] for p in dash["panels"]]
        assert ids == list(range(1, len(ids) + 1)), name
        assert len(dash["uid"]) <= 40 and dash["uid"].startswith("fmc-"), dash["uid"]
        for p in _panels(dash):
            refs = [t["refId"] for t in p.get("targets", [])]
            assert all(refs) and len(set(refs)) == len(refs), (name, p["title"])


def test_default_dashboard_set_and_panels() -> None:
    dashes = _dashboards("default.yaml")
    assert sorted(dashes) == ["efa.json", "fsx.json", "gpu.json", "overview.json", "slurm.json"]
    gpu = _by_title(dashes["gpu.json"])
    for title in (
        "gpu: GPU utilization",
        "gpu: SM activity",
        "gpu: GPU memory used",
        "gpu: GPU temperature (hottest per node)",
        "gpu: GPU power per node",
        "gpu: GPUs with XID errors",
        "gpu: uncorrectable ECC errors (1h)",
    ):
        assert title in gpu, title
    efa = _by_title(dashes["efa.json"])
    for title in (
        "gpu: transmit per node",
        "gpu: receive per node",
        "gpu: transmit per device",
        "gpu: RDMA read and write per node",
        "gpu: errors and drops per node",
    ):
        assert title in efa, title
    slurm = _by_title(dashes["slurm.json"])
    assert {"Nodes by state", "Jobs by state", "Nodes down", "Running jobs", "Pending jobs"} <= set(slurm)
    fsx = dashes["fsx.json"]
    cw = [t for p in fsx["panels"] for t in p["targets"] if t.get("namespace") == "AWS/FSx"]
    assert {t["metricName"] for t in cw} == {
        "DataReadBytes",
        "DataWriteBytes",
        "DataReadOperations",
        "DataWriteOperations",
        "MetadataOperations",
        "FreeDataStorageCapacity",
    }
    assert all(t["dimensions"] == {"FileSystemId": "$filesystem_id"} for t in cw)


def test_expected_counts_come_from_the_catalog_p5() -> None:
    dashes = _dashboards("default.yaml")  # 4 x p5.48xlarge: 8 H100 and 32 EFA devices each
    overview = _by_title(dashes["overview.json"])
    assert _expected_threshold(overview["GPUs reporting"]) == 32
    assert _expected_threshold(overview["EFA devices reporting"]) == 128
    assert _expected_threshold(overview["Compute nodes reporting"]) == 4
    efa = _by_title(dashes["efa.json"])
    assert _expected_threshold(efa["gpu: EFA devices reporting"]) == 128
    assert "gpu: nodes with fewer than 32 EFA devices" in efa
    assert efa["gpu: transmit per node"]["fieldConfig"]["defaults"]["max"] == 3200e9
    assert _expected_threshold(_by_title(dashes["gpu.json"])["gpu: GPUs reporting"]) == 32


def test_expected_counts_come_from_the_catalog_p6_b200() -> None:
    dashes = _dashboards("p6-b200.yaml")  # 8 x p6-b200.48xlarge: 8 B200 and 8 EFA devices each
    overview = _by_title(dashes["overview.json"])
    assert _expected_threshold(overview["GPUs reporting"]) == 64
    assert _expected_threshold(overview["EFA devices reporting"]) == 64
    efa = _by_title(dashes["efa.json"])
    assert "b200: nodes with fewer than 8 EFA devices" in efa
    assert dashes["efa.json"]["panels"][0]["title"].startswith("b200: 8 x p6-b200.48xlarge (8 x B200")
    fsx = _by_title(dashes["fsx.json"])["Client throughput"]  # 9600 GiB x 500 MB/s/TiB
    assert fsx["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] == 4800 * 1_000_000


def test_groups_of_different_instance_types_get_their_own_rows() -> None:
    bp = load_blueprint_text(
        blueprint_text(
            {
                "observability": {"metrics": "managed"},
                "compute": [
                    {"name": "h100", "instance_type": "p5.48xlarge", "count": 2},
                    {"name": "h200", "instance_type": "p5en.48xlarge", "count": 3},
                    {"name": "noefa", "instance_type": "p5.48xlarge", "count": 1, "efa": False},
                ],
            }
        )
    ).blueprint
    dashes = build_dashboards(observability_context(resolve(bp)))
    efa = _by_title(dashes["efa"])
    assert _expected_threshold(efa["h100: EFA devices reporting"]) == 64
    assert _expected_threshold(efa["h200: EFA devices reporting"]) == 48  # p5en: 16 EFA devices per node
    assert not any(t.startswith("noefa:") for t in efa)  # EFA off: no EFA row
    gpu = _by_title(dashes["gpu"])
    assert _expected_threshold(gpu["noefa: GPUs reporting"]) == 8
    assert _expected_threshold(_by_title(dashes["overview"])["EFA devices reporting"]) == 112


@pytest.mark.parametrize("blueprint", EXAMPLES_WITH_METRICS)
def test_dashboard_promql_parses_and_uses_published_metrics(blueprint: str) -> None:
    known = known_metric_names()
    exprs = [e for dash in _dashboards(blueprint).values() for e in _promql(dash)]
    assert len(exprs) > 40
    used: set[str] = set()
    for expr in exprs:
        names = _metric_names(expr)
        unknown = names - set(known)
        assert not unknown, f"{expr!r} queries metrics no exporter publishes: {sorted(unknown)}"
        used |= names
    assert {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_DEV_XID_ERRORS",
        "fmcluster_efa_tx_bytes_total",
        "fmcluster_efa_rdma_write_bytes_total",
        "slurm_nodes_alloc",
        "slurm_queue_pending",
    } <= used


def test_alert_rules_parse_and_use_published_metrics() -> None:
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    doc = yaml.safe_load(files["observability/rules/llm-train-alerts.yml"])
    rules = {r["alert"]: r for g in doc["groups"] for r in g["rules"]}
    assert {
        "GpuXidError",
        "GpuFallenOffBus",
        "GpuEccDoubleBitErrors",
        "EfaWorkRequestErrors",
        "NodeDown",
        "EfaThroughputDrop",
    } <= set(rules)
    assert rules["GpuFallenOffBus"]["expr"] == "max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS) == 79"
    assert {k: rules["NodeDown"][k] for k in ("expr", "for", "labels")} == {
        "expr": 'up{job="node"} == 0',
        "for": "5m",
        "labels": {"severity": "critical"},
    }
    known = set(known_metric_names())
    for name, rule in rules.items():
        assert not _metric_names(rule["expr"]) - known, name


def test_dcgm_counters_csv_lists_every_field_we_query() -> None:
    csv = dcgm_counters_csv()
    lines = [line for line in csv.splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(DCGM_FIELDS)
    fields = {line.split(",")[0] for line in lines}
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    queried = {n for text in files.values() for n in re.findall(r"DCGM_FI_[A-Z_]+", text)}
    assert queried <= fields, sorted(queried - fields)
    assert {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_XID_ERRORS"} <= fields


def test_dashboards_are_deterministic() -> None:
    a = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    b = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    assert a == b


