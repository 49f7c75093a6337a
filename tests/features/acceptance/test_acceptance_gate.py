"""The rendered fleet acceptance gate job: shellcheck-clean for every Slurm example, and run for real under
bash against stub srun / scontrol / all_reduce_perf / fmcluster-node-check (tests/fixtures/acceptance/
gate_harness.py; the stubs print the real nccl-tests format), with the judge on the oldest Python it supports
when this machine has it. The issue's "done when": 8 x p5.48xlarge with one node at 60 % bandwidth -> the gate
names that node, drains exactly it and passes the other seven."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fmcluster.features.acceptance.render_gate import BUNDLE_EOF, render_acceptance_files
from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint
from tests.conftest import ROOT
from tests.fixtures.acceptance.gate_harness import GateRun, GpuSlurm, run_gate
from tests.test_render import shellcheck

# Independent cases with small shared fixtures: xdist hands them out one by one (tests/conftest.py).
pytestmark = pytest.mark.spread

EIGHT = [f"p5-st-gpu-{i}" for i in range(1, 9)]
SLOW = "p5-st-gpu-5"


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gate of blueprints/default.yaml (ParallelCluster, 4 x p5.48xlarge group 'gpu')."""
    files = render_blueprint(load_blueprint(ROOT / "blueprints/default.yaml"))
    path = tmp_path_factory.mktemp("gate") / "fmcluster-acceptance-gpu.sbatch"
    path.write_text(files["acceptance"]["fmcluster-acceptance-gpu.sbatch"])
    return path


def run(gate: Path, tmp: Path, nodes: list[str] = EIGHT, nodelist: str = "p5-st-gpu-[1-8]", **env: str) -> GateRun:
    return run_gate(gate, tmp, nodes, nodelist, env)


# ---- rendering -----------------------------------------------------------------------------------------
SLURM_EXAMPLES = ["default", "efa-lustre", "hyperpod-p5", "p5en-capacity-block", "p6-b200", "p6-b300", "pcs-p5en"]


@pytest.fixture(scope="module")
def rendered_gates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("gates")
    paths = {}
    for name in SLURM_EXAMPLES:
        bp = load_blueprint(ROOT / "blueprints" / f"{name}.yaml")
        from fmcluster.resolved import resolve

        for rel, text in render_acceptance_files(resolve(bp)).items():
            path = out / f"{name}--{rel.replace('/', '_')}"
            path.write_text(text)
            paths[f"{name}/{rel}"] = path
    return paths


def test_slurm_examples_render_a_gate_per_efa_group(rendered_gates: dict[str, Path]) -> None:
    names = {k.split("/")[0] for k in rendered_gates}
    hyperpod = (ROOT / "blueprints/hyperpod-p5.yaml").read_text()
    expected = set(SLURM_EXAMPLES) if "eks" not in hyperpod else set(SLURM_EXAMPLES) - {"hyperpod-p5"}
    assert names == expected


