"""The orchestrator registry (fmcluster/orchestrators/registry.py): every row is a whole slice, every example
blueprint finds its row, and a rule limited to an unknown orchestrator is refused when it is defined."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from fmcluster.orchestrators.registry import IMEX_SOURCES, KINDS, ORCHESTRATORS, RULE_TARGETS, profile_for, row_for
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint
from fmcluster.validation.rules import REGISTRY, RULE_MODULES, _load_rule_modules, rule

ROOT = Path(__file__).resolve().parent.parent
SLICES = ROOT / "fmcluster" / "orchestrators"
#: The example blueprint of each orchestrator.
EXAMPLE = {"parallelcluster": "default", "pcs": "pcs-p5en", "hyperpod-slurm": "hyperpod-p5", "hyperpod-eks": "hyperpod-eks"}


def test_every_orchestrator_has_an_example() -> None:
    assert set(EXAMPLE) == set(ORCHESTRATORS)


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_row_provides_every_part(key: str) -> None:
    """A row's slice has its profile (with the row's key and kind), its stack wiring with ``build``, and rules the
    rule runner loads (its own ``rules.py`` or a shared slice's it declares in ``USES``)."""
    row = ORCHESTRATORS[key]
    prof = row.profile(load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml").orchestrator)
    assert (prof.key, prof.kind) == (key, row.kind)
    assert callable(importlib.import_module(row.stack_module).build)
    package = row.stack_module.rpartition(".")[0]
    uses = getattr(importlib.import_module(package), "USES", ())
    rule_modules = {f"{package}.rules", *(f"fmcluster.orchestrators.{u}.rules" for u in uses)}
    assert rule_modules & set(RULE_MODULES), f"no rules module of {key} is in RULE_MODULES"
    _load_rule_modules()
    assert any(r.applies_to(prof) and r.orchestrators for r in REGISTRY), f"no rule limited to {key} runs for it"


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_example_names_exactly_its_row(key: str) -> None:
    orch = load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml").orchestrator
    assert orch.profile_key == key
    assert (ORCHESTRATORS[key].kind, profile_for(orch).key) == (orch.kind, key)


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_row_hooks_live_in_their_own_slice_at_their_layer(key: str) -> None:
    """A hook the core imports by name (extra stack, late stack, render files) is a callable of the row's own slice whose role is
    the layer its caller sits at (stacks, templates), so calling it through the registry keeps the layer order."""
    from tests.test_layering import layer_of

    row = ORCHESTRATORS[key]
    package = row.stack_module.rpartition(".")[0]
    for module, func, layer in ((row.extra_stack_module, "build_extra_stack", "stacks"),
                                (row.late_stack_module, "build_late_stack", "stacks"),
                                (row.render_module, "render_files", "templates")):
        if module is None:
            continue
        assert module.rpartition(".")[0] == package
        assert callable(getattr(importlib.import_module(module), func))
        assert layer_of(module) == layer


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_every_row_judges_its_cluster_resource_from_its_own_slice(key: str) -> None:
    """``fmcluster diff`` asks every orchestrator what a change does to its node groups (issue 25): each row names
    an ``update_review`` module of its own slice (or a slice it declares in ``USES``), at the review layer, with both
    hooks, for the resource types that launch its nodes."""
    from tests.test_layering import layer_of

    row = ORCHESTRATORS[key]
    assert row.update_review is not None
    types, module = row.update_review
    package = row.stack_module.rpartition(".")[0]
    uses = {f"fmcluster.orchestrators.{u}" for u in getattr(importlib.import_module(package), "USES", ())}
    assert module.rpartition(".")[0] in {package, *uses}
    assert layer_of(module) == "review"
    loaded = importlib.import_module(module)
    assert callable(loaded.review_resource_update) and callable(loaded.group_impacts)
    assert types and all(t.startswith(("AWS::", "Custom::")) for t in types)


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_row_hooks_give_the_example_its_own_plan_stack_and_files(key: str) -> None:
    """The example of each row: ``rc.eks`` is its row's plan (or ``None``), ``<name>-eks`` exists exactly when that plan
    creates the cluster, ``<name>-addons`` exactly when it installs add-ons after the cluster stack, and
    ``render_files`` of another orchestrator's example gives nothing."""
    rc = resolve(load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml"))
    row = row_for(rc.blueprint.orchestrator)
    assert row.key == key
    assert (rc.eks is None) is (row.plan is None)
    assert (rc.stacks.eks is not None) is (rc.eks is not None and rc.eks.creates_cluster)
    assert (rc.stacks.addons is not None) is (rc.eks is not None and rc.eks.has_late_stack)
    assert (rc.stacks.addons is not None) is (key == "hyperpod-eks")  # the EKS example installs add-ons after nodes
    for other in ORCHESTRATORS.values():
        files = other.render_files(rc)
        assert (files != {}) is (other is row and other.render_module is not None)


def test_imex_sources_are_the_profiles_sources() -> None:
    """R-IMEX-1 cites each row's ``imex_source``, which is the source its profile's ``ImexWiring`` gives."""
    assert len(IMEX_SOURCES) >= 2
    for key, row in ORCHESTRATORS.items():
        if row.imex_source is not None:
            prof = row.profile(load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml").orchestrator)
            assert prof.imex.source == row.imex_source


def test_every_slice_folder_is_registered_or_shared() -> None:
    folders = {p.name for p in SLICES.iterdir() if (p / "__init__.py").exists()}
    registered = {r.stack_module.split(".")[2] for r in ORCHESTRATORS.values()}
    uses = {u for f in folders for u in getattr(importlib.import_module(f"fmcluster.orchestrators.{f}"), "USES", ())}
    assert folders == registered | (uses & folders)


def test_kinds_are_the_models_kinds() -> None:
    from typing import get_args

    from fmcluster.blueprint.model import OrchestratorSpec

    assert set(KINDS) == set(get_args(OrchestratorSpec.model_fields["kind"].annotation))


@pytest.mark.parametrize("targets", [("pc",), ("hyperpod-slrum",), ("parallelcluster", "PCS")])
def test_a_rule_for_an_unknown_orchestrator_is_refused_at_definition(targets: tuple[str, ...]) -> None:
    before = len(REGISTRY)
    with pytest.raises(ValueError, match="not in the registry"):
        rule("R-TEST-1", source="test", orchestrators=targets)(lambda bp: iter(()))
    assert len(REGISTRY) == before


def test_every_registered_rule_names_registered_orchestrators() -> None:
    _load_rule_modules()
    assert {o for r in REGISTRY for o in r.orchestrators} <= RULE_TARGETS


#: The slice modules that load no CDK code (they are imported on their own by the rule runner, resolve and tests).
LIGHT_SLICE_MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for root in ("orchestrators", "features") for p in (ROOT / "fmcluster" / root).rglob("*.py")
    if p.name != "__init__.py" and p.stem.split("_")[0] in ("profile", "registry", "plan", "rules", "pins", "endpoints")
)


def test_each_light_slice_module_imports_on_its_own() -> None:
    """No import cycle hides behind import order: each module imports first in a fresh interpreter (one process
    for all, a fresh ``sys.modules`` per module)."""
    import subprocess
    import sys

    code = (
        "import importlib, sys\n"
        "base = set(sys.modules)\n"
        "bad = []\n"
        "for m in sys.argv[1:]:\n"
        "    for k in [k for k in sys.modules if k.startswith('fmcluster') and k not in base]:\n"
        "        del sys.modules[k]\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ImportError as e:\n"
        "        bad.append(f'{m}: {e}')\n"
        "print('\\n'.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *LIGHT_SLICE_MODULES], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
    assert len(LIGHT_SLICE_MODULES) > 10


# ---- the feature registry ---------------------------------------------------------------------------------------
def test_every_feature_row_is_a_feature_folder() -> None:
    from fmcluster.features.registry import FEATURES

    folders = {p.name for p in (ROOT / "fmcluster" / "features").iterdir() if (p / "__init__.py").exists()}
    assert set(FEATURES) <= folders
    assert all(name == row.name for name, row in FEATURES.items())


def test_every_feature_hook_is_its_own_slices_function_at_its_layer() -> None:
    """Each hook (``"<module>:<function>"``) names a callable of the row's own feature whose role is the hook's layer
    (:data:`fmcluster.features.registry.HOOK_LAYERS`), so calling it through the registry keeps the layer order."""
    from fmcluster.features.registry import FEATURES, HOOK_LAYERS
    from tests.test_layering import feature_of, layer_of

    seen = set()
    for row in FEATURES.values():
        for hook, spec in row.hooks().items():
            module, _, func = spec.partition(":")
            assert feature_of(module) == row.name, spec
            assert layer_of(module) == HOOK_LAYERS[hook], spec
            assert callable(getattr(importlib.import_module(module), func)), spec
            seen.add(hook)
    assert seen == set(HOOK_LAYERS)


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_render_composes_every_features_files_in_registry_order(key: str) -> None:
    """``render_blueprint`` is exactly the features' render hooks, in registry order, then the orchestrator's, each
    path split at its last ``/``."""
    from fmcluster.features.registry import FEATURES
    from fmcluster.review.render import render_blueprint

    bp = load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml")
    rc = resolve(bp)
    expected = [rel for f in FEATURES.values() for rel in f.render_files(rc)] + list(row_for(bp.orchestrator).render_files(rc))
    got = render_blueprint(bp)
    assert sorted(f"{folder}/{name}" for folder, files in got.items() for name in files) == sorted(expected)
    assert "versions.txt" in got[rc.groups[0].name]
    assert (rc.groups[0].name in got and ("nccl-tests.sbatch" in got[rc.groups[0].name])) is rc.profile.runs_slurm


# ---- stack hooks and plan slots (the core names no feature) -------------------------------------------------------
def test_stack_order_builds_every_stack_role_once_from_a_stack_hook() -> None:
    """Every role of :class:`StackNames` is built once, by a feature whose row has a ``stack`` hook or by the
    orchestrator row's extra or late stack; a feature's stack hook is in the order exactly when it has one; the late
    stack comes after the cluster."""
    from dataclasses import fields

    from fmcluster.features.registry import FEATURES, ORCHESTRATOR, ORCHESTRATOR_LATE, STACK_ORDER
    from fmcluster.resolved import StackNames

    roles = [role for role, _ in STACK_ORDER]
    providers = [p for _, p in STACK_ORDER if p not in (ORCHESTRATOR, ORCHESTRATOR_LATE)]
    assert sorted(roles) == sorted(f.name for f in fields(StackNames))
    assert sorted(providers) == sorted(name for name, row in FEATURES.items() if row.stack is not None)
    assert [p for _, p in STACK_ORDER].count(ORCHESTRATOR) == 1
    assert [p for _, p in STACK_ORDER].count(ORCHESTRATOR_LATE) == 1
    assert roles.index("cluster") < [p for _, p in STACK_ORDER].index(ORCHESTRATOR_LATE)


def _slot_fields(cls: type) -> set[str]:
    """Fields of ``cls`` typed by a protocol of fmcluster/resolved/slots.py (annotation names a ``*Slot``)."""
    import re
    from dataclasses import fields

    from fmcluster.resolved import slots

    names = {n for n in vars(slots) if n.endswith("Slot")}
    return {f.name for f in fields(cls) if set(re.findall(r"\w+", str(f.type))) & names}


def test_plan_slots_are_exactly_the_protocol_typed_fields() -> None:
    """Each ``plan_slot``/``group_plan_slot`` names a field of ResolvedCluster/ResolvedGroup typed by a slot protocol,
    and every such field is filled by exactly one row."""
    from fmcluster.features.registry import FEATURES
    from fmcluster.resolved import ResolvedCluster, ResolvedGroup

    plan_slots = [f.plan_slot for f in FEATURES.values() if f.plan is not None]
    group_slots = [f.group_plan_slot for f in FEATURES.values() if f.group_plan is not None]
    assert sorted(plan_slots) == sorted(_slot_fields(ResolvedCluster))
    assert sorted(group_slots) == sorted(_slot_fields(ResolvedGroup))
    assert all((f.plan is None) is (f.plan_slot is None) and (f.group_plan is None) is (f.group_plan_slot is None)
               for f in FEATURES.values())


@pytest.mark.parametrize("key", sorted(EXAMPLE))
def test_each_feature_reads_its_own_plan_of_every_example(key: str) -> None:
    """The slots hold the features' own frozen plans: each narrowing function returns the very object in the slot."""
    from fmcluster.features.accounting.plan import AccountingPlan, as_accounting_plan
    from fmcluster.features.containers.plan import containers_of
    from fmcluster.features.network.plan import SubnetUsage, as_subnet_usage
    from fmcluster.features.node.plan_image import ResolvedImage, image_of

    rc = resolve(load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml"))
    assert isinstance(rc.subnet, SubnetUsage) and as_subnet_usage(rc.subnet) is rc.subnet
    assert isinstance(rc.accounting, AccountingPlan) and as_accounting_plan(rc.accounting) is rc.accounting
    assert containers_of(rc) == rc.containers
    assert all(isinstance(g.image, ResolvedImage) and image_of(g) is g.image for g in rc.groups)
    assert (rc.stacks.accounting is not None) is rc.accounting.creates_database


def _narrow_cases() -> list[tuple[str, Any]]:
    from dataclasses import replace

    from fmcluster.features.accounting.plan import as_accounting_plan
    from fmcluster.features.containers.plan import containers_of
    from fmcluster.features.network.plan import as_subnet_usage
    from fmcluster.features.node.plan_image import image_of

    rc = resolve(load_blueprint(ROOT / "blueprints" / "default.yaml"))
    return [
        ("subnet usage expected, got object", lambda: as_subnet_usage(object())),
        ("accounting plan expected, got str", lambda: as_accounting_plan("database")),
        ("resolved containers expected, got object", lambda: containers_of(replace(rc, containers=(object(),)))),
        ("resolved image expected, got dict", lambda: image_of(replace(rc.groups[0], image={}))),
    ]


@pytest.mark.parametrize("case", range(4))
def test_a_slot_filled_by_another_hook_is_refused(case: int) -> None:
    message, call = _narrow_cases()[case]
    with pytest.raises(TypeError, match=message):
        call()


def test_a_feature_without_a_hook_says_so() -> None:
    from fmcluster.features.registry import Feature

    bare = Feature("bare")
    with pytest.raises(LookupError, match="feature 'bare' looks up no parent image"):
        bare.newest_parent_image(None, "aws-parallelcluster-*", "x86_64")
    with pytest.raises(LookupError, match="feature 'bare' has no resolved plan"):
        bare.resolve_plan(None, None)
    with pytest.raises(LookupError, match="feature 'bare' has no compute-group plan"):
        bare.resolve_group_plan(None, None, None, efa_enabled=True)
    assert (bare.build_stack(None), bare.hooks()) == (None, {})


def test_stack_context_gives_a_built_stack_of_its_type_only() -> None:
    """A hook reads an earlier stack by role and type; a missing role or another type is a wiring error."""
    import aws_cdk as cdk

    from fmcluster.features.network.stack import NetworkStack
    from fmcluster.stacks.context import StackContext

    app = cdk.App()
    ctx = StackContext(app, resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")),
                       cdk.Environment(region="us-east-1"), allow_data_destruction=False)
    with pytest.raises(LookupError, match="no 'network' stack built yet \\(built: none\\)"):
        ctx.stack("network", NetworkStack)
    assert ctx.find("observability", cdk.Stack) is None
    plain = cdk.Stack(app, "plain")
    ctx.built["network"] = plain
    with pytest.raises(TypeError, match="stack 'network' is a Stack, not a NetworkStack"):
        ctx.find("network", NetworkStack)
    assert ctx.stack("network", cdk.Stack) is plain


@pytest.mark.parametrize("key", sorted(ORCHESTRATORS))
def test_every_slurm_row_says_how_its_slurm_presents_gpus(key: str) -> None:
    """Every batch script fmcluster renders reads the profile's ``slurm_gpus`` (the first jobs, the acceptance gate):
    a Slurm orchestrator must state it with its sources; one without Slurm has none, and asking for it is an error."""
    from fmcluster.orchestrators.profile import sbatch_gpus

    prof = ORCHESTRATORS[key].profile(load_blueprint(ROOT / "blueprints" / f"{EXAMPLE[key]}.yaml").orchestrator)
    if not prof.runs_slurm:
        assert prof.slurm_gpus is None
        with pytest.raises(ValueError, match="runs no Slurm"):
            sbatch_gpus(prof, 8)
        return
    assert prof.slurm_gpus is not None and prof.slurm_gpus.source
    asked, note = sbatch_gpus(prof, 8)
    assert asked == (8 if prof.slurm_gpus.gres else None)
    assert sbatch_gpus(prof, 0)[0] is None  # a CPU group asks for no GPU
    assert bool(prof.slurm_gpus.unverified) is any(line.startswith("unverified: ") for line in note)
