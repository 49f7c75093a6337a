"""The Slurm settings each orchestrator receives for topology (issue 13).

ParallelCluster: the node check's fast mode as ``HealthCheckProgram`` (draining with the reason) and the job
environment as ``TaskProlog``, always; ``TopologyPlugin=topology/tree`` in ``SlurmSettings.CustomSlurmSettings``, a first
topology.conf at the head node's ``OnNodeStart``, the refresh timer at ``OnNodeConfigured`` (after the
observability script), the head node's role allowed ``ec2:DescribeInstanceTopology``; none of it with an
UltraServer queue (ParallelCluster writes block topology for p6e-gb200 itself). Every configuration loads
in ParallelCluster's own schema (tools/pcluster_schema_check.py in .venv-pcluster).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.constructs.orchestrators.parallelcluster import IMEX_PROLOG, TASK_PROLOG
from fmcluster.resolved.cluster import NODE_DIR
from fmcluster.review.pcluster_config import cluster_configurations
from fmcluster.templates.slurm_hooks import (
    HEALTH_CHECK_INTERVAL_S,
    health_check_program,
    render_hooks_installer,
    render_imex_prolog,
    render_task_prolog,
    slurm_conf_settings,
)
from fmcluster.templates.topology_scripts import render_topology_placeholder
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import cluster_template, matrix_blueprint

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
P5 = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 2}]}


def cluster(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    t = cluster_template(synth_templates(text))
    [res] = resources_of(t, "Custom::PclusterCluster").values()
    return t, res["Properties"]["ClusterConfiguration"]


def test_p5_gets_tree_topology_wired_on_the_head_node() -> None:
    t, config = cluster(blueprint_text(P5))
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"][0] == {"TopologyPlugin": "topology/tree"}
    actions = config["HeadNode"]["CustomActions"]
    start = actions["OnNodeStart"]["Script"]["Fn::Sub"]
    configured = [s["Script"]["Fn::Sub"] for s in actions["OnNodeConfigured"]["Sequence"]]  # topology, hooks
    keys = {a["KeyName"] for a in config["HeadNode"]["Iam"]["S3Access"]}
    assert {u.rsplit("/", 1)[1] for u in [start, *configured]} == keys and len(keys) == 3
    [policy] = [r for k, r in resources_of(t, "AWS::IAM::ManagedPolicy").items() if "TopologyPolicy" in k]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [{
        "Action": ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"], "Effect": "Allow", "Resource": "*",
        "Sid": "TopologyRead"}]
    policies = [p["Policy"] for p in config["HeadNode"]["Iam"]["AdditionalIamPolicies"]]
    assert any(p == {"Ref": next(k for k in resources_of(t, "AWS::IAM::ManagedPolicy") if "TopologyPolicy" in k)}
               for p in policies)


def test_the_placeholder_lists_the_queue_nodes_by_parallelcluster_names() -> None:
    # 2 static and 2 dynamic nodes of queue gpu, compute resource p5-48xlarge
    text = render_topology_placeholder("/opt/slurm/etc/topology.conf",
                                       ["gpu-st-p5-48xlarge-[1-2]", "gpu-dy-p5-48xlarge-[1-2]"])
    assert "SwitchName=fmc-no-topology Nodes=gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-2]" in text


def test_with_metrics_the_topology_installer_runs_after_the_observability_script() -> None:
    _, config = cluster(blueprint_text(P5, {"observability": {"metrics": "self_hosted"}}))
    sequence = config["HeadNode"]["CustomActions"]["OnNodeConfigured"]["Sequence"]
    names = [s["Script"]["Fn::Sub"].rsplit("/", 1)[1] for s in sequence]
    assert len(names) == 3 and len(set(names)) == 3  # observability, topology installer, Slurm hooks
    assert len(config["HeadNode"]["Iam"]["S3Access"]) == 4  # and the placeholder


def test_an_ultraserver_queue_leaves_topology_to_parallelcluster() -> None:
    _, config = cluster(matrix_blueprint("parallelcluster", "gb200-580-cuda13.0"))
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [
        *slurm_conf_settings(NODE_DIR, TASK_PROLOG), {"PrologFlags": "Alloc,NoHold"}]  # IMEX per job
    assert "OnNodeStart" not in config["HeadNode"]["CustomActions"]
    assert "Script" in config["HeadNode"]["CustomActions"]["OnNodeConfigured"]  # the Slurm hooks only


@pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")
def test_wired_configs_load_with_the_parallelcluster_schema(tmp_path: Path) -> None:
    texts = {"p5": blueprint_text(P5), "p5-metrics": blueprint_text(P5, {"observability": {"metrics": "self_hosted"}})}
    paths = []
    for name, text in texts.items():
        (config,) = cluster_configurations(cluster_template(synth_templates(text))).values()
        path = tmp_path / f"{name}.pcluster-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths.append(str(path))
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "pcluster_schema_check.py"), *paths],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(Path(r["file"]).name, r["ok"], r["errors"]) for r in results] == [(Path(p).name, True, {}) for p in paths]


# ---- health checks and the task prolog ----------------------------------------------------------------
def test_health_check_and_task_prolog_settings() -> None:
    assert slurm_conf_settings("/opt/fmcluster", "/opt/slurm/etc/fmcluster-task-prolog.sh") == [
        {"HealthCheckProgram": "/opt/fmcluster/bin/fmcluster-node-check-health"},
        {"HealthCheckInterval": HEALTH_CHECK_INTERVAL_S}, {"HealthCheckNodeState": "ANY,CYCLE"},
        {"TaskProlog": "/opt/slurm/etc/fmcluster-task-prolog.sh"}]


def _rendered(name: str) -> str:
    from fmcluster.review.render import render_blueprint
    from fmcluster.validation import load_blueprint_text

    return render_blueprint(load_blueprint_text(blueprint_text(P5)).blueprint)["gpu"][name]


def test_the_health_check_program_is_the_wrapper_the_bootstrap_installs() -> None:
    bootstrap = _rendered("bootstrap.sh")
    assert f'readonly FMC_PREFIX="{NODE_DIR}"' in bootstrap
    assert '"${FMC_PREFIX}/bin/fmcluster-node-check-health"' in bootstrap and "--no-nccl --drain" in bootstrap
    assert health_check_program(NODE_DIR) == f"{NODE_DIR}/bin/fmcluster-node-check-health"


def test_task_prolog_prints_the_job_environment_as_export_lines(tmp_path: Path) -> None:
    job_env = tmp_path / "job-env.sh"
    job_env.write_text(_rendered("job-env.sh"))
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(render_task_prolog(NODE_DIR))
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/x", "FMC_JOB_ENV": str(job_env)}
    res = subprocess.run(["bash", str(prolog)], env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert all(line.startswith("export ") and "=" in line for line in lines)
    got = dict(line[len("export "):].split("=", 1) for line in lines)
    sourced = subprocess.run(["bash", "-c", f'. {job_env}; for n in {" ".join(got)}; do echo "$n=${{!n}}"; done'],
                             env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/x"}, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert got == dict(line.split("=", 1) for line in sourced)
    assert got["PATH"].endswith(":/usr/bin:/bin") and "CUDA_HOME" in got
    # no file: nothing printed, the task still starts
    missing = subprocess.run(["bash", str(prolog)], env={**env, "FMC_JOB_ENV": str(tmp_path / "none")},
                             capture_output=True, text=True, check=False)
    assert (missing.returncode, missing.stdout) == (0, "")


def test_hooks_installer_writes_the_task_prolog(tmp_path: Path) -> None:
    script = tmp_path / "install.sh"
    script.write_text(render_hooks_installer(NODE_DIR, TASK_PROLOG, orchestrator="AWS ParallelCluster",
                                             node_label="head node", share_note="shared"))
    res = subprocess.run(["bash", str(script)], env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(tmp_path / "root")},
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    written = tmp_path / "root" / TASK_PROLOG.lstrip("/")
    assert written.read_text() == render_task_prolog(NODE_DIR) and written.stat().st_mode & 0o111


@pytest.mark.parametrize("name", ["prolog", "installer"])
def test_hook_scripts_are_shellcheck_clean(tmp_path: Path, name: str) -> None:
    import sys

    text = render_task_prolog(NODE_DIR) if name == "prolog" else render_hooks_installer(
        NODE_DIR, TASK_PROLOG, orchestrator="AWS ParallelCluster", node_label="head node", share_note="shared")
    f = tmp_path / f"{name}.sh"
    f.write_text(text)
    res = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), "-s", "bash", str(f)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


# ---- IMEX per job -----------------------------------------------------------------------------------------
SCONTROL_STUB = """#!/bin/bash
# scontrol -ao show node LIST: one line per node (scontrol(1) --oneliner, --all)
[ "$1 $2 $3" = "-ao show node" ] || exit 1
echo "NodeName=nvl-1 Arch=aarch64 CoresPerSocket=72 NodeAddr=10.1.0.11 NodeHostName=ip-10-1-0-11 State=ALLOCATED"
echo "NodeName=nvl-2 Arch=aarch64 CoresPerSocket=72 NodeAddr=10.1.0.12 NodeHostName=ip-10-1-0-12 State=ALLOCATED"
"""


def _imex_run(tmp_path: Path, oversubscribe: str | None, helper_rc: int = 0, helper: bool = True) -> tuple[int, str]:
    stub = tmp_path / "scontrol"
    stub.write_text(SCONTROL_STUB)
    stub.chmod(0o755)
    imex = tmp_path / "fmcluster-imex-nodes"
    if helper:
        imex.write_text(f"#!/bin/bash\necho \"$*\" >> {tmp_path}/imex.log\nexit {helper_rc}\n")
        imex.chmod(0o755)
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(render_imex_prolog(NODE_DIR, "/opt/slurm/bin/scontrol", ["p6e-gb200.36xlarge"]))
    env = {"PATH": "/usr/bin:/bin", "FMC_SCONTROL": str(stub), "FMC_IMEX_NODES": str(imex),
           "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "nvl-[1-2]"}
    if oversubscribe is not None:
        env["SLURM_JOB_OVERSUBSCRIBE"] = oversubscribe
    res = subprocess.run(["bash", str(prolog)], env=env, capture_output=True, text=True, check=False)
    log = tmp_path / "imex.log"
    return res.returncode, log.read_text() if log.exists() else ""


@pytest.mark.parametrize(("oversubscribe", "called"), [("NO", True), ("TOPO", True), ("OK", False), (None, False)])
def test_imex_prolog_writes_the_jobs_nodes_for_exclusive_jobs(tmp_path: Path, oversubscribe: str | None,
                                                              called: bool) -> None:
    rc, calls = _imex_run(tmp_path, oversubscribe)
    assert rc == 0
    assert calls == ("10.1.0.11 10.1.0.12\n" if called else "")


def test_imex_prolog_never_fails_the_node(tmp_path: Path) -> None:
    assert _imex_run(tmp_path, "NO", helper_rc=1) == (0, "10.1.0.11 10.1.0.12\n")
    other = tmp_path / "other"
    other.mkdir()
    assert _imex_run(other, "NO", helper=False) == (0, "")  # not an IMEX node: nothing to do


def test_gb200_head_node_installs_the_imex_prolog_in_parallelclusters_prolog_dir(tmp_path: Path) -> None:
    script = tmp_path / "install.sh"
    imex = render_imex_prolog(NODE_DIR, "/opt/slurm/bin/scontrol", ["p6e-gb200.36xlarge"])
    script.write_text(render_hooks_installer(NODE_DIR, TASK_PROLOG, orchestrator="AWS ParallelCluster",
                                             node_label="head node", share_note="shared", imex_prolog=IMEX_PROLOG,
                                             imex_script=imex))
    res = subprocess.run(["bash", str(script)], env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(tmp_path / "root")},
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert IMEX_PROLOG == "/opt/slurm/etc/scripts/prolog.d/91_fmcluster_imex_prolog.sh"
    assert (tmp_path / "root" / IMEX_PROLOG.lstrip("/")).read_text() == imex


def test_imex_prolog_is_shellcheck_clean(tmp_path: Path) -> None:
    import sys

    f = tmp_path / "imex.sh"
    f.write_text(render_imex_prolog(NODE_DIR, "/opt/slurm/bin/scontrol", ["p6e-gb200.36xlarge"]))
    res = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), "-s", "bash", str(f)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout
