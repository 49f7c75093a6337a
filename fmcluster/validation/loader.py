"""Load a blueprint YAML file into a frozen :class:`Blueprint`, reporting every problem at once.

Stages: read -> parse YAML (keeping line numbers) -> shape (pydantic) -> domain rules. When the
shape check fails, the rules that look at one section still run on every section that is valid
on its own, so one run reports as much as possible. Never raises anything but
:class:`BlueprintError`.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import date, time
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from fmcluster.blueprint.errors import NOT_GIVEN, BlueprintError, Problem, format_path
from fmcluster.blueprint.model import (
    AZ_NAME_OR_ID_PATTERN,
    AZ_NAME_PATTERN,
    FILE_KEYS,
    HYPERPOD_TYPE_PATTERN,
    INSTANCE_TYPE_PATTERN,
    MOVED_KEYS,
    PATTERN_HINTS,
    REGION_PATTERN,
    Blueprint,
    tag_count_parts,
)
from fmcluster.severity import closest_names, did_you_mean
from fmcluster.validation import organisation
from fmcluster.validation.rules import run_rules, run_rules_best_effort


@dataclass
class LoadResult:
    blueprint: Blueprint
    warnings: list[Problem] = field(default_factory=list)


def load_blueprint(path: str | Path, *, org: str | Path | None = None) -> Blueprint:
    """Load and validate ``path``; raises :class:`BlueprintError` listing every error.

    ``org``: the organisation file (default: found as :func:`fmcluster.validation.organisation.find_organisation`
    says: ``fmcluster --org``, ``$FMCLUSTER_ORG``, or ``fmcluster.org.yaml`` beside the blueprint)."""
    return load_blueprint_with_warnings(path, org=org).blueprint


def load_blueprint_with_warnings(path: str | Path, *, org: str | Path | None = None) -> LoadResult:
    """Like :func:`load_blueprint`, also returning rule warnings (errors raise)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise BlueprintError(file, [Problem("", (
            f"not UTF-8 text, got byte 0x{e.object[e.start]:02x} at byte offset {e.start}; allowed a UTF-8 file "
            "(YAML 1.2 is UTF-8: save the file as UTF-8)"), value=f"0x{e.object[e.start]:02x}")]) from None
    except OSError as e:
        raise BlueprintError(file, [Problem("", (
            f"cannot read the file ({e.strerror or e.__class__.__name__}), got {file!r}; "
            "allowed a readable blueprint YAML file (a path from the working directory, or absolute)"), value=file)]) from None
    return load_blueprint_text(text, file=file, org=org)


def load_blueprint_text(text: str, *, file: str = "<string>", org: str | Path | None = None) -> LoadResult:
    """Validate blueprint YAML given as text (see :func:`load_blueprint`). The organisation layer (``x-`` keys,
    ``extends``, defaults, rules) applies here, once, for every command."""
    data, lines, written = _parse(text, file)
    try:
        data, org_problems, org_file, bases = organisation.apply(data, file, org)
    except organisation.ExtendsError as e:  # reported alone: the rest would judge a half-merged blueprint
        placed = _Origins.of(file, lines, e.bases, written).place([_with_line(p, lines) for p in e.problems])
        raise BlueprintError(file, placed) from None
    origins = _Origins.of(file, lines, bases, written, org_file)
    org_problems = [_with_line(p, lines) for p in org_problems]
    from_org = origins.tags_from_defaults(data.get("tags"))
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as e:
        problems = [_convert(err, data, lines, written, from_org) for err in e.errors()]
        problems += _section_rule_problems(data, problems, lines)
        raise BlueprintError(file, _in_file_order(origins.place(_dedupe(problems + org_problems)))) from None
    bp._tags_from_organisation = from_org
    problems = _in_file_order(origins.place([_with_line(p, lines) for p in run_rules(bp)] + org_problems))
    if any(p.level == "error" for p in problems):
        raise BlueprintError(file, problems)
    return LoadResult(bp, problems)