def test_gates_are_shellcheck_clean(rendered_gates: dict[str, Path]) -> None:
    paths = sorted({str(p) for p in rendered_gates.values()})
    result = subprocess.run([shellcheck(), "-S", "style", *paths], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_gate_carries_the_group_facts_and_the_judge(gate: Path) -> None:
    text = gate.read_text()
    assert "#SBATCH --partition=gpu" in text and "#SBATCH --ntasks-per-node=8" in text
    assert 'readonly INSTANCE_TYPE="p5.48xlarge"' in text and "readonly MAX_BYTES=2147483648" in text
    assert '"floor_busbw_gbps": 250.0' in text and '"enforced": true' in text
    assert text.count(f"<<'{BUNDLE_EOF}'") == 7  # six modules and floors.json
    assert 'NODE_CHECK="${FMC_NODE_CHECK:-/opt/fmcluster/bin/fmcluster-node-check}"' in text


def test_pcs_gate_uses_the_clusters_slurm_commands(rendered_gates: dict[str, Path]) -> None:
    [pcs] = [p for k, p in rendered_gates.items() if k.startswith("pcs-p5en/")]
    assert 'PATH="/opt/aws/pcs/scheduler/slurm-' in pcs.read_text()


def test_no_gate_without_slurm_or_without_efa() -> None:
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_text
    from tests.blueprints import example, merge, to_yaml

    default = example("default")
    no_efa = merge(default, {"compute": [{**default["compute"][0], "efa": False}]})
    assert render_acceptance_files(resolve(load_blueprint_text(to_yaml(no_efa)).blueprint)) == {}


# ---- running it ----------------------------------------------------------------------------------------
#: One example per Slurm orchestrator, with where its Slurm lives (the profile's slurm_bin_dir, from sources).
SUDO_CASES = [
    ("default", "/opt/slurm/bin"),
    ("hyperpod-p5", "/opt/slurm/bin"),
    ("pcs-p5en", "/opt/aws/pcs/scheduler/slurm-"),
]


@pytest.mark.parametrize(("example", "slurm_prefix"), SUDO_CASES)
def test_sudo_sbatch_finds_slurm_on_every_orchestrator(example: str, slurm_prefix: str, tmp_path: Path) -> None:
    """`sudo sbatch` runs the job with sudo's secure_path (no Slurm directory): the gate puts the profile's
    Slurm directory on PATH itself, on every orchestrator; without that line it stops at `scontrol: command not found`."""
    from fmcluster.resolved import resolve

    rc = resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))
    slurm_dir = rc.profile.slurm_bin_dir
    assert slurm_dir is not None and slurm_dir.startswith(slurm_prefix)
    [text] = render_acceptance_files(rc).values()
    script = tmp_path / "gate.sbatch"
    script.write_text(text)
    nodes = ["p5-st-gpu-1", "p5-st-gpu-2"]
    r = run_gate(script, tmp_path / "with", nodes, "p5-st-gpu-[1-2]", slurm_dir=slurm_dir)
    assert r.rc == 0, r.stderr
    assert set(r.verdicts().values()) == {"pass"}
    bare = tmp_path / "bare.sbatch"
    bare.write_text("\n".join(line for line in text.splitlines() if not line.startswith(f'PATH="{slurm_dir}')))
    r = run_gate(bare, tmp_path / "without", nodes, "p5-st-gpu-[1-2]", slurm_dir=slurm_dir)
    assert r.rc == 2 and "scontrol: command not found" in r.stderr


#: Each orchestrator's Slurm as the services' own material describes it (not the profiles the gate reads): GPU nodes
#: declare gres/gpu, devices confined. ParallelCluster: GresTypes=gpu, Gres=gpu:<type>:<n>, no ConstrainDevices
#: (aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm templates/default/slurm/slurm.conf.erb,
#: cgroup.conf.erb). PCS: GRES autodetected on GPU node groups (https://docs.aws.amazon.com/pcs/latest/userguide/
#: slurm-versions_release-notes.html); its cgroup.conf is undocumented, so both cases. HyperPod: no gres/gpu (AWS's
#: nccl-tests job keeps --gpus-per-node "Uncomment for AWS ParallelCluster", aws-samples/awsome-distributed-training
#: micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch); without gres nothing is confined.
GPU_WORLDS = [
    ("default", GpuSlurm(gres=True, devices_confined=False)),
    ("pcs-p5en", GpuSlurm(gres=True, devices_confined=False)),
    ("pcs-p5en", GpuSlurm(gres=True, devices_confined=True)),
    ("hyperpod-p5", GpuSlurm(gres=False, devices_confined=False)),
]


def _gate_of(example: str, tmp_path: Path) -> Path:
    from fmcluster.resolved import resolve

    [text] = render_acceptance_files(resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))).values()
    script = tmp_path / f"{example}.sbatch"
    script.write_text(text)
    return script


@pytest.mark.parametrize(("example", "world"), GPU_WORLDS, ids=[f"{e}-{w.gres}-{w.devices_confined}" for e, w in GPU_WORLDS])
def test_the_gate_is_accepted_and_sees_the_gpus_on_every_orchestrator(example: str, world: GpuSlurm,
                                                                        tmp_path: Path) -> None:
    """sbatch accepts the gate's GPU request (or its absence) and every node check and pair sees the node's GPUs."""
    r = run_gate(_gate_of(example, tmp_path), tmp_path, EIGHT[:2], "p5-st-gpu-[1-2]", gpu_slurm=world)
    assert r.rc == 0, r.stderr
    assert r.verdicts() == {n: "pass" for n in EIGHT[:2]}


