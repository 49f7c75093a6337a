"""The acceptance gate's watcher: the gate runs by itself (issue 24 item 3; docs/acceptance.md "When it runs").

:func:`render_gate_watch_installer` renders one script for the node that runs Slurm's administration (ParallelCluster:
the head node's ``OnNodeConfigured``; HyperPod Slurm: the controller's lifecycle script; AWS PCS: not wired, the
script is written by ``fmcluster render`` for the login node). It writes the gate job of every EFA group
(:func:`fmcluster.features.acceptance.render_gate.render_gate`) to :data:`GATE_DIR`, the watcher
(``templates/gate-watch.sh.j2``) to ``<node_dir>/bin/fmcluster-gate-watch`` and a systemd timer that runs it every
:data:`WATCH_INTERVAL_S` seconds. The watcher finds nodes that need the gate from ``scontrol show nodes`` (never
accepted, a new ``BootTime`` since acceptance, back in service after a drain, or (ParallelCluster, PCS) a replacement still drained
with the gate's own reason), runs the gate on them inside a Slurm reservation, and stops draining a group where drains
loop (docs/acceptance.md "Loops").
"""

from __future__ import annotations

from fmcluster.acceptance.metrics import WATCH_BLOCKED, WATCH_HELD_NODES, WATCH_LAST_PASS
from fmcluster.features.acceptance.render_gate import (
    FOLDER,
    gate_file_name,
    render_acceptance_files,
    render_gate,
    results_root,
)
from fmcluster.features.observability.render_exporters import TEXTFILE_DIR
from fmcluster.resolved import ResolvedCluster
from fmcluster.templates.render import render

#: Where the watcher's node keeps the gate jobs it submits.
GATE_DIR = "/opt/fmcluster/acceptance"
#: Seconds between two passes of the watcher (clustermgtd, which replaces drained static nodes, also loops every 60 s:
#: aws/aws-parallelcluster-node src/slurm_plugin/clustermgtd.py ``loop_time``).
WATCH_INTERVAL_S = 60
#: Heredoc delimiter of the files the installer carries.
WATCH_EOF = "FMCLUSTER_GATE_WATCH_EOF"
#: The file ``fmcluster render`` writes (``acceptance/``) and the asset's name.
WATCH_INSTALLER_FILE = "fmcluster-gate-watch-install.sh"


def watch_path(rc: ResolvedCluster) -> str:
    """The watcher's path on its node: ``<node_dir>/bin/fmcluster-gate-watch``."""
    return watch_path_in(rc.node_dir)


def watch_path_in(node_dir: str) -> str:
    """The watcher's path under ``node_dir`` (``ResolvedCluster.node_dir``)."""
    return f"{node_dir}/bin/fmcluster-gate-watch"


def request_command(node_dir: str, group: str) -> str:
    """The command (run as root on the watcher's node) that gates every idle node of ``group`` on the watcher's next
    pass: what a Capacity Block's start runs (docs/acceptance.md "The watcher")."""
    return f"{watch_path_in(node_dir)} request {group}"


def gated_groups(rc: ResolvedCluster) -> list[str]:
    """The groups the watcher gates: every EFA group of a Slurm cluster (the groups with a gate job)."""
    return [g.name for g in rc.groups if g.efa_devices > 0] if rc.profile.runs_slurm else []


def render_gate_watch(rc: ResolvedCluster) -> str:
    """The watcher script (bash) of ``rc``: its groups, drain form and paths baked in."""
    drain = rc.profile.gate_drain
    return render("acceptance/gate-watch.sh.j2", {
        "blueprint_name": rc.name, "orchestrator": rc.profile.key,
        "node_label": rc.profile.head_node_label or "login node",
        "groups": gated_groups(rc), "drain_state": drain.state, "drain_replaces": drain.replaces,
        # ParallelCluster and PCS drain with the gate's own reason, which marks a replacement to test and resume
        "resume_own_drains": drain.reason.startswith("fmcluster-acceptance:"),
        "slurm_bin_dir": rc.profile.slurm_bin_dir or "", "gate_dir": GATE_DIR,
        "results_root": results_root(rc), "textfile_dir": TEXTFILE_DIR,
        "skip_nodes": rc.profile.dynamic_node_glob,  # gated on request only (powered up for a job)
        "m_blocked": WATCH_BLOCKED, "m_held": WATCH_HELD_NODES, "m_last_pass": WATCH_LAST_PASS,
    })


def render_gate_watch_installer(rc: ResolvedCluster) -> str | None:
    """The installer of the watcher and the gate jobs, or ``None`` when there is nothing to gate (no Slurm, no EFA
    group).

    Raises:
        ValueError: an embedded file contains the heredoc delimiter on a line of its own.
    """
    groups = gated_groups(rc)
    if not groups:
        return None
    by_name = {g.name: g for g in rc.groups}
    files = [(f"{GATE_DIR}/{gate_file_name(n)}", render_gate(rc, by_name[n])) for n in groups]
    files.append((watch_path(rc), render_gate_watch(rc)))
    for name, text in files:
        if WATCH_EOF in (line.strip() for line in text.splitlines()):
            raise ValueError(f"{name} contains the heredoc delimiter {WATCH_EOF}")
    return render("acceptance/gate-watch-install.sh.j2", {
        "blueprint_name": rc.name, "orchestrator": rc.profile.key,
        "node_label": rc.profile.head_node_label or "login node", "gate_dir": GATE_DIR,
        "watch_path": watch_path(rc), "bin_dir": f"{rc.node_dir}/bin", "interval_s": WATCH_INTERVAL_S, "groups": groups, "files": files,
        "eof": WATCH_EOF,
    })


def render_files(rc: ResolvedCluster) -> dict[str, str]:
    """What ``fmcluster render`` writes for the gate: ``acceptance/<gate file>`` per EFA group
    (:func:`fmcluster.features.acceptance.render_gate.render_acceptance_files`) and
    ``acceptance/fmcluster-gate-watch-install.sh`` (the installer deployments run on the head node or controller; on
    PCS, run it on the login node by hand). Empty without Slurm or without an EFA group."""
    files = render_acceptance_files(rc)
    installer = render_gate_watch_installer(rc)
    if installer is not None:
        files[f"{FOLDER}/{WATCH_INSTALLER_FILE}"] = installer
    return files


def admin_node_script(rc: ResolvedCluster) -> tuple[str, str] | None:
    """``(file name, installer)`` for the node that administers Slurm (the feature registry's ``admin_node_script``
    hook; each orchestrator slice runs it there), or ``None`` without a gated group."""
    installer = render_gate_watch_installer(rc)
    return (WATCH_INSTALLER_FILE, installer) if installer is not None else None