@dataclass
class _Origins:
    """Where each value of a blueprint with ``extends`` or organisation defaults was written: the blueprint's line
    index, each base's (nearest first), then the organisation file's ``defaults``. A problem's YAML path belongs to
    the file that wrote the deepest part of it (the blueprint on a tie: its keys win the merge), so a problem
    inherited from a base names that base and its line. The defaults claim only a value they wrote themselves (the
    whole path), and never an organisation rule's finding (``ORG-*``: the blueprint has to change); a problem they
    claim gets its path in the organisation file (``defaults.network.vpc_cidr``, ``defaults.bogus``)."""

    indexes: list[tuple[str | None, dict[tuple[Any, ...], int]]]
    defaults: tuple[str, dict[tuple[Any, ...], int]] | None = None

    @classmethod
    def of(cls, file: str, lines: dict[tuple[Any, ...], int], bases: list[Path],
           written: dict[tuple[Any, ...], yaml.ScalarNode], org_file: str | None = None) -> _Origins:
        """The blueprint's index, every base's and the organisation defaults'; a base's duplicate keys and keys YAML
        reads as non-text are refused as the blueprint's own are (:func:`_index`), naming the base. ``written`` gains
        the bases' scalars (the blueprint's own first), so an inherited value is quoted as it was written."""
        indexes: list[tuple[str | None, dict[tuple[Any, ...], int]]] = [(None, lines)]
        key_problems: list[Problem] = []
        for base in bases:
            base_lines: dict[tuple[Any, ...], int] = {}
            found: list[Problem] = []
            try:
                _index(yaml.compose(base.read_text(encoding="utf-8"), Loader=yaml.SafeLoader), base_lines, found,
                       written)
            except BlueprintError as e:
                found = e.problems
            except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
                pass  # read once already by resolve_extends, which reports a file it cannot read
            key_problems += [replace(p, file=str(base)) for p in found]
            indexes.append((str(base), base_lines))
        if key_problems:
            raise BlueprintError(file, key_problems)
        defaults = _defaults_index(Path(org_file)) if org_file is not None else {}
        return cls(indexes, (org_file, defaults) if org_file is not None and defaults else None)

    def tags_from_defaults(self, tags: Any) -> tuple[str, ...]:
        """The keys of ``tags`` (the merged blueprint's) that only the organisation defaults wrote, in order."""
        if self.defaults is None or not isinstance(tags, dict):
            return ()
        return tuple(str(k) for k in tags if ("tags", k) in self.defaults[1]
                     and all(("tags", k) not in index for _, index in self.indexes))

    def place(self, problems: list[Problem]) -> list[Problem]:
        """``problems`` with the file and line their path was written at, when that is a base or the defaults."""
        if len(self.indexes) == 1 and self.defaults is None:
            return problems
        return [self._placed(p) for p in problems]

    def _known(self) -> set[tuple[Any, ...]]:
        """Every path any of the files wrote (to read a dotted key of a problem's path as one key)."""
        known = {path for _, index in self.indexes for path in index}
        return known | set(self.defaults[1]) if self.defaults is not None else known

    def _placed(self, p: Problem) -> Problem:
        path = _path_tuple(p.path, self._known())
        if p.file is not None:  # already names its file (a base's extends): only its line is missing
            index = dict(self.indexes).get(p.file)
            return p if p.line is not None or index is None else replace(p, line=_line_for(path, index))
        depth = [(_depth(path, index), -i) for i, (_, index) in enumerate(self.indexes)]
        deepest, best = max(depth)
        if (self.defaults is not None and deepest < len(path) and path in self.defaults[1]
                and not (p.rule_id or "").startswith("ORG-")):
            # named as that file has it: under defaults (defaults.network.vpc_cidr), not the blueprint's path
            return replace(p, path=f"{organisation.DEFAULTS_KEY}.{p.path}", file=self.defaults[0], line=self.defaults[1][path])
        owner, index = self.indexes[-best]
        return p if owner is None else replace(p, file=owner, line=_line_for(path, index))


