"""The organisation layer: one file that restricts and extends every blueprint of a fork, without code edits.

``fmcluster.org.yaml`` beside a blueprint (or ``fmcluster --org FILE``, ``cdk ... -c org=FILE``, or the
``FMCLUSTER_ORG`` environment variable; ``none`` turns discovery off) holds:

- ``allowed``: Regions, compute instance types (exact names or shell-style patterns such as ``p5*``),
  orchestrators and capacity types. Anything not listed is refused; a list left out allows everything.
- ``required_tags``: tag key -> regular expression the whole value must match (``.+``: any non-empty value).
- ``defaults``: a blueprint fragment merged under every blueprint (mappings merge key by key, the blueprint
  wins; any other value, lists included, is replaced by the blueprint's): default tags, a default image
  (``software.image``), and per orchestrator ``orchestrator.<kind>`` sections of which a blueprint gets only its
  own kind's (:func:`defaults_for`).
- ``software_stacks``: extra known-good stacks, same fields as ``catalog/data/software.yaml``'s stacks (with
  ``sources`` mapping each component to a URL). They are checked when the file loads (known families,
  architectures and operating systems; pinned driver, GDRCopy and EFA-installer artifacts) and then by the
  same software rules as catalog stacks whenever a blueprint uses one. ``fmcluster catalog stacks`` documents
  them from the data.

Keys starting with ``x-`` (in the organisation file and at the top of a blueprint) are ignored: they hold
YAML anchors (``x-gpu: &gpu {...}``, then ``<<: *gpu``), the convention of the Compose specification
(https://github.com/compose-spec/compose-spec/blob/main/spec.md#extension).

A blueprint may name a base blueprint with ``extends: <path relative to it>``: organisation defaults, then
the base (which may itself extend another, at most :data:`MAX_EXTENDS` deep), then the blueprint.

Every violation is a :class:`Problem` at the blueprint's YAML path with an ``ORG-*`` rule id whose message
names the organisation file and its rule (``allowed.regions``, ``required_tags.cost-center``); errors in
the organisation file itself raise :class:`BlueprintError` naming that file, among them patterns that could never
work as meant (:func:`_check_patterns`); its warnings (an allow-list entry that allows nothing) come with the
blueprint's problems, naming that file. A broken ``extends`` chain raises :class:`ExtendsError`, alone.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fmcluster.blueprint.errors import BlueprintError, Problem, format_path
from fmcluster.blueprint.model import FILE_KEYS, MAX_EXTENDS, OrchestratorKind, OrchestratorSpec
from fmcluster.severity import did_you_mean

#: File name looked for beside a blueprint.
ORG_FILE = "fmcluster.org.yaml"
#: Environment variable naming the organisation file (``none``: no organisation file at all).
ORG_ENV = "FMCLUSTER_ORG"
#: Prefix of keys that are ignored (YAML anchors).
EXTENSION_PREFIX = "x-"
#: The key of the blueprint fragment merged under every blueprint (:attr:`Organisation.defaults`): a problem in a
#: value it gave is shown at its path in the organisation file, under this key (the loader's ``_Origins``).
DEFAULTS_KEY = "defaults"

#: An ``orchestrator.kind`` value (the blueprint model's type of the field).
Orchestrator = OrchestratorKind
CapacityType = Literal["on_demand", "spot", "odcr", "capacity_block", "training_plan"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Allowed(_Strict):
    """What blueprints may use; a list left out (null) allows everything."""

    regions: list[str] | None = Field(None, description="AWS Regions, e.g. [us-east-1, us-west-2].")
    instance_types: list[str] | None = Field(
        None, description="Compute group instance types: names or shell-style patterns (p5*.48xlarge). Head and login "
                          "node types are not restricted.")
    orchestrators: list[Orchestrator] | None = Field(None, description="orchestrator.kind values.")
    capacity_types: list[CapacityType] | None = Field(None, description="compute[].capacity.type values.")


class StackSpec(_Strict):
    """An extra known-good software stack (fields as in catalog/data/software.yaml)."""

    description: str
    driver: str
    fabric_manager: str | None = None
    kernel_modules: Literal["open", "proprietary"] = "open"
    cuda: str
    nccl: str
    efa_installer: str
    gdrcopy: str
    families: list[str] = Field(min_length=1)
    cpu_architectures: list[Literal["x86_64", "arm64"]] = Field(min_length=1)
    os: list[Literal["ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023"]] = Field(min_length=1)
    sources: dict[str, str] = Field(description="Component -> URL or repository path of the source of its version.")


class Organisation(_Strict):
    """An organisation file (``fmcluster.org.yaml``)."""

    name: str | None = Field(None, description="The organisation, for messages.")
    allowed: Allowed = Field(default_factory=Allowed)
    required_tags: dict[str, str] = Field(
        default_factory=dict, description="Tag key -> regular expression the whole value must match (Python re).")
    defaults: dict[str, Any] = Field(default_factory=dict, description="Blueprint fragment merged under every blueprint.")
    software_stacks: dict[str, StackSpec] = Field(default_factory=dict, description="Extra known-good software stacks.")


def blueprint_file_schema() -> dict[str, Any]:
    """JSON Schema of a blueprint *file* (``fmcluster schema``): the model's schema plus what the loader accepts
    before the model sees it: ``extends`` (the path of a base blueprint, :func:`resolve_extends`) and top-level keys
    starting with :data:`EXTENSION_PREFIX` (any value: YAML anchors, :func:`strip_extensions`). A file with ``extends``
    needs none of the model's required top-level keys (its bases may give them); nested required keys are still
    required in the file that has their section (a limit: a base may give them too)."""
    from fmcluster.blueprint.model import Blueprint

    schema = Blueprint.model_json_schema()
    schema["properties"] = {**schema["properties"], "extends": {
        "type": "string", "minLength": 1, "title": "Extends", "description": FILE_KEYS["extends"]}}
    schema["patternProperties"] = {f"^{EXTENSION_PREFIX}": {"description": "Ignored (e.g. YAML anchors)."}}
    required = schema.pop("required", [])
    schema["if"], schema["then"], schema["else"] = {"required": ["extends"]}, {}, {"required": required}
    return schema


def org_json_schema() -> dict[str, Any]:
    """JSON Schema of the organisation file (pydantic)."""
    return Organisation.model_json_schema()


# ---- finding and loading -------------------------------------------------------------------------------
#: Set by ``fmcluster --org FILE`` for the rest of one CLI run (None: discover).
_cli_org: str | None = None


def use_organisation(path: str | None) -> None:
    """Make ``path`` the organisation file of every load in this process (``None``: back to discovery)."""
    global _cli_org
    _cli_org = path


def find_organisation(blueprint_file: str | None, explicit: str | Path | None = None) -> Path | None:
    """The organisation file for a blueprint: ``explicit``, else ``fmcluster --org``, else ``$FMCLUSTER_ORG``, else
    ``fmcluster.org.yaml`` in the blueprint's folder. ``none`` (any of the three) means no file.

    A file found beside the blueprint is named as the blueprint is, through the folder the user gave
    (``blueprints/x.yaml`` -> ``blueprints/fmcluster.org.yaml``, ``x.yaml`` -> ``fmcluster.org.yaml`` in the working
    directory), so every message and ``--json`` names a path the user can open; beside a blueprint reached through a
    symbolic link (its real folder differs), the real folder's absolute path."""
    chosen = str(explicit) if explicit is not None else _cli_org or org_from_env()
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "none") else Path(chosen)
    if blueprint_file and Path(blueprint_file).is_file():
        beside = Path(blueprint_file).resolve().parent / ORG_FILE
        if not beside.is_file():
            return None
        as_named = Path(blueprint_file).parent / ORG_FILE
        return as_named if as_named.resolve() == beside else beside
    return None


