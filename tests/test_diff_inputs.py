"""``fmcluster diff`` on damaged or foreign inputs: a clear one-line error naming the folder or file, exit 1,
never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fmcluster.review.diff import Assembly, DiffInputError

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
    with pytest.raises(DiffInputError, match=fragment.replace("\"", ".")):
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
    with pytest.raises(DiffInputError, match="not a folder"):
        Assembly.from_dir(tmp_path / "nope")
