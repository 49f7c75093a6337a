"""Walk a blueprint for its text fields by name: the rules that must cover every field of a kind (every ARN, every
Availability Zone name) find them here, so that a field added to the model is covered the day it is added."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pydantic import BaseModel


def text_fields(node: object, wanted: Callable[[str], bool], prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """``(YAML path, field name, value)`` of every text field set in ``node`` (a blueprint or a part of one) whose
    name ``wanted`` accepts, at any depth, lists included (``compute[0].capacity.reservation_arn``); a field that is
    not text (a section, a list) is walked into instead. Paths are the blueprint's YAML paths, ``prefix`` first."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from text_fields(item, wanted, f"{prefix}[{i}]")
        return
    if not isinstance(node, BaseModel):
        return
    for name in type(node).model_fields:
        value = getattr(node, name)
        path = f"{prefix}.{name}" if prefix else name
        if wanted(name) and isinstance(value, str):
            yield path, name, value
        else:
            yield from text_fields(value, wanted, path)
