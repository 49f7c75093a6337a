"""Software stack rules that tie the stack to the instance types (full compatibility rules: issue 3)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint
from fmcluster.blueprint.rules import Violation, rule
from fmcluster.catalog import get_instance
from fmcluster.catalog.software import get_stack, known_stacks


@rule("R-SW-1", source="catalog/data/software.yaml (families each known-good stack was validated on)")
def stack_covers_instance_families(bp: Blueprint) -> Iterator[Violation]:
    stack = get_stack(bp.software.stack)
    for i, g in enumerate(bp.compute):
        inst = get_instance(g.instance_type)
        if inst.family not in stack.families:
            fits = [s for s in known_stacks() if inst.family in get_stack(s).families]
            yield "software.stack", (
                f"stack {stack.name!r} is not known-good for {g.instance_type} (compute[{i}]), got {stack.name!r}; "
                f"allowed {', '.join(fits) or 'none'}"
            )


@rule("R-SW-2", source="catalog/data/software.yaml (operating systems each stack supports)")
def stack_supports_os(bp: Blueprint) -> Iterator[Violation]:
    stack = get_stack(bp.software.stack)
    if bp.software.os not in stack.os:
        yield "software.os", f"not supported by stack {stack.name!r}, got {bp.software.os!r}; allowed {', '.join(stack.os)}"
