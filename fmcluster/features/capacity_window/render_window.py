"""The head node's end-of-window script (``fmcluster-window-end``), rendered from the cluster's windows
(:mod:`fmcluster.features.capacity_window.plan`); the EventBridge rule's Run Command runs it
(:mod:`fmcluster.features.capacity_window.construct`), and ``fmcluster render`` writes it for review."""

from __future__ import annotations

from collections.abc import Sequence

from fmcluster.features.capacity_window.plan import (
    CHECKPOINT_GRACE_S,
    CHECKPOINT_SIGNAL,
    WINDOW_END_REASON_PREFIX,
    WINDOW_HOLD_DEFAULT_MIN,
    WINDOW_HOLD_PREFIX,
    Window,
    preload_schedule_name,
    window_end_rule_name,
    windows,
)
from fmcluster.resolved import ResolvedCluster
from fmcluster.templates.render import render

FOLDER = "capacity-window"
SCRIPT = "fmcluster-window-end"


def render_window_end(ws: Sequence[Window], *, cluster_name: str, slurm_bin_dir: str) -> str:
    """The bash script ``fmcluster-window-end <reservation id> <end date>`` for the windows ``ws`` (one or more): holds
    the window's nodes in the Slurm reservation :func:`~fmcluster.features.capacity_window.plan.window_hold_reservation`
    (``WINDOW_HOLD_DEFAULT_MIN`` minutes unless ``FMC_WINDOW_HOLD_MIN``), signals and requeues their jobs.

    Raises:
        ValueError: ``ws`` is empty (a cluster without a window has no end script).
    """
    if not ws:
        raise ValueError("no capacity window: nothing to render")
    return render("capacity_window/window-end.sh.j2", {
        "cluster_name": cluster_name, "rule_name": window_end_rule_name(cluster_name), "windows": list(ws),
        "slurm_bin_dir": slurm_bin_dir, "grace_s": CHECKPOINT_GRACE_S, "signal": CHECKPOINT_SIGNAL,
        "hold_prefix": WINDOW_HOLD_PREFIX, "hold_min": WINDOW_HOLD_DEFAULT_MIN,
    })


START_SCRIPT = "fmcluster-window-start"


def render_window_start(ws: Sequence[Window], *, cluster_name: str, slurm_bin_dir: str) -> str:
    """The bash script ``fmcluster-window-start <group or reservation id>`` for the windows ``ws``: deletes the group's
    hold reservation of the last window's end if it is still there, and resumes the group's nodes that earlier versions
    of the end script drained (reason beginning :data:`WINDOW_END_REASON_PREFIX`), and only those.

    Raises:
        ValueError: ``ws`` is empty.
    """
    if not ws:
        raise ValueError("no capacity window: nothing to render")
    return render("capacity_window/window-start.sh.j2", {
        "cluster_name": cluster_name, "windows": list(ws), "slurm_bin_dir": slurm_bin_dir,
        "reason_prefix": WINDOW_END_REASON_PREFIX, "hold_prefix": WINDOW_HOLD_PREFIX,
    })


def render_window_files(rc: ResolvedCluster) -> dict[str, str]:
    """The feature registry's render hook: ``capacity-window/fmcluster-window-end`` and ``fmcluster-window-start`` when
    the cluster has a window
    and the orchestrator runs Slurm with a known Slurm directory, and ``fmcluster-window-preload-<group>`` for each
    window with a preload; empty otherwise."""
    ws = windows((g.spec for g in rc.groups), rc.blueprint.storage.lustre)
    if not ws or not rc.profile.runs_slurm or rc.profile.slurm_bin_dir is None:
        return {}
    files = {f"{FOLDER}/{SCRIPT}": render_window_end(ws, cluster_name=rc.name, slurm_bin_dir=rc.profile.slurm_bin_dir),
             f"{FOLDER}/{START_SCRIPT}": render_window_start(ws, cluster_name=rc.name,
                                                             slurm_bin_dir=rc.profile.slurm_bin_dir)}
    for w in ws:
        if w.preload_gib:
            files[f"{FOLDER}/{PRELOAD_SCRIPT}-{w.group}"] = render_window_preload(w, cluster_name=rc.name)
    return files


PRELOAD_SCRIPT = "fmcluster-window-preload"


def render_window_preload(w: Window, *, cluster_name: str) -> str:
    """The bash script ``fmcluster-window-preload`` of window ``w`` (its marked data repositories' paths and size).

    Raises:
        ValueError: ``w`` has no preload (no data repository sets ``preload_gib``).
    """
    if not w.preload_gib or w.lead_s is None:
        raise ValueError(f"window {w.group} has no preload: nothing to render")
    return render("capacity_window/window-preload.sh.j2", {
        "cluster_name": cluster_name, "group": w.group, "reservation_id": w.reservation_id,
        "schedule_name": preload_schedule_name(cluster_name, w.index), "paths": list(w.preload_paths),
        "gib": w.preload_gib, "lead_s": w.lead_s, "lead_min": w.lead_s // 60,
    })
