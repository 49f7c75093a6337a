"""Plan, storage part: aggregate and write throughput, GB/s per GPU, checkpoint write time (--checkpoint-gib)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.resolved import resolve
from fmcluster.review.plan import build_plan, checkpoint_write_seconds, render_markdown
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("blueprint", "gpus", "tier", "throughput", "write", "gbps_per_gpu", "seconds_per_100_gib"),
    [
        # 4800 GiB x 250 MB/s/TiB = 1200 MB/s over 32 H100
        ("default", 32, 250, 1200, 1200, 0.037, 89.5),
        # 12000 GiB x 1000 MB/s/TiB = 12 GB/s
        ("efa-lustre", 32, 1000, 12000, 12000, 0.375, 8.9),
        # SCRATCH_2: 2400 GiB x 200 MB/s/TiB network baseline, 100 MB/s/TiB disk write
        ("p5en-capacity-block", 16, None, 480, 240, 0.03, 447.4),
        # 9600 GiB x 500 MB/s/TiB over 64 B200
        ("p6-b200", 64, 500, 4800, 4800, 0.075, 22.4),
    ],
)
def test_storage_numbers(blueprint: str, gpus: int, tier: int | None, throughput: int, write: int,
                         gbps_per_gpu: float, seconds_per_100_gib: float) -> None:
    plan = build_plan(resolve(load_blueprint(ROOT / "blueprints" / f"{blueprint}.yaml")), checkpoint_gib=100)
    s = plan.storage
    assert s is not None
    assert plan.gpus_total == gpus
    assert (s.per_unit_storage_throughput, s.throughput_mbps, s.write_throughput_mbps) == (tier, throughput, write)
    assert s.throughput_gbps_per_gpu == gbps_per_gpu
    assert (s.checkpoint_gib, s.checkpoint_write_seconds) == (100, seconds_per_100_gib)


def test_persistent_1_uses_its_default_tier() -> None:
    bp = load_blueprint_text(blueprint_text({"storage": {"lustre": {"deployment_type": "PERSISTENT_1", "storage_capacity_gib": 2400}}})).blueprint
    s = build_plan(resolve(bp)).storage
    assert s is not None
    assert (s.per_unit_storage_throughput, s.throughput_mbps, s.checkpoint_write_seconds) == (200, 480, None)


def test_checkpoint_write_seconds_units() -> None:
    # 1000 GiB = 1073.741824 GB at 1000 MB/s
    assert checkpoint_write_seconds(1000, 1000) == 1073.7
    assert checkpoint_write_seconds(1, 0) == float("inf")


def test_no_file_system_no_storage_line() -> None:
    bp = load_blueprint_text(blueprint_text({"storage": {"lustre": None}})).blueprint
    plan = build_plan(resolve(bp), checkpoint_gib=10)
    assert plan.storage is None
    assert plan.checkpoints == "new bucket, prefix checkpoints/, versioned"


def test_markdown_shows_the_checkpoint_table() -> None:
    md = render_markdown(build_plan(resolve(load_blueprint(ROOT / "blueprints" / "efa-lustre.yaml")), checkpoint_gib=500))
    assert "| PERSISTENT_2 | 12000 | 1000 | 12000 | 12000 | 0.375 | yes | /fsx |" in md
    assert "## Checkpoint write (FSx baseline, all nodes writing)" in md
    assert "| 500 | 12000 | 44.7 | 0.7 |" in md
    assert "checkpoints: new bucket, prefix checkpoints/, versioned, to GLACIER_IR after 30 days" in md


def test_cli_checkpoint_gib(tmp_path: Path) -> None:
    from fmcluster.cli import app
    from tests.test_cli import fake_assembly

    cdk_out = str(fake_assembly(tmp_path / "cdk.out"))
    r = CliRunner().invoke(app, ["plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", cdk_out,
                                 "--checkpoint-gib", "250", "--format", "json"])
    assert r.exit_code == 0, r.output
    storage = json.loads(r.stdout)["storage"]
    assert (storage["checkpoint_gib"], storage["checkpoint_write_seconds"], storage["write_throughput_mbps"]) == (250, 223.7, 1200)
    bad = CliRunner().invoke(app, ["plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", cdk_out,
                                   "--checkpoint-gib", "0"])
    assert bad.exit_code == 2
