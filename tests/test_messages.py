"""Every field of the blueprint, fed every wrong kind of value: the message quotes what the user wrote, names the
limit or the allowed values, and never shows ``None``, a Python boolean or pydantic's wording (issue 26).

The fields are found by walking :class:`fmcluster.blueprint.model.Blueprint` (nothing is listed by hand, so a new
field is covered on the day it is added). Each wrong value is written into a real example as YAML text, exactly as
a user would type it (``yes``, ``1.30``, a mapping, 300 characters, 200 items, an empty value).
"""

from __future__ import annotations

import re
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from fmcluster.blueprint.errors import BlueprintError, Problem
from fmcluster.blueprint.model import Blueprint
from fmcluster.validation.loader import load_blueprint_text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "blueprints").glob("*.yaml"))
SENTINEL = "__fmc_wrong_value__"

#: Wrong kinds of value, as YAML text, and what the message must quote (``None``: nothing to quote).
WRONG = {
    "yaml-boolean": ("yes", "yes"),
    "yaml-float": ("1.30", "1.30"),
    "mapping": ("{wrong: 1}", None),
    "text": ("'some text'", None),
    "too-long": ("'" + "x" * 300 + "'", None),
    "too-many": ("[" + ", ".join(["x"] * 200) + "]", None),
    "empty-text": ("''", None),
    "empty-list": ("[]", None),
    "null": ("~", None),
}

#: Phrases of pydantic or Python that must never reach a user.
LEAKS = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|Input should|should be a valid|validation error|Value error|"
                   r"Field required|pydantic|\[type=|after validation|Dictionary should|List should")


def _models(ann: Any) -> list[type[BaseModel]]:
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _models(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType, list, dict):
        return [m for a in typing.get_args(ann) for m in _models(a)]
    return [ann] if isinstance(ann, type) and issubclass(ann, BaseModel) else []


def _is_list(ann: Any) -> bool:
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _is_list(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(ann))
    return origin is list


def _tag(model: type[BaseModel]) -> str | None:
    """The ``type`` literal of a tagged-union member (a capacity kind), else None."""
    fld = model.model_fields.get("type")
    args = typing.get_args(fld.annotation) if fld is not None else ()
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def field_paths(model: type[BaseModel] = Blueprint, prefix: tuple[Any, ...] = (),
                tags: tuple[tuple[tuple[Any, ...], str], ...] = ()) -> list[tuple[tuple[Any, ...], tuple]]:
    """Every field path of the model (lists entered at index 0), with the union tags its parents need."""
    out = []
    for name, fld in model.model_fields.items():
        path = (*prefix, name)
        out.append((path, tags))
        inner = (*path, 0) if _is_list(fld.annotation) else path
        for sub in _models(fld.annotation):
            tag = _tag(sub)
            out += field_paths(sub, inner, (*tags, (inner, tag)) if tag else tags)
    return list(dict.fromkeys(out))


@cache
def example_data() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(p.read_text()) for p in EXAMPLES)


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and len(data) > part else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


def _base_for(path: tuple[Any, ...], tags: tuple) -> dict[str, Any]:
    """A copy of the first example that has ``path``'s parent with the right union tags; else the default example."""
    for data in example_data():
        if isinstance(_get(data, path[:-1]), dict) and all(_get(data, (*p, "type")) == t for p, t in tags):
            return yaml.safe_load(yaml.safe_dump(data))
    return yaml.safe_load(yaml.safe_dump(example_data()[0]))


def _put(data: dict[str, Any], path: tuple[Any, ...], tags: tuple) -> None:
    """Set ``path`` to the sentinel, creating missing parents (with their union tag)."""
    tag_at = dict(tags)
    cur: Any = data
    for i, part in enumerate(path[:-1]):
        nxt_is_index = isinstance(path[i + 1], int)
        if isinstance(part, int):
            while len(cur) <= part:
                cur.append({})
            if not isinstance(cur[part], dict):
                cur[part] = {}
            cur = cur[part]
        else:
            if not isinstance(cur.get(part), list if nxt_is_index else dict):
                cur[part] = [] if nxt_is_index else {}
            cur = cur[part]
        if path[: i + 1] in tag_at and isinstance(cur, dict):
            cur["type"] = tag_at[path[: i + 1]]
    cur[path[-1]] = SENTINEL


def wrong_blueprint(path: tuple[Any, ...], tags: tuple, raw: str) -> str:
    data = _base_for(path, tags)
    _put(data, path, tags)
    return yaml.safe_dump(data, sort_keys=False, width=10_000).replace(SENTINEL, raw)


