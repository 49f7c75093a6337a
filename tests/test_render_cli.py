"""`fmcluster render FILE --out DIR`."""

from __future__ import annotations

import json
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


def render(*args: str):  # noqa: ANN201
    return CliRunner().invoke(app, ["render", str(ROOT / "blueprints/default.yaml"), *args])


def assert_clean_error(result, *fragments: str) -> None:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    text = " ".join(result.stderr.split())
    for f in fragments:
        assert f in text, text


def test_render_into_a_regular_file_is_a_clear_error(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    assert_clean_error(render("--out", str(afile)), f"{afile}: exists and is not a folder")
    assert afile.read_text() == "keep me"
    assert_clean_error(render("--out", "/dev/null"), "/dev/null: exists and is not a folder")


def test_render_below_a_regular_file_is_a_clear_error(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    assert_clean_error(render("--out", str(afile / "sub")), "cannot write")


def test_render_refuses_a_foreign_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert_clean_error(render("--out", str(tmp_path)), f"{tmp_path}: folder is not empty and was not written by fmcluster render")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_render_again_removes_stale_files_of_the_previous_render(tmp_path: Path) -> None:
    from fmcluster.review.render import MANIFEST

    out = tmp_path / "out"
    assert render("--out", str(out)).exit_code == 0
    listed = json.loads((out / MANIFEST).read_text())
    assert "gpu/bootstrap.sh" in listed and all((out / rel).is_file() for rel in listed)
    # Pretend the previous render had another group, and the user added a file of their own.
    (out / "old-group").mkdir()
    (out / "old-group/bootstrap.sh").write_text("stale")
    (out / MANIFEST).write_text(json.dumps([*listed, "old-group/bootstrap.sh", "../outside.txt"]))
    (tmp_path / "outside.txt").write_text("not ours")
    (out / "my-notes.txt").write_text("mine")
    again = render("--out", str(out))
    assert again.exit_code == 0, again.output
    assert not (out / "old-group").exists()
    assert (out / "my-notes.txt").read_text() == "mine" and (tmp_path / "outside.txt").exists()
    assert json.loads((out / MANIFEST).read_text()) == listed


def test_render_with_a_corrupt_manifest_is_refused(tmp_path: Path) -> None:
    from fmcluster.review.render import MANIFEST

    (tmp_path / MANIFEST).write_text("not json")
    assert_clean_error(render("--out", str(tmp_path)), "unreadable render manifest")


def test_render_help_documents_the_folder_rule() -> None:
    help_text = " ".join(CliRunner().invoke(app, ["render", "--help"]).output.split())
    assert "new or empty folder" in help_text and "stale" in help_text