@pytest.mark.parametrize(("example", "world", "said"), [
    # the ParallelCluster gate (asks for 8 GPUs) on a Slurm whose nodes declare no gres/gpu: refused at submission
    ("default", GpuSlurm(gres=True, devices_confined=False, gpus=4), "Requested node configuration is not available"),
    ("default", GpuSlurm(gres=False, devices_confined=False), "Invalid generic resource (gres) specification"),
])
def test_the_simulated_sbatch_refuses_a_gpu_request_the_nodes_cannot_meet(example: str, world: GpuSlurm, said: str,
                                                                          tmp_path: Path) -> None:
    r = run_gate(_gate_of(example, tmp_path), tmp_path, EIGHT[:2], "p5-st-gpu-[1-2]", gpu_slurm=world)
    assert r.rc == 1 and said in r.stderr
    assert not r.run_dir.exists()


def test_a_gate_without_a_gpu_request_sees_no_gpu_where_devices_are_confined(tmp_path: Path) -> None:
    """The model bites: the HyperPod gate (no request) on a Slurm that declares gres/gpu and confines devices fails
    every node's GPU count (the job holds the GPUs of its exclusive nodes but its steps get none, srun.1 --gres) and
    drains none (more than half failed)."""
    r = run_gate(_gate_of("hyperpod-p5", tmp_path), tmp_path, EIGHT[:2], "p5-st-gpu-[1-2]",
                 gpu_slurm=GpuSlurm(gres=True, devices_confined=True))
    assert r.rc == 1, r.stderr
    assert r.verdicts() == {n: "fail" for n in EIGHT[:2]}
    assert "nvidia-smi sees 0 GPU(s)" in json.dumps(r.verdict())
    assert r.drains == []


def test_done_when_eight_p5_nodes_one_at_60_percent(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_FACTORS=f"{SLOW}=0.6")
    assert r.rc == 1, r.stderr
    assert r.verdicts() == {n: ("fail" if n == SLOW else "pass") for n in EIGHT}
    [drain] = r.drains
    assert drain.startswith(f"NodeName={SLOW} State=DRAIN Reason=fmcluster-acceptance: 2 of 2 pair(s) more than 7% below the "
                             "median of the pairs without it")
    # every node was checked, every node measured in two rounds with two different partners
    assert sum(" :: " in c and "--no-nccl" in c for c in r.srun_calls) == 8
    logs = sorted(p.name for p in (r.run_dir / "results").iterdir())
    assert len(logs) == 8 and {log[:2] for log in logs} == {"r1", "r2"}
    for node in EIGHT:
        partners = {p for log in logs if node in log for p in log[3:-4].split("_") if p != node}
        assert len(partners) == 2, (node, logs)
    # host names the nodes print (ip-10-0-0-N) were mapped back to node names
    assert "ip-10-0-0-5" in (r.run_dir / "results" / [x for x in logs if SLOW in x][0]).read_text()
    prom = r.textfile.read_text()
    assert f'fmcluster_acceptance_node_verdict{{cluster="llm-train",group="gpu",node="{SLOW}",verdict="fail"}} 1' in prom
    assert f'fmcluster_acceptance_node_drained{{cluster="llm-train",group="gpu",node="{SLOW}"}} 1' in prom
    assert 'fmcluster_acceptance_node_drained{cluster="llm-train",group="gpu",node="p5-st-gpu-4"} 0' in prom
    assert 'fmcluster_acceptance_gate_passed{cluster="llm-train",group="gpu",instance_type="p5.48xlarge"} 0' in prom
    assert (tmp_path / "acceptance" / "latest.json").read_text() == (r.run_dir / "verdict.json").read_text()


@pytest.mark.parametrize("count", [3, 4])
def test_small_cluster_one_node_at_90_percent_is_drained(gate: Path, tmp_path: Path, count: int) -> None:
    """The default blueprint's 4-node group (and 3 nodes): one node at 90 % of its peers is found and drained alone."""
    nodes = EIGHT[:count]
    r = run(gate, tmp_path, nodes, f"p5-st-gpu-[1-{count}]", STUB_FACTORS="p5-st-gpu-2=0.9")
    assert r.rc == 1, r.stderr
    assert r.verdicts() == {n: ("fail" if n == "p5-st-gpu-2" else "pass") for n in nodes}
    [drain] = r.drains
    assert drain.startswith("NodeName=p5-st-gpu-2 State=DRAIN Reason=fmcluster-acceptance: 2 of 2 pair(s) more than 7%")


