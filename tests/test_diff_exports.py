"""``fmcluster diff`` and cross-stack exports (issue 12 item 5).

CloudFormation cannot modify or remove an export that another stack imports
(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-importvalue.html),
so a change that replaces a resource whose value another stack imports fails on update. Pairs:
add a tag (no longer replaces anything), change a placement-group setting, change the GPU subnet, rename a
compute group; plus the engine on small templates and the guard that blueprint tags stay off every
resource type whose Tags are create-only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from fmcluster.review.assembly import Assembly
from fmcluster.review.diff import EXPORT_TYPE, DiffReport, diff_assemblies, importers, render_text
from fmcluster.stacks.build import REPLACE_ON_TAG_CHANGE
from fmcluster.validation import load_blueprint_text
from tests.conftest import EXAMPLES, ROOT, synth_templates

DEFAULT = yaml.safe_load((ROOT / "blueprints" / "default.yaml").read_text())
PATH_METADATA = (("aws:cdk:enable-path-metadata", True),)
NETWORK, STORAGE, CLUSTER = "llm-train-network", "llm-train-storage", "llm-train-cluster"


def assembly(data: dict[str, Any]) -> Assembly:
    text = yaml.safe_dump(data, sort_keys=False)
    bp = load_blueprint_text(text).blueprint
    return Assembly.from_templates(synth_templates(text, PATH_METADATA), bp.region, source=bp.name)


def diff_to(mutate: Callable[[dict[str, Any]], None]) -> DiffReport:
    data = copy.deepcopy(DEFAULT)
    mutate(data)
    return diff_assemblies(assembly(DEFAULT), assembly(data))


def export_errors(report: DiffReport) -> dict[str, list[str]]:
    """Output logical id -> importing stacks named in the note, for every export error."""
    out = {}
    for c in report.changes:
        if c.type == EXPORT_TYPE:
            assert (c.action, c.level) == ("fail", "error")
            out[c.logical_id] = c.note.split("stack(s) ", 1)[1].split(" import it", 1)[0].split(", ")
    return out


# ---- blueprint change pairs -----------------------------------------------------------------
def test_add_a_tag_replaces_nothing_and_is_safe() -> None:
    r = diff_to(lambda d: d["tags"].update(owner="ml-infra"))
    assert r.exit_code == 0
    assert [c for c in r.changes if c.action in ("replace", "may-replace", "fail")] == []
    assert r.of_type("AWS::EC2::PlacementGroup") == []  # blueprint tags are not on placement groups
    assert "safe" in render_text(r).splitlines()[0]


def test_turn_off_a_placement_group_fails_on_the_imported_export() -> None:
    r = diff_to(lambda d: d["compute"][0].update(placement_group=False))
    assert r.exit_code == 1
    errors = export_errors(r)
    [(lid, who)] = errors.items()
    assert "PlacementGroupsgpu" in lid and who == [CLUSTER]
    [c] = [c for c in r.changes if c.type == EXPORT_TYPE]
    assert c.stack == NETWORK and c.properties[0].new == "(absent)"
    assert f"import it: CloudFormation cannot modify or remove an export in use, so the {NETWORK} update fails" in c.note
    assert "ExportsOutputFnGetAttNetworkPlacementGroupsgpu" in c.note  # the export is named


def test_rename_a_compute_group_replaces_its_placement_group_and_fails() -> None:
    r = diff_to(lambda d: d["compute"][0].update(name="train"))
    assert r.exit_code == 1
    assert any("PlacementGroupsgpu" in lid and who == [CLUSTER] for lid, who in export_errors(r).items())


def test_change_the_gpu_subnet_fails_on_every_import_of_the_subnet() -> None:
    r = diff_to(lambda d: d.setdefault("network", {}).update(gpu_subnet_prefix_length=22))
    assert r.exit_code == 1
    [subnet] = [c for c in r.changes if c.type == EXPORT_TYPE and "GpuSubnet" in c.logical_id]
    assert subnet.stack == NETWORK
    assert f"stack(s) {CLUSTER}, {STORAGE} import it" in subnet.note
    assert subnet.properties[0].new.endswith("(new)>")  # the subnet is replaced, so its id changes
    text = render_text(r)
    assert "UPDATE FAILS" in text and subnet.logical_id in text


def test_scale_out_leaves_every_export_alone() -> None:
    r = diff_to(lambda d: d["compute"][0].update(count=8))
    assert r.exit_code == 0
    assert export_errors(r) == {}


# ---- the engine on small templates ------------------------------------------------------------
def _pair(new_value: Any, *, imported: bool = True, keep_output: bool = True) -> DiffReport:
    def templates(value: Any, output: bool) -> dict[str, dict[str, Any]]:
        producer: dict[str, Any] = {"Resources": {"Pg": {"Type": "AWS::EC2::PlacementGroup",
                                                         "Properties": {"Strategy": value}}}}
        if output:
            producer["Outputs"] = {"PgName": {"Value": {"Ref": "Pg"}, "Export": {"Name": "p:PgName"}}}
        user = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {
            "TopicName": {"Fn::ImportValue": "p:PgName"} if imported else "fixed"}}}}
        return {"p": producer, "c": user}

    old = Assembly.from_templates(templates("cluster", True))
    new = Assembly.from_templates(templates(new_value, keep_output))
    return diff_assemblies(old, new)


def test_replaced_exported_resource_is_an_error_naming_export_and_importer() -> None:
    r = _pair("spread")
    [c] = [c for c in r.changes if c.type == EXPORT_TYPE]
    assert (c.stack, c.logical_id, c.action, c.level) == ("p", "PgName", "fail", "error")
    assert "export p:PgName changes but stack(s) c import it" in c.note
    assert r.exit_code == 1


def test_unimported_export_may_change() -> None:
    assert [c for c in _pair("spread", imported=False).changes if c.type == EXPORT_TYPE] == []


def test_removed_imported_export_is_an_error() -> None:
    [c] = [c for c in _pair("cluster", keep_output=False).changes if c.type == EXPORT_TYPE]
    assert "export p:PgName is removed" in c.note


def test_importers_of_the_default_blueprint() -> None:
    used = importers(assembly(DEFAULT))
    subnet = next(k for k in used if "GpuSubnet" in k)
    assert used[subnet] == [CLUSTER, STORAGE]


# ---- the kind: no blueprint tag on a resource whose Tags are create-only ----------------------------
def _tags_create_only(type_: str) -> bool:
    try:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_).schema
    except Exception:  # noqa: BLE001 - custom resources and unknown types have no schema
        return False
    return "/properties/Tags" in (schema.get("createOnlyProperties") or [])


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_no_blueprint_tag_on_replace_on_tag_types(example: Any) -> None:
    text = example.read_text()
    bp = load_blueprint_text(text).blueprint
    for name, tpl in synth_templates(text).items():
        for lid, res in tpl.get("Resources", {}).items():
            if not _tags_create_only(res["Type"]):
                continue
            assert res["Type"] in REPLACE_ON_TAG_CHANGE, f"{name}/{lid}: {res['Type']} has create-only Tags"
            keys = {t["Key"] for t in res.get("Properties", {}).get("Tags", [])}
            assert not keys & set(bp.tags), f"{name}/{lid} carries blueprint tags {sorted(keys & set(bp.tags))}"
