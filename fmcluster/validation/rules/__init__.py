"""Cross-field domain rules: one function per rule, each with an id, a level and a source.

A rule is a generator decorated with :func:`rule`; it yields ``(yaml_path, message)`` pairs. The
``scope`` says what it receives: ``"blueprint"`` (the whole frozen Blueprint), ``"cluster"`` (the
:class:`fmcluster.resolved.ResolvedCluster`, resolved once per run, for rules that judge derived
facts) or the name of a top-level section (``"storage"``, ``"compute"``, ...), whose rules also run
when another section of the blueprint failed its shape check. ``orchestrators`` limits a rule to
the clusters whose orchestrator profile matches (a profile key such as ``hyperpod-eks`` or an
``orchestrator.kind`` such as ``hyperpod``, both from :mod:`fmcluster.orchestrators.registry`: any other
name is an error when the rule is defined); ``requires`` names a true/false fact of the profile the rule needs
(``requires="runs_slurm"``). The rule body then never branches on the orchestrator.
Rules never raise; they report.

Precedence is declared, not computed inside a rule: ``suppressed_by=("R-X-1", ...)`` says the rule
reports nothing while any listed rule reports something (anywhere in the blueprint: the listed
rule's finding is the precise one, this rule's would be a vaguer echo, often at another path). The
runner applies it after running every rule; "reports" means after the listed rule's own
precedence, so chains behave as if each rule had checked the others itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from fmcluster.blueprint.errors import Level, Problem
from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.orchestrators.registry import RULE_TARGETS

#: Field name -> annotation of every orchestrator profile fact (``requires=`` takes a ``bool`` one).
PROFILE_FACTS = {f.name: str(f.type) for f in fields(OrchestratorProfile)}

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
    suppressed_by: tuple[str, ...] = ()
    requires: str | None = None

    def applies_to(self, profile: Any) -> bool:
        """Whether the rule runs for a cluster of this :class:`OrchestratorProfile` (all when unrestricted)."""
        if self.requires is not None and not getattr(profile, self.requires):
            return False
        return not self.orchestrators or profile.key in self.orchestrators or profile.kind in self.orchestrators

    def check(self, subject: Any) -> Iterator[Problem]:
        for path, message in self.fn(subject):
            yield Problem(path, message, level=self.level, rule_id=self.id, source=self.source)


REGISTRY: list[Rule] = []


def rule(
    id: str, *, level: Level = "error", source: str, scope: str = "blueprint", orchestrators: tuple[str, ...] = (),
    suppressed_by: tuple[str, ...] = (), requires: str | None = None,
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function (see module docstring)."""

    def deco(fn: RuleFn) -> RuleFn:
        if any(r.id == id for r in REGISTRY):
            raise ValueError(f"duplicate rule id {id}")
        if id in suppressed_by:
            raise ValueError(f"rule {id} cannot be suppressed by itself")
        unknown = sorted(set(orchestrators) - RULE_TARGETS)
        if unknown:
            raise ValueError(f"rule {id}: orchestrators {', '.join(unknown)} not in the registry; allowed "
                             f"{', '.join(sorted(RULE_TARGETS))} (fmcluster.orchestrators.registry)")
        if requires is not None and PROFILE_FACTS.get(requires) != "bool":
            raise ValueError(f"rule {id}: requires={requires!r} is not a true/false fact of the orchestrator profile; "
                             f"allowed {', '.join(sorted(k for k, t in PROFILE_FACTS.items() if t == 'bool'))}")
        REGISTRY.append(Rule(id, level, source, scope, fn, tuple(orchestrators), tuple(suppressed_by), requires))
        fn.rule_id = id  # type: ignore[attr-defined]
        return fn

    return deco


#: Every module that registers rules, in the order their rules run and report (problems on the same YAML line keep
#: this order). Each orchestrator's own rules live in its slice (``fmcluster/orchestrators/<key>/rules.py``).
RULE_MODULES = (
    "fmcluster.validation.rules.capacity",
    "fmcluster.features.network.rules_subnet",
    "fmcluster.features.accounting.rules",
    "fmcluster.features.node.rules_bake",
    "fmcluster.validation.rules.compute",
    "fmcluster.features.containers.rules",
    "fmcluster.orchestrators.hyperpod_eks.rules",
    "fmcluster.validation.rules.environment",
    "fmcluster.features.node.rules_image",
    "fmcluster.features.node.rules_lustre_efa",
    "fmcluster.validation.rules.imex",
    "fmcluster.features.network.rules",
    "fmcluster.features.observability.rules",
    "fmcluster.validation.rules.orchestrator",
    "fmcluster.orchestrators.parallelcluster.rules",
    "fmcluster.orchestrators.hyperpod.rules",
    "fmcluster.orchestrators.pcs.rules",
    "fmcluster.validation.rules.reserved_and_regional",
    "fmcluster.features.node.rules_software",
    "fmcluster.features.storage.rules",
    "fmcluster.validation.rules.support",
)


def _load_rule_modules() -> None:
    """Import every :data:`RULE_MODULES` module (registration is their import's side effect) and put
    :data:`REGISTRY` in their order (a module that imports another registers that one's rules first)."""
    for module in RULE_MODULES:
        importlib.import_module(module)
    order = {m: i for i, m in enumerate(RULE_MODULES)}
    REGISTRY.sort(key=lambda r: order.get(r.fn.__module__, len(order)))


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


def check_precedence(rules: list[Rule] | None = None) -> None:
    """Raise ValueError when a ``suppressed_by`` names an unknown rule or the declarations form a cycle
    (``rules``: default every registered rule)."""
    if rules is None:
        _load_rule_modules()
        rules = REGISTRY
    by_id = {r.id: r for r in rules}
    for r in rules:
        unknown = [s for s in r.suppressed_by if s not in by_id]
        if unknown:
            raise ValueError(f"rule {r.id}: suppressed_by names unknown rule(s) {', '.join(unknown)}")

    def visit(rid: str, stack: tuple[str, ...]) -> None:
        if rid in stack:
            raise ValueError(f"suppressed_by cycle: {' -> '.join((*stack, rid))}")
        for s in by_id[rid].suppressed_by:
            visit(s, (*stack, rid))

    for r in rules:
        visit(r.id, ())


def apply_precedence(found: dict[str, list[Problem]], rules: list[Rule] | None = None) -> list[Problem]:
    """The problems that are reported, in rule order, from every rule's raw problems (rule id ->
    problems; a rule that did not run is absent): a rule's problems are dropped while a rule in its
    ``suppressed_by`` reports something (``rules``: default every registered rule)."""
    rules = REGISTRY if rules is None else rules
    by_id = {r.id: r for r in rules}
    memo: dict[str, bool] = {}

    def reports(rid: str) -> bool:
        if rid not in memo:
            memo[rid] = bool(found.get(rid)) and not any(reports(s) for s in by_id[rid].suppressed_by)
        return memo[rid]

    return [p for r in rules if reports(r.id) for p in found[r.id]]


def run_rules_best_effort(partial: Any, valid_sections: set[str]) -> list[Problem]:
    """Run rules on a partially valid Blueprint (built without validation; broken parts are None).

    Section-scoped rules run on valid sections only. A blueprint-scoped rule that trips over a
    missing part cannot judge the blueprint and is skipped: the shape errors already report why
    (and, for precedence, it reports nothing). This is the only place a rule's exception is tolerated.
    Cluster-scoped rules never run here: they judge the resolved cluster, and a blueprint with invalid sections has
    none (resolving it would fill the broken parts with defaults the blueprint does not have, e.g. the catalog's
    default software stack, and report on those).
    """
    _load_rule_modules()
    found: dict[str, list[Problem]] = {}
    resolved, profile = _once(partial), _profile(partial)
    for r in REGISTRY:
        if r.scope == "cluster" or (r.scope != "blueprint" and r.scope not in valid_sections):
            continue
        if r.orchestrators and (profile is None or not r.applies_to(profile)):
            continue
        try:
            found[r.id] = list(r.check(_subject(r, partial, resolved)))
        except (AttributeError, TypeError, KeyError):
            continue
    return apply_precedence(found)


def run_rules(bp: Any) -> list[Problem]:
    """Run every rule on a shape-valid Blueprint; returns errors and warnings in rule order."""
    _load_rule_modules()
    found: dict[str, list[Problem]] = {}
    resolved, profile = _once(bp), _profile(bp)
    for r in REGISTRY:
        if r.applies_to(profile):
            found[r.id] = list(r.check(_subject(r, bp, resolved)))
    return apply_precedence(found)
