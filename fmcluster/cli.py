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
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup, TyperOption

from fmcluster.acceptance.judge import MEDIAN_FRACTION
from fmcluster.blueprint import Blueprint, BlueprintError
from fmcluster.blueprint.errors import NOT_GIVEN, Problem
from fmcluster.output import OutputFormat, json_envelope, out, print_error, print_ok, print_problems
from fmcluster.validation import load_blueprint_with_warnings

# `plan` synthesizes in-process; keep jsii's Node 20 end-of-life banner out of the output.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def json_requested(argv: list[str]) -> bool:
    """Whether a command line asks for machine-readable output: ``--json``, ``--format json``, ``-f json``,
    ``--format=json`` or ``-fjson`` before any ``--``."""
    args = argv[:argv.index("--")] if "--" in argv else argv
    pairs = zip(args, [*args[1:], ""], strict=True)
    return "--json" in args or any(a in ("--format=json", "-fjson") or a in ("--format", "-f") and b == "json"
                                   for a, b in pairs)


def _command_words(group: Any, argv: list[str]) -> str:
    """The command a command line names (``validate``, ``image lookup``), for the JSON envelope of its usage error;
    ``fmcluster`` when it names none. Root options with a value (``--org FILE``) are skipped."""
    words, _, _ = _command_path(group, argv)
    return " ".join(words) or "fmcluster"


def _command_path(group: Any, argv: list[str]) -> tuple[list[str], Any, list[str]]:
    """The words of the command a command line names, that command (``group`` when it names none) and the arguments
    after its name. Root options with a value (``--org FILE``) are skipped."""
    words: list[str] = []
    skip = False
    command, after = group, 0
    for i, arg in enumerate(argv):
        if skip or arg == "--":
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg == "--org"
            continue
        sub = command.commands.get(arg) if isinstance(command, TyperGroup) else None
        if sub is None:
            break
        words.append(arg)
        command, after = sub, i + 1
    return words, command, argv[after:] if words else []


def _help_requested(ctx: typer.Context) -> bool:
    """This run prints a help page and exits 0 once the command line is parsed: the command it names has a help option
    (``--help``) before any ``--``, or is a group given nothing (``fmcluster image``: its help). The root's callback
    runs before the named command's options are parsed (click ``Group.invoke``: the group callback, then
    ``cmd.make_context``, which handles ``--help``), so it must not refuse anything then."""
    _, command, rest = _command_path(_Group._root or ctx.command, _Group._argv)
    options = rest[:rest.index("--")] if "--" in rest else rest
    if any(a in ctx.help_option_names for a in options):
        return True
    return isinstance(command, TyperGroup) and command is not (_Group._root or ctx.command) and not rest \
        and bool(command.no_args_is_help)


def _usage_envelope(command: str, e: ClickException) -> str:
    """The JSON envelope of a usage error (a missing argument, an unknown option, a refused path): ``ok: false``, one
    problem (``rule_id: usage``, ``file`` the refused path or null), ``result: null``."""
    file = getattr(e, "file", None)
    problem = Problem("", e.format_message(), rule_id="usage", file=file, value=getattr(e, "value", NOT_GIVEN))
    return json_envelope(command, ok=False, problems=[(file, problem)], result=None)


class _Group(TyperGroup):
    """The command group: with ``--json`` (or ``--format json``), a usage error also prints the JSON envelope on
    standard output, as a validation failure does (its message and exit code 2 are typer's, on standard error)."""

    #: The command line of this run and its root group (set when the root's context is made).
    _argv: list[str] = []
    _root: TyperGroup | None = None

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        if parent is None:
            _Group._argv, _Group._root = list(args), self
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except ClickException as e:
            self._envelope(e)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ClickException as e:
            self._envelope(e)
            raise

    def _envelope(self, e: ClickException) -> None:
        if isinstance(e, NoArgsIsHelpError) or getattr(e, "fmcluster_envelope", False) or not json_requested(_Group._argv):
            return
        e.fmcluster_envelope = True  # type: ignore[attr-defined]  # printed once, by the innermost group
        print(_usage_envelope(_command_words(_Group._root or self, _Group._argv), e))