def _base_index(path: tuple[Any, ...], tags: tuple) -> int:
    for i, data in enumerate(example_data()):
        if isinstance(_get(data, path[:-1]), dict) and all(_get(data, (*p, "type")) == t for p, t in tags):
            return i
    return 0


def batches() -> list[tuple[int, tuple, list[tuple[Any, ...]]]]:
    """The field paths in groups that can be wrong in one file at once: same example and union tags, and no path
    inside another (a wrong section hides its fields). One load per group and kind keeps the table fast."""
    groups: dict[tuple[int, tuple], list[list[tuple[Any, ...]]]] = {}
    for path, tags in FIELDS:
        key = (_base_index(path, tags), tags)
        for batch in groups.setdefault(key, []):
            if not any(p[: len(path)] == path or path[: len(p)] == p for p in batch):
                batch.append(path)
                break
        else:
            groups[key].append([path])
    return [(base, tags, batch) for (base, tags), bs in groups.items() for batch in bs]


def wrong_batch(base: int, tags: tuple, paths: list[tuple[Any, ...]], raw: str) -> str:
    data = yaml.safe_load(yaml.safe_dump(example_data()[base]))
    for path in paths:
        _put(data, path, tags)
    return yaml.safe_dump(data, sort_keys=False, width=10_000).replace(SENTINEL, raw)


def problems_of(text: str) -> list[Problem]:
    try:
        load_blueprint_text(text)
    except BlueprintError as e:
        return e.problems
    return []