def _defaults_index(org_file: Path) -> dict[tuple[Any, ...], int]:
    """The line of every path under ``defaults`` of the organisation file, as a blueprint path (without the root:
    a value the defaults did not write never belongs to them). Empty when the file cannot be read again."""
    lines: dict[tuple[Any, ...], int] = {}
    try:
        _index(yaml.compose(org_file.read_text(encoding="utf-8"), Loader=yaml.SafeLoader), lines, [])
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, BlueprintError):
        return {}
    return {path[1:]: line for path, line in lines.items() if len(path) > 1 and path[0] == organisation.DEFAULTS_KEY}


def _depth(path: tuple[Any, ...], index: dict[tuple[Any, ...], int]) -> int:
    """The length of the longest start of ``path`` written in the file of ``index`` (-1: none)."""
    for n in range(len(path), -1, -1):
        if path[:n] in index:
            return n
    return -1


# ---- YAML with line numbers ------------------------------------------------------------------
def _parse(text: str, file: str) -> tuple[dict[str, Any], dict[tuple[Any, ...], int], dict[tuple[Any, ...], yaml.ScalarNode]]:
    """The data, the line of every YAML path and the scalar node of every scalar (the value as written)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except RecursionError:
        too_deep = f"the file is nested too deeply to be a blueprint; allowed at most {MAX_DEPTH} levels"
        raise BlueprintError(file, [Problem("", too_deep)]) from None
    except ValueError:  # PyYAML's int() of a number longer than Python reads; a YAMLError is not a ValueError
        raise BlueprintError(file, [Problem("", too_long_number(), value=None)]) from None
    except yaml.YAMLError as e:  # value: none (what PyYAML says is no value of the file; a second document's text)
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise BlueprintError(file, [Problem("", f"not valid YAML: {yaml_error_text(e)}", line=line, value=None)]) from None
    if data is None:
        raise BlueprintError(
            file, [Problem("", "the blueprint is empty; expected a mapping with at least name, region, "
                               "availability_zone (or availability_zone_id) and compute")]
        )
    if not isinstance(data, dict):
        raise BlueprintError(
            file, [Problem("", f"the blueprint must be a mapping of keys to values, got a {_kind(data)}; "
                               "allowed a mapping with name, region, compute, ...", line=1, value=data)]
        )
    lines: dict[tuple[Any, ...], int] = {}
    written: dict[tuple[Any, ...], yaml.ScalarNode] = {}
    key_problems: list[Problem] = []
    try:
        _index(node, lines, key_problems, written)
    except BlueprintError as e:
        raise BlueprintError(file, e.problems) from None
    if key_problems:
        raise BlueprintError(file, sorted(key_problems, key=lambda p: p.line or 0))
    return data, lines, written


def too_long_number() -> str:
    """The message for a YAML number longer than Python reads (``sys.get_int_max_str_digits``, 4300 by default)."""
    return (f"a number is too long to read, got one with more than {sys.get_int_max_str_digits()} digits; "
            "allowed an ordinary number")


def yaml_error_text(e: yaml.YAMLError) -> str:
    """What PyYAML found wrong (its ``problem``), in our words where its own are cryptic (a second document)."""
    what = getattr(e, "problem", None) or str(e).splitlines()[0]
    if isinstance(e, yaml.composer.ComposerError) and "another document" in what:
        return "a file is one YAML document, got a second one (after ---); allowed one document per file"
    return str(what)


#: Limits that keep a hostile file (deep nesting, YAML alias "billion laughs") from exhausting the machine.
MAX_NODES = 20_000
MAX_DEPTH = 40


def _index(root: yaml.Node | None, out: dict[tuple[Any, ...], int], key_problems: list[Problem],
           written: dict[tuple[Any, ...], yaml.ScalarNode] | None = None) -> None:
    """Record the line of every YAML path (and into ``written`` its scalar node, the value as the user wrote it)
    and put into ``key_problems`` every duplicate key and every key YAML reads as a boolean, number or null.
    Iterative, and each node (an alias points at an already seen node) is walked once, so
    the cost is bounded by the file size."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())] if root is not None else []
    while stack:
        node, path = stack.pop()
        if len(seen) >= MAX_NODES or len(path) > MAX_DEPTH:
            what = f"more than {MAX_NODES} values" if len(seen) >= MAX_NODES else f"nesting deeper than {MAX_DEPTH} levels"
            raise BlueprintError("", [Problem(format_path(path[:MAX_DEPTH]), f"the file is too large to be a blueprint, got {what}; "
                                              "allowed a blueprint of ordinary size", line=node.start_mark.line + 1,
                                              value=None)])  # a size, no value of the file
        out.setdefault(path, node.start_mark.line + 1)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value
                line = key_node.start_mark.line + 1
                kind = _YAML_TYPES.get(key_node.tag) if isinstance(key_node, yaml.ScalarNode) and not key_node.style else None
                if kind is not None and not (path and str(path[0]).startswith("x-")):
                    # YAML 1.1 reads a plain key on/yes/no/off as a boolean, 1 or 1.0 as a number: every blueprint key
                    # is text (x- extension blocks are the user's own and keep theirs)
                    key_problems.append(Problem(format_path((*path, key or "~")), _key_not_text(key, kind), line=line,
                                                value=key))  # the key as written (on), not the message's reading
                if key in keys:
                    key_problems.append(Problem(format_path((*path, key)), f"duplicate key, got {key!r} again (first on line "
                                              f"{keys[key]}); allowed each key once - YAML would silently keep the last value",
                                              line=line, value=key))
                keys.setdefault(key, line)
                out[(*path, key)] = line
                stack.append((value_node, (*path, key)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
        elif isinstance(node, yaml.ScalarNode) and written is not None:
            written.setdefault(path, node)


def _key_not_text(raw: str, kind: str) -> str:
    """The message for a mapping key YAML read as a ``kind`` (boolean, number, null) instead of text."""
    if kind == "null":
        read = "null"
    elif kind == "boolean":
        read = f"the boolean {str(yaml.safe_load(raw)).lower()}"
    else:
        read = f"the number {yaml.safe_load(raw)!r}"
    return f"a key must be text, got {raw or 'an empty key'}, which YAML reads as {read}; allowed text - quote it: '{raw}'"


def _line_for(path: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


def _with_line(p: Problem, lines: dict[tuple[Any, ...], int]) -> Problem:
    if p.line is not None or p.file is not None:  # a problem of another file gets its line there (_Origins)
        return p
    return replace(p, line=_line_for(_path_tuple(p.path, lines), lines))


def _path_tuple(path: str, known: Collection[tuple[Any, ...]] = ()) -> tuple[Any, ...]:
    """``compute[0].capacity`` -> ``("compute", 0, "capacity")``. A key with dots in it (a stack named
    ``acme-cuda12.8``, a tag ``app.kubernetes.io/team``) is one part when ``known`` (the paths of the file, from
    :func:`_index`) has it there and does not have its first piece: ``software_stacks.acme-cuda12.8.families`` ->
    ``("software_stacks", "acme-cuda12.8", "families")``, so the problem gets that key's line, not its parent's."""
    parts: list[Any] = []
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            parts.append(int(part[1:-1]))
        else:
            parts.append(part)
    if not known:
        return tuple(parts)
    out: list[Any] = []
    i = 0
    while i < len(parts):
        step = 1
        if isinstance(parts[i], str) and (*out, parts[i]) not in known:
            for j in range(len(parts), i + 1, -1):  # the longest dotted key the file has here
                if all(isinstance(x, str) for x in parts[i:j]) and (*out, ".".join(parts[i:j])) in known:
                    step = j - i
                    break
        out.append(".".join(parts[i:i + step]) if step > 1 else parts[i])
        i += step
    return tuple(out)


# ---- pydantic errors -> problems -------------------------------------------------------------
def _real_loc(loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    """Drop pydantic's internal loc parts (union tags, validator names) that are not YAML keys."""
    out: list[Any] = []
    cur = data
    for part in loc:
        if isinstance(cur, dict):
            if part in cur:
                out.append(part)
                cur = cur[part]
            elif isinstance(part, str) and (cur.get("type") == part or "[" in part or part.startswith("function")):
                continue  # discriminated-union tag or validator wrapper
            else:
                out.append(part)
                cur = None
        elif isinstance(cur, list) and isinstance(part, int):
            out.append(part)
            cur = cur[part] if part < len(cur) else None
        elif isinstance(part, str) and ("[" in part or part.startswith("function")):
            continue
        else:
            out.append(part)
            cur = None
    return tuple(out)


def _unwrap(ann: Any) -> list[Any]:
    """Model classes an annotation can hold (through Optional, list, dict, Annotated, unions)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType, list):
        return [m for a in typing.get_args(ann) for m in _unwrap(a)]
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return []


def _models_at(loc: tuple[Any, ...], data: Any) -> list[type[BaseModel]]:
    models: list[type[BaseModel]] = [Blueprint]
    cur = data
    for part in loc:
        if isinstance(part, int):
            cur = cur[part] if isinstance(cur, list) and part < len(cur) else None
            continue
        nxt: list[type[BaseModel]] = []
        for m in models:
            if part in m.model_fields:
                nxt += _unwrap(m.model_fields[part].annotation)
        cur = cur.get(part) if isinstance(cur, dict) else None
        models = nxt
        if isinstance(cur, dict) and "type" in cur and len(models) > 1:
            tagged = [m for m in models if "type" in m.model_fields
                      and typing.get_args(m.model_fields["type"].annotation) == (cur["type"],)]
            models = tagged or models
    return models


def _hint(value: Any, allowed: list[str]) -> str:
    """Did-you-mean for a misspelt key or value (``PERSISTENT_2`` for ``persistent_2``), never for a version or
    another number (:func:`fmcluster.severity.closest_names`)."""
    return did_you_mean(value, allowed)


#: An AZ ID or Local Zone ID (``use1-az4``, ``use1-dfw2-az1``), as ``Blueprint.availability_zone_id`` takes it.
_AZ_ID = re.compile(r"[a-z]{3,4}\d(-[a-z]+\d)?-az\d+")


def _pattern_hint(pattern: str, value: Any) -> str:
    """Did-you-mean for a value of the wrong format whose field takes names from a known list (the one suggestion
    policy, :func:`fmcluster.severity.closest_names`): an EC2 type (botocore's ``ec2`` ``InstanceType``), a HyperPod
    type (``sagemaker`` ``ClusterInstanceType``), a Region (``us-east1`` -> ``us-east-1``,
    :func:`fmcluster.catalog.regions.closest_regions`) or an AZ name (a Region suggestion plus the zone letter); an AZ
    ID given as ``availability_zone`` names the field it goes in. ``""`` for any other pattern or when nothing is close."""
    if not isinstance(value, str):
        return ""
    if pattern in (INSTANCE_TYPE_PATTERN, HYPERPOD_TYPE_PATTERN):
        from fmcluster.catalog.instance_types import ec2_instance_types, hyperpod_instance_types

        return did_you_mean(value, ec2_instance_types() if pattern == INSTANCE_TYPE_PATTERN else hyperpod_instance_types())
    from fmcluster.catalog.regions import closest_regions

    if pattern == AZ_NAME_PATTERN and _AZ_ID.fullmatch(value):  # an AZ ID where a name goes (Blueprint.availability_zone)
        return " - an AZ ID goes in availability_zone_id"
    if pattern == REGION_PATTERN:
        close = closest_regions(value, limit=1)
    elif pattern in (AZ_NAME_PATTERN, AZ_NAME_OR_ID_PATTERN) and value[-1:].isalpha() and "-az" not in value:
        close = [f"{r}{value[-1].lower()}" for r in closest_regions(value[:-1], limit=1)]  # AZ letters are lowercase
    else:
        close = []
    return f" - did you mean {close[0]!r}?" if close else ""


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, (date, time)):
        return value.isoformat()
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _a(value: Any) -> str:
    """``null`` or ``a <kind>`` for messages."""
    return "null" if value is None else f"a {_kind(value)}"


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


#: The YAML 1.1 types PyYAML gives a plain (unquoted) scalar that is not text.
_YAML_TYPES = {"tag:yaml.org,2002:bool": "boolean", "tag:yaml.org,2002:float": "number",
               "tag:yaml.org,2002:int": "number", "tag:yaml.org,2002:null": "null"}


@dataclass(frozen=True)
class _Written:
    """A value as the user wrote it (``raw``) when YAML read it as something else (``kind``: boolean, number, null),
    e.g. ``yes`` read as the boolean true, ``1.30`` as the number 1.3."""

    raw: str
    kind: str
    value: Any

    def got(self, *, text_expected: bool = False) -> str:
        """``yes, which YAML reads as the boolean true``; ``1.30, which YAML reads as the number 1.3``; the number
        as written when YAML kept it (``4.5``), unless text was expected (``2.15, which YAML reads as a number``)."""
        raw = self.raw if self.raw.strip() else "an empty value"
        if self.kind == "null":
            return f"{raw}, which YAML reads as null" if self.raw.strip() not in ("", "null") else "null"
        shown = str(self.value).lower() if isinstance(self.value, bool) else repr(self.value)
        if shown != self.raw:
            return f"{raw}, which YAML reads as the {self.kind} {shown}"
        return f"{raw}, which YAML reads as a {self.kind}, not text" if text_expected else raw

    def quote(self) -> str:
        """The fix when text was meant: `` - quote it: '1.30'``."""
        return f" - quote it: '{self.raw}'" if self.kind != "null" else ""


def _written(loc: tuple[Any, ...], value: Any, written: dict[tuple[Any, ...], yaml.ScalarNode]) -> _Written | None:
    """How the user wrote the value at ``loc`` when YAML turned a plain scalar into a non-text value; else None."""
    node = written.get(loc)
    if node is None or node.style is not None or isinstance(value, str):
        return None
    kind = _YAML_TYPES.get(node.tag)
    return _Written(node.value, kind, value) if kind is not None else None


def _got(loc: tuple[Any, ...], value: Any, written: dict[tuple[Any, ...], yaml.ScalarNode]) -> str:
    """The value for a message, as the user wrote it (:class:`_Written`) or shown (:func:`_show`)."""
    node = written.get(loc)
    if node is not None and node.tag == "tag:yaml.org,2002:timestamp":
        return node.value  # a date or time as written, not Python's datetime(...)
    w = _written(loc, value, written)
    return w.got() if w is not None else _show(value)


def _literal_allowed(ctx: dict[str, Any]) -> list[str]:
    return [a.strip().strip("'") for a in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")]


def _count_of(value: Any, ctx: dict[str, Any]) -> str:
    """The number of items of a list or mapping (pydantic leaves ``actual_length`` empty for mappings)."""
    n = ctx.get("actual_length")
    if n is None and isinstance(value, (dict, list, str)):
        n = len(value)
    return str(n) if n is not None else "more"


def _convert(err: Any, data: Any, lines: dict[tuple[Any, ...], int],
             written: dict[tuple[Any, ...], yaml.ScalarNode] | None = None, tags_from_org: tuple[str, ...] = ()) -> Problem:
    """One pydantic error as a :class:`Problem`: the YAML path, the value as the user wrote it (``yes``, not True;
    ``1.30``, not 1.3), what is allowed and a did-you-mean; never a pydantic phrase or ``None``. The one place
    messages of the shape check are built (tests/test_messages.py feeds every field each wrong kind of value).
    ``tags_from_org``: the tag keys the organisation file's ``defaults.tags`` gave, named in a count of ``tags``
    (:func:`fmcluster.blueprint.model.tag_count_parts`)."""
    loc = _real_loc(tuple(err["loc"]), data)
    typ, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    written = written or {}
    w = _written(loc, value, written)
    got = _got(loc, value, written)
    path = format_path(loc)
    if typ == "extra_forbidden" and tuple(p for p in loc if isinstance(p, str)) in MOVED_KEYS:
        msg = f"{loc[-1]!r} has moved to {MOVED_KEYS[tuple(p for p in loc if isinstance(p, str))]}"
    elif typ == "extra_forbidden":
        allowed = sorted({f for m in _models_at(loc[:-1], data) for f in m.model_fields} | (set(FILE_KEYS) if len(loc) == 1 else set()))
        key = loc[-1] if loc else value
        msg = f"unknown key {key!r}; allowed {', '.join(allowed)}{_hint(key, allowed)}"
    elif typ == "missing":
        msg = (f"required key {loc[-1]!r} is missing, got nothing; allowed the key with a value (docs/blueprint.md)"
               if loc else "required key is missing, got nothing; allowed the key with a value (docs/blueprint.md)")
    elif typ == "literal_error":
        allowed = _literal_allowed(ctx)
        quoted = w is not None and w.raw in allowed
        fix = w.quote() if w is not None and quoted else _hint(w.raw if w else value, allowed)
        shown = w.got(text_expected=quoted) if w is not None else got
        msg = f"invalid value, got {shown}; allowed {', '.join(allowed)}{fix}"
    elif typ in ("union_tag_invalid", "union_tag_not_found"):
        allowed = [a.strip().strip("'") for a in ctx.get("expected_tags", "").split(",")]
        # pydantic passes the tag as text ('True' for yes): show the value the file holds, as written.
        raw_tag = value.get("type") if isinstance(value, dict) else ctx.get("tag")
        got_tag = _got((*loc, "type"), raw_tag, written) if typ == "union_tag_invalid" else "no 'type'"
        msg = f"invalid type, got {got_tag}; allowed {', '.join(allowed)}{_hint(ctx.get('tag'), allowed)}"
        if typ == "union_tag_invalid":
            path = format_path((*loc, "type"))
    elif typ == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        # Every pattern of the model has a hint (tests/test_pattern_hints.py); a regex never reaches the user.
        msg = (f"invalid format, got {got}; allowed {PATTERN_HINTS.get(pattern, 'the format docs/blueprint.md describes')}"
               f"{_pattern_hint(pattern, value)}")
    elif typ in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[typ]
        bound = next(iter(ctx.values()))
        msg = f"out of range, got {got}; allowed {op} {bound}"
    elif typ in ("too_short", "too_long"):
        bound = ctx.get("min_length") if typ == "too_short" else ctx.get("max_length")
        word = "at least" if typ == "too_short" else "at most"
        count = _count_of(value, ctx)
        parts = tag_count_parts(int(count), tags_from_org) if loc == ("tags",) and count.isdigit() else ""
        msg = f"wrong number of items, got {count}{parts}; allowed {word} {bound}"
    elif typ in ("string_too_short", "string_too_long"):
        bound = ctx.get("min_length") if typ == "string_too_short" else ctx.get("max_length")
        word = "at least" if typ == "string_too_short" else "at most"
        size = len(value) if isinstance(value, str) else "more"
        msg = f"text too {'short' if typ == 'string_too_short' else 'long'}, got {size} characters; allowed {word} {bound}"
    elif typ in ("model_type", "dict_type", "model_attributes_type"):
        msg = f"must be a mapping, got {got if w else _a(value)}"
    elif typ == "list_type":
        msg = f"must be a list, got {got if w else _a(value)}"
    elif typ == "string_type" and w is not None:
        msg = f"must be text, got {w.got(text_expected=True)}{w.quote()}"
    elif typ == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool):
        msg = (f"must be text, got the number {value!r}; "
               "allowed text - quote it in YAML (e.g. '25.10', which unquoted YAML reads as the number 25.1)")
    elif typ == "string_type":
        msg = f"must be text, got {_a(value)}"
    elif typ == "whole_number_boolean" and w is not None and w.raw.lower() not in ("true", "false"):
        msg = f"must be a whole number, got {w.got()}; allowed an integer such as 4"
    elif typ == "whole_number_boolean":
        msg = err["msg"]  # the model's words: "got true (YAML reads true, false, yes, no, on and off as booleans)"
    elif typ == "whole_number_text":
        msg = f"must be a whole number, got the text {value!r}; allowed an integer without quotes, such as 4"
    elif typ in ("int_from_float", "int_parsing", "int_type", "int_parsing_size"):
        msg = f"must be a whole number, got {got}; allowed an integer such as 4"
    elif typ == "finite_number":  # .inf / .nan: YAML's infinity and not-a-number, for whole and decimal fields alike
        msg = f"must be a finite number, got {got}"
    elif typ in ("float_parsing", "float_type"):
        msg = f"must be a number, got {got}"
    elif typ in ("bool_parsing", "bool_type"):
        msg = f"must be true or false, got {got}"
    elif typ == "value_error":
        msg = str(ctx.get("error", err["msg"]))
    elif typ.startswith(("datetime_", "timezone_")):
        msg = f"must be a date and time with its time zone, got {got}; allowed e.g. 2026-12-10T11:30:00Z"
    else:
        msg = f"invalid value, got {got}; allowed the values docs/blueprint.md lists for {path or 'the blueprint'}"
    return Problem(path, msg, line=_line_for(loc, lines), value=_carried(typ, value))


#: pydantic error types whose message quotes something other than the input (a count, a tag, the model's own words),
#: or nothing: the JSON ``value`` of these is read from the message (fmcluster.output.problem_value).
_NOT_THE_INPUT = frozenset({"extra_forbidden", "missing", "too_short", "too_long", "string_too_short", "string_too_long",
                            "value_error", "union_tag_invalid", "union_tag_not_found"})


def _carried(typ: str, value: Any) -> Any:
    """The offending value for ``--json`` (``Problem.value``): the input itself as YAML read it, unless the message
    quotes something else (:data:`_NOT_THE_INPUT`); the tag of a union, ``type``."""
    if typ == "union_tag_invalid" and isinstance(value, dict):
        return value.get("type")
    if typ == "union_tag_not_found":
        return None
    return NOT_GIVEN if typ in _NOT_THE_INPUT else value


# ---- rules on partially valid blueprints -----------------------------------------------------
class _Missing:
    """Stands for a part of the blueprint that failed its shape check: any use raises TypeError,
    so a rule that needs it is skipped instead of judging a value that does not exist."""

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("this part of the blueprint is invalid")

    __getattr__ = __eq__ = __ne__ = __lt__ = __gt__ = __le__ = __ge__ = _refuse
    __str__ = __format__ = __bool__ = __iter__ = __len__ = __getitem__ = __contains__ = __hash__ = _refuse


_MISSING = _Missing()


def _section_rule_problems(data: dict[str, Any], shape: list[Problem], lines: dict[tuple[Any, ...], int]) -> list[Problem]:
    """Run the rules on the parts of a blueprint that passed the shape check.

    Sections with shape errors (and missing required keys, and the section a misspelt top-level key plausibly meant)
    become a refusing placeholder in a partial Blueprint built without validation; a rule that needs such a section
    cannot run and is skipped, every other rule reports as usual.
    """
    broken = {p.path.split(".")[0].split("[")[0] for p in shape}
    broken |= {p.path for p in shape}
    # a misspelt section (``observabilty:``) is the section the user meant to write: rules on that section's defaults
    # would report what the file does not say (R-OBS-7 "no receiver" beside an alert_email under the misspelt key)
    broken |= {meant for top in list(broken) if top not in Blueprint.model_fields
               for meant in closest_names(top, list(Blueprint.model_fields))[:1]}
    partial: dict[str, Any] = {}
    valid: set[str] = set()
    for name, fld in Blueprint.model_fields.items():
        if name in broken:
            partial[name] = _MISSING
        elif name in data:
            try:
                partial[name] = TypeAdapter(cast(Any, fld.annotation)).validate_python(data[name])
                valid.add(name)
            except ValidationError:
                partial[name] = _MISSING
        else:
            partial[name] = _MISSING if fld.is_required() else fld.get_default(call_default_factory=True)
            valid.add(name)
    bp = Blueprint.model_construct(**partial)
    return [_with_line(p, lines) for p in run_rules_best_effort(bp, valid)]


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    """Sort by line (problems without one last), the blueprint's own before those of other files (its bases);
    stable, so rule order breaks ties."""
    return sorted(problems, key=lambda p: (p.file is not None, p.file or "", p.line is None, p.line or 0))


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out = []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            out.append(p)
    return out
