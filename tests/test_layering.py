"""One-way data flow: lower layers never import upper ones (ARCHITECTURE.md "Data flows one way")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "fmcluster"
FORBIDDEN = {
    "blueprint": ("fmcluster.constructs", "fmcluster.stacks", "fmcluster.templates", "fmcluster.review", "fmcluster.cli",
                  "fmcluster.output"),
    "catalog": ("fmcluster.blueprint", "fmcluster.constructs", "fmcluster.stacks", "fmcluster.templates", "fmcluster.review",
                "fmcluster.output"),
    "templates": ("fmcluster.constructs", "fmcluster.stacks", "fmcluster.review", "fmcluster.cli", "aws_cdk", "fmcluster.output"),
    "constructs": ("fmcluster.stacks", "fmcluster.review", "fmcluster.cli", "fmcluster.validation.loader", "fmcluster.output"),
}


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_does_not_import_upper_layers(layer: str) -> None:
    bad = {
        f"{p.relative_to(PKG)}: {name}"
        for p in (PKG / layer).rglob("*.py")
        for name in imports(p)
        if name.startswith(FORBIDDEN[layer])
    }
    assert not bad


def test_constructs_never_receive_the_whole_blueprint() -> None:
    offenders = [str(p.relative_to(PKG)) for p in (PKG / "constructs").rglob("*.py")
                 if "import Blueprint" in p.read_text() or ", Blueprint" in p.read_text()]
    assert offenders == []


def test_severity_imports_nothing_from_fmcluster() -> None:
    """Every layer may use the severity words, so they depend on nothing."""
    assert not {n for n in imports(PKG / "severity.py") if n.startswith("fmcluster")}