def dotted(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


FIELDS = field_paths()
BATCHES = batches()
CASES = [pytest.param(base, tags, paths, kind, id=f"{dotted(paths[0])}+{len(paths) - 1}-{kind}")
         for base, tags, paths in BATCHES for kind in WRONG]


def test_the_walk_finds_every_section() -> None:
    """The walk reaches nested sections, list items and tagged-union members (so the table below is complete)."""
    found = {dotted(p) for p, _ in FIELDS}
    assert {"name", "compute[0].capacity.type", "compute[0].capacity.reservation_id", "storage.lustre.mount_point",
            "storage.lustre.data_repositories[0].file_system_path", "observability.metrics"} <= found
    assert len(found) > 120


def test_the_batches_cover_every_field() -> None:
    assert sorted(p for _, _, paths in BATCHES for p in paths) == sorted(p for p, _ in FIELDS)


@pytest.mark.parametrize(("base", "tags", "paths", "kind"), CASES)
def test_every_field_every_wrong_kind(base: int, tags: tuple, paths: list[tuple[Any, ...]], kind: str) -> None:
    raw, quoted = WRONG[kind]
    problems = problems_of(wrong_batch(base, tags, paths, raw))
    for p in problems:
        # A service's own value that is spelt None (HyperPod's NodeRecovery: Automatic | None) may be listed as allowed.
        shown = p.message.replace("allowed Automatic, None", "allowed Automatic, <none>")
        assert not LEAKS.search(shown), f"{p.path}: {p.message}"
    if quoted is None:
        return
    wrong = {dotted(p) for p in paths}
    for p in problems:
        if p.path in wrong and "got" in p.message:
            assert quoted in p.message, f"{p.path}: {p.message} (the user wrote {raw})"


#: Messages for YAML's own readings and limits, as a user sees them (path, YAML line, expected words).
READINGS = [
    ("observability.metrics", "yes", ["got yes", "boolean true", "allowed managed, self_hosted, none"]),
    ("name", "no", ["got no", "boolean false", "quote it: 'no'"]),
    ("storage.lustre.file_system_type_version", "2.15", ["got 2.15", "reads as a number", "quote it: '2.15'"]),
    ("orchestrator.parallelcluster.version", "3.10", ["got 3.10", "the number 3.1"]),
    ("compute[0].count", "on", ["got on", "boolean true", "allowed an integer"]),
    ("storage.lustre.storage_capacity_gib", "~", ["got ~", "null"]),
    ("storage.lustre.storage_capacity_gib", "2400000000000000000000", ["2400000000000000000000", "2147483647"]),
    ("tags", "{" + ", ".join(f"k{i}: v" for i in range(50)) + "}", ["got 50", "at most 40"]),
]


@pytest.mark.parametrize(("where", "raw", "words"), READINGS, ids=[r[0] + "=" + r[1][:8] for r in READINGS])
def test_yaml_readings_are_explained(where: str, raw: str, words: list[str]) -> None:
    path = next(p for p, _ in FIELDS if dotted(p) == where)
    tags = next(t for p, t in FIELDS if p == path)
    here = [p for p in problems_of(wrong_blueprint(path, tags, raw)) if p.path == where]
    assert here, f"{where}: {raw} was accepted"
    assert all(w in here[0].message for w in words), here[0].message


def test_a_failing_extends_is_one_problem(tmp_path: Path) -> None:
    """A base that cannot be found is reported once, at ``extends``; not also as an unknown key, and alone: nothing
    else is judged of a blueprint whose base was never read (tests/test_loader.py, every kind of broken chain)."""
    bp = tmp_path / "bp.yaml"
    bp.write_text("extends: nothere.yaml\nname: a\ncompute: [{name: g, instance_type: p5.48xlarg, count: 1}]\n")
    problems = problems_of_file(bp)
    assert [(p.path, p.line, p.message.split(",")[0]) for p in problems] == [("extends", 1, "no such base blueprint")]


def problems_of_file(path: Path) -> list[Problem]:
    try:
        load_blueprint_text(path.read_text(), file=str(path))
    except BlueprintError as e:
        return e.problems
    return []


@pytest.mark.parametrize(("typo", "ending"), [
    # a size the family lacks is another type, not a typo: the family's sizes, said as such, no guess
    ("p6-b200.96xlarge", " - p6-b200 comes in: p6-b200.48xlarge"),   # not the closer string p6e-gb200.36xlarge
    ("p5.24xlarge", " - p5 comes in: p5.4xlarge, p5.48xlarge"),
    ("p5.8xlarge", " - p5 comes in: p5.4xlarge, p5.48xlarge"),       # not p5.48xlarge: other digits
    ("P5.8XLARGE", " - p5 comes in: p5.4xlarge, p5.48xlarge"),
    ("p5en.48xlarg", " - did you mean 'p5en.48xlarge'?"),          # a misspelt size
    ("p5.4xlarg", " - did you mean 'p5.4xlarge'?"),                # the size the user wrote, not the family's largest
    ("p6b300.48xlarge", " - did you mean 'p6-b300.48xlarge'?"),    # a misspelt family: the closest spelling
    ("p9.16xlarge", "p6e-gb200.36xlarge"),                         # no such family, other digits: the list alone
])
def test_instance_type_suggestion_follows_the_policy(typo: str, ending: str) -> None:
    """Did-you-mean only for a plausible misspelling (close in spelling, the same digits: fmcluster.severity
    closest_names); a size its family lacks gets the family's sizes, named as such."""
    text = (ROOT / "blueprints/default.yaml").read_text().replace("instance_type: p5.48xlarge", f"instance_type: {typo}")
    [p] = [p for p in problems_of(text) if p.path == "compute[0].instance_type"]
    assert p.message.startswith(f"unknown instance type, got {typo!r}; allowed p4d.24xlarge, "), p.message
    assert p.message.endswith(ending), p.message


HP_SLURM = {"kind": "hyperpod", "hyperpod": {"orchestration": "slurm"}}


@pytest.mark.parametrize(("patch", "where", "meant"), [
    ({"region": "us-east1", "availability_zone": "us-east-1a"}, "region", "us-east-1"),
    ({"availability_zone": "us-east1a"}, "availability_zone", "us-east-1a"),
    ({"availability_zone": "us-east-1A"}, "availability_zone", "us-east-1a"),  # never the invalid value back
    ({"region": "US-EAST-1", "availability_zone": "us-east-1a"}, "region", "us-east-1"),
    ({"region": "us-east9"}, "region", None),           # another number is another Region: no guess
    ({"region": "euwest-1", "availability_zone": "eu-west-1a"}, "region", "eu-west-1"),
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.4xlarg"}}},
     "orchestrator.parallelcluster.head_node_instance_type", "m7i.4xlarge"),
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.4xlage"}}},
     "orchestrator.parallelcluster.head_node_instance_type", "m7i.4xlarge"),
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.8xlarg"}}},
     "orchestrator.parallelcluster.head_node_instance_type", "m7i.8xlarge"),  # the digits the user wrote
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "head-node"}}},
     "orchestrator.parallelcluster.head_node_instance_type", None),
    ({"orchestrator": {**HP_SLURM, "hyperpod": {**HP_SLURM["hyperpod"], "controller_instance_type": "ml.m5.4xlarg"}}},
     "orchestrator.hyperpod.controller_instance_type", "ml.m5.4xlarge"),
])
def test_format_errors_suggest_a_known_name(patch: dict[str, Any], where: str, meant: str | None) -> None:
    """A value of the wrong format in a field of a known list (EC2 and HyperPod types from botocore, Regions, AZ names)
    gets the one suggestion policy's did-you-mean (fmcluster.severity.closest_names)."""
    from tests.blueprints import blueprint_text

    [p] = [p for p in problems_of(blueprint_text(patch)) if p.path == where]
    assert p.message.startswith("invalid format"), p.message
    if meant is None:
        assert "did you mean" not in p.message, p.message
    else:
        assert p.message.endswith(f" - did you mean {meant!r}?"), p.message


