"""The scripts that keep Slurm's topology in step with EC2 on the Slurm controller node.

- :func:`render_topology_installer`: installs ``fmcluster/topology/ec2_slurm.py``, the refresh script
  (``templates/fmcluster-topology-refresh.sh`` of this slice) and a systemd timer; run by the orchestrator on
  the controller node (ParallelCluster: the head node's ``OnNodeConfigured``).
- :func:`render_topology_placeholder`: writes a first ``topology.yaml`` and ``topology.conf`` (every node on
  one switch) before
  slurmctld starts (ParallelCluster: the head node's ``OnNodeStart``, which "runs before any node deployment
  bootstrap action is started", https://docs.aws.amazon.com/parallelcluster/latest/ug/custom-bootstrap-actions-v3.html):
  with ``TopologyPlugin=topology/tree`` slurmctld stops when the file is missing or has no switch
  (SchedMD/slurm ``src/plugins/topology/tree/switch_record.c``: "something wrong with opening/reading",
  "No switches configured").
- :func:`parallelcluster_node_names`: ParallelCluster's Slurm node names, ``<queue>-st-<compute resource>-<n>``
  for the static nodes and ``<queue>-dy-<compute resource>-<n>`` for the dynamic ones (the ``-st-``/``-dy-``
  substrings are reserved for them: aws-parallelcluster 3.16.1 ``pcluster/validators/slurm_settings_validator.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fmcluster.resolved import NODE_DIR
from fmcluster.templates.render import render
from fmcluster.topology import ec2_slurm

TEMPLATES = Path(__file__).parent / "templates"
REFRESH_SCRIPT = TEMPLATES / "fmcluster-topology-refresh.sh"
INSTALLER = "topology/fmcluster-topology-install.sh.j2"
#: Where the installer puts the generator and the refresh script on the node.
TOPOLOGY_DIR = f"{NODE_DIR}/topology"
PLACEHOLDER = "topology/fmcluster-topology-placeholder.sh.j2"

#: Heredoc delimiters of the installer: an embedded file must not contain them on a line of their own.
DELIMITERS = ("FMC_GENERATOR_EOF", "FMC_REFRESH_EOF", "FMC_ENV_EOF", "FMC_UNIT_EOF", "FMC_TIMER_EOF")

#: The tag ParallelCluster puts on every instance of a cluster (aws-parallelcluster 3.16.1
#: ``pcluster/constants.py`` ``PCLUSTER_CLUSTER_NAME_TAG``).
PARALLELCLUSTER_CLUSTER_TAG = "parallelcluster:cluster-name"


@dataclass(frozen=True)
class TopologyRefresh:
    """What the refresh on one cluster needs.

    ``mode``: ``write`` (own the topology file) or ``check`` (compare with an orchestrator's own file and
    log the differences); ``region``; ``tag_key``/``tag_value``: the tag of the cluster's instances;
    ``slurm_bin``: directory of ``scontrol``; ``topology_file``: ``topology.conf`` or ``topology.yaml`` next to
    ``slurm.conf``; ``format``/``plugin``: see :func:`fmcluster.topology.ec2_slurm.render_conf`;
    ``nvlink_types``: instance types in NVLink domains; ``interval_minutes``: timer period (default 5);
    ``first_run_minutes``: first run after boot (default 2); ``orchestrator``, ``node_label``: for the
    script's header.
    """

    region: str
    tag_key: str
    tag_value: str
    slurm_bin: str
    topology_file: str
    orchestrator: str
    node_label: str
    mode: Literal["write", "check"] = "write"
    format: Literal["conf", "yaml"] = "conf"
    plugin: Literal["auto", "tree", "block"] = "tree"
    nvlink_types: tuple[str, ...] = ec2_slurm.DEFAULT_NVLINK_TYPES
    interval_minutes: int = 5
    first_run_minutes: int = 2


def generator_source() -> str:
    """The text of ``fmcluster/topology/ec2_slurm.py``, the file the controller node runs."""
    return Path(ec2_slurm.__file__).read_text(encoding="utf-8")


def render_topology_installer(refresh: TopologyRefresh) -> str:
    """The installer script (bash) for ``refresh``. ValueError when an embedded file holds a heredoc delimiter."""
    generator, script = generator_source(), REFRESH_SCRIPT.read_text(encoding="utf-8")
    for text in (generator, script):
        clash = [d for d in DELIMITERS if d in text.splitlines()]
        if clash:
            raise ValueError(f"an embedded file contains the heredoc delimiter {clash[0]}")
    notes = {"write": "the refresh owns the topology file and runs `scontrol reconfigure` when it changes.",
             "check": "the orchestrator owns the topology file; the refresh only logs how it differs."}
    return render(INSTALLER, {
        "generator": generator, "refresh": script, "mode_note": notes[refresh.mode], "topology_dir": TOPOLOGY_DIR,
        "nvlink_types": ",".join(refresh.nvlink_types), **{k: getattr(refresh, k) for k in (
            "mode", "region", "tag_key", "tag_value", "slurm_bin", "topology_file", "format", "plugin",
            "interval_minutes", "first_run_minutes", "orchestrator", "node_label")},
    })


def render_topology_placeholder(slurm_etc: str, nodes: Sequence[str]) -> str:
    """The script writing a first ``<slurm_etc>/topology.yaml`` and ``<slurm_etc>/topology.conf`` (tree) with
    ``nodes`` (Slurm hostlist expressions) on the fallback switch, each unless it exists. ValueError without
    nodes (an empty leaf would leave every node outside the tree)."""
    if not nodes:
        raise ValueError("a placeholder topology needs the cluster's nodes")
    return render(PLACEHOLDER, {"yaml_file": f"{slurm_etc}/topology.yaml", "conf_file": f"{slurm_etc}/topology.conf",
                                "fallback_switch": ec2_slurm.FALLBACK_SWITCH, "tree_topology": ec2_slurm.TREE_TOPOLOGY,
                                "nodes": ",".join(nodes)})


def parallelcluster_node_names(queue: str, compute_resource: str, min_count: int, max_count: int) -> list[str]:
    """Hostlist expressions of one ParallelCluster compute resource's nodes: ``gpu-st-p5-48xlarge-[1-2]``
    (``min_count`` static) and ``gpu-dy-p5-48xlarge-[1-2]`` (``max_count - min_count`` dynamic)."""
    out = []
    for kind, n in (("st", min_count), ("dy", max_count - min_count)):
        if n == 1:
            out.append(f"{queue}-{kind}-{compute_resource}-1")
        elif n > 1:
            out.append(f"{queue}-{kind}-{compute_resource}-[1-{n}]")
    return out
