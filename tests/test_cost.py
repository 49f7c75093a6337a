"""Cost in the plan (fmcluster.review.cost, catalog/data/prices.yaml): per group and cluster, unknown never zero,
the table's date and sources, the diff's cost delta, and refresh-prices against botocore's Stubber."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from typer.testing import CliRunner

from fmcluster.catalog import prices
from fmcluster.catalog.refresh import RefreshError, refresh
from fmcluster.cli import app
from fmcluster.resolved import resolve
from fmcluster.review.cost import CostEstimate, cost_delta, estimate, money
from fmcluster.review.diff import DiffReport, render_markdown, render_text
from fmcluster.review.plan import build_plan
from fmcluster.review.plan import render_markdown as plan_markdown
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, blueprint_text, example, group, to_yaml

P5 = 55.04        # p5.48xlarge us-east-1 in the table
HEAD = 0.8064     # m7i.4xlarge (ParallelCluster's default head node here)
NAT = 0.045
FSX_125 = 0.145   # PERSISTENT_2 125 MB/s/TiB, USD/GB-month


def est(*patches: dict[str, Any]) -> CostEstimate:
    return estimate(resolve(load_blueprint_text(blueprint_text(*patches)).blueprint))


def line(e: CostEstimate, item: str) -> Any:
    return next(x for x in e.lines if x.item == item)


FULLY_PRICED = {
    "compute": [group(count=4)],
    "storage": {"lustre": {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 2400, "per_unit_storage_throughput": 125}},
    "orchestrator": {"kind": "parallelcluster", "parallelcluster": {"head_node_instance_type": "m7i.4xlarge"}},
}


def test_fully_priced_cluster_sums_every_line() -> None:
    e = est(FULLY_PRICED)
    assert line(e, "compute gpu").usd_per_hour == pytest.approx(4 * P5)
    assert line(e, "head node").usd_per_hour == pytest.approx(HEAD)
    assert line(e, "FSx for Lustre").usd_per_hour == pytest.approx(FSX_125 * 2400 / 730, abs=1e-4)
    assert line(e, "NAT gateway").usd_per_hour == pytest.approx(NAT)
    assert e.unknown == []
    assert e.total_usd_per_hour == pytest.approx(4 * P5 + HEAD + FSX_125 * 2400 / 730 + NAT, abs=1e-3)
    assert e.group_usd_per_hour("gpu") == pytest.approx(4 * P5)
    assert line(e, "compute gpu").as_of and line(e, "compute gpu").source.startswith("GH-GPU-PRICES")


def test_unknown_is_never_zero() -> None:
    e = est(FULLY_PRICED, {"compute": [group(count=4, capacity={"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"})]})
    gpu = line(e, "compute gpu")
    assert gpu.usd_per_hour is None and gpu.basis.startswith("unknown: Capacity Block fees follow supply and demand")
    assert e.total_usd_per_hour is None and e.group_usd_per_hour("gpu") is None
    assert e.known_usd_per_hour == pytest.approx(HEAD + FSX_125 * 2400 / 730 + NAT, abs=1e-3)
    assert e.unknown == ["compute gpu"]
    assert money(None) == "unknown"


def test_default_example_fsx_tier_without_a_price_is_unknown() -> None:
    e = estimate(resolve(load_blueprint_text(to_yaml(example("default"))).blueprint))
    assert line(e, "FSx for Lustre").usd_per_hour is None
    assert line(e, "compute gpu").usd_per_hour == pytest.approx(4 * P5)
    assert "FSx for Lustre" in e.unknown and e.total_usd_per_hour is None


@pytest.mark.parametrize(("lustre", "basis"), [
    ({"deployment_type": "SCRATCH_2", "storage_capacity_gib": 2400, "per_unit_storage_throughput": DROP},
     "unknown: no price for FSx for Lustre SCRATCH_2 in us-east-1 in the table"),
    ({"deployment_type": "PERSISTENT_1", "storage_capacity_gib": 2400, "per_unit_storage_throughput": 200},
     "unknown: no price for FSx for Lustre PERSISTENT_1 at 200 MB/s/TiB in us-east-1 in the table"),
    ({"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 2400, "per_unit_storage_throughput": 500},
     "unknown: not found in a source we could check"),
], ids=["scratch-no-tier", "tier-not-in-table", "tier-in-table-unknown"])
def test_an_unpriced_file_system_says_which_price_is_missing(lustre: dict[str, Any], basis: str) -> None:
    fsx = line(est(FULLY_PRICED, {"storage": {"lustre": lustre}}), "FSx for Lustre")
    assert (fsx.usd_per_hour, fsx.basis) == (None, basis)


def test_turning_accounting_on_makes_the_cost_unknown_never_zero() -> None:
    """The Slurm accounting database (Aurora Serverless v2) is not in the price table: turning accounting on is an
    unknown line, so the delta is unknown rather than +$0.00/h."""
    on = {"orchestrator": {"slurm": {"accounting": {"enabled": True, "second_availability_zone": "us-east-1b",
                                                    "min_capacity_acu": 1, "max_capacity_acu": 4}}}}
    off_e, on_e = est(FULLY_PRICED), est(FULLY_PRICED, on)
    db = line(on_e, "Slurm accounting database")
    assert (db.usd_per_hour, db.quantity) == (None, "Aurora Serverless v2, 1-4 ACU")
    assert db.basis.startswith("unknown: the price table has no Aurora Serverless v2 ACU-hour rate")
    assert on_e.total_usd_per_hour is None and off_e.total_usd_per_hour is not None
    delta = cost_delta(off_e, on_e)
    assert delta["delta_usd_per_hour"] is None and delta["text"].startswith("cost delta unknown")


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"compute": [group(capacity={"type": "spot"})]}, "Spot prices change"),
        ({"region": "us-west-2", "availability_zone": "us-west-2a"}, "no price for p5.48xlarge in us-west-2"),
        ({"orchestrator": {"kind": "hyperpod", "parallelcluster": DROP}}, "SageMaker HyperPod ml.* prices"),
    ],
)
def test_groups_without_a_price(patch: dict[str, Any], fragment: str) -> None:
    gpu = line(est(FULLY_PRICED, patch), "compute gpu")
    assert gpu.usd_per_hour is None and fragment in gpu.basis


def test_odcr_is_billed_at_the_on_demand_rate() -> None:
    e = est(FULLY_PRICED, {"availability_zone": None, "availability_zone_id": "use1-az6",
                           "compute": [group(count=4, capacity={"type": "odcr", "reservation_id": "cr-0123456789abcdef0"})]})
    gpu = line(e, "compute gpu")
    assert gpu.usd_per_hour == pytest.approx(4 * P5) and "ODCR billed at the On-Demand rate" in gpu.basis


def test_managed_observability_is_approximated_with_its_assumption() -> None:
    e = est(FULLY_PRICED, {"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})
    amp = line(e, "Amazon Managed Prometheus (approx.)")
    # 4 GPU nodes x 2000 + 1 head node x 1000 series, every 30 s -> 9000 x 120 samples per hour at $0.90 per 10M
    assert amp.usd_per_hour == pytest.approx(9000 * 120 * 0.9 / 1e7, abs=1e-4)
    assert "assumed" in amp.basis
    assert line(e, "Amazon Managed Grafana (approx.)").usd_per_hour == pytest.approx(9 / 730, abs=1e-4)


def test_existing_vpc_has_no_nat_line() -> None:
    e = est(FULLY_PRICED, {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}})
    assert "NAT gateway" not in [x.item for x in e.lines]


EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/train"


# The EKS control plane fmcluster creates, at its Kubernetes version's rate on the evaluation date (1.33: standard
# support to 2026-07-29, support.yaml); a cluster the blueprint imports (eks_cluster_arn) is its owner's, no line.
@pytest.mark.parametrize(("date", "eks", "expected"), [
    ("2026-07-29", {}, (0.10, "standard-support rate (to 2026-07-29)")),
    ("2026-07-30", {}, (0.60, "extended-support rate (standard support ended 2026-07-29)")),
    ("2026-07-30", {"eks_cluster_arn": EKS_ARN}, None),
], ids=["standard", "extended", "imported-cluster"])
def test_hyperpod_eks_control_plane_fee(monkeypatch: pytest.MonkeyPatch, date: str, eks: dict[str, Any],
                                        expected: tuple[float, str] | None) -> None:
    monkeypatch.setenv("FMCLUSTER_SUPPORT_DATE", date)
    data = example("hyperpod-eks")
    if eks:  # an existing cluster: in its own VPC (R-EKS-2)
        data["orchestrator"]["hyperpod"] = {**{k: v for k, v in data["orchestrator"]["hyperpod"].items() if k != "eks"},
                                            **eks}
        data["network"] = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}
    e = estimate(resolve(load_blueprint_text(to_yaml(data)).blueprint))
    fees = [(x.usd_per_hour, x.basis.split(", ", 1)[1], x.quantity, x.source) for x in e.lines if x.item == "EKS control plane"]
    if expected is None:
        assert fees == []
    else:
        assert fees == [(*expected, "Kubernetes 1.33", "https://aws.amazon.com/eks/pricing/")]


# ---- the table ----------------------------------------------------------------------------------------
def test_every_price_is_dated_and_sourced_or_explicitly_unknown() -> None:
    raw = yaml.safe_load(prices.data_file().read_text())
    assert raw["table_date"] == prices.table_date()
    entries = [e for per in raw["ec2_on_demand"].values() for e in per.values()]
    entries += [e for per in raw["fsx_lustre"].values() for t in per.values() for e in t.values()]
    entries += list(raw["nat_gateway"].values()) + [raw["amg"], raw["amp"]]
    for e in entries:
        value = next((e[k] for k in e if k.startswith("usd_per")), None)
        if value is None:
            assert e.get("note"), e
        else:
            assert value > 0 and e["as_of"] and e["source"] in raw["sources"], e


# ---- the plan and the diff ------------------------------------------------------------------------------
def test_plan_json_and_markdown_carry_cost_and_the_table_date() -> None:
    rc = resolve(load_blueprint_text(blueprint_text(FULLY_PRICED)).blueprint)
    plan = build_plan(rc, {})
    doc = json.loads(json.dumps(plan.as_dict()))  # the envelope's result of plan --json
    assert doc["cost"]["table_date"] == prices.table_date()
    assert doc["cost"]["groups"] == {"gpu": pytest.approx(4 * P5)}
    assert doc["cost"]["total_usd_per_hour"] == pytest.approx(estimate(rc).total_usd_per_hour)
    md = plan_markdown(plan)
    assert f"## Cost per hour, USD (price table {prices.table_date()}): {money(estimate(rc).total_usd_per_hour)}/h" in md
    assert "| compute gpu | 4 x p5.48xlarge | $220.16 | on-demand $55.04/h each |" in md


def test_cost_delta_in_every_diff_format() -> None:
    a, b = est(FULLY_PRICED), est(FULLY_PRICED, {"compute": [group(count=8)]})
    delta = cost_delta(a, b)
    assert delta["delta_usd_per_hour"] == pytest.approx(4 * P5)
    assert delta["text"].startswith(f"cost {money(a.total_usd_per_hour)}/h -> {money(b.total_usd_per_hour)}/h (+$220.16/h")
    report = DiffReport("blueprints/x.yaml@main", "blueprints/x.yaml", [], cost=delta)
    assert render_text(report).splitlines()[1] == delta["text"]
    assert f"**Cost:** {delta['text']}" in render_markdown(report)
    assert json.loads(json.dumps(report.as_dict()))["cost"]["delta_usd_per_hour"] == pytest.approx(4 * P5)
    partial = cost_delta(est(FULLY_PRICED, {"compute": [group(capacity={"type": "spot"})]}), b)
    assert partial["delta_usd_per_hour"] is None
    assert partial["text"].startswith("cost delta unknown: priced items $1.33/h -> $441.65/h, and unpriced items change (compute gpu")
    # the same unpriced items on both sides cancel out: the delta of the priced items is the delta
    fsx = {"storage": {"lustre": {"per_unit_storage_throughput": 250}}}
    same = cost_delta(est(FULLY_PRICED, fsx), est(FULLY_PRICED, fsx, {"compute": [group(count=8)]}))
    assert same["delta_usd_per_hour"] == pytest.approx(4 * P5)
    assert same["text"].startswith("cost +$220.16/h (priced items") and "unchanged and unpriced: FSx for Lustre" in same["text"]
    assert "one side is a cdk.out folder" in cost_delta(None, b)["text"]


# ---- refresh-prices with botocore's Stubber ---------------------------------------------------------------
def _product(usd: str) -> str:
    return json.dumps({"product": {"attributes": {"instanceType": "p5.48xlarge"}}, "terms": {"OnDemand": {"T1": {
        "priceDimensions": {"T1.D1": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}}})


def _filters(region: str, it: str) -> list[dict[str, str]]:
    pairs = {"regionCode": region, "instanceType": it, "operatingSystem": "Linux", "tenancy": "Shared",
             "preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs.items()]


SMALL_TABLE = """# comment kept
table_date: "2026-01-01"
sources:
  OLD: "old"
