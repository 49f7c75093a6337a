"""Day 2 as written (issue 24 item 1, issue 27): every block of README.md, docs/first-job.md, docs/operations.md,
docs/acceptance.md and docs/kubernetes.md is either run against a simulated cluster of one example per orchestrator
(tests/fixtures/day2/docsim.py) or classified here with the reason it cannot run offline. A block that is neither
fails :func:`test_every_doc_block_is_run_or_classified`; a command that fails in the simulation fails
:func:`test_the_docs_run_as_written`, and so does a job it submits that does not complete."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.day2.docsim import PASTE_MARK, Block, Step, doc_blocks, run, world

# Independent cases with small shared fixtures: xdist hands them out one by one (tests/conftest.py).
pytestmark = pytest.mark.spread

DOCS = ("README.md", "docs/first-job.md", "docs/kubernetes.md", "docs/acceptance.md", "docs/operations.md")

#: One example blueprint per orchestrator (docs/first-job.md's names: HyperPod Slurm is ``hyperpod``).
EXAMPLES = {"parallelcluster": "default", "pcs": "pcs-p5en", "hyperpod": "hyperpod-p5", "hyperpod-eks": "hyperpod-eks"}
SLURM = ("parallelcluster", "pcs", "hyperpod")
ALL = (*SLURM, "hyperpod-eks")

#: Files of the first jobs the reader pastes on the node (first-job.md "Copying the files to the node").
FIRST_JOB_FILES = ("nccl-tests.sbatch", "fsdp-train.sbatch", "fsdp-train.py")


@dataclass(frozen=True)
class Run:
    """Run the block on ``where`` (laptop or node) for these orchestrators; ``blueprint``: the doc names
    blueprints/default.yaml as its example and the reader puts theirs (operations.md: "Every command below names the
    same blueprint file you deployed with"); ``before``: what the reader did that the doc assumes."""

    where: str
    orchestrators: tuple[str, ...]
    blueprint: bool = False
    before: str = ""
    paste_files: bool = False


@dataclass(frozen=True)
class Classified:
    """Not run for these orchestrators, with the reason."""

    reason: str
    orchestrators: tuple[str, ...] = ALL


#: Per block (doc, first line) and orchestrator: run, or why not. An orchestrator missing from a block's row fails.
PLAN: dict[tuple[str, str], list[Run | Classified]] = {
    ("README.md", "make synth   # sets up .venv + node_modules, synthesizes blueprints/default.yaml into cdk.out/, "
                  "prints the plan"): [
        Run("laptop", ("parallelcluster",)),
        Classified("names default.yaml (ParallelCluster) only: the other orchestrators take it from first-job.md",
                   ("pcs", "hyperpod", "hyperpod-eks"))],
    ("README.md", "name: llm-train                 # prefixes stacks, tags and the cluster name"): [
        Classified("a blueprint, not commands (tests/test_docs.py checks it against the model)")],
    ("README.md", "$ fmcluster validate bad.yaml"): [
        Classified("a transcript of output for a file the reader does not have; the messages are "
                   "tests/test_loader.py's")],
    ("README.md", "make synth BLUEPRINT=blueprints/default.yaml                  # review cdk.out/ and the plan first"): [
        Run("laptop", ("parallelcluster",)),
        Classified("names default.yaml (ParallelCluster) only: the others run first-job.md's section 1",
                   ("pcs", "hyperpod", "hyperpod-eks"))],
    ("README.md", "app.py              thin CDK entry (-c blueprint=FILE)"): [
        Classified("the repository layout, not commands")],
    ("docs/first-job.md", "npx cdk bootstrap aws://<account-id>/<region>                 # once per account and Region "
                          "(CDK's asset bucket and roles)"): [
        Run("laptop", SLURM, blueprint=True),
        Classified("Slurm only: HyperPod EKS deploys as docs/kubernetes.md says", ("hyperpod-eks",))],
    ("docs/first-job.md", "mkdir -p /fsx/$USER/first-job && cd /fsx/$USER/first-job     # ParallelCluster: mkdir -p "
                          "~/first-job && cd ~/first-job"): [
        Run("node", SLURM), Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "cat > nccl-tests.sbatch <<'FMC_EOF'"): [
        Run("node", SLURM, paste_files=True), Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "sbatch nccl-tests.sbatch            # 2 nodes of the group, one task per GPU; sbatch -N 4 "
                          "... for more"): [
        Run("node", SLURM), Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "sbatch fsdp-train.sbatch            # with pyxis; without: \"Without pyxis\" below"): [
        Run("node", ("parallelcluster",)),
        Classified("its own comment sends an image without pyxis (PCS, HyperPod) to the next block",
                   ("pcs", "hyperpod")),
        Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "srun -p <partition> -N 1 bash -c 'python3 -m venv /fsx/$USER/venv && /fsx/$USER/venv/bin/"
                          "pip install torch'"): [
        Run("node", ("pcs", "hyperpod")),
        Classified("ParallelCluster's image has pyxis: the job runs in a container (the block above)",
                   ("parallelcluster",)),
        Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "mkdir -p ~/.config/enroot"): [
        Run("node", ("parallelcluster",)),
        Classified("the container case only: the PCS and HyperPod images have no enroot (catalog enroot_pyxis)",
                   ("pcs", "hyperpod")),
        Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "machine 763104351884.dkr.ecr.us-west-2.amazonaws.com login AWS password $(aws ecr "
                          "get-login-password --region us-west-2)"): [
        Classified("a line of the enroot credentials file of the block above, not a command")],
    ("docs/first-job.md", "mkdir -p /fsx/images"): [
        Run("node", ("parallelcluster",)),
        Classified("the container case only: the PCS and HyperPod images have no enroot (catalog enroot_pyxis)",
                   ("pcs", "hyperpod")),
        Classified("Slurm only", ("hyperpod-eks",))],
    ("docs/first-job.md", "fmcluster-fsdp: torch <version>, NCCL <version>, world size 16, ~534M parameters"): [
        Classified("expected output of the FSDP job, not a command")],
    ("docs/acceptance.md", "cd /fsx/$USER                        # the shared file system (ParallelCluster: your "
                           "home works too)"): [
        Run("node", SLURM, before="cd ~\n"), Classified("Slurm only: the gate is a Slurm job", ("hyperpod-eks",))],
    ("docs/operations.md", "aws cloudformation describe-stacks --region <region> --stack-name <name>-cluster \\"): [
        Run("laptop", ALL)],
    ("docs/operations.md", "sinfo                                   # one partition per compute group; nodes idle~ "
                           "(powered down) are normal"): [
        Run("node", SLURM, before="cd ~\n"), Classified("Slurm only: docs/kubernetes.md is the EKS first job", ("hyperpod-eks",))],
    ("docs/operations.md", "journalctl -t fmcluster-heartbeat -n 20          # why the last heartbeats were not sent"): [
        Classified("self-hosted metrics only, and no example of this simulation is self-hosted; the heartbeat script "
                   "itself runs against stub curl/aws in tests/features/observability/test_observability_heartbeat.py")],
    ("docs/operations.md", ".venv/bin/fmcluster diff deployed.yaml changed.yaml     # count changes update the cluster "
                           "in place"): [
        Run("laptop", ALL, before="cp {bp} deployed.yaml && sed 's/^\\(    count: \\)\\([0-9]*\\)/\\1 3/' {bp} > "
                                  "changed.yaml\n")],
    ("docs/operations.md", "npx cdk destroy --all -c blueprint=blueprints/default.yaml"): [
        Run("laptop", ALL, blueprint=True)],
    ("docs/kubernetes.md", "orchestrator:"): [Classified("a blueprint fragment, not commands")],
    ("docs/kubernetes.md", "npx cdk deploy hp-eks-network hp-eks-storage hp-eks-eks "
                           "-c blueprint=blueprints/hyperpod-eks.yaml"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
    ("docs/kubernetes.md", ".venv/bin/fmcluster render blueprints/hyperpod-eks.yaml --out rendered/"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
    ("docs/kubernetes.md", "npx cdk deploy --all -c blueprint=blueprints/hyperpod-eks.yaml"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
    ("docs/kubernetes.md", "kubectl apply -f rendered/kubernetes/kueue/topology.yaml "
                           "-f rendered/kubernetes/kueue/gpu.yaml"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
    ("docs/kubernetes.md", "FMC_PYTHON=.venv/bin/python bash rendered/kubernetes/kueue/merge-kueue-config.sh"): [
        Classified("runs against a stub kubectl holding the live kueue-manager-config ConfigMap in "
                   "tests/orchestrators/hyperpod_eks/test_k8s_manifests.py (merge, second run unchanged, v1beta1 "
                   "refused, no Kueue: exit 2); this harness's kubectl models no ConfigMaps", ("hyperpod-eks",)),
        Classified("HyperPod EKS only", SLURM)],
    ("docs/kubernetes.md", "aws eks update-kubeconfig --region us-east-1 --name hp-eks --role-arn "
                           "arn:aws:iam::123456789012:role/eks-admins"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
    ("docs/operations.md", "sudo /opt/fmcluster/bin/fmcluster-gate-watch status          # accepted nodes, pending gate "
                           "jobs, held nodes"): [
        Classified("the watcher runs as root against stub scontrol/sbatch/squeue in "
                   "tests/features/acceptance/test_gate_watch.py (request, release, status); this harness installs no "
                   "watcher on its simulated admin node", SLURM),
        Classified("Slurm only: the watcher is a Slurm admin-node script", ("hyperpod-eks",))],
    ("docs/kubernetes.md", "sed -i \"s|image: nccl-tests:|image: <account>.dkr.ecr.us-east-1.amazonaws.com/"
                           "nccl-tests:|\" rendered/kubernetes/jobs/gpu-nccl-tests.yaml"): [
        Run("laptop", ("hyperpod-eks",)), Classified("HyperPod EKS only", SLURM)],
}


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in doc_blocks(doc)]


def decision(key: tuple[str, str], orchestrator: str) -> Run | Classified:
    """The block's Run for ``orchestrator``, else its first Classified (the reason for the others)."""
    found = [r for r in PLAN[key] if orchestrator in r.orchestrators]
    assert found, f"{key}: neither run nor classified for {orchestrator}"
    return found[0]


def test_every_doc_block_is_run_or_classified() -> None:
    """A new block (or a changed first line) must be added to PLAN; a PLAN row for a block that is gone fails too."""
    keys = [b.key for b in all_blocks()]
    assert [k for k in keys if k not in PLAN] == []
    assert [k for k in PLAN if k not in keys] == []
    assert len(set(keys)) == len(keys), "two blocks of one doc start with the same line"
    for key, row in PLAN.items():
        covered = [o for r in row for o in r.orchestrators]
        assert set(covered) == set(ALL), f"{key}: every orchestrator needs a Run or a Classified"
        assert all(r.reason for r in row if isinstance(r, Classified)), key


def test_shell_blocks_are_bash_and_others_are_classified() -> None:
    """Only ```bash blocks are run; a block without a language or of another one is output or a file (classified)."""
    for b in all_blocks():
        if b.lang != "bash":
            assert all(isinstance(r, Classified) for r in PLAN[b.key]), b.key


def steps_for(orchestrator: str, tmp: Path) -> tuple[list[Step], object]:
    w = world(orchestrator, EXAMPLES[orchestrator], tmp)
    example = f"blueprints/{EXAMPLES[orchestrator]}.yaml"
    group = w.placeholders["group"]
    steps: list[Step] = []
    for b in all_blocks():
        d = decision(b.key, orchestrator)
        if not isinstance(d, Run):
            continue
        replace = (("blueprints/default.yaml", example),) if d.blueprint else ()
        before = d.before.format(bp=example)
        if b.doc == "docs/acceptance.md":
            # DIR: where the reader copied the rendered folder on the cluster (the doc says: the shared file system)
            before += f"mkdir -p /fsx/$USER && cp -r {w.laptop}/rendered /fsx/$USER/rendered\n"
            replace += (("DIR/", "/fsx/$USER/rendered/"),)
        if d.paste_files:
            steps += [Step(b, d.where, replace + (("nccl-tests.sbatch", name),), (("paste the file", PASTE_MARK),),
                           before, paste=f"rendered/{group}/{name}") for name in FIRST_JOB_FILES]
        else:
            steps.append(Step(b, d.where, replace, (), before))
    return steps, w


@pytest.mark.parametrize("orchestrator", ALL)
def test_the_docs_run_as_written(orchestrator: str, tmp_path: Path) -> None:
    steps, w = steps_for(orchestrator, tmp_path)
    outcome = run(w, steps)  # type: ignore[arg-type]
    assert outcome.failures == [], outcome.output[-6000:]
    failed_jobs = [j for j in outcome.state["jobs"] if j["state"] != "COMPLETED"]
    assert failed_jobs == [], failed_jobs


#: The simulation refuses what the real cluster refuses: (orchestrator, where, commands, what the output says).
#: Each row must fail on its own (a recorded failing command), or the stubs have stopped modelling that behaviour.
REFUSED = [
    ("parallelcluster", "node", "printf '#!/bin/bash\\ntrue\\n' > /fsx/ok.sbatch\nsudo sbatch /fsx/ok.sbatch",
     "sudo: sbatch: command not found"),
    ("parallelcluster", "node", "sbatch --nodes=8 /fsx/ok.sbatch", "Requested node configuration is not available"),
    ("parallelcluster", "node", "printf 'true\\n' > /fsx/plain.sh\nsbatch /fsx/plain.sh", "does not look like a batch script"),
    ("parallelcluster", "node", "sbatch --nodelist=gpu-st-p5-[1-2] /fsx/ok.sbatch", "Invalid node name specified"),
    ("parallelcluster", "laptop", "fmcluster plan blueprints/default.yaml", "fmcluster: command not found"),
    ("parallelcluster", "laptop", "npx cdk deploy --all", "no blueprint: pass -c blueprint=FILE"),
    ("parallelcluster", "laptop", ".venv/bin/fmcluster plan blueprints/default.yaml --formatt json", "No such option"),
    ("parallelcluster", "laptop", "npx cdk bootstrap aws://123456789012/us-west-2", "expected the environment"),
    ("hyperpod", "node", "srun -p gpu -N 1 --container-image=x true", "unrecognized option '--container-image=x'"),
    ("hyperpod", "node", "printf 'import torch\\n' > /fsx/t.py\nsrun -p gpu -N 1 python3 /fsx/t.py",
     "No module named 'torch'"),
    ("pcs", "node", "srun -p gpu -N 1 true", "Invalid partition name specified"),
    # GPUs (sim.py): HyperPod's nodes declare no gres/gpu; PCS is modelled confining devices (worst case, undocumented)
    ("hyperpod", "node", "srun -p gpu -N 1 --gpus-per-node=8 true", "Invalid generic resource (gres) specification"),
    ("pcs", "node", "srun -p h200 -N 1 --exclusive fmcluster-node-check", "nvidia-smi sees 0 GPU(s)"),
    ("parallelcluster", "node", "srun -p gpu -N 1 --gpus-per-node=9 true", "Requested node configuration is not available"),
    ("pcs", "laptop", "aws cloudformation describe-stacks --region us-east-2 --stack-name pcs-h200-cluster",
     "Stack with id pcs-h200-cluster does not exist"),
    ("hyperpod-eks", "laptop", "kubectl get nodes", "connection to the server localhost:8080 was refused"),
    ("hyperpod-eks", "laptop", "npx cdk deploy hp-eks-eks -c blueprint=blueprints/hyperpod-eks.yaml\n"
     "aws eks update-kubeconfig --region us-east-1 --name hp-eks\n"
     "printf 'apiVersion: kubeflow.org/v2beta1\\nkind: MPIJob\\nmetadata: {name: j}\\n' > j.yaml\nkubectl apply -f j.yaml",
     "ensure CRDs are installed first"),
]


@pytest.mark.parametrize("orchestrator", ALL)
def test_the_simulation_refuses_what_the_cluster_refuses(orchestrator: str, tmp_path: Path) -> None:
    rows = [r for r in REFUSED if r[0] == orchestrator]
    w = world(orchestrator, EXAMPLES[orchestrator], tmp_path)
    steps = [Step(Block("refused", i, "bash", text + "\n"), where) for i, (_, where, text, _) in enumerate(rows)]
    outcome = run(w, steps)
    failed = {line.split(" [", 1)[0] for line in outcome.failures}
    assert failed == {f"refused:{i}" for i in range(len(rows))}, outcome.output[-4000:]
    for _, _, _, said in rows:
        assert said in outcome.output, said


@pytest.mark.parametrize(("orchestrator", "folder", "state"), [
    ("hyperpod", "~", "FAILED"), ("pcs", "~", "FAILED"), ("parallelcluster", "~", "COMPLETED"),
    ("hyperpod", "/fsx/$USER", "COMPLETED"),
])
def test_a_job_runs_only_from_a_folder_the_compute_nodes_share(
        orchestrator: str, folder: str, state: str, tmp_path: Path) -> None:
    """Home is shared on ParallelCluster only (profile home_shared): elsewhere a job submitted from home fails before it
    runs (slurmstepd cannot open its output file), although sbatch accepted it."""
    w = world(orchestrator, EXAMPLES[orchestrator], tmp_path)
    text = f"mkdir -p {folder} && cd {folder}\nprintf '#!/bin/bash\\necho ran\\n' > j.sbatch\nsbatch j.sbatch\n"
    outcome = run(w, [Step(Block("job", 1, "bash", text), "node")])
    assert outcome.failures == [] and "Submitted batch job 101" in outcome.output
    assert [j["state"] for j in outcome.state["jobs"]] == [state]
