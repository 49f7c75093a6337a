"""The ``fmcluster`` command (typer + rich).

Commands never print a traceback for bad input: a :class:`BlueprintError` becomes a list of
path-qualified problems and exit code 1.
"""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_with_warnings

# `plan` synthesizes in-process; keep jsii's Node 20 end-of-life banner out of the output.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Cluster blueprints for foundation-model training on AWS.")
# Wide enough for the plan's tables when output goes to a file or CI log (rich assumes 80 there).
out = Console(soft_wrap=True, width=None if Console().is_terminal else 200)
err = Console(stderr=True, soft_wrap=True)


@app.callback()
def _root() -> None:
    """Cluster blueprints for foundation-model training on AWS."""


def _print_problems(e: BlueprintError) -> None:
    err.print(f"[bold red]{escape(e.file)}[/]: {len(e.errors)} error(s)", highlight=False)
    for p in e.problems:
        colour = "red" if p.level == "error" else "yellow"
        err.print(f"  [{colour}]{p.level}[/]: {escape(p.render())}", highlight=False)


def _load_or_exit(file: Path):  # noqa: ANN202
    try:
        result = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        _print_problems(e)
        raise typer.Exit(1) from None
    for w in result.warnings:
        err.print(f"  [yellow]warning[/]: {escape(w.render())}", highlight=False)
    return result.blueprint


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Blueprint YAML files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check blueprints: exit 0 when all are valid, 1 with every problem listed otherwise."""
    failed = False
    report = []
    for f in files:
        try:
            res = load_blueprint_with_warnings(f)
            report.append({"file": str(f), "valid": True, "problems": [w.as_dict() for w in res.warnings]})
            if not as_json:
                out.print(f"[green]ok[/] {escape(str(f))}" + (f" ({len(res.warnings)} warning(s))" if res.warnings else ""),
                          highlight=False)
                for w in res.warnings:
                    err.print(f"  [yellow]warning[/]: {escape(w.render())}", highlight=False)
        except BlueprintError as e:
            failed = True
            report.append({"file": str(f), "valid": False, "problems": [p.as_dict() for p in e.problems]})
            if not as_json:
                _print_problems(e)
    if as_json:
        print(json.dumps(report, indent=2))
    raise typer.Exit(1 if failed else 0)


#: Upper bound of ``plan --checkpoint-gib`` (10 PiB-ish): beyond it the number is a typo.
MAX_CHECKPOINT_GIB = 10_000_000


class OutputFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="text, markdown or json.")] = OutputFormat.text,
    cdk_out: Annotated[Path | None, typer.Option(help=(
        "Count resources in this synthesized cdk.out instead of synthesizing; it must hold this blueprint's "
        "stacks."))] = None,
    checkpoint_gib: Annotated[int | None, typer.Option(
        "--checkpoint-gib", min=1, max=MAX_CHECKPOINT_GIB,
        help=f"Also show the time to write a checkpoint of this many GiB to FSx (1..{MAX_CHECKPOINT_GIB:,}).")] = None,
) -> None:
    """Print the bill of materials: GPUs, EFA, network, storage throughput, software, stacks.

    With --cdk-out DIR, DIR must be a cdk.out synthesized from this blueprint (all its stacks);
    otherwise exit 1.
    """
    from fmcluster.resolved import resolve
    from fmcluster.review.assembly import AssemblyError
    from fmcluster.review.plan import (
        assembly_resource_counts,
        build_plan,
        render_json,
        render_markdown,
        render_rich,
        synth_resource_counts,
    )

    rc = resolve(_load_or_exit(file))
    try:
        counts = assembly_resource_counts(cdk_out, rc) if cdk_out else synth_resource_counts(rc)
    except AssemblyError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    result = build_plan(rc, counts, checkpoint_gib=checkpoint_gib)
    if format is OutputFormat.json:
        print(render_json(result))
    elif format is OutputFormat.markdown:
        print(render_markdown(result))
    else:
        render_rich(result, out)


@app.command()
def schema() -> None:
    """Print the blueprint JSON Schema (for editors and CI)."""
    from fmcluster.blueprint.reference import json_schema

    print(json_schema())


@app.command()
def render(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=(
        "Folder to write DIR/<group>/<file> into: a new or empty folder, or one fmcluster render wrote before "
        "(its earlier files are replaced)."))],
) -> None:
    """Write every rendered node script and config of every compute group for review.

    DIR must be a new or empty folder, or one that fmcluster render wrote before: the files listed
    in its .fmcluster-render.json (the previous render) are removed first, so no stale file remains;
    other files are kept. A non-empty folder without that file, or a path that is not a folder, is
    refused (exit 1).
    """
    from fmcluster.review.render import RenderOutError, render_blueprint, write_rendered

    files = render_blueprint(_load_or_exit(file))
    try:
        written = write_rendered(files, out_dir)
    except RenderOutError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as e:
        where = e.filename or out_dir
        err.print(f"[red]error[/]: {escape(str(where))}: cannot write: {escape(e.strerror or str(e))}", highlight=False)
        raise typer.Exit(1) from None
    for path in written:
        print(path)


# --- commands registered by subsystems (one import + one line each) ---
from fmcluster.preflight.cli import preflight as _preflight  # noqa: E402
from fmcluster.review.diff import register_cli as _register_diff  # noqa: E402

app.command("preflight")(_preflight)
_register_diff(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
