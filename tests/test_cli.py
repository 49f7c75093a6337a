"""The fmcluster command: exit codes, path-qualified problems, no tracebacks; plan formats; render FILE --out DIR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.cli import app
from tests.blueprints import blueprint_text
from tests.conftest import ROOT

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
    f.write_text(blueprint_text({"region": "us-east-1", "availability_zone": "us-west-2a",
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
        from fmcluster.review.assembly import Assembly
        from tests.conftest import cli_synth

        synthesized = Assembly.from_dir(cli_synth(ROOT / "blueprints" / "default.yaml")[0])
        assert plan["stacks"] == {name: synthesized.resource_count(name) for name in synthesized.stacks}
    elif fmt == "markdown":
        assert "| gpu | p5.48xlarge | 4 | H100 x 32 | 32 | efa-only | 1 | 3200 / 12800 | on_demand | yes |" in res.stdout
    else:
        assert "32 GPUs in us-east-1 / us-east-1a" in res.stdout


def test_plan_of_an_invalid_blueprint_exits_1(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(blueprint_text({"compute": [{"name": "gpu", "instance_type": "x1.large", "count": 1}]}))
    res = run("plan", str(f))
    assert res.exit_code == 1 and "compute[0].instance_type" in res.output


# ---- plan --cdk-out: the folder must hold this blueprint's stacks ----------------------------------
DEFAULT_STACKS = ("llm-train-network", "llm-train-storage", "llm-train-observability", "llm-train-cluster")


def fake_assembly(folder: Path, stacks: tuple[str, ...] = DEFAULT_STACKS) -> Path:
    """A minimal cdk.out: a manifest and one template (two resources) per stack."""
    folder.mkdir(parents=True, exist_ok=True)
    artifacts = {}
    for name in stacks:
        (folder / f"{name}.template.json").write_text(json.dumps({"Resources": {
            "A": {"Type": "AWS::SSM::Parameter"}, "B": {"Type": "AWS::SSM::Parameter"},
            "CDKMetadata": {"Type": "AWS::CDK::Metadata"}}}))
        artifacts[name] = {"type": "aws:cloudformation:stack", "environment": "aws://unknown-account/us-east-1",
                           "properties": {"templateFile": f"{name}.template.json", "stackName": name}}
    (folder / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts}))
    return folder


def assert_clean_error(res, *fragments: str) -> None:  # noqa: ANN001
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    text = " ".join(res.stderr.split())
    for f in fragments:
        assert f in text, text


def test_plan_cdk_out_of_this_blueprint_lists_its_stacks(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out", (*DEFAULT_STACKS, "unrelated-stack"))
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(out), "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stacks"] == {n: 2 for n in ("llm-train-network", "llm-train-storage",
                                                                "llm-train-observability", "llm-train-cluster")}


def test_plan_cdk_out_of_another_blueprint_is_refused(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out", ("other-network", "other-storage", "other-cluster"))
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(out))
    assert_clean_error(res, f"{out}: not a synthesized cdk.out of blueprint llm-train: missing stack(s) llm-train-network, "
                            "llm-train-storage, llm-train-observability, llm-train-cluster; found other-cluster, "
                            "other-network, other-storage")


def test_plan_cdk_out_without_the_observability_stack_is_refused(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out", ("llm-train-network", "llm-train-storage", "llm-train-cluster"))
    assert_clean_error(run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(out)),
                       "missing stack(s) llm-train-observability;")


@pytest.mark.parametrize(("setup", "fragment"), [
    (lambda d: None, "not a folder"),
    (lambda d: d.mkdir(), "not a cloud assembly (no manifest.json)"),
    (lambda d: (d.mkdir(), (d / "manifest.json").write_text("not json")), "is not valid JSON"),
    (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{}")), "not a cloud assembly manifest"),
])
def test_plan_cdk_out_missing_or_broken_is_refused(tmp_path: Path, setup, fragment: str) -> None:  # noqa: ANN001
    out = tmp_path / "cdk.out"
    setup(out)
    assert_clean_error(run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(out)), str(out), fragment)


# ---- plan: checkpoint bound, human durations, per-GPU precision --------------------------------------
def test_plan_checkpoint_gib_is_bounded_and_durations_are_human(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out")
    blueprint = str(ROOT / "blueprints" / "default.yaml")
    huge = run("plan", blueprint, "--cdk-out", str(out), "--checkpoint-gib", "100000000000000000")
    assert huge.exit_code == 2 and "Traceback" not in huge.output
    assert run("plan", blueprint, "--cdk-out", str(out), "--checkpoint-gib", "10000001").exit_code == 2
    top = run("plan", blueprint, "--cdk-out", str(out), "--checkpoint-gib", "10000000", "-f", "markdown")
    assert top.exit_code == 0, top.output
    # 10^7 GiB at 1200 MB/s = 8,947,848.5 s = 2,485.5 h
    assert "| checkpoint GiB | write MB/s | seconds | minutes | time |" in top.stdout
    assert "| 10000000 | 1200 | 8947848.5 | 149130.8 | 2,485.5 h |" in top.stdout
    small = run("plan", blueprint, "--cdk-out", str(out), "--checkpoint-gib", "50", "-f", "markdown")
    assert "| 50 | 1200 | 44.7 | 0.7 | 44.7 s |" in small.stdout


def test_format_duration_and_significant() -> None:
    from fmcluster.review.plan import format_duration, significant

    assert [format_duration(x) for x in (44.74, 119.9, 119.97, 223.7, 7199, 7200, 8947848.5, float("inf"), None)] == [
        "44.7 s", "119.9 s", "2.0 min", "3.7 min", "2.0 h", "2.0 h", "2,485.5 h", "-", "-"]
    assert [significant(x) for x in (0.0375, 0.375, 0.03, 12.0, 1200.0, 0.0)] == ["0.0375", "0.375", "0.0300", "12.0", "1200", "0"]


def test_plan_gb_per_gpu_has_three_significant_digits(tmp_path: Path) -> None:
    # default: 1200 MB/s over 32 GPUs = 37.5 MB/s = 0.0375 GB/s (was shown as 0.037)
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(fake_assembly(tmp_path / "o")),
              "-f", "markdown")
    assert "| PERSISTENT_2 | 4800 | 250 | 1200 | 1200 | 0.0375 | no | /fsx |" in res.stdout


# ---- preflight summary line: counted nouns are pluralised ------------------------------------------
@pytest.mark.parametrize(("statuses", "summary"), [
    (["ok"] * 3 + ["unknown"] * 4, "preflight incomplete (3 ok, 4 unknown)"),
    (["ok", "unknown"], "preflight incomplete (1 ok, 1 unknown)"),
    (["ok", "warning", "warning", "skipped"], "preflight passed (1 ok, 2 warnings, 1 skipped)"),
    (["ok", "warning", "error"], "preflight failed (1 ok, 1 error, 1 warning)"),
    (["error", "error", "unknown"], "preflight failed (2 errors, 1 unknown)"),
])
def test_preflight_summary_pluralises(monkeypatch: pytest.MonkeyPatch, statuses: list[str], summary: str) -> None:
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight import runner
    from fmcluster.preflight.checks import CheckResult

    def fake_run(rc, clients, *, file, until=None, progress=None):  # noqa: ANN001, ANN202
        return runner.PreflightReport(file=file, region=rc.blueprint.region, account="123456789012", results=[
            CheckResult(f"check {i}", "subject", s, "detail") for i, s in enumerate(statuses)])

    monkeypatch.setattr(clients_module, "make_clients", lambda region, profile=None: object())
    monkeypatch.setattr(runner, "run_preflight", fake_run)
    res = run("preflight", str(ROOT / "blueprints" / "default.yaml"))
    assert res.stdout.rstrip().endswith(summary), res.stdout


def test_preflight_invalid_blueprint_error_count_is_pluralised(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(blueprint_text({"compute": [{"name": "gpu", "instance_type": "x1.large", "count": 1}]}))
    res = run("preflight", str(one))
    assert res.exit_code == 2
    assert f"{one}: 1 error\n" in res.stderr.replace("  ", " ")


# ---- fmcluster render FILE --out DIR -------------------------------------------------------------
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
