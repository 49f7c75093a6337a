"""The one severity vocabulary of every fmcluster command (documented in README.md "Severities").

``error`` and ``warning`` are the severities; ``info``, ``ok``, ``skipped`` and ``unknown`` are
outcomes that are genuinely neither. Each command uses the subset that applies to what it reports:

- a blueprint problem (validate, plan, render, diff, preflight): :data:`ProblemLevel`
- a resource change (``fmcluster diff``): :data:`ChangeLevel`
- an account check (``fmcluster preflight``): :data:`CheckStatus`

Imports nothing from fmcluster, so every layer can use it.
"""

from __future__ import annotations

from typing import Literal

Severity = Literal["error", "warning", "info", "ok", "skipped", "unknown"]

#: What each word means, wherever it appears (text, markdown or JSON output).
MEANING: dict[Severity, str] = {
    "error": "wrong: fix it before deploying; the command exits 1",
    "warning": "probably fine, or it rests on an unverified fact: read it",
    "info": "neither: a fact worth showing (a change CloudFormation applies safely)",
    "ok": "checked and fine",
    "skipped": "not checked: it does not apply, or fmcluster cannot check it (the detail says why)",
    "unknown": "could not be checked: an AWS error or a missing permission; preflight exits 2",
}

ProblemLevel = Literal["error", "warning"]
ChangeLevel = Literal["error", "warning", "info"]
CheckStatus = Literal["ok", "error", "warning", "skipped", "unknown"]

#: Rich style of each word in text output.
STYLE: dict[Severity, str] = {
    "error": "red", "warning": "yellow", "info": "dim", "ok": "green", "skipped": "dim", "unknown": "magenta",
}

_PLURAL = {"error": "errors", "warning": "warnings"}


def count(n: int, word: str) -> str:
    """``1 error``, ``2 errors``, ``3 ok``: counted severities (the outcome words do not inflect)."""
    return f"{n} {word if n == 1 else _PLURAL.get(word, word)}"