@pytest.mark.parametrize(("env", "failed", "drained"), [
    ({"STUB_FACTORS": "p5-st-gpu-2=0.9"}, ["p5-st-gpu-2"], ["p5-st-gpu-2"]),
    ({"STUB_FACTORS": "p5-st-gpu-2=0.9", "FMC_DRAIN": "0"}, ["p5-st-gpu-2"], []),
    ({}, [], []),
], ids=["drained", "report-only", "healthy"])
def test_the_gate_writes_the_node_lists_the_watcher_reads(gate: Path, tmp_path: Path, env: dict[str, str],
                                                          failed: list[str], drained: list[str]) -> None:
    """failed.txt (node TAB reason) and drained.txt (one node a line): fmcluster-gate-watch's only input from a run
    (tests/features/acceptance/test_gate_watch.py models a gate by these files)."""
    r = run(gate, tmp_path, EIGHT[:4], "p5-st-gpu-[1-4]", **env)
    rows = [line.split("\t") for line in (r.run_dir / "failed.txt").read_text().splitlines()]
    assert [row[0] for row in rows] == failed and all(row[1].startswith("2 of 2 pair(s)") for row in rows)
    assert (r.run_dir / "drained.txt").read_text().splitlines() == drained


def test_broadcast_runs_once_per_node_under_a_timeout(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path)
    calls = [c for c in r.srun_calls if c.endswith(tuple(f"broadcast_perf {a}" for a in ["-b 8 -e 2147483648 -f 2 -g 1 -c 1 -n 20"]))]
    assert len(calls) == 4  # 8 nodes: one round of four pairs covers every node once
    assert r.verdict()["broadcast"] == {"collective": "broadcast_perf", "pairs": 4, "failed": [], "blueprint_wide": False,
                                        "not_run": ""}


def test_a_broadcast_hang_on_one_pair_fails_the_gate_and_drains_nothing(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_BROADCAST_HANG="p5-st-gpu-3", FMC_BROADCAST_TIMEOUT="2")
    assert r.rc == 1 and r.drains == []
    bc = r.verdict()["broadcast"]
    [failed] = bc["failed"]
    assert "p5-st-gpu-3" in failed["nodes"] and "broadcast_perf did not finish in 2 s (hung)" in failed["reason"]
    assert not bc["blueprint_wide"]
    suspects = sorted(n for n, v in r.verdicts().items() if v == "suspect")
    assert suspects == sorted(failed["nodes"])
    assert 'fmcluster_acceptance_gate_passed{cluster="llm-train",group="gpu",instance_type="p5.48xlarge"} 0' in r.textfile.read_text()


def test_broadcast_hanging_everywhere_is_blueprint_wide_and_drains_nothing(gate: Path, tmp_path: Path) -> None:
    """all_reduce passes everywhere and broadcast hangs everywhere (aws-ofi-nccl 1.18.0): a software cause no node
    replacement fixes, so the gate fails and says so, and drains nobody (a drain would loop through replacements)."""
    r = run(gate, tmp_path, STUB_BROADCAST_HANG="all", FMC_BROADCAST_TIMEOUT="2")
    assert r.rc == 1 and r.drains == []
    bc = r.verdict()["broadcast"]
    assert bc["blueprint_wide"] and len(bc["failed"]) == 4
    assert "EVERY pair failed: a blueprint-wide cause" in r.stdout


def test_a_node_an_earlier_gate_drained_is_resumed_when_it_passes(gate: Path, tmp_path: Path) -> None:
    """ParallelCluster replaces a drained static node behind the same name and the record keeps DRAIN: the next gate
    run tests the replacement and resumes it; a node drained for another reason stays drained."""
    drained = ("p5-st-gpu-2=fmcluster-acceptance: 2 of 2 pair(s) more than 7% below;"
               "p5-st-gpu-6=maintenance by ops")
    r = run(gate, tmp_path, STUB_DRAINED=drained)
    assert r.rc == 0, r.stderr
    assert r.drains == ["NodeName=p5-st-gpu-2 State=RESUME"]
    assert "resumed p5-st-gpu-2: it passed" in r.stdout


