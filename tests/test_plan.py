"""``fmcluster plan``: the bill of materials in three formats, its storage part (aggregate and write
throughput, GB/s per GPU, checkpoint write time with --checkpoint-gib), number formatting, and the
--cdk-out folder that must hold this blueprint's stacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.resolved import resolve
from fmcluster.review.plan import build_plan, checkpoint_write_seconds, render_markdown
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT
from tests.test_cli import assert_clean_error, run


# ---- storage: throughput, GB/s per GPU, checkpoint write time ------------------------------------
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
    cdk_out = str(fake_assembly(tmp_path / "cdk.out"))
    r = CliRunner().invoke(app, ["plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", cdk_out,
                                 "--checkpoint-gib", "250", "--format", "json"])
    assert r.exit_code == 0, r.output
    storage = json.loads(r.stdout)["result"]["storage"]
    assert (storage["checkpoint_gib"], storage["checkpoint_write_seconds"], storage["write_throughput_mbps"]) == (250, 223.7, 1200)
    bad = CliRunner().invoke(app, ["plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", cdk_out,
                                   "--checkpoint-gib", "0"])
    assert bad.exit_code == 2


# ---- the command in three formats ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_plan_formats(fmt: str) -> None:
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--format", fmt)
    assert res.exit_code == 0, res.output
    if fmt == "json":
        plan = json.loads(res.stdout)["result"]
        [c] = plan["compute"]
        assert (c["gpus_total"], c["efa_interfaces_per_node"], c["network_gbps_total"]) == (32, 32, 12800)
        # ParallelCluster 3.16 gives nodes an ENA primary + efa-only EFAs: 1 address per node, + head node + 5 AWS-reserved
        assert (plan["subnet"]["required"], plan["subnet"]["fits"]) == (4 * 1 + 1 + 5, True)
        assert plan["storage"]["throughput_mbps"] == 1200 and plan["storage"]["throughput_mbps_per_gpu"] == 37.5
        # official mode on ParallelCluster 3.16.3: the image's EFA installer 1.51.0 bundles these
        assert plan["software"]["aws_ofi_nccl"] == "1.22.0" and plan["software"]["libfabric"] == "2.7.0amzn2.0"
        assert {k: c["boot"][k] for k in ("image_mode", "installs_at_boot", "estimated_boot_s", "limit_s")} == {
            "image_mode": "official", "installs_at_boot": ["nccl 2.31.2", "nccl-tests"], "estimated_boot_s": 389,
            "limit_s": 2100}
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
        assert "AWS ParallelCluster 3.16.3 official AMI" in res.stdout and "389 s" in res.stdout
        assert "parallelcluster-node-config" in res.stdout and "model:" in res.stdout  # each part with its source


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


def test_plan_cdk_out_of_this_blueprint_lists_its_stacks(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out", (*DEFAULT_STACKS, "unrelated-stack"))
    res = run("plan", str(ROOT / "blueprints" / "default.yaml"), "--cdk-out", str(out), "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["result"]["stacks"] == {n: 2 for n in ("llm-train-network", "llm-train-storage",
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


# ---- SSM targets per orchestrator in the plan (issue 24) ------------------------------------------------
SSM_TARGETS = [
    # (example, blueprint patch, the --target the port-forward command names)
    ("default", {}, "<head-node-instance-id>"),
    ("pcs-p5en", {}, "<login-node-instance-id>"),
    # https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html
    ("hyperpod-p5", {}, "sagemaker-cluster:<cluster-id>_controller-<instance-id>"),
    ("hyperpod-p5", {"orchestrator": {"hyperpod": {"login_instance_type": "ml.m5.4xlarge"}}},
     "sagemaker-cluster:<cluster-id>_controller-<instance-id>"),  # Prometheus runs on the controller, not the login node
]


@pytest.mark.parametrize(("name", "patch", "target"), SSM_TARGETS)
def test_port_forward_commands_name_each_orchestrators_ssm_target(name: str, patch: dict, target: str) -> None:
    from fmcluster.features.observability.endpoints import observability_endpoints
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_text
    from tests.blueprints import example, merge, to_yaml

    bp = merge(example(name), {"observability": {"metrics": "self_hosted", "alert_email": "ops@example.com"}}, patch)
    endpoints = {e.name: e for e in observability_endpoints(resolve(load_blueprint_text(to_yaml(bp)).blueprint))}
    assert f" --target {target} --document-name AWS-StartPortForwardingSession" in endpoints["Grafana (self-hosted)"].access
    assert f" --target {target} --document-name" in endpoints["Prometheus (self-hosted)"].access
# (example, the placeholder ids its plan names as (path, id))
PLACEHOLDERS = [
    ("default", []),
    ("p5en-capacity-block", [("compute[0].capacity.reservation_id", "cr-0123456789abcdef0")]),
    ("pcs-p5en", [("compute[0].capacity.reservation_id", "cr-0123456789abcdef0")]),
    ("p6e-gb200", [("network.vpc_id", "vpc-0123456789abcdef0"), ("network.gpu_subnet_id", "subnet-0123456789abcdef0"),
                   ("software.image.ami_id", "ami-0123456789abcdef0"),
                   ("compute[0].capacity.reservation_id", "cr-0123456789abcdef0")]),
]


@pytest.mark.parametrize(("example", "expected"), PLACEHOLDERS)
def test_plan_names_the_examples_placeholder_ids(example: str, expected: list[tuple[str, str]]) -> None:
    plan = build_plan(resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml")))
    assert [(p["path"], p["id"]) for p in plan.placeholders] == expected
    assert ("placeholders" in plan.as_dict()) is bool(expected)
    text = render_markdown(plan)
    assert ("fmcluster preflight refuses them" in text) is bool(expected)
    for _, value in expected:
        assert value in text


# ---- the in-process synthesis of plan and diff: aws-cdk-lib's built-in CloudFormation validation ------------------
MISSING = object()


@pytest.mark.parametrize(("value", "can_fail"), [(MISSING, False), (False, False), ("false", False), (True, True),
                                                 ("true", True), (1, True), (None, True)],
                         ids=["missing", "false", "false-text", "true", "true-text", "one", "null"])
def test_cloudformation_validate_can_fail_reads_the_context_as_aws_cdk_lib_does(value: object, can_fail: bool) -> None:
    """aws-cdk-lib's getBooleanContext: the default (false) only for a missing key; JSON null is not false."""
    from fmcluster.review.synth import STRICT_DEFAULT_RULES, cloudformation_validate_can_fail

    assert cloudformation_validate_can_fail({} if value is MISSING else {STRICT_DEFAULT_RULES: value}) is can_fail


@pytest.mark.synth
@pytest.mark.parametrize("strict", [False, True], ids=["warnings-only", "strict"])
def test_plan_synthesis_runs_cloudformation_validate_only_when_its_errors_fail_synthesis(tmp_path: Path, strict: bool) -> None:
    """Without the strict context key the plugin's findings are warnings that plan and diff never show, so it does not
    run (no validation report); with it, cdk synth would refuse on its errors and so must plan and diff."""
    from fmcluster.review.synth import STRICT_DEFAULT_RULES, synthesize

    synthesize(load_blueprint(ROOT / "blueprints" / "default.yaml"), str(tmp_path),
               {STRICT_DEFAULT_RULES: True} if strict else {}, "default.yaml")
    report = tmp_path / "validation-report.json"
    assert report.is_file() is strict
    if strict:
        assert [r["pluginName"] for r in json.loads(report.read_text())["pluginReports"]] == ["CloudFormation Validate"]


def test_plan_refuses_what_strict_cloudformation_validate_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the strict key, a template the plugin finds an error in fails synthesis in-process as in cdk synth: a
    SynthesisError that names the finding (plan: exit 1 with the message), not a traceback."""
    import aws_cdk as cdk

    from fmcluster.review.synth import STRICT_DEFAULT_RULES, SynthesisError, synthesize
    from fmcluster.stacks import build

    real = build.build_app

    def with_a_bad_subnet(app: cdk.App, bp: object) -> object:
        stacks = real(app, bp)  # type: ignore[arg-type]
        cdk.CfnResource(stacks.network, "Bad", type="AWS::EC2::Subnet", properties={"VpcId": "vpc-1", "CidrBlock": "x"})
        return stacks

    monkeypatch.setattr(build, "build_app", with_a_bad_subnet)
    with pytest.raises(SynthesisError) as e:
        synthesize(load_blueprint(ROOT / "blueprints" / "default.yaml"), str(tmp_path), {STRICT_DEFAULT_RULES: True},
                   "default.yaml")
    assert e.value.source == "default.yaml"
    assert "(CloudFormation Validate)" in e.value.messages[0] and "llm-train-network/Bad" in e.value.messages[0]


def test_plan_text_never_cuts_a_cell() -> None:
    """Piped (200 columns), the capacity table's cells fold instead of ending in an ellipsis: the reservation id is the
    value a user checks."""
    res = run("plan", str(ROOT / "blueprints" / "p5en-capacity-block.yaml"))
    assert res.exit_code == 0, res.output
    assert "\u2026" not in res.stdout
