"""The fleet acceptance gate job, rendered per compute group (docs/acceptance.md "The gate job").

``fmcluster render`` writes ``acceptance/fmcluster-acceptance-<group>.sbatch`` for every EFA group of a Slurm
cluster (ParallelCluster, HyperPod Slurm, AWS PCS): one self-contained Slurm batch script that carries the
judge (the standard-library modules of :mod:`fmcluster.acceptance`, :data:`~fmcluster.acceptance.SHIPPED`)
and the group's floor (``floors.json``) as quoted heredocs, the way ``bootstrap.sh`` carries the node check.
Nothing has to be installed on the nodes besides what the bootstrap installs (the node check, the job
environment) and nccl-tests; the nodes' own ``python3`` (3.8+) runs the judge.

HyperPod EKS has no Slurm: no gate job is rendered there (docs/acceptance.md says what to run instead).
"""

from __future__ import annotations

from importlib import resources

from fmcluster.acceptance import SHIPPED
from fmcluster.acceptance.floors import floor_for, floor_json
from fmcluster.acceptance.judge import MEDIAN_FRACTION
from fmcluster.features.node.render_context import node_paths
from fmcluster.features.observability.render_exporters import TEXTFILE_DIR
from fmcluster.orchestrators.profile import sbatch_gpus
from fmcluster.resolved import ResolvedCluster, ResolvedGroup
from fmcluster.templates.render import render

FOLDER = "acceptance"
#: Heredoc delimiter of the embedded files; an embedded file must not contain it on a line of its own.
BUNDLE_EOF = "FMCLUSTER_ACCEPTANCE_EOF"


def gate_file_name(group: str) -> str:
    return f"fmcluster-acceptance-{group}.sbatch"


def shipped_modules() -> list[tuple[str, str]]:
    """(file name, source) of the judge modules the gate carries, in :data:`SHIPPED` order."""
    pkg = resources.files("fmcluster.acceptance")
    return [(name, pkg.joinpath(name).read_text(encoding="utf-8")) for name in SHIPPED]


def results_root(rc: ResolvedCluster) -> str:
    """Where the gate writes its results: the FSx for Lustre mount when the blueprint has one (shared by all
    nodes), else ``$HOME`` (ParallelCluster and PCS share /home from the head/login node)."""
    lustre = rc.blueprint.storage.lustre
    return f"{lustre.mount_point}/fmcluster/acceptance" if lustre is not None else "${HOME}/fmcluster-acceptance"


def render_gate(rc: ResolvedCluster, group: ResolvedGroup) -> str:
    """The gate batch script of ``group``.

    Raises:
        ValueError: an embedded file contains the heredoc delimiter on a line of its own.
    """
    floor = floor_for(group.instance.name)
    bundle = shipped_modules()
    floors = floor_json(group.instance.name)
    for name, text in [*bundle, ("floors.json", floors)]:
        if any(line.strip() == BUNDLE_EOF for line in text.splitlines()):
            raise ValueError(f"{name} contains the heredoc delimiter {BUNDLE_EOF}")
    paths = node_paths(rc.node_dir, None)
    gpus_per_node, gpu_note = sbatch_gpus(rc.profile, group.instance.gpu.count)
    return render("acceptance/gate.sbatch.j2", {
        "blueprint_name": rc.name,
        "group_name": group.name,
        # the Slurm partition of a compute group is the group's name on all three: ParallelCluster queue Name,
        # HyperPod SlurmConfig partition, PCS queue (fmcluster/orchestrators/*/construct.py)
        "partition": group.name,
        "instance_type": group.instance.name,
        "orchestrator": rc.profile.key,
        "gpus": group.instance.gpu.count,
        # the gate's steps see the GPUs only if the job asks for them where devices are confined (OrchestratorProfile.slurm_gpus)
        "gpus_per_node": gpus_per_node,
        "gpu_note": gpu_note,
        # one step (-f 2) past the floor's size: the judged row is never the table's last, truncated-looking one
        "max_bytes": 2 * floor.reference_size_bytes,
        "median_fraction": MEDIAN_FRACTION,
        "slurm_bin_dir": rc.profile.slurm_bin_dir or "",
        "drain_state": rc.profile.gate_drain.state,
        "drain_reason": rc.profile.gate_drain.reason,
        "drain_replaces": rc.profile.gate_drain.replaces,
        "drain_source": rc.profile.gate_drain.source,
        # the gate resumes only nodes whose Slurm reason it wrote itself
        "resume_own_drains": rc.profile.gate_drain.reason.startswith("fmcluster-acceptance:"),
        "node_check": paths["node_check"],
        "job_env": paths["job_env"],
        "results_root": results_root(rc),
        "textfile_dir": TEXTFILE_DIR,
        "bundle": bundle,
        "bundle_eof": BUNDLE_EOF,
        "floors_json": floors,
    })


def render_acceptance_files(rc: ResolvedCluster) -> dict[str, str]:
    """``acceptance/<gate file>`` -> text for every EFA group of a Slurm cluster; empty otherwise (HyperPod
    EKS; groups with EFA off, where NCCL uses sockets by design and no floor applies)."""
    if not rc.profile.runs_slurm:
        return {}
    return {f"{FOLDER}/{gate_file_name(g.name)}": render_gate(rc, g) for g in rc.groups if g.efa_devices > 0}
