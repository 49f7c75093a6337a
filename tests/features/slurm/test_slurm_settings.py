"""The Slurm settings each orchestrator receives for topology (issue 13).

ParallelCluster: the node check's fast mode as ``HealthCheckProgram`` (draining with the reason) and the job
environment as ``TaskProlog``, always; ``TopologyPlugin=topology/tree`` in ``SlurmSettings.CustomSlurmSettings``, a first
topology.conf at the head node's ``OnNodeStart``, the refresh timer at ``OnNodeConfigured`` (after the
observability script), the head node's role allowed ``ec2:DescribeInstanceTopology``; none of it with an
UltraServer queue (ParallelCluster writes block topology for p6e-gb200 itself). Every configuration loads
in ParallelCluster's own schema (tools/pcluster_schema_check.py in .venv-pcluster).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.slurm.render_hooks import (
    HEALTH_CHECK_INTERVAL_S,
    health_check_program,
    render_containers,
    render_hooks_installer,
    render_imex_prolog,
    render_task_prolog,
    slurm_conf_settings,
)
from fmcluster.features.topology.render_scripts import render_topology_placeholder
from fmcluster.orchestrators.parallelcluster.construct import IMEX_PROLOG, TASK_PROLOG
from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from fmcluster.resolved.cluster import NODE_DIR
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import cluster_template, head_node_steps, matrix_blueprint, pcluster_schema_results

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
P5 = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4, "min_count": 2}]}


def cluster(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    t = cluster_template(synth_templates(text))
    [res] = resources_of(t, "Custom::PclusterCluster").values()
    return t, res["Properties"]["ClusterConfiguration"]


def test_p5_gets_tree_topology_wired_on_the_head_node() -> None:
    t, config = cluster(blueprint_text(P5))
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"][0] == {"TopologyPlugin": "topology/tree"}
    # the head node's steps are in SSM; its phases name the launcher (tests/orchestrators/parallelcluster/test_head_node_actions.py)
    [start] = head_node_steps(t, "OnNodeStart")
    configured = [s["Script"] for s in head_node_steps(t, "OnNodeConfigured")]  # topology, hooks, gate watcher, containers
    launcher = config["HeadNode"]["CustomActions"]["OnNodeStart"]["Script"]["Fn::Sub"]
    keys = {a["KeyName"] for a in config["HeadNode"]["Iam"]["S3Access"]}
    assert {u.rsplit("/", 1)[1] for u in [start["Script"], *configured, launcher]} == keys and len(keys) == 6
    [policy] = [r for k, r in resources_of(t, "AWS::IAM::ManagedPolicy").items() if "TopologyPolicy" in k]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [{
        "Action": ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"], "Effect": "Allow", "Resource": "*",
        "Sid": "TopologyRead"}]
    policies = [p["Policy"] for p in config["HeadNode"]["Iam"]["AdditionalIamPolicies"]]
    assert any(p == {"Ref": next(k for k in resources_of(t, "AWS::IAM::ManagedPolicy") if "TopologyPolicy" in k)}
               for p in policies)


def test_the_placeholder_lists_the_queue_nodes_by_parallelcluster_names() -> None:
    # 2 static and 2 dynamic nodes of queue gpu, compute resource p5-48xlarge
    text = render_topology_placeholder("/opt/slurm/etc", ["gpu-st-p5-48xlarge-[1-2]", "gpu-dy-p5-48xlarge-[1-2]"])
    assert "SwitchName=fmc-no-topology Nodes=gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-2]" in text
    assert 'nodes: "gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-2]"' in text


def test_the_refresh_owns_topology_yaml_which_parallelcluster_never_deletes() -> None:
    from fmcluster.orchestrators.parallelcluster import construct as parallelcluster

    source = Path(parallelcluster.__file__).read_text()
    assert 'topology_file=f"{PARALLELCLUSTER_SLURM}/etc/topology.yaml"' in source and 'format="yaml"' in source


def test_with_metrics_the_topology_installer_runs_after_the_observability_script() -> None:
    t, config = cluster(blueprint_text(P5, {"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"}}))
    names = [s["Script"].rsplit("/", 1)[1] for s in head_node_steps(t, "OnNodeConfigured")]
    # observability, topology installer, Slurm hooks, the acceptance gate's watcher, containers
    assert len(names) == 5 and len(set(names)) == 5
    assert len(config["HeadNode"]["Iam"]["S3Access"]) == 7  # and the placeholder and the launcher


def test_an_ultraserver_queue_leaves_topology_to_parallelcluster() -> None:
    t, config = cluster(matrix_blueprint("parallelcluster", "gb200-580-cuda13.0"))
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [
        *slurm_conf_settings(NODE_DIR, TASK_PROLOG), {"PrologFlags": "Alloc,NoHold"}]  # IMEX per job
    assert "OnNodeStart" not in config["HeadNode"]["CustomActions"]
    assert len(head_node_steps(t, "OnNodeConfigured")) == 3  # Slurm hooks, the acceptance gate's watcher, containers


@pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")
def test_wired_configs_load_with_the_parallelcluster_schema(tmp_path: Path) -> None:
    metrics = {"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"}}
    texts = {"p5": blueprint_text(P5), "p5-metrics": blueprint_text(P5, metrics)}
    configs = {name: next(iter(cluster_configurations(cluster_template(synth_templates(text))).values()))
               for name, text in texts.items()}
    _, results = pcluster_schema_results(configs, tmp_path)
    assert results == [(f"{name}.pcluster-config.yaml", True, {}) for name in texts]


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
    # FMC_ROOT is empty on a node (the boot simulation's sandbox prefix)
    assert '"${FMC_ROOT}${FMC_PREFIX}/bin/fmcluster-node-check-health"' in bootstrap and "--no-nccl --drain" in bootstrap
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


@pytest.mark.parametrize("name", ["prolog", "installer", "drain", "resume", "watch"])
def test_hook_scripts_are_shellcheck_clean(tmp_path: Path, name: str) -> None:
    import sys

    from fmcluster.features.slurm.render_hooks import render_node_state, render_slurm_conf_watch

    texts = {
        "prolog": lambda: render_task_prolog(NODE_DIR),
        "installer": lambda: render_hooks_installer(NODE_DIR, TASK_PROLOG, orchestrator="AWS ParallelCluster",
                                                    node_label="head node", share_note="shared"),
        "drain": lambda: render_node_state(mode="drain", scontrol="/opt/slurm/bin/scontrol", orchestrator="o", why="w"),
        "resume": lambda: render_node_state(mode="resume", scontrol="/opt/slurm/bin/scontrol", orchestrator="o",
                                            why="w"),
        "watch": lambda: render_slurm_conf_watch(slurm_conf="/opt/slurm/etc/slurm.conf", editor_file="e.sh",
                                                 editor_path="/opt/fmcluster/slurm/e.sh", orchestrator="o",
                                                 node_label="controller", why="w"),
    }
    text = texts[name]()
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


# ---- containers: enroot + pyxis ---------------------------------------------------------------------------
ENROOT_EXAMPLE = """ENROOT_LIBRARY_PATH        /usr/lib/enroot
ENROOT_RUNTIME_PATH        /run/enroot/user-$(id -u)
ENROOT_CONFIG_PATH         /var/enroot/enroot-config/user-$(id -u)
ENROOT_CACHE_PATH          /var/enroot/enroot-cache/group-$(id -g)
ENROOT_DATA_PATH           /run/enroot/enroot-data/user-$(id -u)
ENROOT_SQUASH_OPTIONS      -noI -noD -noF -noX -no-duplicates
"""


def _examples(root: Path) -> None:
    """The example files a ParallelCluster official image ships (cookbook PR #2820 layout)."""
    ex = root / "opt/parallelcluster/examples"
    for rel, text in (("enroot/enroot.conf", ENROOT_EXAMPLE), ("spank/plugstack.conf", "include /opt/slurm/etc/plugstack.conf.d/*\n"),
                      ("pyxis/pyxis.conf", "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n")):
        (ex / rel).parent.mkdir(parents=True, exist_ok=True)
        (ex / rel).write_text(text)


def _containers(tmp_path: Path, head_node: bool, *args: str, examples: bool = True) -> tuple[int, Path]:
    root = tmp_path / "root"
    root.mkdir()
    if examples:
        _examples(root)
    script = tmp_path / "containers.sh"
    script.write_text(render_containers(head_node=head_node, default_dir="/scratch"))
    res = subprocess.run(["bash", str(script), *args], env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(root)},
                         capture_output=True, text=True, check=False)
    return res.returncode, root


