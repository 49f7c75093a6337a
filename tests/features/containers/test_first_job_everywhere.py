"""The first jobs on every orchestrator (issue 24, item 5): where home is not shared the rendered jobs refuse to run
from anywhere but the shared file system; the FSDP job uses a container only where the image has pyxis, else it runs
on the host; R-CTR-11 says so for a GPU group that declares no container. One row per example blueprint."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT

# (example, group, home shared (no guard), FSDP job in a container)
EXAMPLES = [
    ("default", "gpu", True, True),
    ("hyperpod-p5", "gpu", False, False),
    ("pcs-p5en", "h200", False, False),
]


@pytest.mark.parametrize(("example", "group", "home_shared", "container"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_first_jobs_follow_the_orchestrators_home_and_pyxis(
    example: str, group: str, home_shared: bool, container: bool
) -> None:
    files = render_blueprint(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))[group]
    for job in ("nccl-tests.sbatch", "fsdp-train.sbatch"):
        guarded = 'case "${SLURM_SUBMIT_DIR:-$PWD}" in\n  /fsx|/fsx/*) ;;' in files[job]
        assert guarded is not home_shared, job
    fsdp = files["fsdp-train.sbatch"]
    assert ("--container-image" in fsdp) is container
    assert ('"${FMC_PYTHON:-python3}"' in fsdp) is not container


#: (example, --gpus-per-node every batch script asks for; None: no request): the GPU nodes of ParallelCluster and PCS
#: declare gres/gpu (aws/aws-parallelcluster-cookbook slurm.conf.erb ``GresTypes=gpu``; PCS release notes "GRES
#: autodetection by default on compute node groups that have GPUs"), HyperPod's do not and its Slurm refuses the request
#: (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch:
#: "Uncomment for AWS ParallelCluster"; awslabs/awsome-distributed-ai issue #196).
GPU_REQUESTS = [("default", "gpu", "8"), ("pcs-p5en", "h200", "8"), ("hyperpod-p5", "gpu", None),
                ("p6-b300", "b300", "8")]


@pytest.mark.parametrize(("example", "group", "gpus"), GPU_REQUESTS, ids=[g[0] for g in GPU_REQUESTS])
def test_every_batch_script_asks_for_gpus_only_where_the_nodes_declare_gres(example: str, group: str,
                                                                            gpus: str | None) -> None:
    files = render_blueprint(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))
    scripts = {name: files[group][name] for name in ("nccl-tests.sbatch", "fsdp-train.sbatch")}
    scripts["gate"] = files["acceptance"][f"fmcluster-acceptance-{group}.sbatch"]
    for name, text in scripts.items():
        asked = [line.split("=", 1)[1] for line in text.splitlines() if line.startswith("#SBATCH --gpus-per-node=")]
        assert asked == ([gpus] if gpus else []), name
        assert ("declare gres/gpu, so the job asks for every GPU" in text) is (gpus is not None), name


def _run(job: str, submit_dir: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the top of a rendered job (up to its first Slurm command) as the batch script would start."""
    script = tmp_path / "job.sh"
    script.write_text(job.split("\n# shellcheck disable=SC1091", 1)[0] + "\necho passed-the-guard\n")
    env = {**os.environ, "SLURM_SUBMIT_DIR": submit_dir}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)


@pytest.mark.parametrize(("submit_dir", "rc"), [("/home/ubuntu", 2), ("/fsx/ubuntu/first-job", 0), ("/fsx", 0),
                                                ("/fsxdata/x", 2)])
def test_guard_refuses_a_folder_the_nodes_do_not_share(tmp_path: Path, submit_dir: str, rc: int) -> None:
    files = render_blueprint(load_blueprint(ROOT / "blueprints" / "pcs-p5en.yaml"))["h200"]
    proc = _run(files["nccl-tests.sbatch"], submit_dir, tmp_path)
    assert proc.returncode == rc, proc.stderr
    if rc:
        assert ("nccl-tests.sbatch: submitted from " + submit_dir + ", which the compute nodes do not share; copy the "
                "job to /fsx/$USER/first-job and submit it from there") in proc.stderr


def test_r_ctr_11_covers_the_first_job_container_without_pyxis() -> None:
    loaded = load_blueprint_text(blueprint_text({"orchestrator": {"kind": "pcs"}}))
    found = [(w.path, w.message) for w in loaded.warnings if w.rule_id == "R-CTR-11"]
    assert found == [(
        "compute[0].instance_type",
        "AWS PCS-ready Deep Learning AMI (Base, Ubuntu 24.04) has no enroot/pyxis (catalog), so the first FSDP job on "
        "compute[0] (gpu, p5.48xlarge) runs on the host, got no container runtime; allowed as is (fsdp-train.sbatch "
        "then needs FMC_PYTHON: a Python with PyTorch on the shared file system, docs/first-job.md) or "
        "software.image.mode: custom with an image that has enroot and pyxis")]
    assert not [w for w in load_blueprint_text(blueprint_text({})).warnings if w.rule_id == "R-CTR-11"]
