"""The one severity vocabulary of every fmcluster command (documented in README.md "Severities").

``error`` and ``warning`` are the severities; ``info``, ``ok``, ``skipped`` and ``unknown`` are
outcomes that are genuinely neither. Each command uses the subset that applies to what it reports:

- a blueprint problem (validate, plan, render, diff, preflight): :data:`ProblemLevel`
- a resource change (``fmcluster diff``): :data:`ChangeLevel`
- an account check (``fmcluster preflight``): :data:`CheckStatus`

and the one did-you-mean policy of every message (:func:`closest_names`).

Imports nothing from fmcluster, so every layer can use it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
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


# ---- did-you-mean: the one policy of every suggestion in a message -------------------------------------------------
#: A value that is a version or a number (``1.20``, ``12.8``, ``v2``): never suggested by spelling.
_VERSION = re.compile(r"v?\d+(\.\d+)*")


def closest_names(value: object, allowed: Iterable[str], *, limit: int = 1, cutoff: float = 0.6) -> list[str]:
    """The allowed names ``value`` plausibly misspells, best first (at most ``limit``; ``[]`` for none): close in
    spelling, case-insensitive (``difflib`` ratio at least ``cutoff``), and with the same digits in the same order
    (``p5.48xlarg`` -> ``p5.48xlarge``, ``ubuntu-2204`` -> ``ubuntu-22.04``). A number the user wrote is meant: a name
    with other digits is another thing, not a typo (``ubuntu-20.04`` is not ``ubuntu-24.04``, ``PERSISTENT_3`` not
    ``PERSISTENT_2``, ``us-east-3`` not ``us-east-1``), and a version (``1.20``) is never matched by spelling: the
    message lists the allowed values instead."""
    if not isinstance(value, str) or _VERSION.fullmatch(value.strip()):
        return []
    digits = _digits(value)
    lowered: dict[str, str] = {}
    for name in allowed:
        if _digits(name) == digits:
            lowered.setdefault(name.lower(), name)
    return [lowered[m] for m in difflib.get_close_matches(value.lower(), list(lowered), n=limit, cutoff=cutoff)]


def did_you_mean(value: object, allowed: Iterable[str]) -> str:
    """`` - did you mean 'x'?`` for the name :func:`closest_names` finds, else ``""``."""
    close = closest_names(value, allowed)
    return f" - did you mean {close[0]!r}?" if close else ""


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())