app = typer.Typer(cls=_Group, no_args_is_help=True, add_completion=False,
                  help="Cluster blueprints for foundation-model training on AWS.")

_option_type = TyperOption.display_type_rich


def _flag_has_no_type(self: TyperOption, ctx: Any) -> str | None:
    """A flag takes no value: its help row shows no type (typer 0.29 shows ``<bool>`` after ``--json``/``--help``, as
    if they took one; ``typer/core.py`` ``TyperOption.display_type_rich``). Every other option keeps its type."""
    return None if self.is_flag else _option_type(self, ctx)


TyperOption.display_type_rich = _flag_has_no_type  # type: ignore[method-assign]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("fmcluster")
        except PackageNotFoundError:  # running from a source tree that was never pip-installed
            v = "unknown (not installed)"
        print(f"fmcluster {v}")
        raise typer.Exit(0)


def _not_blank(option: str) -> Any:
    """A typer callback refusing an empty or blank value of ``option`` (exit 2): ``--out ""`` would write into the
    current folder, ``--out " "`` make a folder named by a space, ``--org ""`` silently mean no organisation file."""
    def check(value: Any) -> Any:
        if value is not None and not str(value).strip():
            raise typer.BadParameter(f"{option} is blank, got {str(value)!r}; allowed a path"
                                     + (" or 'none' for no organisation file" if option == "--org" else ""))
        return value
    return check


class PathRefused(typer.BadParameter):
    """A path argument or option refused before anything is read (exit 2); ``file`` and ``value`` for the JSON
    envelope (:func:`_usage_envelope`)."""

    def __init__(self, message: str, value: str) -> None:
        super().__init__(message)
        self.file = value or None
        self.value = value


def _blueprint_path(value: Path) -> None:
    """Refuse (typer.BadParameter: exit 2, could not run) a blueprint argument that is blank (which would read the
    current folder), missing or a folder: nothing was read, so nothing is judged."""
    _existing_file(value, "a blueprint YAML file")


def _existing_file(value: Path, allowed: str) -> None:
    """Refuse (:class:`PathRefused`) a path that is blank, missing, a folder or unusable (a name too long), or JSON text
    given where a path is expected (``--nodes '{"i-1": "n1"}'``); ``allowed`` says what the path must name."""
    text = str(value)
    if not text.strip():
        raise PathRefused(f"the path is blank, got {text!r}; allowed {allowed}", text)
    kind = _path_kind(value)
    if kind is None and _is_json_text(text):
        raise PathRefused(f"text, not a path, got {text!r}; allowed the path of {allowed} (write the text to a file)", text)
    if kind is None:
        raise PathRefused(f"no such file, got {text!r}; allowed {allowed}", text)
    if kind == "folder":
        blank = " (an empty argument reads as the current folder)" if text == "." else ""
        raise PathRefused(f"a folder, got {text!r}{blank}; allowed {allowed}", text)
    if kind != "file":
        raise PathRefused(f"{kind}, got {text!r}; allowed {allowed}", text)


def _path_kind(value: Path) -> str | None:
    """``file`` (or anything else that is not a folder: a device, a pipe), ``folder``, ``None`` when nothing is there
    (a dangling link too), or why the path cannot be used (a name too long): the system's words."""
    try:
        return "folder" if value.is_dir() else "file" if value.exists() else None
    except OSError as e:  # ENAMETOOLONG, EACCES on a parent: Path.exists() only hides ENOENT and a few others
        return f"cannot use the path ({e.strerror or e.__class__.__name__})"