def org_from_env() -> str | None:
    """``$FMCLUSTER_ORG``, or ``None`` when it is unset, empty or only blanks: a blank variable counts as unset, so
    discovery goes on, as click counts an empty variable of an option as not given (pallets/click
    ``src/click/core.py``, ``Parameter.resolve_envvar_value``: "its value is empty"); blanks too, a value no file is
    named by. ``--org ""`` is refused instead (exit 2), a command line being typed on purpose."""
    value = os.environ.get(ORG_ENV)
    return value if value is not None and value.strip() else None


def strip_extensions(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without its top-level ``x-`` keys."""
    return {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(EXTENSION_PREFIX))}


def _read_yaml(path: Path, what: str, shown: Path | None = None) -> Any:
    """The YAML document of ``path`` (a base blueprint or the organisation file); :class:`BlueprintError` naming that
    file (as ``shown``, default ``path``; in each problem too, so ``--json`` names it) when it cannot be read or is
    not YAML."""
    from fmcluster.validation.loader import too_long_number, yaml_error_text

    name = str(shown or path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise BlueprintError(name, [Problem("", (
            f"the {what} is not UTF-8 text, got byte 0x{e.object[e.start]:02x} at byte offset {e.start}; allowed a "
            "UTF-8 file"), file=name, value=f"0x{e.object[e.start]:02x}")]) from None
    except OSError as e:
        raise BlueprintError(name, [Problem("", f"cannot read the {what} ({e.strerror or e.__class__.__name__})",
                                                 file=name)]) from None
    except RecursionError:
        raise BlueprintError(name, [Problem("", f"the {what} is nested too deeply; allowed an ordinary YAML file",
                                                 file=name)]) from None
    except ValueError:  # a number longer than Python reads (yaml.YAMLError is not a ValueError)
        raise BlueprintError(name, [Problem("", too_long_number(), file=name, value=None)]) from None
    except yaml.YAMLError as e:  # value: none (what PyYAML says is no value of the file; a second document's text)
        mark = getattr(e, "problem_mark", None)
        raise BlueprintError(name, [Problem("", f"not valid YAML: {yaml_error_text(e)}",
                                                  line=mark.line + 1 if mark else None, file=name, value=None)]) from None


def load_organisation(path: Path) -> tuple[Organisation, list[Problem]]:
    """Parse and check an organisation file; registers its software stacks with the catalog. Returns the file and
    its warnings (:func:`_check_patterns`: an allow-list entry that allows nothing today), each naming the file
    (``Problem.file``) at its line there, for the loader to show with the blueprint's own warnings.

    Raises :class:`BlueprintError` (file = the organisation file) with every problem, errors and warnings, each at its
    line in that file (the line of the key it names, or of its nearest parent written there).
    """
    try:
        org, warnings = _load_organisation(path)
    except BlueprintError as e:
        raise BlueprintError(e.file, sorted(_with_lines(path, e.problems), key=lambda p: p.line or 0)) from None
    return org, sorted(_with_lines(path, warnings), key=lambda p: p.line or 0)


def _with_lines(path: Path, problems: list[Problem]) -> list[Problem]:
    """``problems`` named as problems of the file at ``path`` (``Problem.file``, so the blueprint command that loaded
    it names this file, not the blueprint), each with the line of its YAML path there (the blueprint loader's line
    index)."""
    from dataclasses import replace

    from fmcluster.validation.loader import _index, _line_for, _path_tuple

    problems = [replace(p, file=str(path)) for p in problems]
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
        lines: dict[tuple[Any, ...], int] = {}
        _index(node, lines, [])
    except (OSError, UnicodeDecodeError, yaml.YAMLError, BlueprintError, RecursionError):
        return problems  # unreadable or not YAML: the problem already says so (with its own line)
    return [p if p.line is not None else replace(p, line=_line_for(_path_tuple(p.path, lines), lines) or 1) for p in problems]


def _load_organisation(path: Path) -> tuple[Organisation, list[Problem]]:
    """The organisation file at ``path`` and its warnings; :class:`BlueprintError` when it has an error."""
    raw = _read_yaml(path, "organisation file")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise BlueprintError(str(path), [Problem("", f"the organisation file must be a mapping, got a "
                                                     f"{type(raw).__name__}; allowed keys "
                                                     f"{', '.join(Organisation.model_fields)}", line=1)])
    duplicates = _key_problems(path)
    if duplicates:  # YAML would keep the last value of a duplicate key silently: refused, as in a blueprint
        raise BlueprintError(str(path), duplicates)
    try:
        org = Organisation.model_validate(strip_extensions(raw))
    except ValidationError as e:
        from fmcluster.validation.loader import _convert  # the one home of shape-check messages

        problems = []
        for err in e.errors():
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                allowed = _allowed_keys(loc[:-1])
                problems.append(Problem(format_path(loc), f"unknown key {loc[-1]!r}; allowed {', '.join(allowed)}"
                                                          f"{_hint(str(loc[-1]), allowed)}"))
            else:  # got X; allowed Y, a did-you-mean, the value for --json: as for a blueprint
                problems.append(_convert(err, raw, {}))
        raise BlueprintError(str(path), problems + _check_patterns(raw)) from None
    problems = _check_patterns(raw) + _check_stacks(org)
    if any(p.level == "error" for p in problems):
        raise BlueprintError(str(path), problems)
    from fmcluster.catalog.software import add_overlay_stacks

    refused = add_overlay_stacks({n: s.model_dump() for n, s in org.software_stacks.items()})
    if refused:
        raise BlueprintError(str(path), [Problem(f"software_stacks.{n}", "a stack of this name already exists (in the "
                                                 "catalog or another organisation file); allowed a new name") for n in refused]
                             + problems)
    return org, problems


def _key_problems(path: Path) -> list[Problem]:
    """The duplicate keys and the keys YAML reads as booleans, numbers or null in the file at ``path`` (the blueprint
    loader's check, :func:`fmcluster.validation.loader._index`), each at its line."""
    from fmcluster.validation.loader import _index

    found: list[Problem] = []
    try:
        _index(yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader), {}, found)
    except BlueprintError as e:
        return e.problems
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return []  # read once already by _read_yaml, which reports a file it cannot read
    return sorted(found, key=lambda p: p.line or 0)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Keys allowed at ``loc`` (the parent of an unknown key) in an organisation file."""
    models: dict[tuple[Any, ...], type[BaseModel]] = {(): Organisation, ("allowed",): Allowed}
    model = models.get(tuple(loc), StackSpec)
    return sorted(model.model_fields)


def _hint(value: str, allowed: list[str]) -> str:
    """Did-you-mean (:func:`fmcluster.severity.did_you_mean`)."""
    return did_you_mean(value, allowed)


def _check_patterns(raw: Mapping[str, Any]) -> list[Problem]:
    """The Regions, instance-type patterns and tag expressions of the organisation file's data ``raw`` that could never
    work as meant, each at its own YAML path (so at its line in the file). Errors, certainly mistakes that would
    refuse every value with no word about the file: a tag expression Python cannot compile or reads with a literal
    brace, an instance-type entry with an unclosed ``[``. Warnings, an entry that allows nothing today: a Region the
    installed botocore does not know, an instance-type entry that matches no catalog type. Such an entry harms no
    blueprint (the other entries still allow theirs), and a file shared across fmcluster and botocore versions may
    name a Region or a type newer than this installation's data, so refusing it would refuse every blueprint of every
    team. Reads raw values (a value of the wrong type is the shape check's), so it runs with the shape check and both
    are reported at once."""
    allowed, tags = raw.get("allowed"), raw.get("required_tags")
    allowed = allowed if isinstance(allowed, Mapping) else {}
    tags = tags if isinstance(tags, Mapping) else {}
    return _region_problems(allowed.get("regions")) + _instance_type_problems(allowed.get("instance_types")) + [
        p for key, pattern in tags.items()
        if isinstance(pattern, str) and (p := _tag_pattern_problem(str(key), pattern)) is not None]


def _texts(values: Any) -> list[tuple[int, str]]:
    """The text items of a list, with their index (anything else is left to the shape check)."""
    return [(i, v) for i, v in enumerate(values) if isinstance(v, str)] if isinstance(values, list) else []


def _region_problems(regions: Any) -> list[Problem]:
    """A warning for each entry of ``allowed.regions`` that is no Region the installed botocore knows (R-REGION-1's
    list, :mod:`fmcluster.catalog.regions`, and its did-you-mean): it allows nothing, since a blueprint's ``region``
    must be known too, but it may be a Region newer than this botocore."""
    from fmcluster.catalog.regions import closest_regions, is_known_region

    out = []
    for i, region in _texts(regions):
        if not is_known_region(region):
            close = closest_regions(region)
            hint = f" - did you mean {' or '.join(close)}?" if close else ""
            out.append(Problem(f"allowed.regions[{i}]", f"unknown AWS Region, so this entry allows nothing (a misspelling, "
                                                        f"or a Region newer than the installed botocore {_botocore()}), "
                                                        f"got {region!r}; allowed a Region name from botocore's endpoints "
                                                        f"data such as us-east-1{hint}", level="warning", value=region))
    return out


def _botocore() -> str:
    """The installed botocore's version (whose endpoints data lists the known Regions)."""
    import botocore

    return str(botocore.__version__)


def _instance_type_problems(patterns: Any) -> list[Problem]:
    """Each entry of ``allowed.instance_types`` that matches no instance type of the catalog, which allows nothing a
    blueprint may use (a compute type must be in the catalog): an error when it has an unclosed ``[`` (a broken
    pattern, :func:`_unclosed_bracket`), else a warning (a typo, or a type of a newer catalog)."""
    from fmcluster.catalog.instances import known_instance_types

    known = sorted(known_instance_types())
    out = []
    for i, pattern in _texts(patterns):
        if any(fnmatch.fnmatchcase(t, pattern) for t in known):
            continue
        unclosed = _unclosed_bracket(pattern)
        why = (f"the '[' at position {unclosed} is never closed, so it matches a literal '[' (fnmatch)"
               if unclosed is not None else "it matches no instance type fmcluster knows, so this entry allows nothing "
                                            "(a misspelling, or a type of a newer fmcluster catalog)")
        out.append(Problem(f"allowed.instance_types[{i}]", f"{why}, got {pattern!r}; allowed an instance type name or a "
                                                           "shell-style pattern (*, ?, [seq]) matching catalog types such as "
                                                           f"p5.48xlarge or p5*{did_you_mean(pattern, known)}",
                           level="error" if unclosed is not None else "warning", value=pattern))
    return out


def _unclosed_bracket(pattern: str) -> int | None:
    """The position of the first ``[`` of a shell-style pattern that has no closing ``]``, which :mod:`fnmatch` then
    matches as a literal ``[`` (CPython Lib/fnmatch.py, ``_translate``: a ``[`` whose set never ends is added as
    ``\\[``; after ``[`` and an optional ``!``, a first ``]`` belongs to the set). ``None`` when every set is closed."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] != "[":
            i += 1
            continue
        j = i + 1
        j += j < n and pattern[j] == "!"
        j += j < n and pattern[j] == "]"
        while j < n and pattern[j] != "]":
            j += 1
        if j >= n:
            return i
        i = j + 1
    return None


def _tag_pattern_problem(key: str, pattern: str) -> Problem | None:
    """``required_tags.<key>`` when ``pattern`` is no Python regular expression, or has a brace Python's ``re`` takes
    literally (``CC-\\d{4``: an unclosed repetition is read as the text ``{4``, CPython Lib/re/_parser.py, ``_parse``,
    the ``"{"`` branch; a lone ``}`` likewise), which is almost always a typo of a repetition ``{4}``."""
    where = f"required_tags.{key}"
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as e:  # OverflowError: a repetition count too large
        return Problem(where, f"not a regular expression, got '{pattern}' ({e}); allowed a Python regular expression "
                              "such as CC-\\d{4}", value=pattern)
    brace = _literal_brace(pattern)
    if brace is None:
        return None
    return Problem(where, f"Python reads the {pattern[brace]!r} at position {brace} as a literal brace, not part of a "
                          f"repetition, got '{pattern}'; allowed a closed repetition such as {{4}} or {{2,4}}, or "
                          f"\\{pattern[brace]} for a literal brace", value=pattern)


#: A repetition Python's ``re`` accepts: ``{m}``, ``{m,}``, ``{,n}``, ``{m,n}``, ``{,}`` (CPython Lib/re/_parser.py).
_REPETITION = re.compile(r"\{\d*(,\d*)?\}")


def _literal_brace(pattern: str) -> int | None:
    """The position of the first unescaped brace outside a character class that is not part of a repetition
    (:data:`_REPETITION`; ``{}`` is literal too), or ``None``. ``\\N{NAME}`` escapes are skipped."""
    i, n, in_set = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("N{", i + 1) and "}" in pattern[i + 3:]:
                i = pattern.index("}", i + 3) + 1
            else:
                i += 2
        elif in_set:
            in_set, i = c != "]", i + 1
        elif c == "[":
            i += 1
            i += i < n and pattern[i] == "^"
            i += i < n and pattern[i] == "]"  # a first ] belongs to the set
            in_set = True
        elif c in "{}":
            m = _REPETITION.match(pattern, i) if c == "{" else None
            if m is None or m.group(0) == "{}":
                return i
            i = m.end()
        else:
            i += 1
    return None


def _check_stacks(org: Organisation) -> list[Problem]:
    """What the catalog's own stacks are held to (tests/test_catalog.py test_stack_integrity): known families,
    pinned artifacts, a known EFA-installer bundle."""
    from fmcluster.catalog.instances import get_instance, known_instance_types
    from fmcluster.catalog.software import (
        COMPONENTS,
        driver_artifact,
        efa_bundle,
        gdrcopy_artifact,
        known_efa_installers,
        parse_version,
    )

    families = sorted({get_instance(t).family for t in known_instance_types()})
    out: list[Problem] = []
    for name, s in org.software_stacks.items():
        at = f"software_stacks.{name}"
        for comp in COMPONENTS:
            value = getattr(s, comp)
            if value is None:
                continue
            try:
                parse_version(value)
            except ValueError:
                out.append(Problem(f"{at}.{comp}", f"not a version, got {value!r}; allowed a dotted version such as 2.27.7"))
        for i, fam in enumerate(s.families):
            if fam not in families:
                out.append(Problem(f"{at}.families[{i}]", f"unknown instance family, got {fam!r}; allowed {', '.join(families)}"
                                                     f"{_hint(fam, families)}"))
        for arch in s.cpu_architectures:
            if driver_artifact(s.driver, arch) is None:
                out.append(Problem(f"{at}.driver", f"no pinned NVIDIA driver installer (URL + sha256) for {arch}, got "
                                                   f"{s.driver!r}; allowed a driver the catalog pins (catalog/data/software.yaml "
                                                   "artifacts.nvidia_driver)"))
        if gdrcopy_artifact(s.gdrcopy) is None:
            out.append(Problem(f"{at}.gdrcopy", f"no pinned GDRCopy archive, got {s.gdrcopy!r}; allowed a version the "
                                                "catalog pins (artifacts.gdrcopy)"))
        if s.efa_installer not in known_efa_installers() or not efa_bundle(s.efa_installer).get("libfabric"):
            out.append(Problem(f"{at}.efa_installer", f"unknown EFA installer bundle, got {s.efa_installer!r}; allowed "
                                                      f"{', '.join(known_efa_installers())}"))
        missing = [c for c in ("driver", "cuda", "nccl", "efa_installer", "gdrcopy") if c not in s.sources]
        if missing:
            out.append(Problem(f"{at}.sources", f"every pinned version needs its source, missing {', '.join(missing)}; "
                                                "allowed component -> URL or repository path"))
    return out


# ---- merging -------------------------------------------------------------------------------------------
def merge_under(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, any other value (lists included) of ``top`` replaces."""
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_under(out[k], v)
        else:
            out[k] = v
    return out


def resolve_extends(data: dict[str, Any], file: str) -> tuple[dict[str, Any], list[Problem], list[Path]]:
    """``data`` merged over its ``extends`` chain (paths relative to the extending file), without ``extends``, the
    problems, and the base files read (nearest first: the loader finds there the file and line of a value a base
    gave). A chain that cannot be resolved is one problem at ``extends``, or a base's own problems when it is no YAML
    (:func:`_read_yaml`, naming that base); :func:`apply` reports them alone, :class:`ExtendsError`."""
    own = {k: v for k, v in data.items() if k != "extends"}
    chain: list[str] = []
    current, where = data, Path(file).resolve().parent if Path(file).is_file() else Path.cwd()
    start = str(Path(file).resolve()) if Path(file).is_file() else None  # the blueprint: a base extending it is a cycle
    start_shown = [start] if start is not None else []
    # each base as the user would name it (the blueprint's folder joined with each extends), for messages
    shown: list[Path] = []
    shown_where = Path(file).parent if Path(file).is_file() else Path()
    bases: list[dict[str, Any]] = []

    def refuse(message: str, value: Any) -> tuple[dict[str, Any], list[Problem], list[Path]]:
        # the extends at fault is the one of the file read last: a base's is reported in that base
        return own, [Problem("extends", message, file=str(shown[-1]) if shown else None, value=value)], shown

    while "extends" in current:
        ref = current["extends"]
        if not isinstance(ref, str) or not ref.strip():
            return refuse(f"must be the path of a base blueprint, got {ref!r}; allowed e.g. base.yaml", ref)
        target = (where / ref).resolve()
        cycle = str(target) in chain or str(target) == start
        if cycle or len(chain) >= MAX_EXTENDS:
            why = "a cycle" if cycle else f"more than {MAX_EXTENDS} levels"
            return refuse(f"the extends chain is {why}, got {' -> '.join([*start_shown, *chain, str(target)])}; allowed at most "
                          f"{MAX_EXTENDS} bases, no cycles", ref)
        if not target.is_file():
            what = ("a folder, not a base blueprint" if target.is_dir() else "not a file" if target.exists()
                    else "no such base blueprint")
            return refuse(f"{what}, got {ref!r} (looked for {target}); allowed the path of a blueprint file relative "
                          "to the blueprint", ref)
        try:
            base = _read_yaml(target, "base blueprint", Path(os.path.normpath(shown_where / ref)))
        except BlueprintError as e:  # not YAML, not UTF-8: its problems name the base; the header stays the blueprint's
            return own, e.problems, shown
        if not isinstance(base, dict):
            return refuse(f"the base blueprint is not a mapping, got {ref!r}, which holds "
                          f"{'nothing' if base is None else 'a ' + type(base).__name__}; allowed a blueprint file", ref)
        chain.append(str(target))
        shown.append(Path(os.path.normpath(shown_where / ref)))
        bases.append(strip_extensions(base))
        current, where, shown_where = base, target.parent, shown[-1].parent
    merged: dict[str, Any] = {}
    for b in reversed(bases):
        merged = merge_under(merged, {k: v for k, v in b.items() if k != "extends"})
    return merge_under(merged, own), [], shown


# ---- the organisation's rules ---------------------------------------------------------------------------
def _matches(value: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def check(org: Organisation, org_file: str, data: Mapping[str, Any]) -> list[Problem]:
    """Every way the (merged) blueprint ``data`` breaks ``org``'s rules, as path-qualified errors.

    Reads raw values, so it runs whether or not the blueprint's shape is valid (wrong types are left to the
    shape check). Defaults: ``orchestrator.kind`` parallelcluster, ``capacity.type`` on_demand (the model's).
    """
    label = org_file  # as the user named it, or found beside the blueprint (find_organisation): a path to open
    out: list[Problem] = []

    def refuse(path: str, rule: str, rule_id: str, got: str, allowed: list[str]) -> None:
        shown = ", ".join(allowed) if allowed else "nothing"
        # no did-you-mean: a refused value is a policy decision, not a typo (typos fail the shape check first)
        out.append(Problem(path, f"not allowed by the organisation ({label}: {rule}), got {got!r}; allowed {shown}",
                           rule_id=rule_id, source=org_file))

    a = org.allowed
    region = data.get("region")
    if a.regions is not None and isinstance(region, str) and region not in a.regions:
        refuse("region", "allowed.regions", "ORG-REGION", region, a.regions)
    orch = data.get("orchestrator")
    default_kind = OrchestratorSpec.model_fields["kind"].default
    kind = orch.get("kind", default_kind) if isinstance(orch, Mapping) else default_kind
    if a.orchestrators is not None and isinstance(kind, str) and kind not in a.orchestrators:
        refuse("orchestrator.kind", "allowed.orchestrators", "ORG-ORCHESTRATOR", kind, list(a.orchestrators))
    compute = data.get("compute")
    for i, g in enumerate(compute if isinstance(compute, list) else []):
        if not isinstance(g, Mapping):
            continue
        it = g.get("instance_type")
        if a.instance_types is not None and isinstance(it, str) and not _matches(it, a.instance_types):
            refuse(f"compute[{i}].instance_type", "allowed.instance_types", "ORG-INSTANCE-TYPE", it, a.instance_types)
        cap = g.get("capacity")
        ctype = cap.get("type", "on_demand") if isinstance(cap, Mapping) else "on_demand"
        if a.capacity_types is not None and isinstance(ctype, str) and ctype not in a.capacity_types:
            refuse(f"compute[{i}].capacity.type", "allowed.capacity_types", "ORG-CAPACITY", ctype, list(a.capacity_types))
    tags = data.get("tags")
    tags = tags if isinstance(tags, Mapping) else {}
    for key, pattern in org.required_tags.items():
        value = tags.get(key)
        if value is None:
            # tag keys are case-sensitive (EC2: "Tag keys and values are case-sensitive",
            # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html): Owner is not owner
            other_case = next((k for k in tags if isinstance(k, str) and k.lower() == key.lower()), None)
            hint = f" - tag keys are case-sensitive: rename {other_case!r} to {key!r}" if other_case else ""
            out.append(Problem("tags", f"missing tag required by the organisation ({label}: required_tags.{key}), got "
                                       f"no {key!r} tag; allowed a value matching {pattern}{hint}", rule_id="ORG-TAG",
                               source=org_file))
        elif not re.fullmatch(pattern, str(value)):
            out.append(Problem(f"tags.{key}", f"tag value not allowed by the organisation ({label}: required_tags.{key}), "
                                              f"got {value!r}; allowed a value matching {pattern}", rule_id="ORG-TAG",
                               source=org_file))
    return out


def defaults_for(defaults: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """The organisation's ``defaults`` for a blueprint: its ``orchestrator.<kind>`` section of every kind but the
    blueprint's own is dropped, so one file can hold defaults for each orchestrator and a blueprint gets only those
    of the orchestrator it chooses (never R-ORCH-1 for a section it did not write). The blueprint's kind is its own
    ``orchestrator.kind``, else the defaults', else the model's default."""
    from fmcluster.blueprint.model import OrchestratorSpec
    from fmcluster.orchestrators.registry import KINDS

    orch = defaults.get("orchestrator")
    if not isinstance(orch, Mapping):
        return dict(defaults)
    own = data.get("orchestrator") if isinstance(data.get("orchestrator"), Mapping) else {}
    kind = (own or {}).get("kind") or orch.get("kind") or OrchestratorSpec.model_fields["kind"].default
    kept = {k: v for k, v in orch.items() if k not in KINDS or k == kind}
    return {**defaults, "orchestrator": kept}


def apply(data: dict[str, Any], file: str, explicit: str | Path | None = None
          ) -> tuple[dict[str, Any], list[Problem], str | None, list[Path]]:
    """Strip ``x-`` keys, resolve ``extends``, merge the organisation's defaults under the blueprint and check its
    rules. Returns (merged data, problems, organisation file or None, the base blueprints of ``extends``, nearest
    first); the problems are the organisation rules' findings and the organisation file's own warnings (naming that
    file, :func:`load_organisation`). Raises :class:`BlueprintError` for a bad organisation file (each problem naming it in ``Problem.file``),
    then :class:`ExtendsError` for an ``extends`` chain that cannot be resolved."""
    data = strip_extensions(data)
    data, problems, bases = resolve_extends(data, file)
    org_path = find_organisation(file, explicit)
    if org_path is None:
        _refuse_broken_extends(file, problems, bases)
        return data, problems, None, bases
    try:
        usable, folder, why = org_path.is_file(), org_path.is_dir(), ""
    except OSError as e:  # a name too long: Path.is_file() hides only ENOENT and a few others
        usable, folder, why = False, False, f" ({e.strerror or e})"
    if not usable:
        what = "a folder, not an organisation file" if folder else f"no such organisation file{why}"
        raise BlueprintError(str(org_path), [Problem("", f"{what}, got {str(org_path)!r}; allowed a "
                                                         f"{ORG_FILE} file, or none", file=str(org_path),
                                                     value=str(org_path))])
    org, warnings = load_organisation(org_path)
    _refuse_broken_extends(file, problems, bases)
    merged = merge_under(defaults_for(strip_extensions(org.defaults), data), data)
    return merged, warnings + check(org, str(org_path), merged), str(org_path), bases


class ExtendsError(BlueprintError):
    """The ``extends`` chain of a blueprint cannot be resolved (:func:`resolve_extends`): its one problem, alone, and
    the bases read before it (nearest first), so the loader can name the file and line of the ``extends`` at fault.
    Nothing else is judged: every other finding would be about a half-merged blueprint (keys the base gives
    reported missing, defaults in place of the base's values)."""

    def __init__(self, file: str, problems: list[Problem], bases: list[Path]) -> None:
        super().__init__(file, problems)
        self.bases = bases


def _refuse_broken_extends(file: str, problems: list[Problem], bases: list[Path]) -> None:
    """Raise :class:`ExtendsError` when resolving ``extends`` found ``problems`` (after the organisation file is
    loaded, so a broken organisation file is still reported first)."""
    if problems:
        raise ExtendsError(file, problems, bases)
