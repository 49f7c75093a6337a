"""Every example blueprint is a test: loads, synthesizes with no credentials and no lookups, passes cfn-lint and
cdk-nag, its ParallelCluster config loads with ParallelCluster's own schema, the bootstrap scripts it
stages are the pinned, shellcheck-clean rendered ones, and synthesis is deterministic.

Each example is synthesized by app.py's own ``synthesize`` in-process with the context the CDK CLI passes
(``tests.conftest.example_synth``); the default example also goes through ``npx cdk synth`` itself, and the two cloud
assemblies are compared byte for byte, so the in-process path is the CLI's path."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from fmcluster.catalog.software import get_stack
from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint
from tests.conftest import EXAMPLES, ROOT, cli_synth, example_synth

#: One xdist group per example (tests/conftest.py): the tests of one blueprint share its cached CLI synthesis on one
#: worker, and different blueprints run on different workers.
PER_EXAMPLE = [pytest.param(p, id=p.stem, marks=pytest.mark.xdist_group(f"example-{p.stem}")) for p in EXAMPLES]


def test_there_are_examples_for_p5_p5en_and_p6_b200() -> None:
    types = {g.instance_type for p in EXAMPLES for g in load_blueprint(p).compute}
    assert {"p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"} <= types


@pytest.mark.parametrize("blueprint", PER_EXAMPLE)
def test_synth_succeeds_with_no_credentials_and_no_placeholder_azs(blueprint: Path) -> None:
    """No AWS_* variable, no cdk.context.json, no lookup: a bake's parent AMI is found at deploy time (issue 23)."""
    assert not (ROOT / "cdk.context.json").exists()
    out, proc = example_synth(blueprint)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = "".join(p.read_text() for p in out.glob("*.template.json"))
    assert "dummy1a" not in text and "Fn::GetAZs" not in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert "missing" not in manifest