def test_hyperpod_gate_asks_hyperpod_to_replace_a_failed_node(tmp_path: Path) -> None:
    """HyperPod acts on State=FAIL Reason="Action:Replace" (AWS HyperPod guide, replace a faulty instance); the gate's
    own reason stays in its verdict."""
    from fmcluster.resolved import resolve

    [text] = render_acceptance_files(resolve(load_blueprint(ROOT / "blueprints/hyperpod-p5.yaml"))).values()
    script = tmp_path / "gate.sbatch"
    script.write_text(text)
    r = run_gate(script, tmp_path, EIGHT, "p5-st-gpu-[1-8]", {"STUB_FACTORS": f"{SLOW}=0.6"})
    assert r.rc == 1, r.stderr
    assert r.drains == [f"NodeName={SLOW} State=FAIL Reason=Action:Replace"]
    assert "HyperPod replaces the instance behind the node" in r.stdout
    assert "accept passed" not in text  # HyperPod returns the node to service itself: no resume step


def test_healthy_fleet_passes_and_drains_nothing(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path)
    assert r.rc == 0, r.stderr
    assert set(r.verdicts().values()) == {"pass"} and r.drains == []
    prom = r.textfile.read_text()
    assert 'fmcluster_acceptance_gate_passed{cluster="llm-train",group="gpu",instance_type="p5.48xlarge"} 1' in prom
    assert 'fmcluster_acceptance_gate_could_not_run{cluster="llm-train",group="gpu",instance_type="p5.48xlarge"} 0' in prom


def test_node_check_failure_drains_that_node_and_keeps_it_out_of_the_pairs(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_NODECHECK_FAIL="p5-st-gpu-3")
    assert r.rc == 1
    assert r.drains == ["NodeName=p5-st-gpu-3 State=DRAIN Reason=fmcluster-acceptance: node check: efa-devices: 31 EFA "
                        "device(s) in /sys/class/infiniband, expected 32 for p5.48xlarge"]
    assert not any("p5-st-gpu-3" in p.name for p in (r.run_dir / "results").iterdir())
    assert [n for n, v in r.verdicts().items() if v != "pass"] == ["p5-st-gpu-3"]


def test_a_node_that_does_not_answer_fails_after_the_timeout(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_NODECHECK_HANG="p5-st-gpu-7", FMC_NODE_CHECK_TIMEOUT="4")
    assert r.rc == 1
    assert r.drains == ["NodeName=p5-st-gpu-7 State=DRAIN Reason=fmcluster-acceptance: node check: "
                        "fmcluster-node-check did not finish in 4 s (node not answering?)"]
    assert [n for n, v in r.verdicts().items() if v != "pass"] == ["p5-st-gpu-7"]


def test_a_node_on_sockets_is_drained_with_the_cause(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_SOCKETS="p5-st-gpu-2")
    assert r.rc == 1
    [drain] = r.drains
    assert drain.startswith("NodeName=p5-st-gpu-2 State=DRAIN Reason=fmcluster-acceptance: sockets: NCCL used sockets")


def test_odd_count_three_rounds(gate: Path, tmp_path: Path) -> None:
    nodes = ["p5-st-gpu-1", "p5-st-gpu-2", "p5-st-gpu-3"]
    r = run(gate, tmp_path, nodes, "p5-st-gpu-[1-3]", STUB_FACTORS="p5-st-gpu-2=0.5")
    assert r.rc == 1 and r.drains[0].startswith("NodeName=p5-st-gpu-2 ")
    assert len(r.drains) == 1
    assert sorted(p.name[:2] for p in (r.run_dir / "results").iterdir()) == ["r1", "r2", "r3"]


def test_a_single_node_is_checked_not_paired(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, ["p5-st-gpu-1"], "p5-st-gpu-1")
    assert r.rc == 0, r.stderr
    assert r.verdict()["nodes"] == [{"node": "p5-st-gpu-1", "verdict": "pass", "reason": "single node: no pair to measure",
                                     "busbw_gbps": None, "pairs": []}]
    assert not any("all_reduce_perf" in c for c in r.srun_calls)