def _is_json_text(text: str) -> bool:
    """``text`` is a JSON object or list (``'{"i-1": "n1"}'``): given where a path was expected."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def _input_file(allowed: str) -> Any:
    """A typer callback of a file option or argument (:func:`_existing_file`); ``None`` passes (option not given)."""
    def check(value: Path | None) -> Path | None:
        if value is not None:
            _existing_file(value, allowed)
        return value
    return check


def _input_error(command: str | None, message: str, code: int, problems: list[tuple[str | None, Problem]] | None = None,
                 file: str | None = None) -> typer.Exit:
    """Print an input error that is not a blueprint problem (``print_error``), and with ``command`` (the command's
    ``--json``) the JSON envelope: the problems given, then the error (``rule_id: input``); the exit to raise."""
    print_error(message)
    if command:
        found = [*(problems or []), (file, Problem("", message, rule_id="input", file=file))]
        print(json_envelope(command, ok=False, problems=found, result=None))
    return typer.Exit(code)


def _diff_side(value: Path) -> Path:
    """Typer callback of a side of ``diff``: a blueprint file or a cdk.out folder that exists (exit 2 otherwise)."""
    text = str(value)
    if not text.strip():
        raise PathRefused(f"the path is blank, got {text!r}; allowed a blueprint YAML file or a cdk.out folder", text)
    kind = _path_kind(value)
    if kind not in ("file", "folder"):
        what = "no such file or folder" if kind is None else kind
        raise PathRefused(f"{what}, got {text!r}; allowed a blueprint YAML file or a cdk.out folder", text)
    return value


def _blueprint_file(value: Path) -> Path:
    """Typer callback of a FILE argument: :func:`_blueprint_path`."""
    _blueprint_path(value)
    return value


def _blueprint_files(values: list[Path]) -> list[Path]:
    """Typer callback of a FILE... argument: :func:`_blueprint_path` for each."""
    for value in values:
        _blueprint_path(value)
    return values


@app.callback()
def _root(
    ctx: typer.Context,
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the fmcluster version and exit.")] = False,
    org: Annotated[str | None, typer.Option(
        "--org", callback=_not_blank("--org"),
        help="Organisation file for every blueprint of this run (default: $FMCLUSTER_ORG, else "
             "fmcluster.org.yaml beside each blueprint; 'none': no organisation file).")] = None,
) -> None:
    """Cluster blueprints for foundation-model training on AWS."""
    from fmcluster.validation.organisation import use_organisation

    if not _help_requested(ctx):  # help always prints (exit 0), whatever $FMCLUSTER_ORG names
        _org_file_usable(org, ctx.invoked_subcommand)
    use_organisation(org)


#: Commands that read no blueprint and no organisation file: a ``$FMCLUSTER_ORG`` left set in the shell is not
#: theirs to judge (``--org`` given with them on the command line still is).
_NO_ORG_COMMANDS = frozenset({"schema", "acceptance", "topology"})


def _org_file_usable(option: str | None, command: str | None) -> None:
    """Refuse (:class:`PathRefused`, exit 2: could not run) an organisation file named by ``--org`` or, without it,
    ``$FMCLUSTER_ORG`` (unless ``command`` is one of :data:`_NO_ORG_COMMANDS`) that is missing, a folder or
    unusable: a missing input, as a missing blueprint is, and the message names the file and where it was named.
    ``none``, and a blank ``FMCLUSTER_ORG`` (treated as unset, :func:`fmcluster.validation.organisation.org_from_env`),
    pass."""
    from fmcluster.validation.organisation import ORG_ENV, org_from_env

    named, where = (option, "--org") if option is not None else (org_from_env(), ORG_ENV)
    if named is None or named.strip().lower() == "none" or (option is None and command in _NO_ORG_COMMANDS):
        return
    try:
        _existing_file(Path(named), "an organisation file (fmcluster.org.yaml), or none")
    except PathRefused as e:
        e.param_hint = where  # "Invalid value for 'FMCLUSTER_ORG': ..."
        raise


def _load_or_exit(file: Path, *, json_command: str | None = None) -> tuple[Blueprint, list[Problem]]:
    """The blueprint and its warnings, after printing the warnings; its problems and exit 1 when it is invalid. With
    ``json_command`` (the command's ``--json``) an invalid blueprint also prints the JSON envelope
    (:func:`fmcluster.output.json_envelope`, ``ok: false``, ``result: null``) on standard output, so
    machine-readable callers get JSON either way."""
    try:
        result = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        print_problems(e.file, e.problems)
        if json_command:
            print(json_envelope(json_command, ok=False, problems=[(str(file), p) for p in e.problems], result=None))
        raise typer.Exit(1) from None
    print_problems(str(file), result.warnings)
    return result.blueprint, list(result.warnings)


def _format(format: OutputFormat, as_json: bool) -> OutputFormat:
    return OutputFormat.json if as_json else format


FORMAT_HELP = "text, markdown or json."
JSON_HELP = "Machine-readable output."
JSON_ALIAS_HELP = "Same as --format json."


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Blueprint YAML files.", callback=_blueprint_files)],
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Check blueprints: exit 0 when all are valid, 1 with every problem listed otherwise."""
    results: list[dict[str, Any]] = []
    problems: list[tuple[str, Problem]] = []
    for f in files:
        try:
            res = load_blueprint_with_warnings(f)
            found, valid = list(res.warnings), True
            if not as_json:
                print_ok(str(f), res.warnings)
        except BlueprintError as e:
            found, valid = e.problems, False
            if not as_json:
                print_problems(e.file, e.problems)
        results.append({"file": str(f), "valid": valid})
        problems += [(str(f), p) for p in found]
    ok = all(r["valid"] for r in results)
    if as_json:
        print(json_envelope("validate", ok=ok, problems=problems, result=results))
    raise typer.Exit(0 if ok else 1)


#: Upper bound of ``plan --checkpoint-gib`` (10 PiB-ish): beyond it the number is a typo.
MAX_CHECKPOINT_GIB = 10_000_000


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.", callback=_blueprint_file)],
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
    otherwise exit 2 (could not run).
    """
    from fmcluster.resolved import resolve
    from fmcluster.review.assembly import AssemblyError
    from fmcluster.review.plan import (
        assembly_resource_counts,
        build_plan,
        render_markdown,
        render_rich,
        synth_resource_counts,
    )
    from fmcluster.review.synth import SynthesisError, project_context

    format = _format(format, as_json)
    json_command = "plan" if format is OutputFormat.json else None
    bp, warnings = _load_or_exit(file, json_command=json_command)
    rc = resolve(bp)
    try:
        counts = (assembly_resource_counts(cdk_out, rc) if cdk_out
                  else synth_resource_counts(rc, project_context(file), source=str(file)))
    except AssemblyError as e:  # --cdk-out is not this blueprint's assembly: could not run
        raise _input_error(json_command, str(e), 2, [(str(file), p) for p in warnings], file=str(cdk_out)) from None
    except SynthesisError as e:  # a synthesis error annotation: cdk synth refuses it too (the blueprint is wrong)
        print_error(str(e))
        if json_command:
            problems = [(str(file), p) for p in [*warnings, Problem("", str(e), rule_id="synth")]]
            print(json_envelope(json_command, ok=False, problems=problems, result=None))
        raise typer.Exit(1) from None
    result = build_plan(rc, counts, checkpoint_gib=checkpoint_gib)
    if format is OutputFormat.json:
        print(json_envelope("plan", ok=True, problems=[(str(file), p) for p in warnings], result=result.as_dict()))
    elif format is OutputFormat.markdown:
        print(render_markdown(result))
    else:
        render_rich(result, out)


@app.command()
def schema(
    org: Annotated[bool, typer.Option("--org", help="The organisation file's schema (fmcluster.org.yaml) instead.")] = False,
) -> None:
    """Print the blueprint JSON Schema (for editors and CI), or with --org the organisation file's."""
    if org:
        from fmcluster.validation.organisation import org_json_schema

        print(json.dumps(org_json_schema(), indent=2))
        return
    from fmcluster.validation.organisation import blueprint_file_schema

    print(json.dumps(blueprint_file_schema(), indent=2, sort_keys=True))


@app.command()
def render(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.", callback=_blueprint_file)],
    out: Annotated[str, typer.Option("--out", "-o", callback=_not_blank("--out"), help=(
        "Folder to write DIR/<group>/<file> into: a new or empty folder, or one fmcluster render wrote before "
        "(its earlier files are replaced)."))],
) -> None:
    """Write every rendered node script and config of every compute group for review.

    DIR must be a new or empty folder, or one that fmcluster render wrote before: the files listed
    in its .fmcluster-render.json (the previous render) are removed first, so no stale file remains;
    other files are kept. A non-empty folder without that file, or a path that is not a folder, is
    refused (exit 2: could not run; exit 1 is an invalid blueprint).
    """
    from fmcluster.review.render import RenderOutError, render_blueprint, write_rendered

    out_dir = Path(out)
    files = render_blueprint(_load_or_exit(file)[0])
    try:
        written = write_rendered(files, out_dir)
    except RenderOutError as e:
        print_error(str(e))
        raise typer.Exit(2) from None
    except OSError as e:
        print_error(f"{e.filename or out_dir}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    for path in written:
        print(path)


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="Old blueprint YAML or cdk.out folder.", callback=_diff_side)],
    new: Annotated[Path, typer.Argument(help="New blueprint YAML or cdk.out folder.", callback=_diff_side)],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="text, markdown (PR comments) or json.")] = OutputFormat.text,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_ALIAS_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Text: also list stateless in-place updates.")] = False,
    context: Annotated[list[str] | None, typer.Option(
        "--context", "-c", help="CDK context KEY=VALUE for synthesizing blueprints (repeatable).")] = None,
    old_label: Annotated[str | None, typer.Option(
        help="Name OLD by this in the report (e.g. its repository path blueprints/x.yaml@main); default: OLD as given.")] = None,
    new_label: Annotated[str | None, typer.Option(
        help="Name NEW by this in the report; default: NEW as given.")] = None,
    boot_from: Annotated[Path | None, typer.Option(callback=_input_file("a blueprint YAML file"),
        help="The blueprint whose plan gives each node group's boot estimate in the job impact; default: NEW when "
             "it is a blueprint (a cdk.out folder has no plan).")] = None,
) -> None:
    """Say, for every resource that changes between OLD and NEW, whether CloudFormation updates it in
    place or replaces it. Exit 0 when the change is safe, 1 when a stateful resource (FSx, data
    repository association, S3 bucket) would be replaced or moved or an update cannot apply, 2 for bad
    input (an invalid blueprint, one whose synthesis has errors, a folder that is not a cloud assembly, a bad
    option)."""
    from fmcluster.review.assembly import AssemblyError
    from fmcluster.review.diff import (
        DIFF_INPUT_ERROR,
        DiffInputError,
        diff_assemblies,
        load_sides,
        parse_context,
        relabel,
        render_markdown,
        render_text,
    )
    from fmcluster.review.synth import SynthesisError

    format = _format(format, as_json)
    json_command = "diff" if format is OutputFormat.json else None
    try:
        ctx = parse_context(context or [])
        sides = load_sides(old, new, ctx)
        report = diff_assemblies(*sides)
    except BlueprintError as e:
        print_problems(e.file, e.problems)
        if json_command:
            print(json_envelope("diff", ok=False, problems=[(e.file, p) for p in e.problems], result=None))
        raise typer.Exit(DIFF_INPUT_ERROR) from None
    except (AssemblyError, DiffInputError, SynthesisError) as e:
        # the side the message is about (each names its folder or file first), for the JSON problem's file
        about = next((str(p) for p in (new, old) if str(e).startswith(f"{p}:")), None)
        raise _input_error(json_command, str(e), DIFF_INPUT_ERROR, file=about) from None
    report = relabel(report, old_label or str(old), new_label or str(new))
    # each blueprint's own warnings, as every command prints them (the same file on both sides once)
    warned = [(str(path), list(side.warnings)) for path, side in ((old, sides[0]), (new, sides[1]))
              if side.warnings and not (path is new and sides[1] is sides[0])]
    for path_text, warnings in warned:
        print_problems(path_text, warnings)
    from fmcluster.review.cost import blueprint_cost, cost_delta

    org_ctx = ctx.get("org") if isinstance(ctx.get("org"), str) else None
    if old.is_file() or new.is_file():  # two cdk.out folders carry no blueprint to price
        report.cost = cost_delta(*(blueprint_cost(str(p), org_ctx) if p.is_file() else None for p in (old, new)))
    plan_source = boot_from or (new if new.is_file() else None)  # the nodes that boot are NEW's
    if plan_source is not None:
        from fmcluster.review.impact import blueprint_boot_s, with_boot

        try:
            report.impact = with_boot(report.impact, blueprint_boot_s(str(plan_source), org_ctx))
        except BlueprintError as e:
            print_problems(e.file, e.problems)
            if json_command:
                print(json_envelope("diff", ok=False, problems=[(e.file, p) for p in e.problems], result=None))
            raise typer.Exit(DIFF_INPUT_ERROR) from None
    if format is OutputFormat.json:
        print(json_envelope("diff", ok=report.exit_code == 0, problems=[
            *((path_text, w) for path_text, warnings in warned for w in warnings),
            *((report.new, p) for p in report.problems())], result=report.as_dict()))
    elif format is OutputFormat.markdown:
        print(render_markdown(report))
    else:
        print(render_text(report, verbose=verbose))
    raise typer.Exit(report.exit_code)


