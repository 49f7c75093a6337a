"""ParallelCluster update verdicts come from ParallelCluster itself (issue 25).

1. ``data/update_policies.yaml`` is what ``tools/record_pcluster_update_policies.py`` writes from the installed
   aws-parallelcluster (``.venv-pcluster``, which ``make setup`` creates): never a hand-kept list.
2. For a table of changes to the default blueprint's generated configuration, fmcluster's comparison finds the same
   changes with the same policies as ParallelCluster's own ``ConfigPatch``, and each verdict agrees with
   ``ConfigPatch.check()`` on a running and on a stopped cluster (``tools/pcluster_update_check.py``).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.orchestrators.parallelcluster.review import cluster_configurations
from fmcluster.orchestrators.parallelcluster.review_update import config_changes, update_policies, verdicts

ROOT = Path(__file__).resolve().parents[3]
PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
DATA = ROOT / "fmcluster" / "orchestrators" / "parallelcluster" / "data" / "update_policies.yaml"

pytestmark = pytest.mark.xdist_group("pcluster-update-policies")


def test_recorded_policies_are_the_installed_parallelclusters() -> None:
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "record_pcluster_update_policies.py"), "-"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout == DATA.read_text(), "run: .venv-pcluster/bin/python tools/record_pcluster_update_policies.py"
    assert update_policies()["fields"]["HeadNode/InstanceType"] == "UNSUPPORTED"


@pytest.fixture(scope="module")
def base(default_templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    [config] = [c for t in default_templates.values() for c in cluster_configurations(t).values()]
    return config


def _queue(cfg: dict[str, Any]) -> dict[str, Any]:
    return cfg["Scheduling"]["SlurmQueues"][0]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(cfg: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = cfg
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return apply


def _queue_set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda cfg: _queue(cfg)["ComputeResources"][0].__setitem__(key, value)


def _add_queue(cfg: dict[str, Any]) -> None:
    q = copy.deepcopy(_queue(cfg))
    q["Name"] = "extra"
    cfg["Scheduling"]["SlurmQueues"].append(q)


def _strategy(value: str) -> Callable[[dict[str, Any]], None]:
    return lambda cfg: cfg["Scheduling"].setdefault("SlurmSettings", {}).__setitem__("QueueUpdateStrategy", value)


#: (name, mutations of the NEW configuration): the changes a reviewer meets, several per setting kind.
CHANGES: list[tuple[str, list[Callable[[dict[str, Any]], None]]]] = [
    ("tag value", [lambda c: c.__setitem__("Tags", [{**t, "Value": "other"} if t["Key"] == "team" else t
                                                    for t in c["Tags"]])]),
    ("tag added", [lambda c: c.setdefault("Tags", []).append({"Key": "owner", "Value": "ml"})]),
    ("head node type", [_set("HeadNode.InstanceType", "m7i.8xlarge")]),
    ("os", [_set("Image.Os", "alinux2023")]),
    ("queue instance type", [_queue_set("InstanceType", "p5e.48xlarge")]),
    ("queue instance type, strategy COMPUTE_FLEET_STOP", [_queue_set("InstanceType", "p5e.48xlarge"),
                                                          _strategy("COMPUTE_FLEET_STOP")]),
    ("queue instance type, strategy DRAIN", [_queue_set("InstanceType", "p5e.48xlarge"), _strategy("DRAIN")]),
    ("queue instance type, strategy TERMINATE", [_queue_set("InstanceType", "p5e.48xlarge"), _strategy("TERMINATE")]),
    ("more nodes", [_queue_set("MaxCount", 8)]),
    ("fewer nodes", [_queue_set("MaxCount", 2), _queue_set("MinCount", 2)]),
    ("queue added", [_add_queue]),
    ("queue removed", [lambda c: c["Scheduling"].__setitem__("SlurmQueues", [])]),
    ("scaledown idletime", [_set("Scheduling.SlurmSettings.ScaledownIdletime", 30)]),
    ("custom action script", [lambda c: _queue(c).setdefault("CustomActions", {}).setdefault(
        "OnNodeConfigured", {}).__setitem__("Script", "s3://other-bucket/x.sh")]),
]


def _mutated(base: dict[str, Any], mutations: list[Callable[[dict[str, Any]], None]]) -> dict[str, Any]:
    new = copy.deepcopy(base)
    for m in mutations:
        m(new)
    return new


@cache
def _pcluster_checks(pairs_json: str) -> list[list[dict[str, Any]]]:
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / "pcluster_update_check.py")], input=pairs_json,
                          capture_output=True, text=True, timeout=300, check=True)
    result: list[list[dict[str, Any]]] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def pcluster_checks(base: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """ParallelCluster's own verdicts for every row of :data:`CHANGES`, in one run of the pcluster venv."""
    pairs = [{"old": base, "new": _mutated(base, m), "region": "us-east-1"} for _, m in CHANGES]
    return dict(zip([n for n, _ in CHANGES], _pcluster_checks(json.dumps(pairs)), strict=True))


#: ParallelCluster's check results each fmcluster verdict must match: (fleet running, fleet stopped).
EXPECTED = {"in_place": ("SUCCEEDED", "SUCCEEDED"), "replaces_nodes": ("SUCCEEDED", "SUCCEEDED"),
            "needs_stop": ("not SUCCEEDED", "SUCCEEDED"), "fails": ("not SUCCEEDED", "not SUCCEEDED")}


def _matches(result: str, expected: str) -> bool:
    return result != "SUCCEEDED" if expected == "not SUCCEEDED" else result == expected


@pytest.mark.parametrize(("name", "mutations"), CHANGES, ids=[n for n, _ in CHANGES])
def test_same_changes_and_policies_as_configpatch(name: str, mutations: list[Any], base: dict[str, Any],
                                                  pcluster_checks: dict[str, list[dict[str, Any]]]) -> None:
    new = _mutated(base, mutations)
    ours = {(".".join(c.path), c.key, c.policy) for c in config_changes(base, new)}
    theirs = {(r["path"], r["key"], r["policy"]) for r in pcluster_checks[name]}
    assert ours == theirs and ours


@pytest.mark.parametrize(("name", "mutations"), CHANGES, ids=[n for n, _ in CHANGES])
def test_verdicts_agree_with_parallelclusters_check(name: str, mutations: list[Any], base: dict[str, Any],
                                                    pcluster_checks: dict[str, list[dict[str, Any]]]) -> None:
    new = _mutated(base, mutations)
    theirs = {(r["path"], r["key"]): (r["running"], r["stopped"]) for r in pcluster_checks[name]}
    for v in verdicts(base, new, "us-east-1"):
        running, stopped = theirs[(".".join(v.change.path), v.change.key)]
        want_running, want_stopped = EXPECTED[v.kind]
        assert _matches(running, want_running) and _matches(stopped, want_stopped), (v.kind, v.text, running, stopped)


@pytest.mark.parametrize(("name", "setting", "kind"), [
    ("tag value", "Tags[team].Value", "in_place"),
    ("head node type", "HeadNode.InstanceType", "fails"),
    ("os", "Image.Os", "fails"),
    # InstanceType is COMPUTE_FLEET_STOP in ParallelCluster's schema: no QueueUpdateStrategy lets it apply while running.
    ("queue instance type, strategy DRAIN", "Scheduling.SlurmQueues[gpu].ComputeResources[p5-48xlarge].InstanceType",
     "needs_stop"),
    ("custom action script", "Scheduling.SlurmQueues[gpu].CustomActions.OnNodeConfigured", "replaces_nodes"),
    ("queue added", "Scheduling.SlurmQueues", "in_place"),
    ("queue instance type, strategy COMPUTE_FLEET_STOP",
     "Scheduling.SlurmQueues[gpu].ComputeResources[p5-48xlarge].InstanceType", "needs_stop"),
])
def test_verdicts_a_reviewer_reads(name: str, setting: str, kind: str, base: dict[str, Any]) -> None:
    """The headline verdicts of the issue's changes, as ParallelCluster 3.16.1's schema gives them (the two tests above
    prove them against ParallelCluster itself; this one pins what a reviewer reads). The default blueprint sets
    QueueUpdateStrategy DRAIN."""
    mutations = dict(CHANGES)[name]
    found = {v.change.setting: v.kind for v in verdicts(base, _mutated(base, mutations), "us-east-1")}
    assert found[setting] == kind