def test_a_broken_mpi_setup_is_the_gates_failure_not_the_nodes(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_SRUN_MPI_MISSING="1")
    assert r.rc == 2 and r.drains == []
    assert "the gate itself is broken" in r.stderr
    assert r.verdict()["status"] == "could-not-run"


def test_crashing_runs_on_every_pair_drain_nothing(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_ARP_EXIT="3")
    assert r.rc == 2 and r.drains == []
    assert len(list((r.run_dir / "failed-runs").iterdir())) == 8


def test_report_only_mode_drains_nothing(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_FACTORS=f"{SLOW}=0.6", FMC_DRAIN="0")
    assert r.rc == 1 and r.drains == []
    assert f"FMC_DRAIN=0: not draining {SLOW}" in r.stdout


def test_a_fleet_wide_failure_drains_nothing(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_NODECHECK_FAIL=",".join(EIGHT[:5]))
    assert r.rc == 1 and r.drains == []
    assert "5 of 8 node(s) failed, more than FMC_MAX_DRAIN_FRACTION=0.5: draining none" in r.stdout


def test_without_drain_permission_the_failure_is_still_reported(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, STUB_FACTORS=f"{SLOW}=0.6", STUB_SCONTROL_DENY="1")
    assert r.rc == 1 and r.drains == []
    assert f"could not drain {SLOW}" in r.stdout
    assert f'fmcluster_acceptance_node_drained{{cluster="llm-train",group="gpu",node="{SLOW}"}} 0' in r.textfile.read_text()


def test_outside_a_slurm_job_it_refuses(gate: Path, tmp_path: Path) -> None:
    r = run(gate, tmp_path, SLURM_JOB_ID="")
    assert r.rc == 2 and "not inside a Slurm job" in r.stderr
    assert_could_not_run(r, tmp_path / "acceptance" / "no-job", "not inside a Slurm job; submit this file with sbatch")


def assert_could_not_run(r: GateRun, run_dir: Path, reason: str) -> None:
    """A gate that could not run still leaves a verdict and metrics that say so (never "passed")."""
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["status"] == "could-not-run" and verdict["reason"] == reason
    assert (run_dir.parent / "latest.json").read_text() == (run_dir / "verdict.json").read_text()
    labels = 'cluster="llm-train",group="gpu",instance_type="p5.48xlarge"'
    for prom in (r.textfile, run_dir / "fmcluster_acceptance_gpu.prom"):
        text = prom.read_text()
        assert f"fmcluster_acceptance_gate_passed{{{labels}}} 0" in text
        assert f"fmcluster_acceptance_gate_could_not_run{{{labels}}} 1" in text
        assert f"fmcluster_acceptance_last_run_timestamp_seconds{{{labels}}} " in text


COULD_NOT_RUN = [
    # (case, environment, reason in the verdict)
    ("no python", {"FMC_PYTHON": "/nonexistent/python3"}, "/nonexistent/python3 not found (set FMC_PYTHON to a Python 3.8+ interpreter)"),
    ("no nccl-tests", {"FMC_NCCL_TESTS_DIR": "/nonexistent"}, "no /nonexistent/all_reduce_perf (set FMC_NCCL_TESTS_DIR)"),
    ("bad setting", {"FMC_MIN_PARTNERS": "two"}, "FMC_MIN_PARTNERS must be a positive integer, got 'two'"),
    ("broken MPI", {"STUB_SRUN_MPI_MISSING": "1"}, "the judge could not read the results in {run}/results (see above); nothing drained"),
]


@pytest.mark.parametrize(("case", "env", "reason"), COULD_NOT_RUN, ids=[c[0] for c in COULD_NOT_RUN])
def test_every_exit_path_writes_a_verdict_and_metrics(gate: Path, tmp_path: Path, case: str, env: dict[str, str],
                                                      reason: str) -> None:
    r = run(gate, tmp_path, **env)
    assert r.rc == 2 and r.drains == []
    run_dir = tmp_path / "acceptance" / "4242"
    assert_could_not_run(r, run_dir, reason.format(run=run_dir))


