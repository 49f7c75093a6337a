"""`fmcluster render FILE --out DIR`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fmcluster.cli import app

ROOT = Path(__file__).resolve().parent.parent


def test_render_writes_every_script_of_every_group(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["render", str(ROOT / "blueprints/default.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "gpu").iterdir()) == [
        "bootstrap.sh", "fmcluster-node-check", "job-env.sh", "versions.txt"]
    assert (tmp_path / "gpu/bootstrap.sh").stat().st_mode & 0o111
    versions = (tmp_path / "gpu/versions.txt").read_text()
    assert "aws_ofi_nccl: 1.16.3\n" in versions and "libfabric: 2.1.0amzn5.0\n" in versions


def test_render_bad_blueprint_lists_problems_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad-one\nregion: us-east-1\navailability_zone: us-east-1a\n"
        "software:\n  stack: h100-570-cuda12.8\n  overrides: {fabric_manager: 570.158.01}\n"
        "  environment: {NCCL_PROTO: simple}\n"
        "compute:\n  - {name: gpu, instance_type: p5.48xlarge, count: 2}\n"
    )
    result = CliRunner().invoke(app, ["render", str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert "software.overrides.fabric_manager (line 6): Fabric Manager must equal the driver version exactly" in text
    assert "[R-FM-1]" in text
    assert ("software.environment.NCCL_PROTO (line 7): obsolete or harmful on EFA: only for aws-ofi-nccl <= 1.5.0; it "
            "now disables LL/LL128") in text
    assert not (tmp_path / "out").exists()
