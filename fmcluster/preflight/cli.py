"""What ``fmcluster preflight FILE [--region R] [--profile P] [--until YYYY-MM-DD] [--json]`` does
and prints: its table or JSON, its progress bar, its exit code.

The command is declared in ``fmcluster/cli.py`` and calls :func:`run`; boto3 is imported only
then, so other commands stay fast. Clients come from
:func:`fmcluster.preflight.clients.make_clients`, looked up at call time so tests can replace it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table
from rich.text import Text

from fmcluster.blueprint import BlueprintError
from fmcluster.blueprint.errors import Problem
from fmcluster.output import err, json_envelope, out, print_error, print_problems
from fmcluster.severity import STYLE, CheckStatus, count
from fmcluster.validation import load_blueprint_with_warnings

#: Table and summary order of the statuses.
STATUSES: tuple[CheckStatus, ...] = ("ok", "error", "warning", "skipped", "unknown")
#: Colour of the verdict per exit code.
_VERDICT_STYLE = {0: STYLE["ok"], 1: f"bold {STYLE['error']}", 2: STYLE["unknown"]}


class _CannotRun(Exception):
    """Preflight could not run: ``message`` why; ``problems`` the blueprint's (its errors when it is invalid, else its
    warnings, with the reason itself as a problem of its own: ``rule_id`` input)."""

    def __init__(self, message: str, problems: list[Problem] | None = None, *, invalid: bool = False) -> None:
        super().__init__(message)
        self.problems = (problems or []) if invalid else [*(problems or []), Problem("", message, rule_id="input")]


def run(file: Path, *, region: str | None, profile: str | None, until: str | None, as_json: bool) -> int:
    """Check the AWS account before deploy; the exit code: 0 all passed, 1 a check found an error,
    2 preflight (or a check) could not run."""
    try:
        return _run(file, region=region, profile=profile, until=until, as_json=as_json)
    except _CannotRun as e:
        if as_json:
            result = {"file": str(file), "verdict": "could_not_run", "exit_code": 2, "message": str(e)}
            print(json_envelope("preflight", ok=False, problems=[(str(file), p) for p in e.problems], result=result))
        else:
            print_error(str(e), label="preflight could not run")
        return 2


def _run(file: Path, *, region: str | None, profile: str | None, until: str | None, as_json: bool) -> int:
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight.runner import run_preflight
    from fmcluster.resolved import resolve

    name = str(file)
    try:
        loaded = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        if not as_json:
            print_problems(e.file, e.problems)
        raise _CannotRun("the blueprint is not valid (run fmcluster validate)", e.problems, invalid=True) from None
    print_problems(name, loaded.warnings)
    bp = loaded.blueprint
    until_day = None
    if until is not None:
        try:
            until_day = dt.date.fromisoformat(until)
        except ValueError:
            raise _CannotRun(f"--until must be a date, got {until!r}; allowed YYYY-MM-DD", loaded.warnings) from None
    if region is not None and region != bp.region:
        raise _CannotRun(f"--region differs from the blueprint's region, got {region!r}; allowed {bp.region!r} "
                         "(or omit --region)", loaded.warnings)
    try:
        clients = clients_module.make_clients(bp.region, profile)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      console=err, transient=True, disable=as_json or not err.is_terminal) as bar:
            task = bar.add_task("preflight", total=None)

            def tell(label: str, i: int, n: int) -> None:
                bar.update(task, description=label, completed=max(i - 1, 0), total=n or None)

            report = run_preflight(resolve(bp), clients, file=name, until=until_day, progress=tell)
    except clients_module.PreflightCannotRun as e:
        raise _CannotRun(str(e), loaded.warnings) from None
    if as_json:
        problems = [*loaded.warnings, *report.problems()]
        print(json_envelope("preflight", ok=report.exit_code == 0, problems=[(name, p) for p in problems],
                            result=report.as_dict()))
        return report.exit_code
    table = Table(title=f"preflight {name} - {bp.region}, account {report.account or '?'}", title_justify="left")
    for col in ("check", "subject", "status", "detail"):
        table.add_column(col, overflow="fold")
    for r in report.results:
        # Text, not markup: an AWS message or a bucket name prints as it is
        table.add_row(Text(r.check), Text(r.subject), Text(r.status, style=STYLE[r.status]), Text(r.detail))
    out.print(table)
    counts = {s: sum(r.status == s for r in report.results) for s in STATUSES}
    summary = ", ".join(count(n, s) for s, n in counts.items() if n)
    out.print(f"[{_VERDICT_STYLE[report.exit_code]}]preflight {report.verdict}[/] ({summary})", highlight=False)
    return report.exit_code