def test_compute_nodes_keep_enroot_data_and_cache_on_the_nvme_scratch(tmp_path: Path) -> None:
    rc, root = _containers(tmp_path, False, "/local/nvme")
    assert rc == 0
    conf = dict(line.split(None, 1) for line in (root / "etc/enroot/enroot.conf").read_text().splitlines())
    assert conf["ENROOT_DATA_PATH"] == "/local/nvme/enroot/data/user-$(id -u)"
    assert conf["ENROOT_CACHE_PATH"] == "/local/nvme/enroot/cache/user-$(id -u)"
    assert conf["ENROOT_RUNTIME_PATH"] == "/run/enroot/user-$(id -u)"
    assert conf["ENROOT_SQUASH_OPTIONS"] == "-noI -noD -noF -noX -no-duplicates"  # the rest as the image ships it
    assert (root / "local/nvme/enroot/data").is_dir() and oct((root / "local/nvme/enroot").stat().st_mode)[-4:] == "1777"
    assert not (root / "opt/slurm/etc/plugstack.conf").exists()  # the head node's part


@pytest.mark.parametrize("head_node", [True, False])
def test_enroot_and_pyxis_runtime_dirs_exist_now_and_at_every_boot(tmp_path: Path, head_node: bool) -> None:
    # enroot makes its per-user dirs as the calling user: (umask 077 && mkdir -p "${ENROOT_CACHE_PATH}"
    # "${ENROOT_DATA_PATH}" "${ENROOT_RUNTIME_PATH}") (NVIDIA/enroot enroot.in); ParallelCluster creates none
    # (aws-parallelcluster-cookbook PR #2820). So every parent is 1777 and /run survives reboots via tmpfiles.d.
    rc, root = _containers(tmp_path, head_node, "/local/nvme")
    assert rc == 0
    modes = {d: oct((root / d).stat().st_mode)[-4:] for d in
             ("run/enroot", "run/pyxis", "local/nvme/enroot", "local/nvme/enroot/data", "local/nvme/enroot/cache")}
    assert modes == {"run/enroot": "1777", "run/pyxis": "0755", "local/nvme/enroot": "1777",
                     "local/nvme/enroot/data": "1777", "local/nvme/enroot/cache": "1777"}
    tmpfiles = (root / "etc/tmpfiles.d/fmcluster-enroot.conf").read_text().splitlines()
    assert [line.split() for line in tmpfiles if not line.startswith("#")] == [
        ["d", "/run/enroot", "1777", "root", "root", "-"], ["d", "/run/pyxis", "0755", "root", "root", "-"]]
    conf = dict(line.split(None, 1) for line in (root / "etc/enroot/enroot.conf").read_text().splitlines())
    # each enroot path is the user's own directory directly under one of those 1777 parents
    for key, parent in (("ENROOT_RUNTIME_PATH", "/run/enroot"), ("ENROOT_DATA_PATH", "/local/nvme/enroot/data"),
                        ("ENROOT_CACHE_PATH", "/local/nvme/enroot/cache")):
        assert conf[key] == f"{parent}/user-$(id -u)", key
    # enroot's own creation line, as this user, under the fake root: every directory is made, 0700, owned by us
    paths = [f'{root}{conf[k].replace("$(id -u)", str(os.getuid()))}'
             for k in ("ENROOT_CACHE_PATH", "ENROOT_DATA_PATH", "ENROOT_RUNTIME_PATH")]
    made = subprocess.run(["bash", "-c", '(umask 077 && mkdir -p "$@")', "enroot", *paths], check=False)
    assert made.returncode == 0
    assert all(oct(Path(p).stat().st_mode)[-3:] == "700" and Path(p).stat().st_uid == os.getuid() for p in paths)


