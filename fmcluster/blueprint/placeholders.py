"""Placeholder AWS ids in a blueprint: the example blueprints ship ids such as ``ami-0123456789abcdef0`` and
``cr-0123456789abcdef0`` where the user's own AMI or reservation goes. They validate and synthesize (the shape is a
real id's), so ``fmcluster plan`` names them and ``fmcluster preflight`` refuses them with the reason, before a
deploy fails on an id that does not exist (issue 23 item 7)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fmcluster.blueprint.model import Blueprint

#: ``<prefix>-<hex>`` ids whose hex part is a documentation pattern, not a real resource: ascending hex digits
#: (``0123456789abcdef0``, ``0abcdef1234567890``, AWS's documentation examples) or all zeros.
PLACEHOLDER_ID = re.compile(r"^[a-z]+(?:-[a-z]+)?-(?:0123456789abcdef0?|0abcdef1234567890|0{8,17})$")
REASON = ("a placeholder id shipped in an example blueprint (its digits are a documentation pattern, no real "
          "resource has it); replace it with your own before deploying")


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(value, str) and PLACEHOLDER_ID.match(value):
        yield path, value


def placeholder_ids(bp: Blueprint) -> list[tuple[str, str]]:
    """``(YAML path, id)`` of every placeholder id in ``bp``, in document order (e.g.
    ``("compute[0].capacity.reservation_id", "cr-0123456789abcdef0")``); empty for a blueprint with real ids."""
    return list(_walk(bp.model_dump(mode="json", exclude_none=True), ""))


def is_placeholder(value: str | None) -> bool:
    return bool(value) and PLACEHOLDER_ID.match(value or "") is not None
