"""Cross-field domain rules: one function per rule, each with an id, a level and a source.

A rule is a generator decorated with :func:`rule`; it yields ``(yaml_path, message)`` pairs. The
``scope`` says what it receives: ``"blueprint"`` (the whole frozen Blueprint) or the name of a
top-level section (``"storage"``, ``"compute"``, ...), whose rules also run when another section of
the blueprint failed its shape check. Rules never raise; they report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fmcluster.blueprint.errors import Level, Problem

Violation = tuple[str, str]
RuleFn = Callable[[Any], Iterable[Violation]]


@dataclass(frozen=True)
class Rule:
    id: str
    level: Level
    source: str
    scope: str
    fn: RuleFn

    def check(self, subject: Any) -> Iterator[Problem]:
        for path, message in self.fn(subject):
            yield Problem(path, message, level=self.level, rule_id=self.id, source=self.source)


REGISTRY: list[Rule] = []


def rule(id: str, *, level: Level = "error", source: str, scope: str = "blueprint") -> Callable[[RuleFn], RuleFn]:
    """Register a rule function (see module docstring)."""

    def deco(fn: RuleFn) -> RuleFn:
        if any(r.id == id for r in REGISTRY):
            raise ValueError(f"duplicate rule id {id}")
        REGISTRY.append(Rule(id, level, source, scope, fn))
        fn.rule_id = id  # type: ignore[attr-defined]
        return fn

    return deco


def _load_rule_modules() -> None:
    from fmcluster.validation.rules import (  # noqa: F401  (registration side effect)
        capacity,
        compute,
        environment,
        network,
        observability,
        orchestrator,
        software,
        storage,
        subnet,
    )


def run_rules_best_effort(partial: Any, valid_sections: set[str]) -> list[Problem]:
    """Run rules on a partially valid Blueprint (built without validation; broken parts are None).

    Section-scoped rules run on valid sections only. A blueprint-scoped rule that trips over a
    missing part cannot judge the blueprint and is skipped: the shape errors already report why.
    This is the only place a rule's exception is tolerated.
    """
    _load_rule_modules()
    out: list[Problem] = []
    for r in REGISTRY:
        if r.scope != "blueprint" and r.scope not in valid_sections:
            continue
        subject = partial if r.scope == "blueprint" else getattr(partial, r.scope)
        try:
            out += list(r.check(subject))
        except (AttributeError, TypeError, KeyError):
            continue
    return out


def run_rules(bp: Any) -> list[Problem]:
    """Run every rule on a shape-valid Blueprint; returns errors and warnings in rule order."""
    _load_rule_modules()
    out: list[Problem] = []
    for r in REGISTRY:
        subject = bp if r.scope == "blueprint" else getattr(bp, r.scope)
        out += list(r.check(subject))
    return out
