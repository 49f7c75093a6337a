"""The gate's verdict as Prometheus metrics in the text exposition format, for node_exporter's textfile
collector (https://github.com/prometheus/node_exporter#textfile-collector: ``*.prom`` files in the
``--collector.textfile.directory``, written atomically: a temporary file, then a rename), one file per
compute group (:func:`prom_file`). Every series carries ``cluster`` and ``group`` labels.

Standard library only (shipped with the gate job). Metric names (docs/acceptance.md "Metrics"; the alert
rules in fmcluster/features/observability/render_acceptance.py read them):

- ``fmcluster_acceptance_gate_passed`` 1/0, ``fmcluster_acceptance_last_run_timestamp_seconds``;
- ``fmcluster_acceptance_gate_could_not_run`` 1 when the verdict's status is ``could-not-run`` (the gate job
  writes that verdict and these series itself, in shell, on every exit path before its verdict), else 0;
- ``fmcluster_acceptance_node_verdict{node, verdict}`` 1 for the node's verdict (pass, suspect, fail);
- ``fmcluster_acceptance_node_busbw_gbps{node}`` the median bus bandwidth of the node's pairs;
- ``fmcluster_acceptance_node_drained{node}`` 1 when the gate drained the node;
- ``fmcluster_acceptance_cluster_median_busbw_gbps``, ``fmcluster_acceptance_floor_busbw_gbps`` (absent
  when the type has no figure) with ``enforced`` "true"/"false".
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

VERDICTS = ("pass", "suspect", "fail")
#: Every metric name :func:`render_metrics` writes (the observability layer's known-metric list includes them).
METRIC_NAMES = (
    "fmcluster_acceptance_gate_passed",
    "fmcluster_acceptance_gate_could_not_run",
    "fmcluster_acceptance_last_run_timestamp_seconds",
    "fmcluster_acceptance_cluster_median_busbw_gbps",
    "fmcluster_acceptance_floor_busbw_gbps",
    "fmcluster_acceptance_node_verdict",
    "fmcluster_acceptance_node_busbw_gbps",
    "fmcluster_acceptance_node_drained",
)
#: What the gate's watcher writes (fmcluster-gate-watch, rendered with these names): 1 when it stopped draining a group,
#: the nodes it holds without a drain, when it last looked.
WATCH_BLOCKED = "fmcluster_acceptance_watch_blocked"
WATCH_HELD_NODES = "fmcluster_acceptance_watch_held_nodes"
WATCH_LAST_PASS = "fmcluster_acceptance_watch_last_pass_timestamp_seconds"
WATCH_METRIC_NAMES = (WATCH_BLOCKED, WATCH_HELD_NODES, WATCH_LAST_PASS)
def prom_file(group: str) -> str:
    """The textfile name of a group's gate: ``fmcluster_acceptance_<group>.prom``."""
    return f"fmcluster_acceptance_{group}.prom" if group else "fmcluster_acceptance.prom"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render_metrics(verdict: dict, timestamp_s: float, drained: Iterable[str] = (), cluster: str = "",
                   group: str = "") -> str:
    """The exposition text for ``verdict`` (:meth:`fmcluster.acceptance.judge.Verdict.as_dict`, as the gate
    writes it); ``drained``: nodes the gate drained; ``cluster`` and ``group`` (the compute group) label every
    series when given."""
    base = (f'cluster="{_label(cluster)}",' if cluster else "") + (f'group="{_label(group)}",' if group else "")
    it = f'instance_type="{_label(verdict["instance_type"])}"'
    drained_set = set(drained)
    floor = verdict.get("floor") or {"floor_busbw_gbps": None}
    nodes = verdict["nodes"]
    out = [
        "# HELP fmcluster_acceptance_gate_passed 1 when no node failed the last fleet acceptance gate.",
        "# TYPE fmcluster_acceptance_gate_passed gauge",
        f"fmcluster_acceptance_gate_passed{{{base}{it}}} {1 if verdict['status'] == 'pass' else 0}",
        "# HELP fmcluster_acceptance_gate_could_not_run 1 when the last gate could not run (no verdict on the nodes).",
        "# TYPE fmcluster_acceptance_gate_could_not_run gauge",
        f"fmcluster_acceptance_gate_could_not_run{{{base}{it}}} {1 if verdict['status'] == 'could-not-run' else 0}",
        "# HELP fmcluster_acceptance_last_run_timestamp_seconds When the last gate finished (Unix time).",
        "# TYPE fmcluster_acceptance_last_run_timestamp_seconds gauge",
        f"fmcluster_acceptance_last_run_timestamp_seconds{{{base}{it}}} {timestamp_s:.0f}",
    ]
    if verdict.get("cluster_median_busbw_gbps") is not None:
        out += [
            "# HELP fmcluster_acceptance_cluster_median_busbw_gbps Median all_reduce bus bandwidth of the gate's node pairs (GB/s).",
            "# TYPE fmcluster_acceptance_cluster_median_busbw_gbps gauge",
            f"fmcluster_acceptance_cluster_median_busbw_gbps{{{base}{it}}} {verdict['cluster_median_busbw_gbps']:.2f}",
        ]
    if floor["floor_busbw_gbps"] is not None:
        enforced = str(floor["enforced"]).lower()
        out += [
            "# HELP fmcluster_acceptance_floor_busbw_gbps The instance type's 2-node bus bandwidth floor (GB/s).",
            "# TYPE fmcluster_acceptance_floor_busbw_gbps gauge",
            f'fmcluster_acceptance_floor_busbw_gbps{{{base}{it},enforced="{enforced}"}} {floor["floor_busbw_gbps"]:g}',
        ]
    out += ["# HELP fmcluster_acceptance_node_verdict 1 for the node's verdict in the last gate (pass, suspect, fail).",
            "# TYPE fmcluster_acceptance_node_verdict gauge"]
    for n in nodes:
        name = _label(n["node"])
        for v in VERDICTS:
            out.append(f'fmcluster_acceptance_node_verdict{{{base}node="{name}",verdict="{v}"}} {1 if n["verdict"] == v else 0}')
    out += ["# HELP fmcluster_acceptance_node_busbw_gbps Median bus bandwidth of the node's pairs in the last gate (GB/s).",
            "# TYPE fmcluster_acceptance_node_busbw_gbps gauge"]
    for n in nodes:
        if n["busbw_gbps"] is not None:
            out.append(f'fmcluster_acceptance_node_busbw_gbps{{{base}node="{_label(n["node"])}"}} {n["busbw_gbps"]:.2f}')
    out += ["# HELP fmcluster_acceptance_node_drained 1 when the last gate drained the node in Slurm.",
            "# TYPE fmcluster_acceptance_node_drained gauge"]
    for n in nodes:
        out.append(f'fmcluster_acceptance_node_drained{{{base}node="{_label(n["node"])}"}} {1 if n["node"] in drained_set else 0}')
    return "\n".join(out) + "\n"


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename, so the
    collector never reads half a file."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fmcluster_acceptance.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