# ---- did-you-mean: only what the user plausibly meant (fmcluster.severity.closest_names) ---------------------------
@pytest.mark.parametrize(("value", "allowed", "meant"), [
    ("persistent_2", ["SCRATCH_1", "PERSISTENT_1", "PERSISTENT_2"], ["PERSISTENT_2"]),  # case
    ("PERSISTENT_3", ["SCRATCH_1", "PERSISTENT_1", "PERSISTENT_2"], []),              # another number: no guess
    ("1.20", ["1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"], []),          # a version: the list, never a guess
    ("1.3", ["1.28", "1.30", "1.34"], []),
    ("ubuntu-20.04", ["ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023"], []),
    ("ubuntu-2204", ["ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023"], ["ubuntu-22.04"]),  # same digits
    ("extend", ["budget", "compute", "extends", "name"], ["extends"]),
    ("gpu-2", ["gpu-1", "cpu"], []),
    (3, ["3", "4"], []),                                                               # not text: nothing to spell
])
def test_closest_names(value: object, allowed: list[str], meant: list[str]) -> None:
    from fmcluster.severity import closest_names

    assert closest_names(value, allowed) == meant


@pytest.mark.parametrize(("typo", "meant"), [
    ("p5.4xlarg", "p5.4xlarge"),      # a misspelt size of the family, not its largest
    ("P5.48XLARGE", "p5.48xlarge"),
    ("p3.16xlarge", None),            # no such family, other digits: no guess
    ("p5.8xlarge", None),             # the family lacks the size: other digits, no guess
    ("p6-b200.96xlarge", None),       # nor another family's closer string (p6e-gb200.36xlarge)
    ("p6b300.48xlarge", "p6-b300.48xlarge"),
])
def test_instance_type_suggestion(typo: str, meant: str | None) -> None:
    from fmcluster.catalog.instances import closest_instance_type, known_instance_types

    assert closest_instance_type(typo, known_instance_types()) == meant


@pytest.mark.parametrize(("typo", "meant"), [
    ("us-esat-1", ["us-east-1"]), ("useast1", ["us-east-1"]),
    ("us-east-3", []), ("us-east-9", []), ("ap-south-3", []),  # another number, or another Region's name: no guess
])
def test_region_suggestion(typo: str, meant: list[str]) -> None:
    from fmcluster.catalog.regions import closest_regions

    assert closest_regions(typo) == meant


@pytest.mark.parametrize("version", ['"1.20"', "1.20", '"1.3"'])
def test_kubernetes_version_lists_the_allowed_ones_without_a_guess(version: str) -> None:
    text = (ROOT / "blueprints/hyperpod-eks.yaml").read_text()
    text = re.sub(r"kubernetes_version: .*", f"kubernetes_version: {version}", text)
    [p] = [p for p in problems_of(text) if p.path.endswith("kubernetes_version")]
    assert p.message.endswith("allowed 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, 1.34"), p.message


@pytest.mark.parametrize("real", ["g5.48xlarge", "trn1.32xlarge", "G6E.48XLARGE", "p3.16xlarge"])
def test_a_real_ec2_type_outside_the_catalog_is_named_as_one_without_a_guess(real: str) -> None:
    """g5.48xlarge is an EC2 type (botocore's InstanceType enum), not a misspelt p5.48xlarge: no did-you-mean."""
    text = (ROOT / "blueprints/default.yaml").read_text().replace("instance_type: p5.48xlarge", f"instance_type: {real}")
    [p] = [p for p in problems_of(text) if p.path == "compute[0].instance_type"]
    assert p.message.startswith(f"not an instance type fmcluster builds training clusters of, got {real!r} (an EC2 type "
                                "outside its catalog of P-series GPU instances); allowed p4d.24xlarge, "), p.message
    assert "did you mean" not in p.message


@pytest.mark.parametrize("az_id", ["use1-az6", "use1-dfw2-az1"])
def test_an_az_id_as_availability_zone_names_the_field_it_goes_in(az_id: str) -> None:
    from tests.blueprints import blueprint_text

    [p] = [p for p in problems_of(blueprint_text({"availability_zone": az_id})) if p.path == "availability_zone"]
    assert p.message == (f"invalid format, got {az_id!r}; allowed an Availability Zone name such as us-east-1a - an AZ ID "
                         "goes in availability_zone_id")
