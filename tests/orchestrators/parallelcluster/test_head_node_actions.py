"""The head node's custom actions never change, so ParallelCluster accepts updates that change a head-node script.

ParallelCluster's update policy for ``HeadNode.CustomActions.OnNodeStart`` and ``OnNodeConfigured`` is UNSUPPORTED
(``data/update_policies.yaml``, from aws-parallelcluster's schema): fmcluster names only a constant launcher there,
keeps the steps in SSM parameters, and re-runs the configured steps from ``OnNodeUpdated`` (SUPPORTED). The rendered
launcher runs here against a stub ``aws`` that serves the parameter and the scripts.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from fmcluster.orchestrators.parallelcluster.review_update import verdicts
from fmcluster.templates.render import render
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates

#: The default test cluster and one whose head-node scripts differ (another instance type: other node names in the
#: topology placeholder, another compute resource).
BASE = blueprint_text()
OTHER = blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5en.48xlarge", "count": 2}]})


def _cluster(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    t = synth_templates(text)["t-cluster-cluster"]
    [config] = cluster_configurations(t).values()
    return t, config


def test_head_node_phases_name_only_the_launcher() -> None:
    t, config = _cluster(BASE)
    actions = config["HeadNode"]["CustomActions"]
    params = {p["Properties"]["Name"]: p["Properties"]["Value"] for p in resources_of(t, "AWS::SSM::Parameter").values()}
    start, configured, updated = actions["OnNodeStart"], actions["OnNodeConfigured"], actions["OnNodeUpdated"]
    assert start["Script"] == configured["Script"] == updated["Script"]
    assert start["Args"] == ["/fmcluster/t-cluster/head-node/OnNodeStart", "us-east-1"]
    assert configured["Args"] == ["/fmcluster/t-cluster/head-node/OnNodeConfigured", "us-east-1"]
    assert updated["Args"][:2] == configured["Args"] and len(updated["Args"][2]) == 16
    assert set(params) == {"/fmcluster/t-cluster/head-node/OnNodeStart", "/fmcluster/t-cluster/head-node/OnNodeConfigured"}
    [cluster] = resources_of(t, "Custom::PclusterCluster").values()
    param_ids = set(resources_of(t, "AWS::SSM::Parameter"))
    assert param_ids <= set(cluster.get("DependsOn", []))  # the steps are in place before ParallelCluster reads them


def test_a_head_node_script_change_is_an_update_parallelcluster_allows() -> None:
    (_, old), (_, new) = _cluster(BASE), _cluster(OTHER)
    found = {v.change.setting: v.kind for v in verdicts(old, new, "us-east-1")}
    assert not any(s.startswith("HeadNode.CustomActions.OnNode" + p) for s in found for p in ("Start", "Configured"))
    assert found["HeadNode.CustomActions.OnNodeUpdated.Args"] == "in_place"  # the new revision re-runs the steps
    assert "fails" not in found.values()


#: Stub ``aws``: ``ssm get-parameter`` prints the parameter file, ``s3 cp URL DEST`` copies from the bucket folder.
STUB_AWS = """#!/usr/bin/env bash
echo "aws $*" >> "$STUB_LOG"
case "$1 $2" in
  "ssm get-parameter") cat "$STUB_PARAM" ;;
  "s3 cp") src="${@: -2:1}"; cp "$STUB_BUCKET/${src#s3://bucket/}" "${@: -1}" ;;
  *) exit 2 ;;
esac
"""


def _run_launcher(tmp_path: Path, steps: list[dict[str, Any]], scripts: dict[str, str],
                  revision: str = "abc") -> subprocess.CompletedProcess[str]:
    launcher = tmp_path / "head-node-actions.sh"
    launcher.write_text(render("parallelcluster/head-node-actions.sh.j2", {}))
    bucket, bin_dir = tmp_path / "bucket", tmp_path / "bin"
    bucket.mkdir(exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        (bucket / name).write_text(body)
    (tmp_path / "param.json").write_text(json.dumps(steps))
    (bin_dir / "aws").write_text(STUB_AWS)
    (bin_dir / "aws").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(tmp_path / "aws.log"), "STUB_PARAM": str(tmp_path / "param.json"),
           "STUB_BUCKET": str(bucket), "OUT": str(tmp_path / "out.txt"),
           "FMC_HEAD_NODE_STATE": str(tmp_path / "state" / "revision")}
    return subprocess.run(["bash", str(launcher), "/fmcluster/c/head-node/OnNodeConfigured", "us-east-1", revision],
                          env=env, capture_output=True, text=True, timeout=60)


def test_launcher_runs_each_step_in_order_with_its_arguments(tmp_path: Path) -> None:
    steps = [{"Script": "s3://bucket/a.sh"}, {"Script": "s3://bucket/b.sh", "Args": ["/scratch", "two words"]}]
    scripts = {"a.sh": 'echo "a $#" >> "$OUT"\n', "b.sh": 'echo "b $1|$2" >> "$OUT"\n'}
    proc = _run_launcher(tmp_path, steps, scripts)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").read_text().splitlines() == ["a 0", "b /scratch|two words"]
    assert "2 step(s) done" in proc.stdout


def test_a_step_that_reads_standard_input_does_not_swallow_the_others(tmp_path: Path) -> None:
    steps = [{"Script": "s3://bucket/a.sh"}, {"Script": "s3://bucket/b.sh"}]
    proc = _run_launcher(tmp_path, steps, {"a.sh": 'cat > /dev/null; echo a >> "$OUT"\n', "b.sh": 'echo b >> "$OUT"\n'})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").read_text().splitlines() == ["a", "b"]


def test_an_update_with_the_applied_revision_runs_nothing_again(tmp_path: Path) -> None:
    steps = [{"Script": "s3://bucket/a.sh"}]
    scripts = {"a.sh": 'echo a >> "$OUT"\n'}
    for revision in ("r1", "r1", "r2"):
        assert _run_launcher(tmp_path, steps, scripts, revision).returncode == 0
    assert (tmp_path / "out.txt").read_text().splitlines() == ["a", "a"]  # r1 once, then r2
    assert (tmp_path / "state" / "revision").read_text() == "r2"


def test_launcher_stops_at_a_failing_step(tmp_path: Path) -> None:
    steps = [{"Script": "s3://bucket/a.sh"}, {"Script": "s3://bucket/b.sh"}]
    proc = _run_launcher(tmp_path, steps, {"a.sh": "exit 3\n", "b.sh": 'echo b >> "$OUT"\n'})
    assert proc.returncode == 3 and not (tmp_path / "out.txt").exists()


def test_launcher_is_shellcheck_clean(tmp_path: Path) -> None:
    script = tmp_path / "head-node-actions.sh"
    script.write_text(render("parallelcluster/head-node-actions.sh.j2", {}))
    check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