class CatalogAction(StrEnum):
    """What ``fmcluster catalog`` does."""

    stacks = "stacks"
    refresh_prices = "refresh-prices"


@app.command()
def catalog(
    action: Annotated[CatalogAction, typer.Argument(help=(
        "stacks: the software-stack table (catalog + organisation); refresh-prices: update the EC2 prices of the "
        "price table from the AWS Price List API."))],
    price_file: Annotated[Path | None, typer.Option(callback=_input_file("a price table YAML file"),
        help="refresh-prices: the price table to rewrite. Default: the installed catalog's prices.yaml.")] = None,
    profile: Annotated[str | None, typer.Option(help="refresh-prices: AWS profile. Default: the standard chain.")] = None,
) -> None:
    """Catalog data. ``stacks`` prints every known software stack as a markdown table, including the stacks of the
    organisation file (``fmcluster --org FILE catalog stacks``); exit 1 for a bad organisation file.
    ``refresh-prices`` asks the AWS Price List API (needs credentials and network) for the EC2 On-Demand prices of
    the table and rewrites them with today's date; exit 2 when the API cannot be asked."""
    if action is CatalogAction.refresh_prices:
        _refresh_prices(price_file, profile)
        return
    from fmcluster.review.catalog_docs import stacks_markdown
    from fmcluster.validation.organisation import find_organisation, load_organisation

    org = find_organisation(None)
    if org is not None:
        try:
            _, warnings = load_organisation(org)
        except BlueprintError as e:
            print_problems(e.file, e.problems)
            raise typer.Exit(1) from None
        print_problems("", warnings)  # warnings only, no header: each names the organisation file
    print(stacks_markdown())


