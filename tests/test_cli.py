"""The fmcluster command: exit codes, path-qualified problems, no tracebacks, plan formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.cli import app
from tests.conftest import ROOT, patched

runner = CliRunner()


def run(*args: str):  # noqa: ANN201
    return runner.invoke(app, list(args))


def test_validate_accepts_every_example() -> None:
    res = run("validate", *map(str, sorted((ROOT / "blueprints").glob("*.yaml"))))
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("content", ["", "- 1\n- 2\n", "key: [oops\n", "\x00\x01binary", "42"])
def test_validate_never_tracebacks(tmp_path: Path, content: str) -> None:
    f = tmp_path / "bp.yaml"
    f.write_text(content)
    res = run("validate", str(f))
    assert res.exit_code == 1
    assert "Traceback" not in res.output and res.exception is None or isinstance(res.exception, SystemExit)


def test_validate_three_mistakes_prints_three_path_qualified_errors(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(patched({"region": "us-east-1", "availability_zone": "us-west-2a",
                          "compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}],
                          "storage": {"lustre": {"storage_capacity_gib": 3000}}}))
    res = run("validate", "--json", str(f))
    assert res.exit_code == 1
    [report] = json.loads(res.stdout)
    assert [p["path"] for p in report["problems"]] == [
        "availability_zone", "compute[0].instance_type", "storage.lustre.storage_capacity_gib"]


def test_validate_missing_file_is_a_problem_not_a_crash() -> None:
    res = run("validate", "does-not-exist.yaml")
    assert res.exit_code == 1 and "cannot read the file" in res.output


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_plan_formats(fmt: str) -> None:
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--format", fmt)
    assert res.exit_code == 0, res.output
    if fmt == "json":
        plan = json.loads(res.stdout)
        [c] = plan["compute"]
        assert (c["gpus_total"], c["efa_interfaces_per_node"], c["network_gbps_total"]) == (32, 32, 12800)
        # ParallelCluster 3.16 gives nodes an ENA primary + efa-only EFAs: 1 address per node, + head node + 5 AWS-reserved
        assert (plan["subnet"]["required"], plan["subnet"]["fits"]) == (4 * 1 + 1 + 5, True)
        assert plan["storage"]["throughput_mbps"] == 1200 and plan["storage"]["throughput_mbps_per_gpu"] == 37.5
        assert plan["software"]["aws_ofi_nccl"] == "1.16.3" and plan["software"]["libfabric"] == "2.1.0amzn5.0"
        assert set(plan["stacks"]) == {"llm-train-network", "llm-train-storage", "llm-train-cluster", "llm-train-observability"}
        assert all(n > 0 for n in plan["stacks"].values())
        from fmcluster.review.plan import resource_counts
        from tests.conftest import cli_synth

        assert plan["stacks"] == resource_counts(cli_synth(ROOT / "blueprints" / "default.yaml")[0])
    elif fmt == "markdown":
        assert "| gpu | p5.48xlarge | 4 | H100 x 32 | 32 | efa-only | 1 | 3200 / 12800 | on_demand | yes |" in res.stdout
    else:
        assert "32 GPUs in us-east-1 / us-east-1a" in res.stdout


def test_plan_of_an_invalid_blueprint_exits_1(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(patched({"compute": [{"name": "gpu", "instance_type": "x1.large", "count": 1}]}))
    res = run("plan", str(f))
    assert res.exit_code == 1 and "compute[0].instance_type" in res.output
