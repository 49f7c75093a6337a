"""Blueprint reference generated from the model (field, type, default, description), so docs
cannot drift from code. ``fmcluster schema`` prints the JSON Schema; ``tools/gen_docs.py`` writes
docs/blueprint.md from :func:`markdown_reference`."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from fmcluster.blueprint.model import FILE_KEYS, Blueprint


def json_schema() -> str:
    return json.dumps(Blueprint.model_json_schema(), indent=2, sort_keys=True)


def _type_text(ann: Any) -> str:
    """Readable type without Annotated metadata (whose validators would print memory addresses)."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_text(a) for a in args)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_text(a) for a in args)}]"
    if ann is type(None):
        return "None"
    return getattr(ann, "__name__", str(ann))


def _type_name(ann: Any) -> str:
    return _type_text(ann).replace("|", "\\|")


def _default(f: FieldInfo) -> str:
    if f.is_required():
        return "**required**"
    if f.default_factory is not None:
        try:
            value = f.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(value, BaseModel):
            return "(see section)"
        return f"`{json.dumps(value)}`"
    return f"`{json.dumps(f.default)}`"


#: The words for pydantic's field constraints (``annotated_types``), as docs/blueprint.md's "limits" show them.
_LIMIT_WORDS = {"MinLen": "at least {} items", "MaxLen": "at most {} items", "Ge": ">= {}", "Gt": "> {}",
                "Le": "<= {}", "Lt": "< {}"}


def _limits(f: FieldInfo) -> str:
    """The field's own limits (``at most 40 items``, ``>= 1``), the ones the loader's messages name; text fields say
    characters instead of items."""
    text = _type_text(f.annotation).startswith("str")
    out = []
    for m in f.metadata:
        name = type(m).__name__
        if name in _LIMIT_WORDS:
            # annotated_types constraints are one-field dataclasses (MaxLen(max_length=40), Ge(ge=1)).
            value = getattr(m, dataclasses.fields(m)[0].name)
            words = _LIMIT_WORDS[name].format(value)
            words = words.replace(" 1 items", " 1 item")
            out.append(words.replace("items", "characters") if text else words)
    return "; ".join(out)


def _section_models(model: type[BaseModel], prefix: str, seen: list[tuple[str, type[BaseModel]]]) -> None:
    seen.append((prefix, model))
    for name, f in model.model_fields.items():
        for sub in _models_in(f.annotation):
            path = f"{prefix}.{name}" if prefix else name
            if typing.get_origin(f.annotation) is list or "list[" in str(f.annotation):
                path += "[]"
            if sub is not model and all(m is not sub for _, m in seen):
                _section_models(sub, path, seen)


def _models_in(ann: Any) -> list[type[BaseModel]]:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return [m for a in typing.get_args(ann) for m in _models_in(a)]


def markdown_reference() -> str:
    sections: list[tuple[str, type[BaseModel]]] = []
    _section_models(Blueprint, "", sections)
    lines = ["# Blueprint reference", "",
             "Generated from `fmcluster/blueprint/model.py` by `tools/gen_docs.py`; a test fails when it is stale.",
             "Fields marked **replaces** cause CloudFormation to replace the resource when changed "
             "(for FSx: data loss; `fmcluster diff` flags it).", ""]
    for path, model in sections:
        title = path or "(top level)"
        lines += [f"## `{title}` — {model.__name__}", ""]
        paragraph = (model.__doc__ or "").strip().split("\n\n")[0]
        if paragraph:
            lines += [" ".join(part.strip() for part in paragraph.splitlines()), ""]
        lines += ["| field | type | default | description |", "|---|---|---|---|"]
        for name, f in model.model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            desc = (f.description or "").replace("|", "\\|") + (" **replaces**" if extra.get("replaces") else "")
            limits = _limits(f)
            desc += f" Limits: {limits}." if limits else ""
            lines.append(f"| `{name}` | {_type_name(f.annotation)} | {_default(f)} | {desc} |")
        if not path:  # keys of the file the loader resolves before the model (FILE_KEYS)
            lines += [f"| `{name}` | str \\| None | `null` | {desc} |" for name, desc in FILE_KEYS.items()]
        lines.append("")
    return "\n".join(lines)