def _refresh_prices(price_file: Path | None, profile: str | None) -> None:
    import boto3
    from botocore.exceptions import BotoCoreError

    from fmcluster.catalog import prices
    from fmcluster.catalog.instances import known_instance_types
    from fmcluster.catalog.refresh import PRICING_ENDPOINT_REGION, RefreshError, refresh

    path = price_file or prices.data_file()
    try:
        client = boto3.Session(profile_name=profile).client("pricing", region_name=PRICING_ENDPOINT_REGION)
        counts = refresh(path, client, instance_types=known_instance_types())
    except (RefreshError, BotoCoreError, OSError) as e:
        print_error(f"refresh-prices: {e}")
        raise typer.Exit(2) from None
    prices.reload()
    print(f"{path}: {counts['priced']} prices refreshed, {counts['unknown']} not in the Price List (unknown); "
          f"table date {prices.table_date() if price_file is None else 'updated'}")


@app.command()
def preflight(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.", callback=_blueprint_file)],
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


# ---- fleet acceptance gate (docs/acceptance.md) -----------------------------------------------------
class AcceptanceAction(StrEnum):
    judge = "judge"
    plan = "plan"


@app.command()
def acceptance(
    action: Annotated[AcceptanceAction, typer.Argument(help="judge: judge a results folder; plan: print the pairing rounds.")],
    nodes: Annotated[list[str] | None, typer.Argument(help="plan: the Slurm node names.", show_default=False)] = None,
    results: Annotated[Path | None, typer.Option("--results", help=(
        "judge: folder of nccl-tests all_reduce_perf outputs, one per pair and round (r<round>_<node>_<node>.log, "
        "or any *.log/*.out/*.txt with the hosts in its rank lines)."))] = None,
    instance_type: Annotated[str | None, typer.Option(
        "--instance-type", help="judge: instance type of the nodes (p5.48xlarge; ml. accepted).")] = None,
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help=FORMAT_HELP)] = OutputFormat.text,
    median_fraction: Annotated[float, typer.Option(
        "--median-fraction", min=0.01, max=0.99,
        help="judge: a pair more than this fraction below the median of the pairs without a node is low for that "
        "node (leave-one-out; 0.01..0.99).")] = MEDIAN_FRACTION,
    hostnames: Annotated[Path | None, typer.Option(
        "--hostnames", callback=_input_file("a file of '<node> <hostname>' lines"),
        help="judge: '<node> <hostname>' lines, when hosts print names other than their Slurm node names.")] = None,
    min_partners: Annotated[int, typer.Option(
        "--min-partners", min=1, max=16, help="plan: measurements per node, each with another partner (1..16).")] = 2,
) -> None:
    """Fleet acceptance gate. `acceptance judge --results DIR --instance-type TYPE`: pass / suspect / fail per
    node from pairwise all_reduce_perf outputs; exit 0 no node fails, 1 a node fails, 2 unreadable or
    inconsistent input. `acceptance plan NODE...`: the pairing rounds ('<round> <node> <node>' lines)."""
    if action is AcceptanceAction.plan:
        from fmcluster.acceptance.pairing import PairingError, pairing_plan, plan_lines

        if len(nodes or []) < 2:
            # nothing to pair: an empty plan would look like success (issue 26)
            print_error(f"acceptance plan needs at least 2 nodes, got {len(nodes or [])}; allowed two or more Slurm node "
                        "names (a single node has no partner: its node check judges it alone)")
            raise typer.Exit(2)
        try:
            print(plan_lines(pairing_plan(nodes or [], min_partners)), end="")
        except PairingError as e:
            print_error(str(e))
            raise typer.Exit(2) from None
        return
    from fmcluster.acceptance.floors import floor_for
    from fmcluster.acceptance.judge import (
        JudgeInputError,
        judge,
        load_results,
        read_aliases,
        render_json,
        render_markdown,
        render_text,
    )
    from fmcluster.catalog import UnknownInstanceType

    missing = [o for o, v in (("--results DIR", results), ("--instance-type TYPE", instance_type)) if v is None]
    if nodes:
        missing.append(f"no node names (got {' '.join(nodes)}); they belong to 'acceptance plan'")
    if missing:
        print_error(f"acceptance judge needs {', '.join(missing)}")
        raise typer.Exit(2)
    assert results is not None and instance_type is not None
    try:
        floor = floor_for(instance_type)
    except UnknownInstanceType as e:
        print_error(f"--instance-type: {e}")
        raise typer.Exit(2) from None
    try:
        aliases = read_aliases(str(hostnames)) if hostnames else None
        verdict = judge(load_results(str(results), aliases), floor, median_fraction)
    except JudgeInputError as e:
        for problem in e.problems:
            print_error(problem)
        raise typer.Exit(2) from None
    except OSError as e:
        print_error(f"{e.filename or hostnames}: cannot read: {e.strerror or e}")
        raise typer.Exit(2) from None
    render = {OutputFormat.json: render_json, OutputFormat.markdown: render_markdown}.get(format, render_text)
    print(render(verdict), end="")
    raise typer.Exit(verdict.exit_code)
