"""Docs stay true to the code: the blueprint reference is generated from the model, the README names every
command and option, docs/software.md lists every software rule and stack."""

from __future__ import annotations

import json

import pytest
import typer.main

from fmcluster.blueprint.reference import json_schema, markdown_reference
from fmcluster.catalog.software import catalog_stacks, get_stack
from fmcluster.cli import app
from fmcluster.validation.rules import REGISTRY, _load_rule_modules
from tests.conftest import ROOT


def test_blueprint_reference_is_up_to_date() -> None:
    assert (ROOT / "docs" / "blueprint.md").read_text() == markdown_reference(), "run: .venv/bin/python tools/gen_docs.py"


def test_json_schema_forbids_unknown_keys_and_requires_the_essentials() -> None:
    schema = json.loads(json_schema())
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"name", "region", "compute"}


def test_readme_shows_the_two_commands_and_every_cli_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make synth" in readme and "make test" in readme
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__
        assert f"fmcluster {name}" in readme, name


# ---- README: the CLI table names every option of every command --------------------------------------
@pytest.mark.parametrize("command", ["validate", "plan", "render", "diff", "preflight", "topology"])
def test_readme_cli_table_names_every_option(command: str) -> None:
    readme = (ROOT / "README.md").read_text()
    [row] = [line for line in readme.splitlines() if line.startswith(f"| `fmcluster {command} ")]
    cli = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    for param in cli.params:
        names = [o for o in param.opts if o.startswith("-")]
        if names and "--help" not in names:
            assert any(n in row for n in names), f"README row of fmcluster {command} misses {names[0]}"


# ---- docs/software.md: every software/environment rule with its level, every catalog stack -------
DOC = (ROOT / "docs" / "software.md").read_text()


#: The rule modules whose rules docs/software.md tables, with their levels.
RULES_SOFTWARE = "fmcluster.features.node.rules_software"
RULES_IMAGE = "fmcluster.features.node.rules_image"
RULES_ENVIRONMENT = "fmcluster.validation.rules.environment"


def test_every_rule_is_documented_with_its_level() -> None:
    _load_rule_modules()
    for r in REGISTRY:
        if r.fn.__module__ in (RULES_SOFTWARE, RULES_ENVIRONMENT, RULES_IMAGE):
            assert f"| {r.id} | {r.level} |" in DOC, r.id
    modules = {r.fn.__module__ for r in REGISTRY}
    assert {RULES_SOFTWARE, RULES_IMAGE, RULES_ENVIRONMENT} <= modules


def test_every_stack_is_documented_with_its_versions() -> None:
    for name in catalog_stacks():  # stacks an organisation file adds are documented from data: fmcluster catalog stacks
        s = get_stack(name)
        row = next(line for line in DOC.splitlines() if line.startswith(f"| `{name}` |"))
        for v in (s.driver, s.cuda, s.nccl, s.efa_installer, s.gdrcopy, s.libfabric, s.aws_ofi_nccl):
            assert f" {v} " in row or f" {v} (" in row, (name, v)
