"""One-way data flow: lower layers never import upper ones (docs/architecture.md "Data flows one way").

Layer order, lowest first: topology (standard library only: the controller node runs it) -> severity (the
words) -> catalog -> acceptance (the fleet gate's judge) -> blueprint (model) -> resolved ->
validation (loader, rules) -> output (the one printer) -> templates -> preflight -> constructs -> stacks
-> review -> cli. A package may import itself and the
packages below it, never one above.

Orchestrator slices (``fmcluster/orchestrators/<slice>/``, docs/architecture.md "Slices") cut across the layers: each
module of a slice has a role, named by its file (:data:`ROLES`), and the role is its layer (a slice's ``rules.py`` is
a validation module, its ``construct.py`` a constructs module). A slice imports only the core and the slices it
declares in its ``__init__.py`` (``USES``). The core imports no slice except through the registries
(``fmcluster/orchestrators/registry.py``, ``fmcluster/features/registry.py``, whose hooks name a slice's modules and
are imported when called): :data:`CORE_TO_SLICE` is empty. Feature slices (``fmcluster/features/<slice>/``, e.g.
observability) are read the same way: each module's role is its layer, and the core modules that still import a
feature directly (the typed composition of feature plans and constructs in ``resolve()`` and the app builder) are
listed in :data:`CORE_TO_FEATURE` (a ratchet: the list may only shrink).

Imports are read with :mod:`ast`, every form counted: ``import a.b``, ``from a import b`` (names ``a`` and ``a.b``),
relative imports (resolved against the file's package),
parenthesised multi-line imports and imports inside functions (lazy imports are still imports).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "fmcluster"

LAYERS = ("topology", "severity", "catalog", "acceptance", "blueprint", "resolved", "validation", "output", "templates",
          "preflight", "constructs", "stacks", "review", "provision", "cli")
RANK = {layer: i for i, layer in enumerate(LAYERS)}

#: The layer of each role a module of ``fmcluster/orchestrators/`` plays, by its file name's first word:
#: ``profile``/``registry``/``plan`` resolve, ``rules`` validate, ``construct``/``addons`` build constructs,
#: ``stack*`` wire stacks, ``review`` reads synthesized output. Feature slices (``fmcluster/features/``) add
#: ``pins`` (pinned releases and their sources, catalog data), ``endpoints`` (derived from the resolved cluster),
#: ``render*`` (rendered files) and ``provision*`` (after-deploy provisioning).
ROLES = {"profile": "resolved", "registry": "resolved", "plan": "resolved", "rules": "validation",
         "construct": "constructs", "addons": "constructs", "stack": "stacks", "review": "review",
         "pins": "catalog", "endpoints": "resolved", "render": "templates", "provision": "provision",
         "handler": "catalog"}
SLICES = PKG / "orchestrators"
FEATURES = PKG / "features"
#: The folders that hold slices, by the package name under ``fmcluster``.
SLICE_ROOTS = {"orchestrators": SLICES, "features": FEATURES}
#: Core modules that still import a slice directly (not through the registry). Each is a debt: remove the import
#: and its line; never add one (docs/decisions.md).
CORE_TO_SLICE: dict[str, set[str]] = {}
#: Modules outside ``fmcluster/features/`` that still import a feature slice's module directly. Each is a debt, as in
#: :data:`CORE_TO_SLICE`: remove the import and its line; never add one.
CORE_TO_FEATURE: dict[str, set[str]] = {}



# ---- the import parser -----------------------------------------------------------------------------
def module_name(path: Path, root: Path = ROOT) -> tuple[str, bool]:
    """Dotted module name of ``path`` under ``root`` and whether it is a package (``__init__.py``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every dotted name an import in ``source`` (the module ``module``) can bind.

    ``import a.b`` gives ``a.b``; ``from a import b, c`` gives ``a``, ``a.b`` and ``a.c`` (``b`` may be a
    submodule); relative imports are resolved against ``module``'s package. Imports anywhere count,
    inside functions and ``if TYPE_CHECKING`` blocks too.
    """
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                up = node.level - 1
                if up > len(parts):
                    raise ValueError(f"{module}: relative import beyond the top package (level {node.level})")
                base = ".".join([*parts[:len(parts) - up], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return names


def within(name: str, prefix: str) -> bool:
    """``name`` is the module ``prefix`` or something inside it."""
    return name == prefix or name.startswith(prefix + ".")


def role_of(module: str) -> str | None:
    """The role of a module of ``fmcluster.orchestrators`` or ``fmcluster.features`` (its file name's first word,
    :data:`ROLES`), or ``None`` for a package (a slice's ``__init__``) or a name that is not such a module."""
    parts = module.split(".")
    if parts[0] != "fmcluster" or len(parts) < 3 or parts[1] not in SLICE_ROOTS:
        return None
    if (SLICE_ROOTS[parts[1]] / parts[2]).is_dir():  # fmcluster.<root>.<slice>.<module>[.<name>]
        stem = parts[3] if len(parts) > 3 else ""
    else:  # fmcluster.<root>.<module>[.<name>]
        stem = parts[2]
    role = stem.split("_")[0]
    return role if role in ROLES else None


def layer_of(module: str) -> str | None:
    """The layer of a dotted name inside ``fmcluster`` (``None``: the root package, outside fmcluster, or a slice's
    package itself); a module of ``fmcluster.orchestrators`` or ``fmcluster.features`` has its role's layer."""
    parts = module.split(".")
    if parts[0] != "fmcluster" or len(parts) < 2:
        return None
    if parts[1] in SLICE_ROOTS:
        role = role_of(module)
        return ROLES[role] if role else None
    return parts[1] if parts[1] in RANK else None


def package_files() -> Iterator[tuple[Path, str, set[str]]]:
    """(file, module name, imported names) for every module of fmcluster."""
    for path in sorted(PKG.rglob("*.py")):
        module, is_package = module_name(path)
        yield path, module, imported_modules(path.read_text(), module, is_package)


def rel(path: Path) -> str:
    return str(path.relative_to(PKG))


# ---- the parser catches every import form ------------------------------------------------------------
PARSER_CASES = [
    ("plain import", "import fmcluster.constructs.capacity\n", "fmcluster.review.plan", "fmcluster.constructs.capacity"),
    ("from package import submodule", "from fmcluster import constructs\n", "fmcluster.review.plan",
     "fmcluster.constructs"),
    ("from module import name", "from fmcluster.constructs.capacity import efa_interface_layout\n",
     "fmcluster.review.plan", "fmcluster.constructs.capacity"),
    ("aliased", "import fmcluster.constructs as c\n", "fmcluster.review.plan", "fmcluster.constructs"),
    ("relative sibling", "from .diff import Assembly\n", "fmcluster.review.plan", "fmcluster.review.diff"),
    ("relative bare", "from . import diff\n", "fmcluster.review.plan", "fmcluster.review.diff"),
    ("relative parent", "from ..constructs import capacity\n", "fmcluster.review.plan",
     "fmcluster.constructs.capacity"),
    ("relative in a package __init__", "from .diff import Assembly\n", "fmcluster.review", "fmcluster.review.diff"),
    ("parenthesised multi-line", "from fmcluster.review import (\n    render,\n    diff,\n)\n",
     "fmcluster.review.plan", "fmcluster.review.diff"),
    ("inside a function", "def f():\n    if True:\n        from fmcluster.constructs import capacity\n",
     "fmcluster.review.plan", "fmcluster.constructs.capacity"),
    ("inside a method", "class A:\n    def m(self):\n        import fmcluster.validation.rules\n",
     "fmcluster.cli", "fmcluster.validation.rules"),
    ("under TYPE_CHECKING", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from fmcluster.validation import rules\n", "fmcluster.features.node.render_context", "fmcluster.validation.rules"),
]


@pytest.mark.parametrize(("form", "source", "module", "expected"), PARSER_CASES, ids=[c[0] for c in PARSER_CASES])
def test_parser_catches_every_import_form(tmp_path: Path, form: str, source: str, module: str, expected: str) -> None:
    parts = module.split(".")
    is_package = form.endswith("__init__")
    path = tmp_path.joinpath(*parts, "__init__.py") if is_package else tmp_path.joinpath(*parts[:-1], parts[-1] + ".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    name, package = module_name(path, tmp_path)
    assert (name, package) == (module, is_package)
    found = imported_modules(path.read_text(), name, package)
    assert any(within(n, expected) for n in found), (form, found)


def test_parser_does_not_invent_imports() -> None:
    found = imported_modules("import fmcluster.constructsx\nx = 'from fmcluster import constructs'\n", "fmcluster.review.plan")
    assert not any(within(n, "fmcluster.constructs") for n in found)


# ---- the rules -------------------------------------------------------------------------------------------
def layer_violations() -> set[str]:
    bad = set()
    for path, module, names in package_files():
        own = layer_of(module)
        if own is None:
            continue
        for name in names:
            other = layer_of(name)
            if other is not None and RANK[other] > RANK[own]:
                bad.add(f"{rel(path)}: {name}")
    return bad


def banned_imports() -> set[str]:
    """The specific bans, on top of the layer order (a slice module is judged by its role's layer)."""
    bad = set()
    for path, module, names in package_files():
        layer = layer_of(module)
        for name in names:
            if layer == "constructs" and within(name, "fmcluster.validation"):
                bad.add(f"{rel(path)}: {name} (constructs never import fmcluster.validation)")
            if layer == "review" and layer_of(name) == "constructs":
                bad.add(f"{rel(path)}: {name} (review never imports constructs)")
            if module == "fmcluster.review.plan" and within(name, "fmcluster.review.diff"):
                bad.add(f"{rel(path)}: {name} (the plan reads cdk.out through review.assembly, not review.diff)")
            if (within(name, "fmcluster.validation.rules") and not within(module, "fmcluster.validation")
                    and role_of(module) != "rules"):
                bad.add(f"{rel(path)}: {name} (only fmcluster.validation and the slices' rules modules use the rules)")
    return bad


def test_each_layer_imports_only_lower_layers() -> None:
    assert sorted(layer_violations()) == []


def test_specific_bans() -> None:
    assert sorted(banned_imports()) == []


def test_nothing_outside_validation_imports_the_rules_tools_and_app_included() -> None:
    files = [ROOT / "app.py", *sorted((ROOT / "tools").glob("*.py"))]
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in files for n in imported_modules(p.read_text(), p.stem)
           if within(n, "fmcluster.validation.rules")]
    assert bad == []


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PKG.glob("*.py") if p.name != "__init__.py"}
    assert packages | modules == {*LAYERS, *SLICE_ROOTS}


# ---- orchestrator slices ------------------------------------------------------------------------------
def slice_of(module: str) -> str | None:
    """The slice a dotted name belongs to (``fmcluster.orchestrators.pcs.rules`` -> ``pcs``), or ``None``."""
    parts = module.split(".")
    if parts[:2] != ["fmcluster", "orchestrators"] or len(parts) < 3 or not (SLICES / parts[2]).is_dir():
        return None
    return parts[2]


def declared_uses(slice_name: str, root: Path = SLICES) -> set[str]:
    """The slices ``fmcluster/<root>/<slice_name>/__init__.py`` declares in ``USES``."""
    tree = ast.parse((root / slice_name / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "USES" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_every_slice_module_has_a_role() -> None:
    """A module of a slice is named for its role, so its layer is known (a new kind of module needs a ROLES row)."""
    unknown = [rel(p) for root in SLICE_ROOTS.values() for p in sorted(root.rglob("*.py"))
               if p.name != "__init__.py" and role_of(module_name(p)[0]) is None]
    assert unknown == []


def test_a_slice_imports_only_the_core_and_the_slices_it_declares() -> None:
    """An orchestrator slice imports another orchestrator slice or a feature only when its ``USES`` names it."""
    bad = set()
    for path, module, names in package_files():
        own = slice_of(module)
        if own is None:
            continue
        allowed = {own, *declared_uses(own)}
        for n in names:
            other = slice_of(n) or feature_of(n)
            if other is not None and other not in allowed:
                bad.add(f"{rel(path)}: {n}")
    assert sorted(bad) == []


def test_the_core_reaches_slices_only_through_the_registry() -> None:
    """Outside ``fmcluster/orchestrators/`` a slice is reached only through the registry (its hooks), never imported:
    :data:`CORE_TO_SLICE` is empty (equality: any new import fails)."""
    found: dict[str, set[str]] = {}
    for _path, module, names in package_files():
        if within(module, "fmcluster.orchestrators"):
            continue
        hits = {".".join(n.split(".")[:4]) for n in names if slice_of(n) is not None and n.count(".") >= 3}
        if hits:
            found[module] = hits
    assert found == CORE_TO_SLICE


def feature_of(module: str) -> str | None:
    """The feature slice a dotted name belongs to (``fmcluster.features.observability.rules`` -> ``observability``)."""
    parts = module.split(".")
    if parts[:2] != ["fmcluster", "features"] or len(parts) < 3 or not (FEATURES / parts[2]).is_dir():
        return None
    return parts[2]


def test_a_feature_imports_only_the_features_it_declares() -> None:
    """A feature imports no orchestrator slice, and another feature only when its ``USES`` names it."""
    bad = set()
    for path, module, names in package_files():
        own = feature_of(module)
        if own is None:
            continue
        allowed = {own, *declared_uses(own, FEATURES)}
        bad |= {f"{rel(path)}: {n}" for n in names
                if slice_of(n) is not None or feature_of(n) not in (None, *allowed)}
    assert sorted(bad) == []


def test_the_core_imports_features_only_where_listed() -> None:
    """Outside the slices (``fmcluster/features/``, and ``fmcluster/orchestrators/`` whose slices declare the features
    they use) the modules importing a feature slice's module are exactly :data:`CORE_TO_FEATURE` (equality: a removed
    import must leave the list, a new one fails)."""
    found: dict[str, set[str]] = {}
    for _path, module, names in package_files():
        if within(module, "fmcluster.features") or slice_of(module) is not None:
            continue
        hits = {".".join(n.split(".")[:4]) for n in names if feature_of(n) is not None and n.count(".") >= 3}
        if hits:
            found[module] = hits
    assert found == CORE_TO_FEATURE


@pytest.mark.parametrize(("module", "layer"), [
    ("fmcluster.orchestrators.pcs.rules", "validation"),
    ("fmcluster.orchestrators.pcs.construct", "constructs"),
    ("fmcluster.orchestrators.hyperpod_eks.stack_eks", "stacks"),
    ("fmcluster.orchestrators.hyperpod_eks.stack_eks.EksStack", "stacks"),
    ("fmcluster.orchestrators.registry", "resolved"),
    ("fmcluster.orchestrators.profile.OrchestratorProfile", "resolved"),
    ("fmcluster.orchestrators.pcs", None),
    ("fmcluster.orchestrators", None),
    ("fmcluster.features.observability.render_alert_rules", "templates"),
    ("fmcluster.features.observability.render_alert_rules.AlertRule", "templates"),
    ("fmcluster.features.observability.rules", "validation"),
    ("fmcluster.features.observability.construct", "constructs"),
    ("fmcluster.features.observability.stack", "stacks"),
    ("fmcluster.features.observability.provision_grafana", "provision"),
    ("fmcluster.features.observability.endpoints", "resolved"),
    ("fmcluster.features.observability.pins", "catalog"),
    ("fmcluster.features.observability", None),
    ("fmcluster.features", None),
])
def test_layer_of_a_slice_module_is_its_role(module: str, layer: str | None) -> None:
    assert layer_of(module) == layer


# ---- constructs never receive the whole Blueprint ------------------------------------------------------
BLUEPRINT_NAMES = ("fmcluster.blueprint.Blueprint", "fmcluster.blueprint.model.Blueprint")


def blueprint_uses(source: str, module: str, is_package: bool = False) -> list[str]:
    """Where ``source`` imports or names the ``Blueprint`` model (as a name, an attribute or a string
    annotation)."""
    found = [n for n in imported_modules(source, module, is_package) if n in BLUEPRINT_NAMES]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "Blueprint":
            found.append(f"line {node.lineno}: name Blueprint")
        elif isinstance(node, ast.Attribute) and node.attr == "Blueprint":
            found.append(f"line {node.lineno}: attribute .Blueprint")
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] == "Blueprint":
            found.append("import of Blueprint")
    for node in ast.walk(ast.parse(source)):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]
            annotations = [a.annotation for a in args if a is not None and a.annotation is not None]
            annotations += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for ann in annotations:
            for sub in ast.walk(ann):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "Blueprint" in sub.value.split("."):
                    found.append(f"line {sub.lineno}: string annotation {sub.value!r}")
    return found


@pytest.mark.parametrize(("source", "caught"), [
    ("from fmcluster.blueprint import Blueprint\n", True),
    ("from fmcluster.blueprint.model import (\n    ComputeGroup,\n    Blueprint,\n)\n", True),
    ("from ..blueprint.model import Blueprint as B\n", True),
    ("import fmcluster.blueprint.model as m\ndef f(bp: m.Blueprint) -> None: ...\n", True),
    ("def f(bp: 'Blueprint') -> None: ...\n", True),
    ("def f():\n    from fmcluster.blueprint import Blueprint\n", True),
    ("from fmcluster.blueprint.model import ComputeGroup, StorageSpec\n# the whole Blueprint never\n", False),
])
def test_blueprint_check_catches_every_form(source: str, caught: bool) -> None:
    assert bool(blueprint_uses(source, "fmcluster.constructs.capacity")) is caught


def test_constructs_never_receive_the_whole_blueprint() -> None:
    offenders = {}
    for path in sorted([*(PKG / "constructs").rglob("*.py"), *SLICES.rglob("*.py"), *FEATURES.rglob("*.py")]):
        module, is_package = module_name(path)
        if layer_of(module) != "constructs":
            continue
        uses = blueprint_uses(path.read_text(), module, is_package)
        if uses:
            offenders[rel(path)] = uses
    assert offenders == {}
