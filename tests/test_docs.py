"""Docs stay true to the code: the blueprint reference is generated from the model."""

from __future__ import annotations

import json

from fmcluster.blueprint.reference import json_schema, markdown_reference
from tests.conftest import ROOT


def test_blueprint_reference_is_up_to_date() -> None:
    assert (ROOT / "docs" / "blueprint.md").read_text() == markdown_reference(), "run: .venv/bin/python tools/gen_docs.py"


def test_json_schema_forbids_unknown_keys_and_requires_the_essentials() -> None:
    schema = json.loads(json_schema())
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"name", "region", "compute"}


def test_readme_shows_the_two_commands_and_every_cli_command() -> None:
    readme = (ROOT / "README.md").read_text()
    from fmcluster.cli import app

    assert "make synth" in readme and "make test" in readme
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__
        assert f"fmcluster {name}" in readme, name