@pytest.mark.xdist_group("example-default")
def test_cdk_cli_synth_succeeds_with_no_credentials_and_no_toolchain_noise() -> None:
    """The CLI path users take (``npx cdk synth``, no AWS_* variable): exit 0, nothing missing, and no construct stack
    trace line ("<tmp>/lib/program.js:1:5591") printed with each annotation."""
    out, proc = cli_synth(ROOT / "blueprints" / "default.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "missing" not in json.loads((out / "manifest.json").read_text())
    assert not re.search(r"program\.js:\d+:\d+", proc.stdout + proc.stderr)


@pytest.mark.parametrize("blueprint", PER_EXAMPLE)
def test_cfn_lint_reports_no_errors(blueprint: Path) -> None:
    out, proc = example_synth(blueprint)
    assert proc.returncode == 0
    region = load_blueprint(blueprint).region
    lint = subprocess.run([str(ROOT / ".venv/bin/cfn-lint"), "--regions", region, "--format", "parseable", "--",
                           *map(str, sorted(out.glob("*.template.json")))], capture_output=True, text=True)
    errors = [line for line in lint.stdout.splitlines() if ":E" in line]
    assert errors == []
    assert lint.returncode & 2 == 0  # bit 2 = errors (warnings are bit 4)


@pytest.mark.parametrize("blueprint", PER_EXAMPLE)
def test_cdk_nag_has_no_unacknowledged_findings(blueprint: Path) -> None:
    out, _ = example_synth(blueprint)
    report = json.loads((out / "validation-report.json").read_text())
    nag = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    assert all(p["violations"] == [] for p in nag)
    for p in report["pluginReports"]:
        for v in p.get("suppressedViolations", []):
            assert v.get("reason")


@pytest.mark.parametrize("blueprint", PER_EXAMPLE)
def test_parallelcluster_config_loads_with_parallelclusters_own_schema(blueprint: Path) -> None:
    out, _ = example_synth(blueprint)
    configs = sorted(out.glob("*.pcluster-config.yaml"))
    if load_blueprint(blueprint).orchestrator.kind != "parallelcluster":
        assert configs == []
        return
    assert len(configs) == 1
    proc = subprocess.run([str(ROOT / ".venv-pcluster/bin/python"), str(ROOT / "tools/pcluster_schema_check.py"),
                           str(configs[0])], capture_output=True, text=True, timeout=120)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"], result["errors"]


@pytest.mark.xdist_group("example-default")
def test_in_process_synthesis_writes_what_the_cdk_cli_writes() -> None:
    """Determinism and the honesty of :func:`example_synth` at once: two syntheses of the default example, one by
    ``npx cdk synth`` and one by app.py's ``synthesize`` in-process, give byte-identical templates, assets, cdk-nag
    report and ParallelCluster config."""
    cli, _ = cli_synth(ROOT / "blueprints" / "default.yaml")
    app, _ = example_synth(ROOT / "blueprints" / "default.yaml")
    compared = ("*.template.json", "*.pcluster-config.yaml", "asset.*", "validation-report.json")
    names = sorted(p.name for pattern in compared for p in cli.glob(pattern))
    assert names == sorted(p.name for pattern in compared for p in app.glob(pattern))
    assert any(n.endswith(".template.json") for n in names) and any(n.startswith("asset.") for n in names)
    for name in names:
        if (cli / name).is_file():
            assert (cli / name).read_bytes() == (app / name).read_bytes(), name
        else:
            files = sorted(f.relative_to(cli / name) for f in (cli / name).rglob("*") if f.is_file())
            assert files == sorted(f.relative_to(app / name) for f in (app / name).rglob("*") if f.is_file()), name
            assert all((cli / name / f).read_bytes() == (app / name / f).read_bytes() for f in files), name


# ---- the bootstrap scripts synthesis stages as S3 assets are the rendered, pinned scripts --------
@pytest.mark.parametrize("blueprint", PER_EXAMPLE)
def test_staged_bootstrap_assets_are_pinned_and_shellcheck_clean(blueprint: Path) -> None:
    out, proc = example_synth(blueprint)
    assert proc.returncode == 0
    # ParallelCluster and PCS stage bootstrap.sh (and the head-node script) as file assets; HyperPod stages a
    # folder of lifecycle scripts (the head-node script in the controller's folder).
    staged = sorted([*out.glob("asset.*.sh"), *out.glob("asset.*/*/bootstrap.sh"), *out.glob("asset.*/*/head-node.sh")])
    scripts = [p for p in staged if "# fmcluster bootstrap for" in p.read_text()]
    bp = load_blueprint(blueprint)
    assert len(scripts) == len({g.name for g in bp.compute})
    stack = get_stack(bp.software.stack)
    for script in scripts:
        text = script.read_text()
        assert text.startswith("#!/usr/bin/env bash")
        for version in (stack.driver, stack.cuda, stack.nccl, stack.efa_installer, stack.gdrcopy):
            assert version in text
    # The bootstraps and the head node's observability script are byte for byte what render_blueprint gives, which
    # tests/test_render.py runs through bash -n and shellcheck for every example; the other staged scripts (Lustre
    # mount, Slurm-side scripts) are checked here.
    rendered = {text for scripts_of in render_blueprint(bp).values() for text in scripts_of.values()}
    assert all(p.read_text() in rendered for p in scripts)
    others = [str(p) for p in staged if p.read_text() not in rendered]
    assert all(subprocess.run(["bash", "-n", p]).returncode == 0 for p in others)
    if others:
        check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", *others], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout
    # PCS also stages its Lustre mount lifecycle script (checked above, not a head-node script)
    # the Slurm-side scripts of ParallelCluster's head and compute nodes (topology, hooks, containers) are checked above too
    slurm_side = ("Slurm topology refresh", "a first /opt/slurm", "Slurm TaskProlog", "enroot + pyxis",
                  "draining health check",  # the PCS Slurm hooks lifecycle script
                  "head-node actions for AWS ParallelCluster",  # the launcher of the head node's steps (SSM)
                  "install the acceptance gate's watcher")  # the gate watcher's installer (admin-node script)
    head = [p for p in staged if p not in scripts and "fmcluster: mount FSx for Lustre" not in p.read_text()
            and not any(marker in p.read_text().splitlines()[1] for marker in slurm_side)]
    eks = bp.orchestrator.kind == "hyperpod" and bp.orchestrator.hyperpod.orchestration == "eks"
    assert len(head) == (1 if bp.observability.enabled and not eks else 0)
    assert all("metrics exporters for" in p.read_text() and "head node." in p.read_text() for p in head)
