"""``fmcluster diff`` on damaged or foreign inputs: a clear one-line error naming the folder or file, exit 1,
never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fmcluster.review.assembly import Assembly, AssemblyError

FIXTURES = Path(__file__).parent / "fixtures" / "diff"


def run(*args: str) -> Any:
    from fmcluster.cli import app

    return CliRunner().invoke(app, ["diff", *args])


def copy_old(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "old", tmp_path / "cdk.out"))


def assert_clean_error(result: Any, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    text = " ".join(result.stderr.split())
    for f in fragments:
        assert f in text, text


@pytest.mark.parametrize(
    ("manifest", "fragment"),
    [
        ("not json", "is not valid JSON"),
        ("{}", "no \"artifacts\" object"),
        ("[1, 2]", "no \"artifacts\" object"),
        ('{"artifacts": {}}', "has no CloudFormation stacks"),
        ('{"artifacts": {"Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}}}}', "has no CloudFormation stacks"),
    ],
)
def test_corrupt_or_empty_manifest_is_a_clear_error(tmp_path: Path, manifest: str, fragment: str) -> None:
    out = copy_old(tmp_path)
    (out / "manifest.json").write_text(manifest)
    with pytest.raises(AssemblyError, match=fragment.replace("\"", ".")):
        Assembly.from_dir(out)
    assert_clean_error(run(str(out), str(FIXTURES / "new")), str(out), fragment)
    assert_clean_error(run(str(FIXTURES / "new"), str(out)), fragment)


def test_missing_template_after_an_interrupted_synth(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    (out / "demo-storage.template.json").unlink()
    assert_clean_error(run(str(out), str(FIXTURES / "new")),
                       f"{out / 'demo-storage.template.json'}: template of stack demo-storage is missing")


def test_corrupt_template(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    (out / "demo-network.template.json").write_text('{"Resources": ')
    assert_clean_error(run(str(out), str(FIXTURES / "new")),
                       f"{out / 'demo-network.template.json'}: the template of stack demo-network is not valid JSON")


def test_stack_without_template_file(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    doc = json.loads((out / "manifest.json").read_text())
    del doc["artifacts"]["demo-network"]["properties"]["templateFile"]
    (out / "manifest.json").write_text(json.dumps(doc))
    assert_clean_error(run(str(out), str(FIXTURES / "new")), "stack demo-network names no templateFile")


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(AssemblyError, match="not a folder"):
        Assembly.from_dir(tmp_path / "nope")


# ---- updates CloudFormation cannot apply ------------------------------------------------------------
def _fs(capacity: Any, **extra: Any) -> dict[str, Any]:
    props = {"FileSystemType": "LUSTRE", "StorageCapacity": capacity, "SubnetIds": ["subnet-1"],
             "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250}}
    props["LustreConfiguration"].update(extra)
    return {"Resources": {"Fs": {"Type": "AWS::FSx::FileSystem", "Properties": props}}}


def _diff(old: dict[str, Any], new: dict[str, Any]) -> Any:
    from fmcluster.review.diff import diff_assemblies

    return diff_assemblies(Assembly.from_templates({"s": old}), Assembly.from_templates({"s": new}))


def test_fsx_capacity_decrease_is_an_update_that_fails() -> None:
    from fmcluster.review.diff import render_markdown, render_text

    r = _diff(_fs(4800), _fs(2400))
    [c] = r.changes
    assert (c.action, c.level, c.causes, r.exit_code) == ("fail", "error", ["StorageCapacity"], 1)
    [p] = c.properties
    assert (p.path, p.old, p.new, p.fails, p.replaces) == ("StorageCapacity", "4800", "2400", True, False)
    assert "managing-storage-capacity.html" in p.source
    text = render_text(r)
    assert "1 error" in text.splitlines()[0]
    assert text.splitlines()[1].split()[:3] == ["ERROR", "UPDATE", "FAILS"]
    assert "StorageCapacity: 4800 -> 2400 [cannot decrease: FSx storage capacity can only be increased" in text
    assert "the stack update fails and rolls back" in text
    assert "| error | UPDATE FAILS | s | `Fs` |" in render_markdown(r)


def test_fsx_capacity_increase_and_decrease_with_replacement_are_fine() -> None:
    up = _diff(_fs(2400), _fs(4800))
    assert (up.changes[0].action, up.exit_code) == ("update", 0)
    # A replacement starts from the new value: the replacement itself is the finding, not the decrease.
    down = _diff(_fs(4800), _fs(2400, DeploymentType="PERSISTENT_1"))
    assert (down.changes[0].action, down.changes[0].causes) == ("replace", ["LustreConfiguration/DeploymentType"])
    # A non-numeric value (a parameter reference) is not judged.
    ref = _diff(_fs(4800), _fs({"Ref": "Capacity"}))
    assert ref.changes[0].action == "update"


def test_non_decreasing_table_is_sourced() -> None:
    from fmcluster.review.diff import NON_DECREASING

    assert "StorageCapacity" in NON_DECREASING["AWS::FSx::FileSystem"]
    assert all("https://docs.aws.amazon.com/" in src for props in NON_DECREASING.values() for src in props.values())


def test_cli_fsx_capacity_decrease_on_blueprints(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load((FIXTURES.parents[2] / "blueprints" / "default.yaml").read_text())
    assert data["storage"]["lustre"]["storage_capacity_gib"] == 4800
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(data, sort_keys=False))
    data["storage"]["lustre"]["storage_capacity_gib"] = 2400
    new.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run(str(old), str(new))
    assert r.exit_code == 1, r.stdout
    assert "1 error" in r.stdout.splitlines()[0]
    assert "StorageCapacity: 4800 -> 2400 [cannot decrease" in r.stdout