@app.command()
def grafana(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file (metrics: managed, deployed).",
                                         callback=_blueprint_file)],
    profile: Annotated[
        str | None, typer.Option(help="AWS profile. Default: the standard credential chain.")
    ] = None,
) -> None:
    """After deploy: create or update the Amazon Managed Grafana data source and every dashboard (idempotent).
    Exit 0 done, 1 a call failed, 2 could not run."""
    from fmcluster.provision import run

    raise typer.Exit(run(file, profile=profile))


class TopologyFormat(StrEnum):
    """The file ``fmcluster topology`` writes: ``topology.conf`` or ``topology.yaml`` (Slurm >= 25.05)."""

    conf = "conf"
    yaml = "yaml"


class TopologyPlugin(StrEnum):
    """``topology.conf``'s plugin: ``auto`` (block when every node is in an NVLink domain), ``tree``, ``block``."""

    auto = "auto"
    tree = "tree"
    block = "block"


@app.command()
def topology(
    instances: Annotated[Path, typer.Option("--instances", callback=_input_file(
        "a JSON file of a DescribeInstanceTopology response"), help=(
        "File: the EC2 DescribeInstanceTopology response (JSON, e.g. `aws ec2 describe-instance-topology` output)."))],
    nodes: Annotated[Path, typer.Option("--nodes", callback=_input_file(
        "a file mapping instance id -> Slurm node name"), help=(
        "File: the map instance id -> Slurm node name, as a JSON object or lines '<instance-id> <node-name>'."))],
    format: Annotated[TopologyFormat, typer.Option("--format", "-f", help=(
        "conf: topology.conf (one plugin); yaml: topology.yaml, tree and block together (Slurm >= 25.05)."))
    ] = TopologyFormat.conf,
    plugin: Annotated[TopologyPlugin, typer.Option("--plugin", help=(
        "auto (conf: block when every node is in an NVLink domain), tree or block (conf without NVLink domains: "
        "the tree, with a warning); with --format yaml, tree leaves the block topology out."))
    ] = TopologyPlugin.auto,
) -> None:
    """Print Slurm topology (tree switches from EC2 network nodes, blocks from NVLink domains) for the
    nodes of a cluster. Problems in the input are warnings (a node without topology goes to switch
    fmc-no-topology; an instance not in the node map is ignored); exit 2 when a file cannot be read or
    --instances is not valid JSON."""
    from fmcluster.catalog.instances import get_instance, known_instance_types
    from fmcluster.topology import InputError, generate, read_json_or_text

    nvlink = [t for t in known_instance_types() if get_instance(t).ultraserver_sizes]
    try:
        text, warnings = generate(read_json_or_text(instances, json_required=True), read_json_or_text(nodes),
                                  format.value, plugin.value, nvlink)
    except InputError as e:
        print_error(str(e))
        raise typer.Exit(2) from None
    for w in warnings:
        print_error(w, label="warning")
    print(text, end="")


