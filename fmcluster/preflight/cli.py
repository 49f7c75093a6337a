"""``fmcluster preflight FILE [--region R] [--profile P] [--until YYYY-MM-DD] [--json]``.

Registered in ``fmcluster/cli.py``; boto3 is imported only when the command runs, so other
commands stay fast. Clients come from :func:`fmcluster.preflight.clients.make_clients`, looked
up at call time so tests can replace it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_with_warnings

_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skip": "dim", "error": "magenta"}
#: Summary words per status, (one, many): the status labels pass/fail/skip stay as they are in the
#: table; errors and warnings are counted nouns.
_COUNT_WORDS = {"pass": ("pass", "pass"), "fail": ("fail", "fail"), "warn": ("warning", "warnings"),
                "skip": ("skip", "skip"), "error": ("error", "errors")}


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _consoles() -> tuple[Console, Console]:
    return Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)


def _cannot_run(
    message: str, *, file: str, as_json: bool, problems: list[dict[str, Any]] | None = None
) -> None:
    out, err = _consoles()
    if as_json:
        print(json.dumps({"file": file, "verdict": "could_not_run", "exit_code": 2, "message": message,
                          "problems": problems or []}, indent=2))
    else:
        err.print(f"[bold red]preflight could not run[/]: {message}", highlight=False)
    raise typer.Exit(2)


def preflight(
    file: Annotated[Path, typer.Argument(help="Blueprint YAML file.")],
    region: Annotated[
        str | None, typer.Option(help="AWS Region; must match the blueprint's. Default: the blueprint's.")
    ] = None,
    profile: Annotated[
        str | None, typer.Option(help="AWS profile. Default: the standard credential chain.")
    ] = None,
    until: Annotated[str | None, typer.Option(help="YYYY-MM-DD: reservations and training plans must not end "
                                                   "before this day (00:00 UTC).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check the AWS account before deploy: exit 0 all passed, 1 a check failed, 2 could not run."""
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight.runner import run_preflight
    from fmcluster.resolved import resolve

    out, err = _consoles()
    name = str(file)
    try:
        loaded = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        if not as_json:
            err.print(f"[bold red]{e.file}[/]: {_count(len(e.errors), 'error', 'errors')}", highlight=False)
            for p in e.problems:
                colour = "red" if p.level == "error" else "yellow"
                err.print(f"  [{colour}]{p.level}[/]: {p.render()}", highlight=False)
        _cannot_run("the blueprint is not valid (run fmcluster validate)", file=name, as_json=as_json,
                    problems=[p.as_dict() for p in e.problems])
        return
    bp = loaded.blueprint
    until_day = None
    if until is not None:
        try:
            until_day = dt.date.fromisoformat(until)
        except ValueError:
            _cannot_run(f"--until must be a date, got {until!r}; allowed YYYY-MM-DD", file=name,
                        as_json=as_json)
    if region is not None and region != bp.region:
        _cannot_run(f"--region differs from the blueprint's region, got {region!r}; allowed {bp.region!r} "
                    "(or omit --region)", file=name, as_json=as_json)
    try:
        clients = clients_module.make_clients(bp.region, profile)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      console=err, transient=True, disable=as_json or not err.is_terminal) as bar:
            task = bar.add_task("preflight", total=None)

            def tell(label: str, i: int, n: int) -> None:
                bar.update(task, description=label, completed=max(i - 1, 0), total=n or None)

            report = run_preflight(resolve(bp), clients, file=name, until=until_day, progress=tell)
    except clients_module.PreflightCannotRun as e:
        _cannot_run(str(e), file=name, as_json=as_json)
        return
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
        raise typer.Exit(report.exit_code)
    title = f"preflight {name} - {bp.region}, account {report.account or '?'}"
    table = Table(title=title, title_justify="left")
    for col in ("check", "subject", "status", "detail"):
        table.add_column(col, overflow="fold")
    for r in report.results:
        table.add_row(r.check, r.subject, f"[{_STYLE[r.status]}]{r.status}[/]", r.detail)
    out.print(table)
    counts = {s: sum(r.status == s for r in report.results) for s in _STYLE}
    summary = ", ".join(_count(n, *_COUNT_WORDS[s]) for s, n in counts.items() if n)
    colour = {0: "green", 1: "bold red", 2: "magenta"}[report.exit_code]
    out.print(f"[{colour}]preflight {report.verdict}[/] ({summary})", highlight=False)
    raise typer.Exit(report.exit_code)
