"""Render every node script of one compute group.

Contract used by ``fmcluster.constructs.bootstrap`` and ``fmcluster render``: returns
``{file name: script text}``; ``bootstrap.sh`` is the self-contained entry point a node runs.
"""

from __future__ import annotations

from fmcluster.templates.context import NodeContext
from fmcluster.templates.render import render

ENTRY_POINT = "bootstrap.sh"


def render_node_scripts(ctx: NodeContext) -> dict[str, str]:
    return {ENTRY_POINT: render("node/bootstrap.sh.j2", ctx.as_dict())}
