"""How every fmcluster command prints: the consoles, the output formats, blueprint problems and
input errors. Rich markup is escaped here, once: a blueprint value such as ``[red]`` prints as typed.

Severity words and their colours come from :mod:`fmcluster.severity`.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from datetime import date, time
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.markup import escape

from fmcluster.blueprint.errors import NOT_GIVEN, Problem
from fmcluster.severity import STYLE, count

#: Standard output; wide enough for the plan's and preflight's tables when output goes to a file or
#: CI log (rich assumes 80 there).
out = Console(soft_wrap=True, width=None if Console().is_terminal else 200)
#: Standard error: problems, input errors, progress.
err = Console(stderr=True, soft_wrap=True)


class OutputFormat(StrEnum):
    """``--format`` of every command that has one; ``--json`` is short for ``--format json``."""

    text = "text"
    markdown = "markdown"
    json = "json"


def print_problems(file: str, problems: Sequence[Problem], console: Console | None = None) -> None:
    """A blueprint's problems, one per line (``  <level>: <path> (line N): ... [RULE]``), after a
    ``<file>: N errors`` header when any is an error: ``str(BlueprintError)`` with colours."""
    console = console or err
    errors = sum(p.level == "error" for p in problems)
    if errors:
        console.print(f"[bold {STYLE['error']}]{escape(file)}[/]: {count(errors, 'error')}", highlight=False)
    for p in problems:
        console.print(f"  [{STYLE[p.level]}]{p.level}[/]: {escape(p.render(file=file))}", highlight=False)


def print_ok(file: str, warnings: Sequence[Problem]) -> None:
    """``ok <file>`` on standard output (``(N warnings)`` when there are some), then the warnings."""
    note = f" ({count(len(warnings), 'warning')})" if warnings else ""
    out.print(f"[{STYLE['ok']}]ok[/] {escape(file)}{note}", highlight=False)
    print_problems(file, warnings)


def print_error(message: str, label: str = "error") -> None:
    """One input error that is not a blueprint problem (a bad option, an unusable folder); with
    ``label="warning"``, one warning about input (``fmcluster topology``)."""
    style = STYLE["error"] if label == "error" else STYLE["warning"] if label == "warning" else f"bold {STYLE['error']}"
    err.print(f"[{style}]{escape(label)}[/]: {escape(message)}", highlight=False)


# ---- one JSON shape for every ``--json`` of a blueprint command ----------------------------------------------------
#: ``got <value>;`` (or ``got <value>`` at the end) in a problem's message: the value as the user wrote it
#: (README.md, "A bad blueprint never produces a traceback": every message says ``got X; allowed Y``).
_GOT = re.compile(r"\bgot (.+?)(?:;|$)")


def problem_value(message: str) -> Any:
    """The value a problem quotes, as a JSON value (README.md: the offending value itself, ``null`` when the message
    quotes none): ``got 'p5.4xlarge'; allowed ...`` -> ``"p5.4xlarge"`` (a quoted text without its quotes, also when
    words follow it: ``got 'us-east-1-dfw-2a': its NAT ...``), ``got 91`` -> ``91``, ``got 3000 GiB`` -> ``3000`` (a
    number with its unit), ``got ['a', 'b']`` -> ``["a", "b"]``; ``None`` when the message quotes no value or the
    ``got`` part is prose (``got none``, ``got no stack``, ``got 17 network cards with EFA on 16 of them``)."""
    m = _GOT.search(message)
    if not m:
        return None
    text = m.group(1).strip()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _leading_value(text)
    if isinstance(value, (list, dict)):  # a quoted list or mapping (got ['a', 'b']): as JSON
        return _json_value(value)
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no infinity: the text as written
        return text
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


#: A quoted text at the start of a ``got`` part that goes on (``'us-east-1-dfw-2a': its NAT gateway ...``), a number
#: with its unit and nothing else (``3000 GiB``, ``500 MB/s``), or a number (with or without its unit) whose parts follow
#: in parentheses (``41 (40 in the blueprint, 1 from the organisation file ...)``, ``40 tags (39 in ...)``).
_LEADING_QUOTED = re.compile(r"'([^']*)'(?=[\s:,(])")
_NUMBER_WITH_UNIT = re.compile(r"(-?\d+(?:\.\d+)?) [A-Za-z][A-Za-z/]*")
_NUMBER_THEN_PARTS = re.compile(r"(-?\d+(?:\.\d+)?)(?: [A-Za-z][A-Za-z/]*)? \([^()]*\)")


def _leading_value(text: str) -> Any:
    quoted = _LEADING_QUOTED.match(text)
    if quoted:
        return quoted.group(1)
    number = _NUMBER_WITH_UNIT.fullmatch(text) or _NUMBER_THEN_PARTS.fullmatch(text)
    if number:
        return ast.literal_eval(number.group(1))
    return None


def _finite(value: Any) -> bool:
    """False for infinity and not-a-number, which JSON has no literal for (RFC 8259, section 6)."""
    return not isinstance(value, float) or math.isfinite(value)


#: Deepest nesting of a problem's value in JSON (a blueprint is at most 40 levels deep: fmcluster.validation.loader).
_JSON_DEPTH = 40


def _json_value(value: Any, within: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON can carry it: dates and times as ISO 8601 text, anything JSON has no type for as text, a
    list or mapping that contains itself (a YAML alias to its own anchor, ``a: &x [*x]``) cut as ``"..."``."""
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, (dict, list, tuple)) and (id(value) in within or len(within) >= _JSON_DEPTH):
        return "..."
    if isinstance(value, dict):
        return {str(k): _json_value(v, within | {id(value)}) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v, within | {id(value)}) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)) and _finite(value):
        return value
    return str(value)  # YAML's .inf and .nan as inf and nan


def problem_json(file: str | None, p: Problem) -> dict[str, object]:
    """One problem in the JSON envelope: ``file`` (the problem's own file when it is in another one, a base blueprint
    or the organisation file; else ``file``; ``null`` for a usage error about no file), ``path``, ``line``, ``value``
    (the offending value itself as JSON, ``p.value``, else what the message quotes, :func:`problem_value`),
    ``message``, ``severity`` (error/warning), ``rule_id``, ``source``."""
    value = _json_value(p.value) if p.value is not NOT_GIVEN else problem_value(p.message)
    return {"file": p.file or file, "path": p.path, "line": p.line, "value": value, "message": p.message,
            "severity": p.level, "rule_id": p.rule_id, "source": p.source}


def json_envelope(command: str, *, ok: bool, problems: Sequence[tuple[str | None, Problem]], result: object) -> str:
    """What ``validate --json``, ``plan --json`` and ``diff --json`` print: one object ``{"command", "ok", "problems",
    "result"}``.

    ``ok``: the command succeeded (its exit code is 0); ``problems``: every error and warning, each
    :func:`problem_json` (the blueprint's, and the command's own findings: ``diff``'s error and warning changes,
    ``DiffReport.problems``; ``preflight``'s checks that did not pass, ``PreflightReport.problems``); ``result``: the
    command's own answer in full (``validate``: ``[{"file", "valid"}]``, ``plan``: the plan, ``diff``: the diff
    report, ``preflight``: its report; ``null`` when there is none)."""
    return json.dumps({"command": command, "ok": ok, "problems": [problem_json(f, p) for f, p in problems],
                       "result": result}, indent=2)
