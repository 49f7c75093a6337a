"""Cross-field domain rules: one function per rule, each with an id, a level and a source.

A rule is a generator decorated with :func:`rule`; it yields ``(yaml_path, message)`` pairs. The
``scope`` says what it receives: ``"blueprint"`` (the whole frozen Blueprint), ``"cluster"`` (the
:class:`fmcluster.resolved.ResolvedCluster`, resolved once per run, for rules that judge derived
facts) or the name of a top-level section (``"storage"``, ``"compute"``, ...), whose rules also run
when another section of the blueprint failed its shape check. ``orchestrators`` limits a rule to
the clusters whose orchestrator profile matches (a profile key such as ``hyperpod-eks`` or an
``orchestrator.kind`` such as ``hyperpod``); the rule body then never branches on the orchestrator.
Rules never raise; they report.
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
    orchestrators: tuple[str, ...] = ()

    def applies_to(self, profile: Any) -> bool:
        """Whether the rule runs for a cluster of this :class:`OrchestratorProfile` (all when unrestricted)."""
        return not self.orchestrators or profile.key in self.orchestrators or profile.kind in self.orchestrators

    def check(self, subject: Any) -> Iterator[Problem]:
        for path, message in self.fn(subject):
            yield Problem(path, message, level=self.level, rule_id=self.id, source=self.source)


REGISTRY: list[Rule] = []


def rule(
    id: str, *, level: Level = "error", source: str, scope: str = "blueprint", orchestrators: tuple[str, ...] = (),
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function (see module docstring)."""

    def deco(fn: RuleFn) -> RuleFn:
        if any(r.id == id for r in REGISTRY):
            raise ValueError(f"duplicate rule id {id}")
        REGISTRY.append(Rule(id, level, source, scope, fn, orchestrators))
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


def _subject(r: Rule, bp: Any, resolved: Callable[[], Any]) -> Any:
    if r.scope == "blueprint":
        return bp
    if r.scope == "cluster":
        return resolved()
    return getattr(bp, r.scope)


def _profile(bp: Any) -> Any:
    """The orchestrator profile of ``bp``, or ``None`` when its orchestrator section is broken."""
    from fmcluster.resolved import profile_for

    try:
        return profile_for(bp.orchestrator)
    except (AttributeError, KeyError, TypeError):
        return None


def _once(bp: Any) -> Callable[[], Any]:
    """``resolve(bp)``, computed on first use and shared by every cluster-scoped rule of a run."""
    from fmcluster.resolved import resolve

    memo: list[Any] = []

    def get() -> Any:
        if not memo:
            memo.append(resolve(bp))
        return memo[0]

    return get


def run_rules_best_effort(partial: Any, valid_sections: set[str]) -> list[Problem]:
    """Run rules on a partially valid Blueprint (built without validation; broken parts are None).

    Section-scoped rules run on valid sections only. A blueprint-scoped rule that trips over a
    missing part cannot judge the blueprint and is skipped: the shape errors already report why.
    This is the only place a rule's exception is tolerated.
    """
    _load_rule_modules()
    out: list[Problem] = []
    resolved, profile = _once(partial), _profile(partial)
    for r in REGISTRY:
        if r.scope not in ("blueprint", "cluster") and r.scope not in valid_sections:
            continue
        if r.orchestrators and (profile is None or not r.applies_to(profile)):
            continue
        try:
            out += list(r.check(_subject(r, partial, resolved)))
        except (AttributeError, TypeError, KeyError):
            continue
    return out


def run_rules(bp: Any) -> list[Problem]:
    """Run every rule on a shape-valid Blueprint; returns errors and warnings in rule order."""
    _load_rule_modules()
    out: list[Problem] = []
    resolved, profile = _once(bp), _profile(bp)
    for r in REGISTRY:
        if r.applies_to(profile):
            out += list(r.check(_subject(r, bp, resolved)))
    return out
