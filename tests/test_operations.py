"""Day 2: ``fmcluster --version``, the cluster stack's access outputs per orchestrator, ``fmcluster diff``'s exit
codes and labels, ``make synth`` leaving only the chosen blueprint in cdk.out, docs/operations.md."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fmcluster.cli import app
from tests.blueprints import example, merge, to_yaml
from tests.conftest import ROOT, synth_templates

FIXTURES = ROOT / "tests" / "fixtures" / "diff"
DEFAULT = example("default")


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


# ---- --version ---------------------------------------------------------------------------------------
def test_version_prints_the_installed_version() -> None:
    r = run("--version")
    assert (r.exit_code, r.stdout.strip()) == (0, f"fmcluster {version('fmcluster')}")


# ---- stack outputs: the cluster name and the way to the head / login node --------------------------------
def _outputs(example: str) -> tuple[str, dict[str, Any]]:
    text = (ROOT / "blueprints" / f"{example}.yaml").read_text()
    templates = synth_templates(text)
    name = next(s for s in templates if s.endswith("-cluster"))
    return name.removesuffix("-cluster"), templates[name]["Outputs"]


@pytest.mark.synth
def test_parallelcluster_outputs_head_node_from_the_custom_resource_attributes() -> None:
    name, out = _outputs("default")
    assert out["ClusterName"]["Value"] == name
    assert out["HeadNodeInstanceId"]["Value"]["Fn::GetAtt"][1] == "headNode.instanceId"
    assert out["HeadNodePrivateIp"]["Value"]["Fn::GetAtt"][1] == "headNode.privateIpAddress"
    target = out["HeadNodeInstanceId"]["Value"]
    parts = out["ConnectCommand"]["Value"]["Fn::Join"][1]
    assert parts == ["aws ssm start-session --region us-east-1 --target ", target]
    # the attribute belongs to the one Custom::PclusterCluster resource
    templates = synth_templates((ROOT / "blueprints" / "default.yaml").read_text())
    resources = templates[f"{name}-cluster"]["Resources"]
    assert resources[target["Fn::GetAtt"][0]]["Type"] == "Custom::PclusterCluster"


@pytest.mark.synth
def test_hyperpod_outputs_the_list_command_and_ssm_target_prefix() -> None:
    name, out = _outputs("hyperpod-p5")
    assert out["ClusterName"]["Value"] == name
    assert out["ListNodesCommand"]["Value"].startswith(f"aws sagemaker list-cluster-nodes --region us-east-1 --cluster-name {name} ")
    prefix = out["SsmTargetPrefix"]["Value"]["Fn::Join"][1]
    assert prefix[0] == "sagemaker-cluster:"
    assert prefix[1]["Fn::Select"][0] == 1 and prefix[1]["Fn::Select"][1]["Fn::Split"][0] == "/"
    assert prefix[2] in ("_controller-", "_login-")
    assert prefix[2].strip("_-") in out["ListNodesCommand"]["Value"]


@pytest.mark.synth
def test_pcs_outputs_the_login_node_group_and_a_connect_command() -> None:
    name, out = _outputs("pcs-p5en")
    assert out["ClusterName"]["Value"] == name
    group = out["LoginNodeGroupId"]["Value"]
    assert group["Fn::GetAtt"][1] == "Id"
    find = out["FindLoginNodeCommand"]["Value"]["Fn::Join"][1]
    assert find == [
        "aws ec2 describe-instances --region us-east-2 --filters Name=tag:aws:pcs:compute-node-group-id,Values=", group,
        " Name=instance-state-name,Values=running --query Reservations[].Instances[].InstanceId --output text"]
    connect = out["ConnectCommand"]["Value"]["Fn::Join"][1]
    assert connect == ["aws ssm start-session --region us-east-2 --target $(" + find[0], group, find[2] + ")"]


# ---- diff: exit codes and the names in the report --------------------------------------------------------
def test_diff_usage_error_exits_2() -> None:
    assert run("diff", str(FIXTURES / "old")).exit_code == 2
    assert run("diff", str(FIXTURES / "old"), str(FIXTURES / "new"), "--format", "html").exit_code == 2


def test_diff_labels_replace_the_paths_in_every_format(tmp_path: Path) -> None:
    old = Path(shutil.copytree(FIXTURES / "old", tmp_path / "tmp-old-cdk.out"))
    md = run("diff", str(old), str(FIXTURES / "new"), "-f", "markdown",
             "--old-label", "blueprints/demo.yaml@main", "--new-label", "blueprints/demo.yaml")
    assert md.exit_code == 1, md.output
    head = md.stdout.splitlines()[0]
    assert "fmcluster diff blueprints/demo.yaml@main -> blueprints/demo.yaml:" in head
    assert str(tmp_path) not in md.stdout
    js = run("diff", str(old), str(FIXTURES / "new"), "--json", "--old-label", "a", "--new-label", "b")
    assert '"old": "a"' in js.stdout and '"new": "b"' in js.stdout


# ---- make synth: cdk.out holds only the chosen blueprint ------------------------------------------------------
NPX_STUB = """#!/usr/bin/env bash
# Stub of `npx cdk synth --quiet -c blueprint=FILE -o DIR`: like the CDK CLI it writes the app's templates
# into DIR and leaves every other file there alone.
set -euo pipefail
[[ "$1" == cdk && "$2" == synth ]] || { echo "unexpected: $*" >&2; exit 64; }
bp="" out="cdk.out"
while (($#)); do
  case "$1" in
    -c) bp="${2#blueprint=}"; shift ;;
    -o) out="$2"; shift ;;
  esac
  shift
