"""``fmcluster render FILE --out DIR``: write every rendered node script of every compute group
for review (DIR/<group>/bootstrap.sh, fmcluster-node-check, job-env.sh, versions.txt).

A bad blueprint prints the same path-qualified problem list as ``fmcluster validate`` and exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fmcluster.blueprint import Blueprint, BlueprintError, load_blueprint_with_warnings
from fmcluster.templates.context import node_context
from fmcluster.templates.node_scripts import render_node_scripts


def render_blueprint(bp: Blueprint) -> dict[str, dict[str, str]]:
    """``{group name: {file name: text}}`` for every compute group of a validated blueprint."""
    out: dict[str, dict[str, str]] = {}
    for group in bp.compute:
        ctx = node_context(
            blueprint_name=bp.name,
            orchestrator=bp.orchestrator.kind,
            group=group,
            software=bp.software,
            lustre=bp.storage.lustre,
        )
        files = render_node_scripts(ctx)
        versions = "".join(f"{k}: {v if v is not None else 'unknown'}\n" for k, v in ctx.versions.items())
        files["versions.txt"] = (
            f"# resolved versions for {bp.name}/{group.name} ({ctx.instance_type}, {ctx.os}), stack {ctx.stack_name}\n"
            f"{versions}kernel_modules: {ctx.kernel_modules}\n"
        )
        out[group.name] = files
    return out


def render_command(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write DIR/<group>/<file> into.")],
) -> None:
    """Write every rendered node script and config of every compute group for review."""
    from fmcluster.cli import _print_problems, err  # late import: fmcluster.cli imports this module

    try:
        result = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        _print_problems(e)
        raise typer.Exit(1) from None
    for w in result.warnings:
        err.print(f"  [yellow]warning[/]: {w.render()}", highlight=False)
    for group, files in render_blueprint(result.blueprint).items():
        for name, text in files.items():
            path = out / group / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name in ("bootstrap.sh", "fmcluster-node-check"):
                path.chmod(0o755)
            print(path)
