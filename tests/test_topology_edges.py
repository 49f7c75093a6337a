"""`fmcluster topology` edge cases: --plugin with data it cannot honour, one-token node map lines, JSON errors.

Slurm facts (SchedMD/slurm ``src/plugins/topology/block/block_record.c``): a topology/block file without a
block stops slurmctld ("No blocks configured"); a node in no block only draws the warning "Blocks lack
access to N nodes" (``topology_block.c`` ``topology_p_eval_nodes``: such nodes take jobs whose candidate
nodes include no block node).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.topology.ec2_slurm import FALLBACK_SWITCH, generate, parse_nodes

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "topology"
MODULE = ROOT / "fmcluster" / "topology" / "ec2_slurm.py"

P5 = {"Instances": [
    {"InstanceId": "i-00000000000000001", "InstanceType": "p5.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-3"]},
    {"InstanceId": "i-00000000000000002", "InstanceType": "p5.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-4"]},
]}
P5_NODES = {"i-00000000000000001": "p5-1", "i-00000000000000002": "p5-2"}
GB200 = {"Instances": [
    {"InstanceId": "i-00000000000000003", "InstanceType": "p6e-gb200.36xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-5"],
     "CapacityBlockId": "cb-1"},
]}


def conf_nodes(text: str) -> set[str]:
    """Every node named on a Nodes= of a topology.conf (fmcluster writes no hostlist ranges)."""
    return {n for line in text.splitlines() if "Nodes=" in line for n in line.split("Nodes=", 1)[1].split(",")}


#: (case, instances, nodes, format, plugin) -> (first conf keyword or yaml topologies, warning substring or None)
PLUGIN_CASES = [
    ("p5 block conf: tree + warning", P5, P5_NODES, "conf", "block", "SwitchName", "No blocks configured"),
    ("p5 tree conf: tree, no warning", P5, P5_NODES, "conf", "tree", "SwitchName", None),
    ("p5 auto conf: tree, no warning", P5, P5_NODES, "conf", "auto", "SwitchName", None),
    ("gb200 block conf: block", GB200, {"i-00000000000000003": "nvl-1"}, "conf", "block", "BlockName", None),
    ("p5 block yaml: tree only + warning", P5, P5_NODES, "yaml", "block", ["fmc-tree"], "tree fmc-tree only"),
    ("mixed tree yaml: tree only", {"Instances": P5["Instances"] + GB200["Instances"]},
     {**P5_NODES, "i-00000000000000003": "nvl-1"}, "yaml", "tree", ["fmc-tree"], None),
    ("mixed auto yaml: both", {"Instances": P5["Instances"] + GB200["Instances"]},
     {**P5_NODES, "i-00000000000000003": "nvl-1"}, "yaml", "auto", ["fmc-tree", "fmc-block"], None),
    ("mixed block conf: blocks + named leftovers", {"Instances": P5["Instances"] + GB200["Instances"]},
     {**P5_NODES, "i-00000000000000003": "nvl-1"}, "conf", "block", "BlockName", "p5-1, p5-2; not in any block"),
]


@pytest.mark.parametrize(("case", "instances", "nodes", "fmt", "plugin", "shape", "warning"), PLUGIN_CASES,
                         ids=[c[0] for c in PLUGIN_CASES])
def test_plugin_is_honoured_or_reported_and_no_node_vanishes(case: str, instances: dict, nodes: dict, fmt: str,
                                                             plugin: str, shape: object, warning: str | None) -> None:
    text, warnings = generate(instances, nodes, fmt, plugin)
    if fmt == "conf":
        first = text.splitlines()[1].split("=", 1)[0]
        assert first == shape, text
        listed = conf_nodes(text)
        if shape == "SwitchName":
            assert listed == set(nodes.values()), text
        else:
            assert listed | {n for w in warnings for n in nodes.values() if n in w} == set(nodes.values())
    else:
        doc = yaml.safe_load(text)
        assert [t["topology"] for t in doc] == shape
        assert set(doc[0]["tree"]["switches"][0]["nodes"].split(",")) <= set(nodes.values())
    if warning is None:
        assert warnings == []
    else:
        assert any(warning in w for w in warnings), warnings


def test_cli_p5_with_plugin_block_prints_the_tree_with_every_node(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["topology", "--instances", str(FIX / "p5-spines.instances.json"),
                                   "--nodes", str(FIX / "p5-spines.nodes.json"), "--plugin", "block"])
    assert res.exit_code == 0, res.output
    expected = (FIX / "expected" / "p5-spines.auto.conf").read_text().splitlines()[1:]
    assert res.stdout.splitlines()[1:] == expected
    assert "warning:" in res.stderr and "No blocks configured" in " ".join(res.stderr.split())


#: node map text -> (instance map, nodes without instance, warning substring or None)
ONE_TOKEN_CASES = [
    ("instance id alone", "i-00000000000000001 p5-1\ni-0000000000000000e\n", {"i-00000000000000001": "p5-1"}, [],
     "line 2: an instance id without a node name"),
    ("short instance id alone", "i-0123abcd\n", {}, [], "line 1: an instance id without a node name"),
    ("upper-case instance id alone", "# c\n\ni-0123ABCD0123ABCD0\n", {}, [], "line 3: an instance id"),
    ("node name alone", "gpu-dy-p5-1\n", {}, ["gpu-dy-p5-1"], None),
    ("node name starting with i-", "i-node-1\n", {}, ["i-node-1"], None),
]


@pytest.mark.parametrize(("case", "text", "mapped", "idle", "warning"), ONE_TOKEN_CASES,
                         ids=[c[0] for c in ONE_TOKEN_CASES])
def test_a_lone_instance_id_is_ignored_with_its_line_number(case: str, text: str, mapped: dict, idle: list,
                                                          warning: str | None) -> None:
    nodes = parse_nodes(text)
    assert nodes.by_instance == mapped and nodes.without_instance == idle
    assert (nodes.warnings == []) if warning is None else any(warning in w for w in nodes.warnings), nodes.warnings


def test_a_lone_instance_id_never_becomes_a_slurm_node() -> None:
    text, warnings = generate(P5, "i-00000000000000001 p5-1\ni-00000000000000002\n", "conf", "tree")
    assert "i-00000000000000002" not in text and FALLBACK_SWITCH not in text
    assert any("nodes line 2" in w and "line ignored" in w for w in warnings)


#: (case, instances file text, nodes file text, message)
JSON_ERRORS = [
    ("instances empty", "", '{"i-0a00000000000000a": "n1"}', "not valid JSON: Expecting value at line 1 column 1"),
    ("instances truncated", '{"Instances": [\n', '{"i-0a00000000000000a": "n1"}',
     "not valid JSON: Expecting value at line 2 column 1"),
    ("instances trailing comma", '{"Instances": [],\n}', '{"i-0a00000000000000a": "n1"}',
     "not valid JSON: Expecting property name enclosed in double quotes at line 2 column 1"),
    ("nodes truncated JSON", '{"Instances": []}', '{"i-0a00000000000000a": "n1",\n',
     "not valid JSON: Expecting property name enclosed in double quotes at line 2 column 1"),
]


@pytest.mark.parametrize(("case", "instances", "nodes", "message"), JSON_ERRORS, ids=[c[0] for c in JSON_ERRORS])
def test_broken_json_is_an_error_with_line_and_column(tmp_path: Path, case: str, instances: str, nodes: str,
                                                      message: str) -> None:
    inst, node = tmp_path / "instances.json", tmp_path / "nodes.json"
    inst.write_text(instances)
    node.write_text(nodes)
    res = subprocess.run([sys.executable, "-I", str(MODULE), "--instances", str(inst), "--nodes", str(node)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: ") and message in res.stderr, res.stderr
    cli = CliRunner().invoke(app, ["topology", "--instances", str(inst), "--nodes", str(node)])
    assert cli.exit_code == 2 and message in " ".join(cli.stderr.split()), cli.output