def test_head_node_enables_pyxis_in_the_shared_slurm_etc(tmp_path: Path) -> None:
    rc, root = _containers(tmp_path, True)
    assert rc == 0
    assert (root / "opt/slurm/etc/plugstack.conf").read_text() == "include /opt/slurm/etc/plugstack.conf.d/*\n"
    assert "spank_pyxis.so" in (root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").read_text()


def test_without_the_images_examples_nothing_changes(tmp_path: Path) -> None:
    rc, root = _containers(tmp_path, True, examples=False)
    assert rc == 0 and not (root / "etc").exists() and not (root / "opt").exists()


def test_every_queue_runs_the_container_setup_after_its_bootstrap() -> None:
    _, config = cluster(blueprint_text({"compute": [
        {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "scratch_path": "/nvme"}]}))
    [queue] = config["Scheduling"]["SlurmQueues"]
    first, second = queue["CustomActions"]["OnNodeConfigured"]["Sequence"]
    assert second["Args"] == ["/nvme"]
    assert second["Script"]["Fn::Sub"].rsplit("/", 1)[1] == queue["Iam"]["S3Access"][-1]["KeyName"]
    assert first["Script"]["Fn::Sub"].rsplit("/", 1)[1] == queue["Iam"]["S3Access"][0]["KeyName"]  # the bootstrap


@pytest.mark.parametrize("head_node", [True, False])
def test_container_scripts_are_shellcheck_clean(tmp_path: Path, head_node: bool) -> None:
    import sys

    f = tmp_path / "c.sh"
    f.write_text(render_containers(head_node=head_node, default_dir="/scratch"))
    res = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), "-s", "bash", str(f)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