image_app = typer.Typer(no_args_is_help=True, help="Images of bake mode (software.image.mode: bake).")
app.add_typer(image_app, name="image")


@image_app.command("lookup")
def image_lookup(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.", callback=_blueprint_file)],
    profile: Annotated[
        str | None, typer.Option(help="AWS profile. Default: the standard credential chain.")
    ] = None,
) -> None:
    """Show the parent AMIs a bake-mode blueprint's deployment will find (ParallelCluster's official AMI, pcluster's
    own query); pin one as software.image.parent_ami_id to fix it. Synthesis never needs this. Exit 0 done, 2 could
    not run."""
    from botocore.exceptions import BotoCoreError, ClientError

    from fmcluster.output import out, print_error
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight.image_lookup import LookupError_, lookups, newest_official_image
    from fmcluster.resolved import resolve

    bp, _ = _load_or_exit(file)
    needed = lookups(resolve(bp))
    if not needed:
        out.print(f"{file}: nothing to look up (no bake-mode parent AMI without software.image.parent_ami_id)")
        raise typer.Exit(0)
    try:
        ec2 = clients_module.make_clients(bp.region, profile).ec2
        found = {lk.key: (lk.name_filter, newest_official_image(ec2, lk)) for lk in needed}
    except (clients_module.PreflightCannotRun, LookupError_) as e:
        print_error(str(e), label="image lookup could not run")
        raise typer.Exit(2) from None
    except (BotoCoreError, ClientError) as e:  # denied, throttled, no endpoint: no traceback, exit 2
        print_error(f"{type(e).__name__}: {e}", label="image lookup could not run")
        raise typer.Exit(2) from None
    for key, (name_filter, ami) in found.items():
        out.print(f"image {key}: {name_filter} -> {ami} (found again at deploy time unless pinned as "
                  "software.image.parent_ami_id)")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
