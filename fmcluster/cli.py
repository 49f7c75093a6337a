"""The ``fmcluster`` command (typer + rich).

Every command is declared here, with ``@app.command()``: names, arguments, options and help in
one place. The work is done by the subsystems (imported inside the command, so one command does
not pay for another's imports); what they print goes through :mod:`fmcluster.output`.

Commands never print a traceback for bad input: a :class:`BlueprintError` becomes a list of
path-qualified problems and exit code 1 (2 for preflight, whose 1 means a check failed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from fmcluster.blueprint import Blueprint, BlueprintError
from fmcluster.output import OutputFormat, out, print_error, print_ok, print_problems
from fmcluster.validation import load_blueprint_with_warnings

# `plan` synthesizes in-process; keep jsii's Node 20 end-of-life banner out of the output.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Cluster blueprints for foundation-model training on AWS.")


@app.callback()
def _root() -> None:
    """Cluster blueprints for foundation-model training on AWS."""


def _load_or_exit(file: Path) -> Blueprint:
    """The blueprint, after printing its warnings; its problems and exit 1 when it is invalid."""
    try:
        result = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        print_problems(e.file, e.problems)
        raise typer.Exit(1) from None
    print_problems(str(file), result.warnings)
    return result.blueprint


def _format(format: OutputFormat, as_json: bool) -> OutputFormat:
    return OutputFormat.json if as_json else format


FORMAT_HELP = "text, markdown or json."
JSON_HELP = "Machine-readable output."
JSON_ALIAS_HELP = "Same as --format json."


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Blueprint YAML files.")],
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Check blueprints: exit 0 when all are valid, 1 with every problem listed otherwise."""
    failed = False
    report = []
    for f in files:
        try:
            res = load_blueprint_with_warnings(f)
            report.append({"file": str(f), "valid": True, "problems": [w.as_dict() for w in res.warnings]})
            if not as_json:
                print_ok(str(f), res.warnings)
        except BlueprintError as e:
            failed = True
            report.append({"file": str(f), "valid": False, "problems": [p.as_dict() for p in e.problems]})
            if not as_json:
                print_problems(e.file, e.problems)
    if as_json:
        print(json.dumps(report, indent=2))
    raise typer.Exit(1 if failed else 0)


#: Upper bound of ``plan --checkpoint-gib`` (10 PiB-ish): beyond it the number is a typo.
MAX_CHECKPOINT_GIB = 10_000_000


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help=FORMAT_HELP)] = OutputFormat.text,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_ALIAS_HELP)] = False,
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
        print_error(str(e))
        raise typer.Exit(1) from None
    result = build_plan(rc, counts, checkpoint_gib=checkpoint_gib)
    format = _format(format, as_json)
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
        print_error(str(e))
        raise typer.Exit(1) from None
    except OSError as e:
        print_error(f"{e.filename or out_dir}: cannot write: {e.strerror or e}")
        raise typer.Exit(1) from None
    for path in written:
        print(path)


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="Old blueprint YAML or cdk.out folder.")],
    new: Annotated[Path, typer.Argument(help="New blueprint YAML or cdk.out folder.")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="text, markdown (PR comments) or json.")] = OutputFormat.text,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_ALIAS_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Text: also list stateless in-place updates.")] = False,
    context: Annotated[list[str] | None, typer.Option(
        "--context", "-c", help="CDK context KEY=VALUE for synthesizing blueprints (repeatable).")] = None,
) -> None:
    """Say, for every resource that changes between OLD and NEW, whether CloudFormation updates it in
    place or replaces it. Exit 1 when a stateful resource (FSx, data repository association, S3
    bucket) would be replaced or moved."""
    from fmcluster.review.assembly import AssemblyError
    from fmcluster.review.diff import (
        DiffInputError,
        diff_assemblies,
        load_side,
        parse_context,
        render_json,
        render_markdown,
        render_text,
    )

    try:
        ctx = parse_context(context or [])
        report = diff_assemblies(load_side(old, ctx), load_side(new, ctx))
    except BlueprintError as e:
        print_problems(e.file, e.problems)
        raise typer.Exit(1) from None
    except (AssemblyError, DiffInputError) as e:
        print_error(str(e))
        raise typer.Exit(1) from None
    format = _format(format, as_json)
    if format is OutputFormat.json:
        print(render_json(report))
    elif format is OutputFormat.markdown:
        print(render_markdown(report))
    else:
        print(render_text(report, verbose=verbose))
    raise typer.Exit(report.exit_code)


@app.command()
def preflight(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    region: Annotated[
        str | None, typer.Option(help="AWS Region; must match the blueprint's. Default: the blueprint's.")
    ] = None,
    profile: Annotated[
        str | None, typer.Option(help="AWS profile. Default: the standard credential chain.")
    ] = None,
    until: Annotated[str | None, typer.Option(
        help="YYYY-MM-DD: reservations and training plans must not end before this day (00:00 UTC).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Check the AWS account before deploy: exit 0 all passed, 1 a check failed, 2 could not run."""
    from fmcluster.preflight.cli import run

    raise typer.Exit(run(file, region=region, profile=profile, until=until, as_json=as_json))


image_app = typer.Typer(no_args_is_help=True, help="Images of bake mode (software.image.mode: bake).")
app.add_typer(image_app, name="image")


@image_app.command("lookup")
def image_lookup(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    profile: Annotated[
        str | None, typer.Option(help="AWS profile. Default: the standard credential chain.")
    ] = None,
    context_file: Annotated[Path | None, typer.Option(
        help="CDK context file to update. Default: cdk.context.json next to the nearest cdk.json (or here).")] = None,
) -> None:
    """Find the parent AMIs a bake-mode blueprint needs (ParallelCluster's official AMI) and cache them in
    cdk.context.json; synthesis reads them from there. Exit 0 done, 2 could not run."""
    from botocore.exceptions import BotoCoreError, ClientError

    from fmcluster.output import out, print_error
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight.image_lookup import CONTEXT_FILE, LookupError_, lookups, newest_official_image, write_context
    from fmcluster.resolved import resolve
    from fmcluster.review.diff import find_cdk_json

    bp = _load_or_exit(file)
    needed = lookups(resolve(bp))
    if not needed:
        out.print(f"{file}: nothing to look up (no bake-mode parent AMI without software.image.parent_ami_id)")
        raise typer.Exit(0)
    cdk_json = find_cdk_json(file.resolve().parent, Path.cwd())
    target = context_file or ((cdk_json.parent if cdk_json else Path.cwd()) / CONTEXT_FILE)
    try:
        ec2 = clients_module.make_clients(bp.region, profile).ec2
        found = {lk.context_key: newest_official_image(ec2, lk) for lk in needed}
        write_context(target, found)
    except (clients_module.PreflightCannotRun, LookupError_) as e:
        print_error(str(e), label="image lookup could not run")
        raise typer.Exit(2) from None
    except (BotoCoreError, ClientError) as e:  # denied, throttled, no endpoint: no traceback, exit 2
        print_error(f"{type(e).__name__}: {e}", label="image lookup could not run")
        raise typer.Exit(2) from None
    for key, ami in found.items():
        out.print(f"{key} = {ami}")
    out.print(f"cached in {target}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
