#!/usr/bin/env python3
"""Slurm network topology from an EC2 ``DescribeInstanceTopology`` response (standard library only).

This one file is also copied to the Slurm controller node (ParallelCluster head node, PCS login node)
and run there by the topology refresh timer, so it imports nothing outside the Python standard library
and nothing from fmcluster; ``tests/test_topology.py`` checks both.

Input
-----
``instances``: the parsed JSON of ``aws ec2 describe-instance-topology`` (one object with ``Instances``;
a JSON list of such pages is accepted too). Each element of ``Instances`` is shaped
``{InstanceId, InstanceType, GroupName, NetworkNodes: [str, ...], AvailabilityZone, ZoneId,
CapacityBlockId}`` (botocore ``data/ec2/2016-11-15/service-2.json``, shape ``InstanceTopology``).
``NetworkNodes`` lists one network node per layer, top-down, the last one the node the instance
connects to ("The node set ... provides a top-down view of the network hierarchy, with the bottom node
connected to an instance", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-ec2-instance-topology-works.html);
3 or 4 layers by instance type. It is null or empty for unsupported types and instances not
``running``. ``CapacityBlockId`` "identifies instances within the UltraServer domain" (botocore, same
shape) and may be null right after launch (eventual consistency, ``DescribeInstanceTopology``
documentation).

``nodes``: the map instance id -> Slurm node name of the cluster's nodes, as a JSON object
``{"i-0abc...": "gpu-st-p5-1"}`` or as text lines ``<instance-id> <node-name>`` (``#`` comments); a text
line ``<node-name>`` alone is a node without an instance now (a powered-down cloud node), placed on the
fallback switch so topology/tree can still choose it; a line with an instance id alone is ignored with a warning.

Output
------
- ``topology/tree`` (``topology.conf``): one ``SwitchName=<network node> Switches=...|Nodes=...`` line
  per EC2 network node, leaves first; a root switch ``fmc-root`` joins the top-level switches (several
  top-level network nodes, or the fallback switch) so jobs may span the whole cluster (Slurm: "Jobs can
  only span nodes connected by the same switch fabric").
- ``topology/block`` (``topology.conf``): one ``BlockName=<capacity block id> Nodes=...`` per NVLink
  domain (UltraServer), ordered so that neighbouring blocks share network nodes (Slurm aggregates
  consecutive blocks into higher-level blocks), and ``BlockSizes=<base>`` where base is the smallest
  block's node count (slurmctld exits with "children count lower than bblock_node_cnt" when a block is
  smaller than the base; SchedMD/slurm ``src/plugins/topology/block/block_record.c``). Without any NVLink
  domain the tree is written instead, with a warning (slurmctld: "No blocks configured", same file).
- ``topology.yaml`` (Slurm >= 25.05, several plugins at once): a tree topology ``fmc-tree``
  (``cluster_default: true``, every node) and, when there are NVLink domains and the plugin is not
  ``tree``, a block topology ``fmc-block`` (the domain nodes) for the partitions of those nodes
  (``PartitionName=... Topology=fmc-block``).

Syntax: SchedMD/slurm ``doc/man/man5/topology.conf.5`` and ``doc/man/man5/topology.yaml.5``.

Bad input never raises (except :class:`InputError` for input that is not JSON / text of the right
kind at all, or an ``--instances`` file that is not valid JSON) and never drops a node of the map from a tree:
an instance without usable topology goes to the
fallback switch ``fmc-no-topology`` with a warning (a node without an NVLink domain is left out of the
blocks with a warning: a one-node block would stop slurmctld or shrink the base block size); an
instance missing from the map is ignored with a warning.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Names fmcluster writes into topology files itself; an EC2 name with this prefix is refused.
RESERVED_PREFIX = "fmc-"
ROOT_SWITCH = "fmc-root"
FALLBACK_SWITCH = "fmc-no-topology"
#: What happens to a node without an NVLink domain under topology/block: a block smaller than the planning
#: base block size stops slurmctld ("children count lower than bblock_node_cnt"), so no fallback block is
#: written; slurmctld logs "blocks lack access to N nodes" (SchedMD/slurm block_record.c).
_NOT_IN_BLOCK = ("left out of the blocks until a refresh finds its domain (a one-node block would shrink the planning "
                 "base block size; slurmctld logs 'blocks lack access to N nodes')")
#: What topology/block does with a node in no block (SchedMD/slurm src/plugins/topology/block/block_record.c and
#: topology_block.c topology_p_eval_nodes): slurmctld warns and still starts; the node takes only jobs whose
#: candidate nodes include no block node.
_OUTSIDE_BLOCKS = ("slurmctld logs 'blocks lack access to N nodes' and gives them only jobs whose candidate nodes "
                   "include no block node (a partition or constraint of their own); use --plugin tree, or --format "
                   "yaml (Slurm >= 25.05) for tree and block together")
TREE_TOPOLOGY = "fmc-tree"
BLOCK_TOPOLOGY = "fmc-block"

#: A name Slurm's hostlist parser reads as one name: no ``[],=#`` or spaces; SwitchName "cannot be longer
#: than 64 characters" (topology.conf.5).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
INSTANCE_ID_RE = re.compile(r"^i-[0-9a-f]{8,17}$")
#: A token shaped like an instance id (any case, any length): never taken as a Slurm node name.
_INSTANCE_ID_LIKE = re.compile(r"^i-[0-9a-fA-F]{8,}$")

#: Warnings that list instances name at most this many.
LIST_LIMIT = 10

FORMATS = ("conf", "yaml")
#: Instance types whose instances share an NVLink domain (UltraServer), by default: fmcluster's catalog
#: types with ``ultraserver_sizes`` (``tests/test_topology.py`` keeps the two equal).
DEFAULT_NVLINK_TYPES = ("p6e-gb200.36xlarge",)
PLUGINS = ("auto", "tree", "block")


class InputError(Exception):
    """Input that cannot be read at all (not a file, not JSON, not the expected kind of document)."""


@dataclass
class Instance:
    """One usable ``InstanceTopology`` element: ``network_nodes`` top-down (empty: unknown)."""

    instance_id: str
    instance_type: str | None
    network_nodes: tuple[str, ...]
    capacity_block_id: str | None
    zone: str | None


@dataclass
class Topology:
    """The cluster's topology, ready to render.

    ``switches``: switch name -> (child switches, child node names); ``blocks``: block name -> node
    names, in file order; ``block_size``: the planning base block size (nodes), ``None`` without
    blocks; ``warnings``: every problem found, one sentence each.
    """

    switches: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    blocks: dict[str, list[str]] = field(default_factory=dict)
    block_size: int | None = None
    tree_nodes: list[str] = field(default_factory=list)
    domain_nodes: list[str] = field(default_factory=list)
    no_domain_nodes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _natural(name: str) -> tuple[object, ...]:
    """Sort key putting ``gpu-2`` before ``gpu-10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _listed(items: Iterable[str]) -> str:
    items = sorted(items, key=_natural)
    shown = ", ".join(items[:LIST_LIMIT])
    return shown + (f" and {len(items) - LIST_LIMIT} more" if len(items) > LIST_LIMIT else "")


def _describe(value: object) -> str:
    text = json.dumps(value) if isinstance(value, (dict, list, str, int, float, bool, type(None))) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- reading ------------------------------------------------------------------------------------------
def read_json_or_text(path: Path, json_required: bool = False) -> object:
    """The parsed JSON of ``path``, or its text when it is not JSON. :class:`InputError` if unreadable, or,
    with ``json_required`` or a text starting with ``{``/``[``, when it is not valid JSON (the parser's message,
    line and column)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    try:
        return json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as e:
        if json_required or text.lstrip().startswith(("{", "[")):  # a node map line never starts so
            raise InputError(f"{path}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        return text
    except _DuplicateKeyError as e:
        raise InputError(f"{path}: duplicate key {e.args[0]!r} in a JSON object") from None
    except ValueError as e:  # a number longer than Python reads (sys.get_int_max_str_digits): not an EC2 answer
        raise InputError(f"{path}: not usable JSON: {e}") from None


class _DuplicateKeyError(Exception):
    pass


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


def parse_node_map(doc: object, source: str = "nodes") -> tuple[dict[str, str], list[str]]:
    """Instance id -> Slurm node name, and the warnings about entries left out (see :func:`parse_nodes`)."""
    nodes = parse_nodes(doc, source)
    return nodes.by_instance, nodes.warnings


@dataclass
class Nodes:
    """The cluster's Slurm nodes: ``by_instance`` (instance id -> node name), ``without_instance`` (nodes
    with no instance now, e.g. powered-down cloud nodes), ``warnings`` about entries left out."""

    by_instance: dict[str, str]
    without_instance: list[str]
    warnings: list[str]


def parse_nodes(doc: object, source: str = "nodes") -> Nodes:
    """The node map: a JSON object ``{instance-id: node-name}``, or text lines ``<instance-id> <node-name>``
    and ``<node-name>`` (a node without an instance now: it goes to the fallback switch, so Slurm may still
    pick it, e.g. to power it up; topology/tree places jobs only on nodes under a switch).

    An entry whose instance id or node name is malformed is left out with a warning (it cannot be an
    instance or a Slurm node); a node name given twice keeps the first. Raises :class:`InputError` when
    ``doc`` is neither kind.
    """
    warnings: list[str] = []
    pairs: list[tuple[str, object, str]] = []
    without: list[tuple[str, str]] = []
    if isinstance(doc, dict):
        pairs = [(str(k), v, f"{source}[{k!r}]") for k, v in doc.items()]
    elif isinstance(doc, str):
        for n, raw in enumerate(doc.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) == 1 and _INSTANCE_ID_LIKE.match(parts[0]):
                warnings.append(f"{source} line {n}: an instance id without a node name, got {_describe(parts[0])}; "
                                "expected '<instance-id> <node-name>' (or '<node-name>' alone for a node without an "
                                "instance); line ignored")
                continue
            if len(parts) == 1:
                without.append((parts[0], f"{source} line {n}"))
                continue
            if len(parts) != 2:
                warnings.append(f"{source} line {n}: expected '<instance-id> <node-name>' or '<node-name>', got "
                                f"{_describe(raw.strip())}; line ignored")
                continue
            pairs.append((parts[0], parts[1], f"{source} line {n}"))
    else:
        raise InputError(f"{source}: expected a JSON object {{instance-id: node-name}} or lines "
                         f"'<instance-id> <node-name>', got a JSON {type(doc).__name__}")
    result: dict[str, str] = {}
    owner: dict[str, str] = {}
    for instance_id, name, where in pairs:
        if not INSTANCE_ID_RE.match(instance_id):
            warnings.append(f"{where}: not an EC2 instance id, got {_describe(instance_id)}; allowed i- and 8 or 17 "
                            "hex digits; entry ignored")
            continue
        if instance_id in result:
            warnings.append(f"{where}: instance {instance_id} listed twice; the first node name "
                            f"{result[instance_id]} kept")
            continue
        if not isinstance(name, str) or not NAME_RE.match(name) or name.startswith(RESERVED_PREFIX):
            warnings.append(f"{where}: not a Slurm node name, got {_describe(name)}; allowed letters, digits, "
                            f"'_', '.', '-' (at most 64, not starting with {RESERVED_PREFIX!r}); entry ignored")
            continue
        if name in owner:
            warnings.append(f"{where}: node {name} is also mapped to instance {owner[name]}; the first kept, "
                            f"{instance_id} ignored")
            continue
        owner[name] = instance_id
        result[instance_id] = name
    idle: list[str] = []
    for name, where in without:
        if not NAME_RE.match(name) or name.startswith(RESERVED_PREFIX):
            warnings.append(f"{where}: not a Slurm node name, got {_describe(name)}; allowed letters, digits, "
                            f"'_', '.', '-' (at most 64, not starting with {RESERVED_PREFIX!r}); entry ignored")
        elif name in owner or name in idle:
            warnings.append(f"{where}: node {name} listed twice; the first kept")
        else:
            idle.append(name)
    return Nodes(result, idle, warnings)


def parse_instances(doc: object, source: str = "instances") -> tuple[list[Instance], list[str]]:
    """The ``InstanceTopology`` elements of a ``DescribeInstanceTopology`` response (or a list of pages).

    Elements with a malformed field are kept with that field unknown (and a warning); an element without
    a usable ``InstanceId`` cannot be matched to a node and is left out with a warning. Raises
    :class:`InputError` when ``doc`` has no ``Instances`` list at all.
    """
    pages: list[tuple[str, object]]
    if isinstance(doc, dict):
        pages = [(source, doc)]
    elif isinstance(doc, list) and doc and all(isinstance(p, dict) for p in doc):
        pages = [(f"{source}[{i}]", p) for i, p in enumerate(doc)]
    else:
        raise InputError(f"{source}: expected a DescribeInstanceTopology response (a JSON object with "
                         f"'Instances'), got {_describe(doc)}")
    warnings: list[str] = []
    found: dict[str, Instance] = {}
    for where_page, page in pages:
        assert isinstance(page, dict)
        items = page.get("Instances")
        if not isinstance(items, list):
            raise InputError(f"{where_page}.Instances: expected a list of instances, got {_describe(items)}")
        for i, item in enumerate(items):
            where = f"{where_page}.Instances[{i}]"
            inst = _parse_instance(item, where, warnings)
            if inst is None:
                continue
            prior = found.get(inst.instance_id)
            if prior is None:
                found[inst.instance_id] = inst
            elif prior != inst:
                warnings.append(f"{where}: instance {inst.instance_id} appears twice with different topology; "
                                "the first kept")
    return list(found.values()), warnings


def _parse_instance(item: object, where: str, warnings: list[str]) -> Instance | None:
    if not isinstance(item, dict):
        warnings.append(f"{where}: expected an object, got {_describe(item)}; ignored")
        return None
    instance_id = item.get("InstanceId")
    if not isinstance(instance_id, str) or not INSTANCE_ID_RE.match(instance_id):
        warnings.append(f"{where}.InstanceId: expected an EC2 instance id, got {_describe(instance_id)}; ignored")
        return None
    itype = item.get("InstanceType")
    if itype is not None and not isinstance(itype, str):
        warnings.append(f"{where}.InstanceType: expected a string, got {_describe(itype)}")
        itype = None
    zone = item.get("ZoneId") or item.get("AvailabilityZone")
    if zone is not None and not isinstance(zone, str):
        warnings.append(f"{where}.ZoneId: expected a string, got {_describe(zone)}")
        zone = None
    block = item.get("CapacityBlockId")
    if block is not None and (not isinstance(block, str) or not NAME_RE.match(block)
                              or block.startswith(RESERVED_PREFIX)):
        warnings.append(f"{where}.CapacityBlockId: expected an id of letters, digits, '_', '.', '-', got "
                        f"{_describe(block)}; NVLink domain of {instance_id} unknown")
        block = None
    raw = item.get("NetworkNodes")
    nodes: tuple[str, ...] = ()
    if raw is None or raw == []:
        pass  # unsupported type or not running (botocore NetworkNodes documentation): reported by build()
    elif not isinstance(raw, list) or not all(isinstance(n, str) and NAME_RE.match(n)
                                              and not n.startswith(RESERVED_PREFIX) for n in raw):
        warnings.append(f"{where}.NetworkNodes: expected a list of network node ids (letters, digits, '_', '.', "
                        f"'-'), got {_describe(raw)}; {instance_id} placed without topology")
    elif len(set(raw)) != len(raw):
        warnings.append(f"{where}.NetworkNodes: a network node repeats, got {_describe(raw)}; {instance_id} "
                        "placed without topology")
    else:
        nodes = tuple(raw)
    return Instance(instance_id, itype, nodes, block or None, zone)


# ---- building -----------------------------------------------------------------------------------------
def build(instances: Sequence[Instance], node_map: dict[str, str],
          nvlink_types: Iterable[str] = DEFAULT_NVLINK_TYPES, without_instance: Sequence[str] = ()) -> Topology:
    """The tree and block topology of the nodes in ``node_map``.

    ``nvlink_types``: instance types whose instances belong to an NVLink domain (UltraServer), named by
    their ``CapacityBlockId``; one of them without it is reported. Every node of ``node_map`` ends up in
    the tree (its network nodes, or :data:`FALLBACK_SWITCH`); every instance of an ``nvlink_types`` type
    with a ``CapacityBlockId`` in that block. ``without_instance``: nodes known to have no instance now;
    they go to the fallback switch without a warning.
    """
    topo = Topology()
    nvlink = set(nvlink_types)
    by_id = {i.instance_id: i for i in instances}
    unmapped = [i.instance_id for i in instances if i.instance_id not in node_map]
    if unmapped:
        topo.warnings.append(f"{len(unmapped)} instance(s) not in the node map ignored: {_listed(unmapped)}")

    parent: dict[str, str | None] = {}
    level: dict[str, int] = {}
    leaf_nodes: dict[str, list[str]] = {}
    fallback: list[str] = []
    missing: list[str] = []
    no_nodes: list[str] = []
    for instance_id, node in sorted(node_map.items(), key=lambda kv: _natural(kv[1])):
        inst = by_id.get(instance_id)
        if inst is None:
            missing.append(node)
            fallback.append(node)
            continue
        if not inst.network_nodes:
            no_nodes.append(node)
            fallback.append(node)
            continue
        conflict = _path_conflict(inst.network_nodes, parent, level)
        if conflict:
            topo.warnings.append(f"{node} ({instance_id}): network node {conflict} contradicts the topology of "
                                 f"earlier instances (another parent or layer); {node} placed on {FALLBACK_SWITCH}")
            fallback.append(node)
            continue
        for depth, nn in enumerate(inst.network_nodes):
            parent[nn] = inst.network_nodes[depth - 1] if depth else None
            level[nn] = depth
        leaf_nodes.setdefault(inst.network_nodes[-1], []).append(node)
    if missing:
        topo.warnings.append(f"{len(missing)} node(s) have no instance in the topology response (not running, "
                             f"or not described): {_listed(missing)}; placed on {FALLBACK_SWITCH}")
    if no_nodes:
        topo.warnings.append(f"{len(no_nodes)} node(s) have no NetworkNodes (instance type without EC2 topology, "
                             f"or not running): {_listed(no_nodes)}; placed on {FALLBACK_SWITCH}")

    children: dict[str, list[str]] = {nn: [] for nn in parent}
    for nn, up in parent.items():
        if up is not None:
            children[up].append(nn)
    for nn in sorted(parent, key=lambda n: (-level[n], _natural(n))):
        switches = sorted(children[nn], key=_natural)
        nodes = sorted(leaf_nodes.get(nn, []), key=_natural)
        if switches and nodes:
            # Instances attach to a network node that other instances pass through (types with 3 and 4
            # layers); a Slurm switch lists either child switches or nodes, so the nodes get a leaf of their own.
            direct = f"{RESERVED_PREFIX}leaf-{len([s for s in topo.switches if s.startswith(RESERVED_PREFIX)]) + 1}"
            topo.switches[direct] = ([], nodes)
            topo.levels[direct] = level[nn] + 1
            switches = sorted([*switches, direct], key=_natural)
            nodes = []
        topo.switches[nn] = (switches, nodes)
        topo.levels[nn] = level[nn]
    fallback += without_instance
    if fallback:
        topo.switches[FALLBACK_SWITCH] = ([], sorted(fallback, key=_natural))
        topo.levels[FALLBACK_SWITCH] = 0
    tops = sorted((s for s, lv in topo.levels.items() if lv == 0), key=_natural)
    if len(tops) > 1:
        topo.switches[ROOT_SWITCH] = (tops, [])
        topo.levels[ROOT_SWITCH] = -1
    topo.tree_nodes = sorted([*node_map.values(), *without_instance], key=_natural)

    zones = {i.zone for i in instances if i.instance_id in node_map and i.zone}
    if len(zones) > 1:
        topo.warnings.append(f"instances span {len(zones)} zones ({_listed(zones)}); their network nodes do not "
                             f"meet, joined under {ROOT_SWITCH}")
    _build_blocks(topo, instances, node_map, nvlink)
    return topo


def _path_conflict(path: tuple[str, ...], parent: dict[str, str | None], level: dict[str, int]) -> str | None:
    for depth, nn in enumerate(path):
        if nn in parent and (parent[nn] != (path[depth - 1] if depth else None) or level[nn] != depth):
            return nn
    return None


def _build_blocks(topo: Topology, instances: Sequence[Instance], node_map: dict[str, str], nvlink: set[str]) -> None:
    domains: dict[str, list[Instance]] = {}
    no_domain: list[str] = []
    for inst in instances:
        if inst.instance_id not in node_map:
            continue
        if inst.instance_type not in nvlink:
            # A CapacityBlockId on another type names a Capacity Block of separate instances, not an NVLink
            # domain ("For P5 instances, a Capacity Block ID refers to a group of instances", boto3
            # EC2.Instance.capacity_block_id).
            continue
        if inst.capacity_block_id:
            domains.setdefault(inst.capacity_block_id, []).append(inst)
        else:
            no_domain.append(node_map[inst.instance_id])
    topo.no_domain_nodes = sorted(no_domain, key=_natural)
    if no_domain:
        topo.warnings.append(f"{len(no_domain)} node(s) of an NVLink-domain type have no CapacityBlockId (EC2 "
                             f"returns it late after launch): {_listed(no_domain)}; {_NOT_IN_BLOCK}")
    if not domains:
        return

    def proximity(members: list[Instance]) -> tuple[object, ...]:
        # The most common network path of the block's members: sorting by it puts blocks under the same
        # network nodes next to each other, which Slurm's block aggregation assumes.
        paths = sorted(m.network_nodes for m in members)
        common = max(paths, key=paths.count)
        return tuple(_natural(n) for n in common)

    for name in sorted(domains, key=lambda b: (proximity(domains[b]), _natural(b))):
        topo.blocks[name] = sorted((node_map[m.instance_id] for m in domains[name]), key=_natural)
    sizes = {name: len(nodes) for name, nodes in topo.blocks.items()}
    topo.block_size = min(sizes.values())
    largest = max(sizes.values())
    if topo.block_size < largest:
        small = [n for n, s in sizes.items() if s == topo.block_size]
        topo.warnings.append(f"blocks differ in size ({topo.block_size} to {largest} nodes): the planning base block "
                             f"size is {topo.block_size}, the smallest (Slurm refuses a block smaller than the base), "
                             f"set by {_listed(small)}")
    topo.domain_nodes = sorted((n for nodes in topo.blocks.values() for n in nodes), key=_natural)


# ---- rendering ----------------------------------------------------------------------------------------
def choose_plugin(topo: Topology, plugin: str = "auto") -> str:
    """``tree`` or ``block`` for a ``topology.conf`` (one plugin per file).

    ``auto``: ``block`` when every node is in an NVLink domain, else ``tree`` (with a warning when some
    are: both need ``topology.yaml``, Slurm >= 25.05). ``block`` without any NVLink domain is ``tree``
    with a warning: a topology/block file without a block stops slurmctld ("No blocks configured",
    SchedMD/slurm ``src/plugins/topology/block/block_record.c``) and would leave every node out.
    """
    if plugin == "block" and not topo.blocks:
        topo.warnings.append(f"--plugin block: none of the {len(topo.tree_nodes)} node(s) is in an NVLink domain "
                             "(slurmctld refuses topology/block without a block: 'No blocks configured'), so this is "
                             "the tree; set TopologyPlugin=topology/tree for it")
        return "tree"
    if plugin in ("tree", "block"):
        return plugin
    if topo.blocks and len(topo.domain_nodes) == len(topo.tree_nodes):
        return "block"
    if topo.blocks:
        topo.warnings.append(f"{len(topo.domain_nodes)} of {len(topo.tree_nodes)} nodes are in NVLink domains: "
                             "topology.conf holds one plugin, so this is the tree; use --format yaml (Slurm >= "
                             "25.05) for tree and block together")
    return "tree"


def _header(kind: str) -> list[str]:
    return [f"# Slurm {kind} generated by fmcluster from EC2 DescribeInstanceTopology; do not edit."]


def render_conf(topo: Topology, plugin: str = "auto") -> str:
    """``topology.conf`` for ``topology/tree`` or ``topology/block`` (see :func:`choose_plugin`)."""
    chosen = choose_plugin(topo, plugin)
    lines = _header(f"topology.conf (TopologyPlugin=topology/{chosen})")
    if chosen == "block":
        blocked = {*topo.domain_nodes, *topo.no_domain_nodes}  # the latter reported already
        leftover = [n for n in topo.tree_nodes if n not in blocked]
        if leftover:
            topo.warnings.append(f"{len(leftover)} node(s) in no NVLink domain: {_listed(leftover)}; not in any block "
                                 f"of this file: {_OUTSIDE_BLOCKS}")
        for name, nodes in topo.blocks.items():
            lines.append(f"BlockName={name} Nodes={','.join(nodes)}")
        if topo.block_size:
            lines.append(f"BlockSizes={topo.block_size}")
    else:
        for name, (switches, nodes) in topo.switches.items():
            child = f"Switches={','.join(switches)}" if switches else f"Nodes={','.join(nodes)}"
            lines.append(f"SwitchName={name} {child}")
    return "\n".join(lines) + "\n"


def render_yaml(topo: Topology, plugin: str = "auto") -> str:
    """``topology.yaml`` (Slurm >= 25.05): ``fmc-tree`` (cluster default) and, with NVLink domains and ``plugin``
    ``auto`` or ``block``, ``fmc-block``; ``plugin`` ``tree``: ``fmc-tree`` only. ``block`` without NVLink
    domains is reported (the file is then the tree only)."""
    lines = _header("topology.yaml")
    lines += [f"- topology: {TREE_TOPOLOGY}", "  cluster_default: true", "  tree:", "    switches:"]
    for name, (switches, nodes) in topo.switches.items():
        lines.append(f'    - switch: "{name}"')
        lines.append(f'      children: "{",".join(switches)}"' if switches else f'      nodes: "{",".join(nodes)}"')
    if plugin == "block" and not topo.blocks:
        topo.warnings.append(f"--plugin block: none of the {len(topo.tree_nodes)} node(s) is in an NVLink domain; "
                             f"topology.yaml has the tree {TREE_TOPOLOGY} only")
    if topo.blocks and plugin != "tree":
        lines += [f"- topology: {BLOCK_TOPOLOGY}", "  cluster_default: false", "  block:",
                  "    block_sizes:", f"      - {topo.block_size}", "    blocks:"]
        for name, nodes in topo.blocks.items():
            lines += [f'    - block: "{name}"', f'      nodes: "{",".join(nodes)}"']
    return "\n".join(lines) + "\n"


def generate(instances_doc: object, nodes_doc: object, fmt: str = "conf", plugin: str = "auto",
             nvlink_types: Iterable[str] = DEFAULT_NVLINK_TYPES) -> tuple[str, list[str]]:
    """The topology file text and every warning. Raises :class:`InputError` for unusable documents."""
    if fmt not in FORMATS:
        raise InputError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if plugin not in PLUGINS:
        raise InputError(f"plugin: expected one of {', '.join(PLUGINS)}, got {plugin!r}")
    nodes = parse_nodes(nodes_doc)
    warnings = list(nodes.warnings)
    instances, more = parse_instances(instances_doc)
    warnings += more
    if not nodes.by_instance and not nodes.without_instance:
        raise InputError("nodes: no usable instance-id -> node-name entry" + ("" if not warnings else
                                                                               f" ({len(warnings)} ignored)"))
    topo = build(instances, nodes.by_instance, nvlink_types, nodes.without_instance)
    text = render_yaml(topo, plugin) if fmt == "yaml" else render_conf(topo, plugin)
    return text, warnings + topo.warnings


# ---- the command the controller node runs -------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``ec2_slurm.py --instances FILE --nodes FILE [--format conf|yaml] [--plugin auto|tree|block]
    [--nvlink-types T,...] [--out FILE]``: the topology on stdout (or ``--out``, written atomically),
    warnings on stderr; exit 0, or 2 on unreadable input."""
    parser = argparse.ArgumentParser(prog="fmcluster-topology", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--instances", required=True, type=Path, help="DescribeInstanceTopology response (JSON)")
    parser.add_argument("--nodes", required=True, type=Path, help="instance id -> Slurm node name (JSON or lines)")
    parser.add_argument("--format", default="conf", choices=FORMATS)
    parser.add_argument("--plugin", default="auto", choices=PLUGINS)
    parser.add_argument("--nvlink-types", default=",".join(DEFAULT_NVLINK_TYPES),
                        help="comma-separated instance types in NVLink domains")
    parser.add_argument("--out", type=Path, default=None, help="write here (atomically) instead of stdout")
    args = parser.parse_args(argv)
    try:
        text, warnings = generate(read_json_or_text(args.instances, json_required=True),
                                  read_json_or_text(args.nodes), args.format, args.plugin, [t for t in args.nvlink_types.split(",") if t])
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    tmp = args.out.with_name(args.out.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(args.out)
    except OSError as e:
        print(f"error: {args.out}: cannot write: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