done
name=$(sed -n 's/^name: *//p' "$bp")
mkdir -p "$out"
for s in network storage cluster; do echo '{}' > "$out/$name-$s.template.json"; done
"""
FMCLUSTER_STUB = """#!/usr/bin/env bash
echo "plan $*"
"""


def test_make_synth_empties_cdk_out_first(tmp_path: Path) -> None:
    """Runs the real Makefile's synth target with npx and fmcluster stubbed (venv and node_modules up to date)."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for f in ("pyproject.toml", "package.json", "package-lock.json"):
        (tmp_path / f).write_text("")
    for d, name, text in ((".venv/bin", "fmcluster", FMCLUSTER_STUB), ("node_modules/.bin", "npx", NPX_STUB)):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / name).write_text(text)
        (tmp_path / d / name).chmod(0o755)
    for marker in (".venv/.installed", "node_modules/.installed"):
        (tmp_path / marker).touch()
    (tmp_path / "a.yaml").write_text("name: alpha\n")
    (tmp_path / "b.yaml").write_text("name: beta\n")
    env = {**os.environ, "MAKEFLAGS": ""}
    for bp in ("a.yaml", "b.yaml"):
        proc = subprocess.run(["make", "--no-print-directory", "synth", f"BLUEPRINT={bp}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "cdk.out").iterdir()) == [
        "beta-cluster.template.json", "beta-network.template.json", "beta-storage.template.json"]
    assert proc.stdout.strip().splitlines()[-1] == "plan plan b.yaml --cdk-out cdk.out"


# ---- docs/operations.md -----------------------------------------------------------------------------------
def test_operations_doc_covers_day_two_and_names_every_access_output() -> None:
    from fmcluster.stacks import access_outputs

    doc = (ROOT / "docs" / "operations.md").read_text()
    for heading in ("## Connect", "## A first job", "## Scale", "## Update: what replaces nodes", "## Teardown",
                    "## Upgrading to a new image"):
        assert heading in doc, heading
    for const in dir(access_outputs):
        if const.startswith("OUTPUT_"):
            assert f"`{getattr(access_outputs, const)}`" in doc, const


def test_scaled_default_still_synthesizes_outputs() -> None:
    """A changed count keeps the outputs (they do not depend on the compute groups)."""
    text = to_yaml(merge(DEFAULT, {"compute": [{**DEFAULT["compute"][0], "count": 2}]}))
    out = synth_templates(text)
    cluster = next(t for n, t in out.items() if n.endswith("-cluster"))
    assert {"ClusterName", "HeadNodeInstanceId", "HeadNodePrivateIp", "ConnectCommand"} <= set(cluster["Outputs"])
