"""Slurm hooks fmcluster wires into slurm.conf: the node check as ``HealthCheckProgram`` and the job
environment as ``TaskProlog``.

- ``HealthCheckProgram``: ``<node_dir>/bin/fmcluster-node-check-health``, the wrapper the node bootstrap
  installs (``fmcluster-node-check --no-nccl --drain``: the fast checks, and on failure ``scontrol update
  State=DRAIN Reason="fmcluster-node-check: <first failure>"``); slurmd runs it as root every
  ``HealthCheckInterval`` seconds on nodes in ``HealthCheckNodeState`` (slurm.conf(5), SchedMD/slurm
  ``doc/man/man5/slurm.conf.5``).
- IMEX per job (p6e-gb200): a Slurm prolog that writes the job's nodes as the IMEX domain
  (``fmcluster-imex-nodes``) with ``PrologFlags=Alloc,NoHold``.
- Containers (ParallelCluster official images): enroot + pyxis enabled from the images' own example
  configurations, enroot data and cache on the node's local NVMe scratch.
- ``TaskProlog``: a script that sources the node's job environment file and prints each variable as
  ``export name=value``, the form slurmstepd reads from a task prolog's standard output (SchedMD/slurm
  ``doc/html/prolog_epilog.shtml``), so every task, containers launched by it included, gets it.
- Where slurm.conf is not ours to pass settings to (SageMaker HyperPod: ``SlurmConfig`` has no such keys), the
  controller's lifecycle script edits it (:func:`render_slurm_conf_editor`); where the orchestrator does not take
  ``HealthCheckProgram`` (AWS PCS custom settings), a systemd timer on every compute node runs the same wrapper
  (:func:`render_health_timer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fmcluster.templates.render import render

#: Seconds between two runs of the node check's fast mode on a node.
HEALTH_CHECK_INTERVAL_S = 300
#: Slurm flags the IMEX prolog needs: run at allocation on every node, without holding the job (the AWS
#: ParallelCluster and AWS PCS IMEX guides; slurm.conf(5) PrologFlags). NoHold cannot go with Contain, X11 or RunInJob
#: (slurmctld fatal "PrologFlags invalid combination", SchedMD/slurm src/common/read_config.c): ParallelCluster's own
#: slurm.conf sets no PrologFlags (aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm/templates/default/
#: slurm/slurm.conf.erb: Prolog=<install_dir>/etc/scripts/prolog.d/* only) and fmcluster passes no other, so these
#: go to its CustomSlurmSettings as they are; the HyperPod editor merges them with the site's flags.
IMEX_PROLOG_FLAGS = "Alloc,NoHold"
#: Nodes the health check runs on: every state, spread over the interval (slurm.conf(5) HealthCheckNodeState).
HEALTH_CHECK_NODE_STATE = "ANY,CYCLE"


def health_check_program(node_dir: str) -> str:
    """The health-check wrapper the node bootstrap installs under ``node_dir``."""
    return f"{node_dir}/bin/fmcluster-node-check-health"


def job_env_file(node_dir: str) -> str:
    """The job environment file the node bootstrap writes under ``node_dir``."""
    return f"{node_dir}/etc/job-env.sh"


def slurm_conf_settings(node_dir: str, task_prolog: str) -> list[dict[str, str | int]]:
    """``[{name: value}, ...]`` for slurm.conf (ParallelCluster ``CustomSlurmSettings`` form)."""
    return [
        {"HealthCheckProgram": health_check_program(node_dir)},
        {"HealthCheckInterval": HEALTH_CHECK_INTERVAL_S},
        {"HealthCheckNodeState": HEALTH_CHECK_NODE_STATE},
        {"TaskProlog": task_prolog},
    ]


def render_slurm_conf_editor(*, slurm_conf: str, scontrol: str, settings: Sequence[Mapping[str, str | int]],
                             orchestrator: str, node_label: str, why: str, prolog: str | None = None,
                             prolog_flags: str = IMEX_PROLOG_FLAGS) -> str:
    """The idempotent script that puts ``settings`` (:func:`slurm_conf_settings` form, ``[{name: value}]``) and, with
    ``prolog``, a ``Prolog=<prolog>`` line (beside any already there) and the ``prolog_flags`` (merged into the flags
    already set, leaving out ``NoHold`` beside ``Contain``/``X11``/``RunInJob`` and ``Alloc`` where another flag sets
    it) into ``slurm_conf`` and runs ``scontrol reconfigure`` when something changed. Fails (exit 1) when slurm.conf is
    missing or slurmctld refuses the new file (the previous one is put back)."""
    pairs = [(name, str(value)) for item in settings for name, value in item.items()]
    return render("slurm/fmcluster-slurm-conf.sh.j2", {
        "slurm_conf": slurm_conf, "scontrol": scontrol, "settings": pairs, "orchestrator": orchestrator,
        "node_label": node_label, "why": why, "prolog": prolog, "prolog_flags": prolog_flags})


#: The reason fmcluster drains a node with while its lifecycle script runs; only a node with this reason is resumed.
LIFECYCLE_DRAIN_REASON = "fmcluster: lifecycle script running"
#: Minutes between re-applications of the Slurm hooks by the controller's timer (a backstop to the path unit).
SLURM_CONF_REAPPLY_MIN = 5


def render_node_state(*, mode: str, scontrol: str, orchestrator: str, why: str,
                      reason: str = LIFECYCLE_DRAIN_REASON) -> str:
    """The script that drains this node (``mode="drain"``) with ``reason``, or resumes it (``"resume"``) only when
    it is drained with ``reason``; found by its Slurm name (short host name, else its NodeAddr). Never exits non-zero.
    Raises ValueError for another mode."""
    if mode not in ("drain", "resume"):
        raise ValueError(f"mode must be drain or resume, got {mode!r}")
    return render("slurm/fmcluster-slurm-node-state.sh.j2", {
        "mode": mode, "scontrol": scontrol, "orchestrator": orchestrator, "why": why, "reason": reason})


def render_slurm_conf_watch(*, slurm_conf: str, editor_file: str, editor_path: str, orchestrator: str,
                            node_label: str, why: str, interval_min: int = SLURM_CONF_REAPPLY_MIN) -> str:
    """The installer that puts the slurm.conf editor (``editor_file`` beside it) at ``editor_path``, runs it once and
    installs ``fmcluster-slurm-conf.path`` (on a change of ``slurm_conf``) and ``.timer`` (every ``interval_min``
    minutes) that re-run it. Exits non-zero when the first run of the editor fails."""
    return render("slurm/fmcluster-slurm-conf-watch.sh.j2", {
        "slurm_conf": slurm_conf, "editor_file": editor_file, "editor_path": editor_path,
        "orchestrator": orchestrator, "node_label": node_label, "why": why, "interval_min": interval_min})


def render_health_timer(*, node_dir: str, slurm_bin_dir: str, orchestrator: str, why: str,
                        imex_prolog: str | None = None, imex_script: str = "",
                        interval_s: int = HEALTH_CHECK_INTERVAL_S) -> str:
    """The compute-node script that installs ``fmcluster-health.timer`` (every ``interval_s`` seconds: the
    :func:`health_check_program` wrapper under this node's Slurm node name, found with ``<slurm_bin_dir>/scontrol``)
    and, with ``imex_prolog``, writes ``imex_script`` there. Raises ValueError when ``imex_script`` contains the
    heredoc delimiter."""
    if "FMC_IMEX_PROLOG_EOF" in imex_script.splitlines():
        raise ValueError("the IMEX prolog contains the installer's heredoc delimiter FMC_IMEX_PROLOG_EOF")
    return render("slurm/fmcluster-health-timer.sh.j2", {
        "node_dir": node_dir, "slurm_bin_dir": slurm_bin_dir, "orchestrator": orchestrator, "why": why,
        "health_program": health_check_program(node_dir), "interval_s": interval_s, "imex_prolog": imex_prolog,
        "imex_prolog_script": imex_script})


def render_task_prolog(node_dir: str) -> str:
    """The TaskProlog script (bash) for nodes whose job environment is under ``node_dir``."""
    return render("slurm/fmcluster-task-prolog.sh.j2", {"job_env": job_env_file(node_dir)})


def render_imex_prolog(node_dir: str, scontrol: str, instance_types: Sequence[str]) -> str:
    """The Slurm prolog that sets the job's IMEX domain on NVLink-domain nodes (``instance_types``) through
    ``<node_dir>/bin/fmcluster-imex-nodes``, which the node bootstrap installs on IMEX nodes."""
    return render("slurm/fmcluster-imex-prolog.sh.j2", {
        "imex_nodes": f"{node_dir}/bin/fmcluster-imex-nodes", "scontrol": scontrol,
        "instance_types": ", ".join(instance_types)})


def render_hooks_installer(node_dir: str, task_prolog: str, *, orchestrator: str, node_label: str,
                           share_note: str, imex_prolog: str | None = None, imex_script: str = "") -> str:
    """The script that writes the TaskProlog to ``task_prolog`` (and, with ``imex_prolog``, ``imex_script``
    there) on the controller node (``share_note``: how the files reach the compute nodes)."""
    script = render_task_prolog(node_dir)
    for delimiter, text in (("FMC_TASK_PROLOG_EOF", script), ("FMC_IMEX_PROLOG_EOF", imex_script)):
        if delimiter in text.splitlines():
            raise ValueError(f"an embedded script contains the installer's heredoc delimiter {delimiter}")
    return render("slurm/fmcluster-slurm-hooks-install.sh.j2", {
        "task_prolog": task_prolog, "task_prolog_script": script, "orchestrator": orchestrator,
        "node_label": node_label, "share_note": share_note, "imex_prolog": imex_prolog,
        "imex_prolog_script": imex_script})


def render_containers(*, head_node: bool, default_dir: str) -> str:
    """The script enabling enroot + pyxis on a ParallelCluster node (``head_node``: also the SPANK plugin
    configuration in the shared ``/opt/slurm/etc``); its first argument is the scratch directory for enroot's
    data and cache (default ``default_dir``)."""
    return render("slurm/fmcluster-containers.sh.j2", {
        "head_node": head_node, "node_kind": "head node" if head_node else "compute node", "default_dir": default_dir})


def render_nccl_tests_sbatch(*, blueprint_name: str, group_name: str, instance_type: str, gpus: int, count: int,
                             node_dir: str, orchestrator: str, gpus_per_node: int | None, gpu_note: tuple[str, ...],
                             nccl_tests_dir: str = "/opt/nccl-tests/build", shared_dir: str | None = None) -> str:
    """A ready sbatch for multi-node nccl-tests ``all_reduce_perf`` on one compute group (Slurm partition =
    group name on every orchestrator): 2 nodes (1 when the group has one), one task per GPU. ``gpus_per_node``,
    ``gpu_note``: the orchestrator's GPU request and why (:func:`fmcluster.orchestrators.profile.sbatch_gpus`;
    ``None``: no ``--gpus-per-node`` line). ``shared_dir``: the shared file system the job must be submitted from
    where home is not shared (it exits 2 elsewhere), or ``None`` (home is shared;
    :func:`fmcluster.features.containers.plan.first_job_dir`)."""
    return render("slurm/nccl-tests.sbatch.j2", {
        "blueprint_name": blueprint_name, "group_name": group_name, "instance_type": instance_type, "gpus": gpus,
        "partition": group_name, "nodes": min(2, count), "job_env": job_env_file(node_dir),
        "nccl_tests_dir": nccl_tests_dir, "shared_dir": shared_dir, "orchestrator": orchestrator,
        "gpus_per_node": gpus_per_node, "gpu_note": gpu_note})