# ---- alert rules and the dashboard panel ---------------------------------------------------------------
def _rules_file(tmp_path: Path) -> Path:
    files = render_blueprint(load_blueprint(ROOT / "blueprints/default.yaml"))
    path = tmp_path / "rules.yml"
    path.write_text(files["observability/rules"]["llm-train-alerts.yml"])
    return path


def test_acceptance_rules_pass_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed (apt-get install prometheus)") if os.environ.get("CI") else pytest.skip("no promtool")
    result = subprocess.run([promtool, "check", "rules", str(_rules_file(tmp_path))], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "AcceptanceGateFailed" in _rules_file(tmp_path).read_text()


def _expected(alert: str, **labels: str) -> dict:
    from fmcluster.features.observability.render_acceptance import acceptance_alert_rules

    [rule] = [r for r in acceptance_alert_rules() if r.alert == alert]

    def fill(text: str) -> str:
        for k, v in labels.items():
            text = text.replace(f"{{{{ $labels.{k} }}}}", v)
        return text

    return {"exp_labels": {"severity": rule.severity, **labels},
            "exp_annotations": {"summary": fill(rule.summary), "description": fill(rule.description)}}


def test_acceptance_alerts_fire_on_the_newest_gate_run_only(tmp_path: Path) -> None:
    """promtool unit test: an older textfile on another node (gate failed, gpu-1 drained) is ignored once a
    newer run exists; the newer run drained gpu-5 and failed."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed (apt-get install prometheus)") if os.environ.get("CI") else pytest.skip("no promtool")
    rules = _rules_file(tmp_path)
    base = 'cluster="llm-train",group="gpu",job="node"'

    def s(name: str, instance: str, extra: str, values: str) -> dict:
        return {"series": f'{name}{{{base},instance="{instance}"{extra}}}', "values": values}

    it = ',instance_type="p5.48xlarge"'
    series = [
        s("fmcluster_acceptance_last_run_timestamp_seconds", "old:9100", it, "100x10"),
        s("fmcluster_acceptance_gate_passed", "old:9100", it, "0x10"),
        s("fmcluster_acceptance_node_drained", "old:9100", ',node="p5-st-gpu-1"', "1x10"),
        # the newer run starts at minute 3
        s("fmcluster_acceptance_last_run_timestamp_seconds", "new:9100", it, "_ _ _ 500x7"),
        s("fmcluster_acceptance_gate_passed", "new:9100", it, "_ _ _ 0x7"),
        s("fmcluster_acceptance_node_drained", "new:9100", ',node="p5-st-gpu-1"', "_ _ _ 0x7"),
        s("fmcluster_acceptance_node_drained", "new:9100", ',node="p5-st-gpu-5"', "_ _ _ 1x7"),
    ]
    doc = {
        "rule_files": [rules.name],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "1m", "alertname": "AcceptanceNodeDrained",
                 "exp_alerts": [_expected("AcceptanceNodeDrained", cluster="llm-train", group="gpu", node="p5-st-gpu-1")]},
                {"eval_time": "5m", "alertname": "AcceptanceNodeDrained",
                 "exp_alerts": [_expected("AcceptanceNodeDrained", cluster="llm-train", group="gpu", node="p5-st-gpu-5")]},
                {"eval_time": "5m", "alertname": "AcceptanceGateFailed",
                 "exp_alerts": [_expected("AcceptanceGateFailed", cluster="llm-train", group="gpu", instance_type="p5.48xlarge")]},
                {"eval_time": "5m", "alertname": "AcceptanceNodeSuspect", "exp_alerts": []},
            ],
        }],
    }
    test_file = tmp_path / "acceptance-test.yml"
    test_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_overview_dashboard_has_the_acceptance_row() -> None:
    files = render_blueprint(load_blueprint(ROOT / "blueprints/default.yaml"))
    overview = json.loads(files["observability/dashboards"]["overview.json"])
    titles = [p.get("title") for p in overview["panels"]]
    assert "Fleet acceptance gate (last run)" in titles
    assert {"Nodes failed", "Nodes drained by the gate", "Acceptance bus bandwidth per node"} <= set(titles)
    [bw] = [p for p in overview["panels"] if p.get("title") == "Acceptance bus bandwidth per node"]
    assert "fmcluster_acceptance_node_busbw_gbps" in bw["targets"][0]["expr"]