# ---- the rendered nccl-tests sbatch -------------------------------------------------------------------------
def test_nccl_tests_sbatch_runs_one_task_per_gpu_with_the_job_environment(tmp_path: Path) -> None:
    sbatch = _rendered("nccl-tests.sbatch")
    directives = [line.split(None, 1)[1] for line in sbatch.splitlines() if line.startswith("#SBATCH")]
    assert directives == ["--job-name=nccl-all-reduce", "--partition=gpu", "--nodes=2", "--ntasks-per-node=8",
                          "--gpus-per-node=8", "--exclusive", "--output=nccl-all-reduce-%j.out"]
    # run it for real: srun is a stub that records its arguments and the environment the tasks would get
    job_env = tmp_path / "job-env.sh"
    job_env.write_text(_rendered("job-env.sh"))
    script = tmp_path / "nccl.sbatch"
    script.write_text(sbatch.replace(f'source "{NODE_DIR}/etc/job-env.sh"', f'source "{job_env}"'))
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "srun").write_text(f'#!/bin/bash\necho "$*" > {tmp_path}/srun.args\nenv > {tmp_path}/srun.env\n')
    (stub / "srun").chmod(0o755)
    res = subprocess.run(["bash", str(script)], env={"PATH": f"{stub}:/usr/bin:/bin"}, capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "srun.args").read_text().split() == [
        "--mpi=pmix", "--cpu-bind=none", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2",
        "-g", "1"]
    env = dict(line.split("=", 1) for line in (tmp_path / "srun.env").read_text().splitlines() if "=" in line)
    assert env["NCCL_DEBUG"] == "INFO"
    for line in job_env.read_text().splitlines():
        if line.startswith("export ") and not line.startswith(("export PATH=", "export LD_LIBRARY_PATH=")):
            name = line[len("export "):].split("=", 1)[0]
            assert name in env, name


def test_nccl_tests_sbatch_is_shellcheck_clean(tmp_path: Path) -> None:
    import sys

    f = tmp_path / "nccl.sbatch"
    f.write_text(_rendered("nccl-tests.sbatch"))
    res = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), "-s", "bash", str(f)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout
