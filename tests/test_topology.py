"""`fmcluster topology` and fmcluster/topology/ec2_slurm.py: Slurm topology from EC2 instance topology.

Fixtures (tests/fixtures/topology/) are DescribeInstanceTopology responses of our own, in the shape of
botocore's ``InstanceTopology`` (data/ec2/2016-11-15/service-2.json): P5 across three spines, two
p6e-gb200 UltraServers (18 instances each) of a capacity block, and partial / inconsistent data. The
expected files hold the exact output; the properties check, on generated bad input, that the module
never raises anything but InputError and never drops a node of the map.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fmcluster.catalog.instances import get_instance, known_instance_types
from fmcluster.cli import app
from fmcluster.topology import ec2_slurm
from fmcluster.topology.ec2_slurm import (
    DEFAULT_NVLINK_TYPES,
    FALLBACK_SWITCH,
    ROOT_SWITCH,
    InputError,
    Topology,
    build,
    generate,
    parse_instances,
    parse_node_map,
)

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "topology"
MODULE = ROOT / "fmcluster" / "topology" / "ec2_slurm.py"

#: (fixture, node map suffix, format, plugin): each has expected/<fixture>.<plugin>.<format>(.warnings).
CASES = [
    ("p5-spines", "json", "conf", "auto"),
    ("p5-spines", "json", "yaml", "auto"),
    ("gb200-ultraservers", "txt", "conf", "auto"),
    ("gb200-ultraservers", "txt", "yaml", "auto"),
    ("partial", "json", "conf", "auto"),
    ("gb200-partial", "txt", "yaml", "auto"),
    ("gb200-partial", "txt", "conf", "block"),
]


def standalone(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The module as the controller node runs it: its own file, isolated mode (no site-packages, no cwd)."""
    return subprocess.run([sys.executable, "-I", str(MODULE), *map(str, args)], capture_output=True, text=True,
                          check=False)


def fixture_args(name: str, suffix: str, fmt: str, plugin: str) -> list[str]:
    return ["--instances", str(FIX / f"{name}.instances.json"), "--nodes", str(FIX / f"{name}.nodes.{suffix}"),
            "--format", fmt, "--plugin", plugin]


# ---- the fixture set, exact -----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "suffix", "fmt", "plugin"), CASES, ids=[f"{c[0]}-{c[3]}-{c[2]}" for c in CASES])
def test_fixture_output_is_exact(name: str, suffix: str, fmt: str, plugin: str) -> None:
    expected = (FIX / "expected" / f"{name}.{plugin}.{fmt}").read_text()
    warnings = (FIX / "expected" / f"{name}.{plugin}.{fmt}.warnings").read_text()
    res = standalone(*fixture_args(name, suffix, fmt, plugin))
    assert res.returncode == 0, res.stderr
    assert res.stdout == expected
    assert res.stderr == warnings


@pytest.mark.parametrize(("name", "suffix", "fmt", "plugin"), CASES, ids=[f"{c[0]}-{c[3]}-{c[2]}" for c in CASES])
def test_fmcluster_topology_prints_what_the_controller_script_prints(name: str, suffix: str, fmt: str,
                                                                      plugin: str) -> None:
    res = CliRunner().invoke(app, ["topology", *fixture_args(name, suffix, fmt, plugin)])
    assert res.exit_code == 0, res.output
    assert res.stdout == (FIX / "expected" / f"{name}.{plugin}.{fmt}").read_text()
    assert " ".join(res.stderr.split()) == " ".join((FIX / "expected" / f"{name}.{plugin}.{fmt}.warnings").read_text()
                                                     .split())


def test_p5_tree_follows_the_network_nodes() -> None:
    text = (FIX / "expected" / "p5-spines.auto.conf").read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    # leaves first, each leaf's nodes are the instances whose last network node it is; spines; the top node
    assert lines[0] == "SwitchName=nn-0b1c2d3e4f5a6b7c8 Nodes=gpu-st-p5-1,gpu-st-p5-2,gpu-st-p5-3"
    assert "SwitchName=nn-9e8d7c6b5a4f3e2d1 Switches=nn-2d3e4f5a6b7c8d9e0" in lines
    assert lines[-1] == ("SwitchName=nn-4f2a9c1e7b3d5a601 Switches=nn-7c1d2e3f4a5b6c7d8,nn-9e8d7c6b5a4f3e2d1,"
                         "nn-a1b2c3d4e5f607182")
    assert ROOT_SWITCH not in text and FALLBACK_SWITCH not in text  # one top node: no synthetic root needed
    # the instance of another cluster (not in the node map) is nowhere
    assert "i-0ffffffffffffffff" in (FIX / "expected" / "p5-spines.auto.conf.warnings").read_text()


def test_gb200_blocks_are_the_ultraservers_with_their_size_as_base() -> None:
    conf = (FIX / "expected" / "gb200-ultraservers.auto.conf").read_text().splitlines()
    assert conf[1].startswith("BlockName=cb-0a1b2c3d4e5f60718 Nodes=gb200-st-nvl-1,gb200-st-nvl-2,")
    assert conf[1].endswith(",gb200-st-nvl-18") and conf[2].endswith(",gb200-st-nvl-36")
    assert conf[3] == "BlockSizes=18"  # u-p6e-gb200x72: 18 instances per NVLink domain
    doc = yaml.safe_load((FIX / "expected" / "gb200-ultraservers.auto.yaml").read_text())
    assert [t["topology"] for t in doc] == ["fmc-tree", "fmc-block"]
    assert doc[0]["cluster_default"] is True and doc[1]["cluster_default"] is False
    assert doc[1]["block"]["block_sizes"] == [18]
    assert [b["block"] for b in doc[1]["block"]["blocks"]] == ["cb-0a1b2c3d4e5f60718", "cb-0b2c3d4e5f6071829"]


def test_yaml_has_the_shape_of_topology_yaml_5() -> None:
    """topology.yaml(5): a list of topologies, ``topology`` first, exactly one of tree/block/flat; a switch
    has ``switch`` and ``children`` or ``nodes``; a block topology ``block_sizes`` (ints) and ``blocks``."""
    for path in sorted((FIX / "expected").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert isinstance(doc, list) and doc, path
        for topo in doc:
            assert next(iter(topo)) == "topology", path
            assert len({"tree", "block", "flat"} & set(topo)) == 1, path
            for sw in topo.get("tree", {}).get("switches", []):
                assert set(sw) in ({"switch", "children"}, {"switch", "nodes"}), (path, sw)
                assert all(isinstance(v, str) for v in sw.values())
            if "block" in topo:
                assert all(type(n) is int for n in topo["block"]["block_sizes"])
                assert all(set(b) == {"block", "nodes"} for b in topo["block"]["blocks"])


def test_partial_data_keeps_every_node_of_the_map() -> None:
    text = (FIX / "expected" / "partial.auto.conf").read_text()
    switches = parse_conf(text)
    nodes = sorted(n for kind, kids in switches.values() if kind == "Nodes" for n in kids)
    node_map, _ = parse_node_map(json.loads((FIX / "partial.nodes.json").read_text()))
    assert sorted(nodes) == sorted(node_map.values())
    # the fallback switch holds: no NetworkNodes (3), malformed NetworkNodes (5), the node whose element was
    # not an object (6), a node missing from the response (9), and the node contradicting the tree (4)
    assert switches[FALLBACK_SWITCH] == ("Nodes", ["gpu-st-p5-3", "gpu-st-p5-4", "gpu-st-p5-5", "gpu-st-p5-6",
                                                   "gpu-st-p5-9"])
    # a 2-layer instance on a network node others pass through gets a leaf of its own
    assert switches["fmc-leaf-1"] == ("Nodes", ["gpu-st-p5en-1"])
    # the P5 with a CapacityBlockId is not an NVLink domain: a tree, no blocks
    assert "BlockName" not in text
    warnings = (FIX / "expected" / "partial.auto.conf.warnings").read_text()
    for fragment in ("i-0a000000000000099", "gpu st p5 10", "not-an-instance", "appears twice",
                     "span 2 zones", "contradicts"):
        assert fragment in warnings, fragment


# ---- the module runs on the controller with the standard library only -------------------------------
def test_the_module_imports_only_the_standard_library() -> None:
    tree = ast.parse(MODULE.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


def test_default_nvlink_types_are_the_catalog_ultraserver_types() -> None:
    assert set(DEFAULT_NVLINK_TYPES) == {t for t in known_instance_types() if get_instance(t).ultraserver_sizes}


# ---- unreadable input: exit 2, a message, never a traceback ------------------------------------------
def _write(tmp: Path, name: str, content: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


BAD_INPUTS = [
    ("missing instances file", None, '{"i-0a00000000000000a": "n1"}', "cannot read"),
    ("instances not JSON", "not json at all", '{"i-0a00000000000000a": "n1"}',
     "not valid JSON: Expecting value at line 1 column 1"),
    ("instances a JSON string", '"x"', '{"i-0a00000000000000a": "n1"}', "expected a DescribeInstanceTopology"),
    ("Instances not a list", '{"Instances": {"a": 1}}', '{"i-0a00000000000000a": "n1"}', "expected a list"),
    ("no Instances key", '{"NextToken": "x"}', '{"i-0a00000000000000a": "n1"}', "expected a list"),
    ("instances binary", b"\xff\xfe\x00", '{"i-0a00000000000000a": "n1"}', "cannot read"),
    ("duplicate JSON key", '{"Instances": [], "Instances": []}', '{"i-0a00000000000000a": "n1"}', "duplicate key"),
    ("nodes a JSON list", '{"Instances": []}', '["n1"]', "expected a JSON object"),
    ("nodes empty", '{"Instances": []}', "", "no usable"),
    ("nodes all bad", '{"Instances": []}', '{"x": "n1"}', "no usable"),
]


@pytest.mark.parametrize(("case", "instances", "nodes", "message"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_unreadable_input_exits_2_with_a_message(tmp_path: Path, case: str, instances: str | bytes | None,
                                                 nodes: str, message: str) -> None:
    inst = tmp_path / "missing.json" if instances is None else _write(tmp_path, "instances.json", instances)
    node = _write(tmp_path, "nodes.json", nodes)
    res = standalone("--instances", inst, "--nodes", node)
    assert res.returncode == 2 and "Traceback" not in res.stderr and message in res.stderr, res.stderr
    assert res.stdout == ""
    cli = CliRunner().invoke(app, ["topology", "--instances", str(inst), "--nodes", str(node)])
    assert cli.exit_code == 2 and cli.exception is None or isinstance(cli.exception, SystemExit), cli.output
    # the fmcluster command refuses a missing file before reading (a usage error, as for every path option)
    said = "no such file, got" if instances is None else message
    assert said in " ".join(cli.stderr.split()) and "Traceback" not in cli.output


def test_a_directory_is_unreadable(tmp_path: Path) -> None:
    res = standalone("--instances", tmp_path, "--nodes", tmp_path)
    assert res.returncode == 2 and "cannot read" in res.stderr and "Traceback" not in res.stderr


def test_out_is_written_atomically_and_only_on_success(tmp_path: Path) -> None:
    out = tmp_path / "topology.conf"
    res = standalone(*fixture_args("p5-spines", "json", "conf", "auto"), "--out", out)
    assert res.returncode == 0 and out.read_text() == (FIX / "expected" / "p5-spines.auto.conf").read_text()
    assert not (tmp_path / "topology.conf.tmp").exists()
    bad = standalone("--instances", tmp_path / "nope.json", "--nodes", FIX / "p5-spines.nodes.json", "--out", out)
    assert bad.returncode == 2 and out.read_text() == (FIX / "expected" / "p5-spines.auto.conf").read_text()


# ---- properties on generated input -------------------------------------------------------------------
def parse_conf(text: str) -> dict[str, tuple[str, list[str]]]:
    """SwitchName -> ("Switches"|"Nodes", children) of a tree topology.conf (no ranges: fmcluster writes none)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name_kv, child_kv = line.split(" ")
        key, name = name_kv.split("=")
        assert key == "SwitchName"
        kind, children = child_kv.split("=")
        assert name not in out, f"switch {name} twice"
        out[name] = (kind, children.split(","))
    return out


def check_tree(topo: Topology, node_names: set[str]) -> None:
    """A Slurm tree: names valid and unique, a switch has switches or nodes, every child switch defined and
    with one parent, one root (when several top switches), every node exactly once."""
    seen_nodes: list[str] = []
    parents: dict[str, str] = {}
    for name, (switches, nodes) in topo.switches.items():
        assert ec2_slurm.NAME_RE.match(name), name
        assert bool(switches) != bool(nodes), name
        seen_nodes += nodes
        for child in switches:
            assert child in topo.switches and child not in parents, child
            parents[child] = name
    roots = [s for s in topo.switches if s not in parents]
    assert len(roots) == 1 or not topo.switches, roots
    assert sorted(seen_nodes) == sorted(node_names)


def check_blocks(topo: Topology, node_names: set[str]) -> None:
    in_blocks = [n for nodes in topo.blocks.values() for n in nodes]
    assert len(in_blocks) == len(set(in_blocks)) and set(in_blocks) <= node_names
    if topo.blocks:
        assert topo.block_size is not None
        assert all(len(nodes) >= topo.block_size for nodes in topo.blocks.values())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
ids = st.sampled_from([f"i-0{n:016x}" for n in range(1, 13)])
net = st.sampled_from(["nn-a", "nn-b", "nn-c", "nn-d", "nn-e", "nn-f", "fmc-x", "bad name", "x[1]"])
instance = st.fixed_dictionaries(
    {"InstanceId": ids | json_values},
    optional={
        "InstanceType": st.sampled_from(["p5.48xlarge", "p6e-gb200.36xlarge", "p4d.24xlarge"]) | json_values,
        "NetworkNodes": st.lists(net, max_size=5) | json_values,
        "CapacityBlockId": st.sampled_from(["cb-1", "cb-2", "cb-3"]) | json_values,
        "ZoneId": st.sampled_from(["use1-az6", "use1-az1"]) | json_values,
    },
)
responses = st.fixed_dictionaries({"Instances": st.lists(instance | json_values, max_size=14)}) | json_values
node_maps = st.dictionaries(ids | st.text(max_size=6), st.sampled_from([f"gpu-{n}" for n in range(1, 10)])
                            | st.text(max_size=6) | json_values, max_size=12) | json_values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses, node_maps)
def test_any_input_gives_a_tree_with_every_node_or_an_input_error(doc: Any, nodes: Any) -> None:
    try:
        node_map, _ = parse_node_map(nodes)
        instances, _ = parse_instances(doc)
    except InputError:
        return
    if not node_map:
        return
    topo = build(instances, node_map)
    names = set(node_map.values())
    check_tree(topo, names)
    check_blocks(topo, names)
    for fmt in ("conf", "yaml"):
        for plugin in ("auto", "tree", "block"):
            text, warnings = generate(doc, nodes, fmt, plugin)
            assert all(isinstance(w, str) and w for w in warnings)
            if fmt == "yaml":
                parsed = yaml.safe_load(text)
                tree_nodes = [n for sw in parsed[0]["tree"]["switches"] if "nodes" in sw
                              for n in sw["nodes"].split(",")]
                assert sorted(tree_nodes) == sorted(names)
            elif "SwitchName=" in text:
                conf = parse_conf(text)
                assert sorted(n for k, kids in conf.values() if k == "Nodes" for n in kids) == sorted(names)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([f"i-0{n:016x}" for n in range(1, 9)]),
                          st.lists(st.sampled_from(["nn-1", "nn-2", "nn-3", "nn-4", "nn-5"]), min_size=1, max_size=4,
                                   unique=True)), max_size=8))
def test_inconsistent_paths_never_drop_a_node(paths: list[tuple[str, list[str]]]) -> None:
    """Network nodes that contradict each other (another parent, another layer) send the later instance to
    the fallback switch; the tree stays a tree."""
    doc = {"Instances": [{"InstanceId": i, "InstanceType": "p5.48xlarge", "NetworkNodes": p} for i, p in paths]}
    node_map = {f"i-0{n:016x}": f"gpu-{n}" for n in range(1, 9)}
    instances, _ = parse_instances(doc)
    topo = build(instances, node_map)
    check_tree(topo, set(node_map.values()))


def test_a_block_smaller_than_the_others_sets_the_base_and_is_reported() -> None:
    doc = {"Instances": [
        {"InstanceId": f"i-0{n:016x}", "InstanceType": "p6e-gb200.36xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-3"],
         "CapacityBlockId": "cb-a" if n <= 9 else "cb-b"} for n in range(1, 17)]}
    node_map = {f"i-0{n:016x}": f"nvl-{n}" for n in range(1, 17)}
    text, warnings = generate(doc, node_map, "conf", "block")
    assert text.splitlines()[1:] == ["BlockName=cb-a Nodes=" + ",".join(f"nvl-{n}" for n in range(1, 10)),
                                     "BlockName=cb-b Nodes=" + ",".join(f"nvl-{n}" for n in range(10, 17)),
                                     "BlockSizes=7"]
    assert any("blocks differ in size (7 to 9 nodes)" in w for w in warnings)


def test_blocks_are_ordered_by_network_proximity() -> None:
    """Slurm aggregates consecutive blocks into higher-level blocks: blocks under the same spine are adjacent."""
    def member(n: int, block: str, spine: str) -> dict[str, Any]:
        return {"InstanceId": f"i-0{n:016x}", "InstanceType": "p6e-gb200.36xlarge",
                "NetworkNodes": ["nn-top", spine, f"nn-leaf-{block}"], "CapacityBlockId": block}
    doc = {"Instances": [member(1, "cb-1", "nn-s2"), member(2, "cb-2", "nn-s1"), member(3, "cb-3", "nn-s2"),
                         member(4, "cb-4", "nn-s1")]}
    topo = build(parse_instances(doc)[0], {f"i-0{n:016x}": f"nvl-{n}" for n in range(1, 5)})
    assert list(topo.blocks) == ["cb-2", "cb-4", "cb-1", "cb-3"]


def test_mixed_clusters_in_conf_are_a_tree_with_a_warning() -> None:
    doc = {"Instances": [
        {"InstanceId": "i-00000000000000001", "InstanceType": "p5.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-3"]},
        {"InstanceId": "i-00000000000000002", "InstanceType": "p6e-gb200.36xlarge",
         "NetworkNodes": ["nn-1", "nn-2", "nn-4"], "CapacityBlockId": "cb-1"},
    ]}
    nodes = {"i-00000000000000001": "p5-1", "i-00000000000000002": "nvl-1"}
    text, warnings = generate(doc, nodes, "conf")
    assert "SwitchName=nn-1 Switches=nn-2" in text and "BlockName" not in text
    assert any("use --format yaml" in w for w in warnings)
    yaml_text, _ = generate(doc, nodes, "yaml")
    parsed = yaml.safe_load(yaml_text)
    assert parsed[1]["block"]["blocks"] == [{"block": "cb-1", "nodes": "nvl-1"}]


def test_nodes_without_an_instance_stay_schedulable_on_the_fallback_switch() -> None:
    """A powered-down cloud node has no instance; topology/tree only places jobs on nodes under a switch
    (topology.conf.5: "All nodes in the network must be connected to at least one switch"), so it is
    listed on the fallback switch, without a warning."""
    doc = {"Instances": [{"InstanceId": "i-00000000000000001", "InstanceType": "p5.48xlarge",
                          "NetworkNodes": ["nn-1", "nn-2", "nn-3"]}]}
    text, warnings = generate(doc, "i-00000000000000001 gpu-st-p5-1\ngpu-dy-p5-1\ngpu-dy-p5-2\n", "conf", "tree")
    assert text.splitlines()[1:] == [
        "SwitchName=nn-3 Nodes=gpu-st-p5-1", "SwitchName=nn-2 Switches=nn-3", "SwitchName=nn-1 Switches=nn-2",
        "SwitchName=fmc-no-topology Nodes=gpu-dy-p5-1,gpu-dy-p5-2", "SwitchName=fmc-root Switches=fmc-no-topology,nn-1"]
    assert warnings == []
    only_idle, _ = generate({"Instances": []}, "gpu-dy-p5-1\n", "conf", "tree")
    assert only_idle.splitlines()[1:] == ["SwitchName=fmc-no-topology Nodes=gpu-dy-p5-1"]