ec2_on_demand:
  us-east-1:
    p5.48xlarge: {usd_per_hour: 1.0, as_of: "2025", source: OLD}

# FSx stays
fsx_lustre: {}
nat_gateway: {}
amg: {usd_per_editor_month: 9.0, editors: 1, as_of: "2026", source: OLD}
amp: {usd_per_10m_samples: 0.9, as_of: "2026", source: OLD, series_per_gpu_node: 1, series_per_management_node: 1}
"""


def test_refresh_prices_rewrites_ec2_from_the_price_list(tmp_path: Path) -> None:
    import datetime as dt

    f = tmp_path / "prices.yaml"
    f.write_text(SMALL_TABLE)
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stub:
        base = {"ServiceCode": "AmazonEC2", "MaxResults": 100}
        stub.add_response("get_products", {"PriceList": [], "NextToken": "page2", "FormatVersion": "aws_v1"},
                          {**base, "Filters": _filters("us-east-1", "p5.48xlarge")})
        stub.add_response("get_products", {"PriceList": [_product("55.0400000000")], "FormatVersion": "aws_v1"},
                          {**base, "Filters": _filters("us-east-1", "p5.48xlarge"), "NextToken": "page2"})
        stub.add_response("get_products", {"PriceList": [], "FormatVersion": "aws_v1"},
                          {**base, "Filters": _filters("us-east-1", "p6-b300.48xlarge")})
        counts = refresh(f, client, instance_types=["p6-b300.48xlarge"], today=dt.date(2026, 12, 1))
        stub.assert_no_pending_responses()
    assert counts == {"priced": 1, "unknown": 1}
    text = f.read_text()
    data = yaml.safe_load(text)
    assert data["table_date"] == "2026-12-01"
    assert data["ec2_on_demand"]["us-east-1"]["p5.48xlarge"] == {
        "usd_per_hour": 55.04, "as_of": "2026-12-01", "source": "PRICE-LIST-API", "confidence": "primary"}
    assert data["ec2_on_demand"]["us-east-1"]["p6-b300.48xlarge"]["usd_per_hour"] is None
    assert "PRICE-LIST-API" in data["sources"] and text.startswith("# comment kept") and "# FSx stays" in text
    assert data["amg"]["usd_per_editor_month"] == 9.0


def test_refresh_prices_api_error_is_a_refresh_error(tmp_path: Path) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text(SMALL_TABLE)
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stub:
        stub.add_client_error("get_products", "AccessDeniedException", "not authorized to perform pricing:GetProducts")
        with pytest.raises(RefreshError, match="pricing:GetProducts"):
            refresh(f, client)
    assert f.read_text() == SMALL_TABLE  # nothing written


def test_refresh_prices_cli_without_credentials_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "prices.yaml"
    shutil.copy(prices.data_file(), f)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    r = CliRunner().invoke(app, ["catalog", "refresh-prices", "--price-file", str(f)])
    assert r.exit_code == 2 and "refresh-prices: could not get the price of" in r.stderr, r.output
    assert f.read_text() == prices.data_file().read_text()


def test_hyperpod_eks_fee_with_an_evaluation_date_that_is_not_a_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """The profile is built for every command: a malformed FMCLUSTER_SUPPORT_DATE leaves the fee unpriced (R-SUP-1
    reports the date), never an exception."""
    from fmcluster.blueprint.model import OrchestratorSpec
    from fmcluster.orchestrators.hyperpod_eks.profile import eks_cluster_fee

    monkeypatch.setenv("FMCLUSTER_SUPPORT_DATE", "someday")
    fee = eks_cluster_fee(OrchestratorSpec.model_validate(example("hyperpod-eks")["orchestrator"]))
    assert fee is not None and fee.usd_per_hour is None
    assert fee.basis == ("unknown: $0.10 or $0.60 per cluster-hour by the version's support, and FMCLUSTER_SUPPORT_DATE "
                         "must be a date YYYY-MM-DD, got 'someday'")
