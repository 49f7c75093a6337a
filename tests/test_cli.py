"""The fmcluster command: validate (exit codes, path-qualified problems, no tracebacks), the preflight summary
line, and render FILE --out DIR. Plan: test_plan.py; diff: test_diff.py; preflight: test_preflight.py."""

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


@pytest.mark.parametrize("args", [("--json",), ("--format", "json")])
def test_plan_json_of_an_invalid_blueprint_is_the_envelope(tmp_path: Path, args: tuple[str, ...]) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}]}))
    res = CliRunner().invoke(app, ["plan", str(f), *args])
    assert res.exit_code == 1
    report = json.loads(res.stdout)
    assert (report["command"], report["ok"], report["result"]) == ("plan", False, None)
    assert [(p["file"], p["path"], p["severity"], p["value"]) for p in report["problems"]] == [
        (str(f), "compute[0].instance_type", "error", "p5.48xlarg")]


#: The keys of every problem in a ``--json`` envelope (fmcluster.output.problem_json).
PROBLEM_KEYS = ["file", "path", "line", "value", "message", "severity", "rule_id", "source"]


def test_validate_and_plan_json_share_one_envelope(tmp_path: Path) -> None:
    """``validate --json`` and ``plan --json`` print the same object shape, problems included (a warning here)."""
    f = tmp_path / "warn.yaml"
    f.write_text(blueprint_text({"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0",
                                             "vpc_cidr": "10.1.0.0/16"}}))
    validated = json.loads(run("validate", "--json", str(f)).stdout)
    assert list(validated) == ["command", "ok", "problems", "result"]
    assert (validated["command"], validated["ok"], validated["result"]) == ("validate", True, [{"file": str(f), "valid": True}])
    [warning] = [p for p in validated["problems"] if p["rule_id"] == "R-NET-2"]
    assert list(warning) == PROBLEM_KEYS
    assert (warning["path"], warning["severity"], warning["value"]) == ("network.vpc_cidr", "warning", "10.1.0.0/16")


def test_diff_json_of_an_invalid_blueprint_is_the_envelope(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}]}))
    res = CliRunner().invoke(app, ["diff", str(bad), str(bad), "--json"])
    assert res.exit_code == 2
    report = json.loads(res.stdout)
    assert (report["command"], report["ok"], report["result"]) == ("diff", False, None)
    assert [(p["path"], p["severity"]) for p in report["problems"]] == [("compute[0].instance_type", "error")]


@pytest.mark.parametrize(("message", "value"), [
    ("unknown instance type, got 'p5.48xlarg'; allowed p5.48xlarge", "p5.48xlarg"),
    ("out of range, got 91; allowed <= 90", 91),
    ("out of range, got 1.5; allowed <= 1", 1.5),
    ("required with vpc_id 'vpc-1', got nothing", None),  # prose, not a value
    ("invalid capacity, got 3000 GiB; allowed 1200", 3000),
    ("must be a finite number, got 1e999; allowed", "1e999"),  # JSON has no infinity: the text as written
    ("overlapping, got ['a', 'b']; allowed distinct names", ["a", "b"]),
    ("a blueprint must name a receiver", None),
    ("a Local Zone, got 'us-east-1-dfw-2a': its NAT gateway would be created there; allowed x", "us-east-1-dfw-2a"),
    ("alerts reach nobody, got none; allowed alert_email", None),
    ("assumed, got no stack; allowed the stack", None),
    ("unverified layout, got 17 network cards with EFA on 16 of them; allowed as is", None),
    ("ends before it starts, got 2026-12-13T11:30:00+00:00 <= 2026-12-14T11:30:00+00:00; allowed", None),
    ("too many, got 40 tags (39 in the blueprint, 1 from the organisation file's defaults.tags: team); allowed", 40),
    ("wrong number of items, got 41 (40 in the blueprint, 1 from the organisation file's defaults.tags: team)", 41),
    ("wrong, got 40 tags (39 in the blueprint) and more; allowed", None),  # prose after the parts
], ids=["quoted", "number", "decimal", "prose-at-the-end", "with-unit", "infinite", "list", "none", "quoted-then-prose",
        "none-word", "no-stack", "prose", "comparison", "count-then-parts", "number-then-parts", "parts-then-prose"])
def test_problem_value_is_what_the_message_quotes(message: str, value: str | None) -> None:
    from fmcluster.output import problem_value

    assert problem_value(message) == value


@pytest.mark.parametrize("command", [(), ("validate",), ("plan",), ("render",), ("diff",), ("preflight",), ("topology",)])
def test_help_shows_no_type_after_a_flag(command: tuple[str, ...]) -> None:
    """A flag takes no value, so its help row names no type (typer shows ``<bool>`` by default)."""
    res = run(*command, "--help")
    assert res.exit_code == 0, res.output
    assert "<bool>" not in res.output
    assert "--help" in res.output


@pytest.mark.parametrize(("args", "code", "page"), [
    (["validate", "--help"], 0, "Usage: root validate"),
    (["plan", "FILE", "--help"], 0, "Usage: root plan"),
    (["catalog", "--help"], 0, "Usage: root catalog"),
    (["image", "lookup", "--help"], 0, "Usage: root image lookup"),
    (["image", "--help"], 0, "Usage: root image"),
    (["--org", "none", "validate", "--help"], 0, "Usage: root validate"),
    (["--org", "nope.yaml", "validate", "--help"], 0, "Usage: root validate"),
    # not help: a file named --help after --, and a run of the command, still refuse the missing file
    (["validate", "--", "--help"], 2, "Invalid value for FMCLUSTER_ORG: no such file"),
    (["validate", "BP"], 2, "Invalid value for FMCLUSTER_ORG: no such file"),
], ids=["validate", "plan-after-an-argument", "catalog", "subcommand-of-a-group", "group", "org-none", "org-missing",
        "after-double-dash", "a-run"])
def test_help_prints_whatever_the_org_variable_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     args: list[str], code: int, page: str) -> None:
    """Help always prints and exits 0 (deploy review item 4): the root checks the organisation file before click
    parses the command's own options, so it must let a help request through; a run still refuses a missing file."""
    from fmcluster.validation.organisation import ORG_ENV, use_organisation

    bp = tmp_path / "bp.yaml"
    bp.write_text(blueprint_text())
    monkeypatch.setenv(ORG_ENV, str(tmp_path / "nope.yaml"))
    try:
        res = run(*[str(bp) if a == "BP" else str(tmp_path / a) if a == "nope.yaml" else a for a in args])
    finally:
        use_organisation(None)
    assert (res.exit_code, page in (res.stdout if code == 0 else res.stderr)) == (code, True), res.output


def test_topology_says_why_a_node_line_is_ignored(tmp_path: Path) -> None:
    """``topology --nodes``: a line it cannot use is reported on standard error with its line number, never dropped
    silently."""
    instances = tmp_path / "instances.json"
    instances.write_text(json.dumps({"Instances": [{"InstanceId": "i-0123456789abcdef0", "InstanceType": "p5.48xlarge",
                                                    "NetworkNodes": ["nn-1", "nn-2", "nn-3"]}]}))
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("i-0123456789abcdef0 gpu-1\ni-0123456789abcdef1\n")
    res = CliRunner().invoke(app, ["topology", "--instances", str(instances), "--nodes", str(nodes)])
    assert res.exit_code == 0, res.output
    assert "nodes line 2: an instance id without a node name" in " ".join(res.stderr.split())


def test_validate_three_mistakes_prints_three_path_qualified_errors(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(blueprint_text({"region": "us-east-1", "availability_zone": "us-west-2a",
                                 "compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}],
                                 "storage": {"lustre": {"storage_capacity_gib": 3000}}}))
    res = run("validate", "--json", str(f))
    assert res.exit_code == 1
    report = json.loads(res.stdout)
    assert [p["path"] for p in report["problems"]] == [
        "availability_zone", "compute[0].instance_type", "storage.lustre.storage_capacity_gib"]


@pytest.mark.parametrize(("command", "argument", "says"), [
    (["validate"], "does-not-exist.yaml", "no such file, got 'does-not-exist.yaml'"),
    (["validate"], "blueprints", "a folder, got 'blueprints'"),
    (["plan"], "", "(an empty argument reads as the current folder)"),
    (["render", "--out", "/tmp/fmcluster-never-written"], "nope.yaml", "no such file, got 'nope.yaml'"),
    (["preflight"], "does-not-exist.yaml", "no such file"),
    (["image", "lookup"], "does-not-exist.yaml", "no such file"),
])
def test_a_blueprint_argument_that_cannot_be_read_is_could_not_run(command: list[str], argument: str, says: str) -> None:
    """Missing, a folder or blank: nothing was read, so exit 2 (could not run), for every command, never 1."""
    res = run(*command, argument) if command[0] != "render" else run("render", argument, *command[1:])
    assert res.exit_code == 2, res.output
    assert says in _flat(res.output), res.output
    assert "Traceback" not in res.output


def _flat(text: str) -> str:
    """``text`` without rich's box drawing and line wrapping."""
    import re

    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_a_file_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    res = run("validate", str(bad))
    assert res.exit_code == 1
    assert "not UTF-8 text, got byte 0xe9 at byte offset 9; allowed a UTF-8 file" in _flat(res.output)


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
def assert_clean_error(res, *fragments: str) -> None:  # noqa: ANN001
    """The command could not run (a bad output folder, a wrong --cdk-out): exit 2, a clear message, no traceback."""
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    text = " ".join(res.stderr.split())
    for f in fragments:
        assert f in text, text


def test_render_writes_every_script_of_every_group(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["render", str(ROOT / "blueprints/default.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "gpu").iterdir()) == [
        "bootstrap.sh", "fmcluster-node-check", "fsdp-train.py", "fsdp-train.sbatch", "job-env.sh", "nccl-tests.sbatch",
        "versions.txt"]
    assert (tmp_path / "gpu/bootstrap.sh").stat().st_mode & 0o111
    versions = (tmp_path / "gpu/versions.txt").read_text()
    assert "aws_ofi_nccl: 1.22.0\n" in versions and "libfabric: 2.7.0amzn2.0\n" in versions


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


@pytest.mark.parametrize("args", [
    ["render", "blueprints/default.yaml", "--out", ""],
    ["render", "blueprints/default.yaml", "--out", " "],
    ["--org", "", "validate", "blueprints/default.yaml"],
    ["--org", "  ", "plan", "blueprints/default.yaml"],
], ids=["out-empty", "out-space", "org-empty", "org-space"])
def test_blank_path_arguments_are_refused_and_write_nothing(args: list[str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank path is "could not run" (exit 2), never the current folder, a folder named by a space or "no
    organisation file" (issue 26)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blueprints").mkdir()
    (tmp_path / "blueprints" / "default.yaml").write_text((ROOT / "blueprints" / "default.yaml").read_text())
    before = sorted(p.name for p in tmp_path.rglob("*"))
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "is blank" in r.output, r.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


# ---- --json: the same envelope for a usage error as for a validation failure -----------------------------------
DEFAULT_BP = str(ROOT / "blueprints" / "default.yaml")


@pytest.mark.parametrize(("args", "command", "says", "file"), [
    (["validate", "--json", "blueprints"], "validate", "a folder, got 'blueprints'", "blueprints"),
    (["validate", "--json", ""], "validate", "(an empty argument reads as the current folder)", "."),
    (["validate", "--json"], "validate", "Missing argument 'files'", None),
    (["validate", "--json", "--bogus", DEFAULT_BP], "validate", "No such option: --bogus", None),
    (["plan", "-f", "json", "nope.yaml"], "plan", "no such file, got 'nope.yaml'", "nope.yaml"),
    (["plan", DEFAULT_BP, "--format=json", "--checkpoint-gib", "0"], "plan", "--checkpoint-gib", None),
    (["diff", "nope.yaml", DEFAULT_BP, "--json"], "diff", "no such file or folder, got 'nope.yaml'", "nope.yaml"),
    (["preflight", DEFAULT_BP, "--json", "--until"], "preflight", "'--until' requires an argument", None),
    (["--org", " ", "validate", "--json", DEFAULT_BP], "validate", "--org is blank", None),
    (["image", "lookup", DEFAULT_BP, "--json"], "image lookup", "No such option: --json", None),
    (["render", DEFAULT_BP, "--json"], "render", "No such option: --json", None),  # a command without JSON output
], ids=["folder", "blank", "missing-argument", "unknown-option", "no-file", "out-of-range", "diff-no-file",
        "option-without-value", "blank-org", "subcommand", "no-json-output"])
def test_a_usage_error_with_json_prints_the_envelope(args: list[str], command: str, says: str, file: str | None) -> None:
    res = run(*args)
    assert res.exit_code == 2, res.output
    report = json.loads(res.stdout)
    assert list(report) == ["command", "ok", "problems", "result"]
    assert (report["command"], report["ok"], report["result"]) == (command, False, None)
    [problem] = report["problems"]
    assert list(problem) == PROBLEM_KEYS
    assert (problem["file"], problem["rule_id"], problem["severity"]) == (file, "usage", "error")
    assert says in problem["message"], problem
    assert says in _flat(res.stderr)  # typer's own message stays on standard error
    if says != "No such option: --json":  # that error is --json itself
        without = run(*[a for a in args if a not in ("--json", "json", "-f", "--format=json")])
        assert without.exit_code == 2 and without.stdout == ""  # no --json, no envelope


@pytest.mark.parametrize(("args", "says"), [
    (["plan", DEFAULT_BP, "--cdk-out", "/nonexistent-cdk-out", "--json"], "/nonexistent-cdk-out"),
    (["diff", "blueprints", "blueprints", "--json"], "blueprints"),
    (["preflight", DEFAULT_BP, "--until", "soon", "--json"], "--until must be a date, got 'soon'"),
], ids=["plan-cdk-out", "diff-not-an-assembly", "preflight-until"])
def test_an_input_error_with_json_prints_the_envelope(args: list[str], says: str) -> None:
    """Could not run (exit 2) for a reason that is not the blueprint's: the envelope too, with the message (preflight's
    result keeps its could_not_run verdict)."""
    res = run(*args)
    assert res.exit_code == 2, res.output
    report = json.loads(res.stdout)
    assert report["ok"] is False and (report["result"] is None or report["result"]["verdict"] == "could_not_run")
    assert [(p["rule_id"], says in p["message"]) for p in report["problems"]][-1] == ("input", True), report


@pytest.mark.parametrize(("patch", "path", "value"), [
    ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}]}, "compute[0].instance_type", "p5.48xlarg"),
    ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 1.5}]}, "compute[0].count", 1.5),
    ({"storage": {"checkpoints": {"bucket": "create", "versioned": "maybe"}}}, "storage.checkpoints.versioned", "maybe"),
    ({"storage": {"lustre": {"deployment_type": "PERSISTENT_3"}}}, "storage.lustre.deployment_type", "PERSISTENT_3"),
    ({"region": "us-esat-1"}, "region", "us-esat-1"),  # a rule's message: read back without its quotes
    ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "capacity": {"type": "odcrr"}}]},
     "compute[0].capacity.type", "odcrr"),
], ids=["text", "number", "boolean-field", "literal", "rule", "union-tag"])
def test_json_value_is_the_value_itself(tmp_path: Path, patch: dict, path: str, value: object) -> None:
    """``value`` carries the value as JSON (``"p5.48xlarg"``, ``1.5``), not its Python repr (``"'p5.48xlarg'"``)."""
    f = tmp_path / "bad.yaml"
    f.write_text(blueprint_text(patch))
    report = json.loads(run("validate", "--json", str(f)).stdout)
    assert [p["value"] for p in report["problems"] if p["path"] == path] == [value], report["problems"]


@pytest.mark.parametrize(("nodes", "says"), [
    ('{"i-0123456789abcdef0": "gpu-1"}', "text, not a path, got '{\"i-0123456789abcdef0\": \"gpu-1\"}'"),
    ("[]", "text, not a path"),
    ("tests", "a folder, got 'tests'"),
    ("nope.txt", "no such file, got 'nope.txt'"),
    (" ", "the path is blank"),
], ids=["json-object", "json-list", "folder", "missing", "blank"])
def test_topology_nodes_takes_a_file_and_nothing_else(nodes: str, says: str) -> None:
    """``--nodes`` is a file (its help says so); JSON text, a folder, a missing or blank path: exit 2, nothing read."""
    assert "File: the map instance id -> Slurm node name" in _flat(run("topology", "--help").stdout)
    instances = str(ROOT / "tests/fixtures/topology/partial.instances.json")
    res = run("topology", "--instances", instances, "--nodes", nodes)
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert says in _flat(res.stderr), res.stderr
