"""What ``fmcluster render`` writes for the node feature (the feature registry's render hook): per compute group, the
node scripts (:func:`fmcluster.features.node.render_scripts.render_node_scripts`) and the resolved versions."""

from __future__ import annotations

from fmcluster.features.node.render_context import NodeContext, blueprint_node_contexts
from fmcluster.features.node.render_scripts import render_node_scripts
from fmcluster.resolved import ResolvedCluster


def versions_text(blueprint_name: str, group_name: str, ctx: NodeContext) -> str:
    """``versions.txt`` of one group: every resolved version (``unknown`` when the catalog has none) and the kernel
    modules."""
    versions = "".join(f"{k}: {v if v is not None else 'unknown'}\n" for k, v in ctx.versions.items())
    return (f"# resolved versions for {blueprint_name}/{group_name} ({ctx.instance_type}, {ctx.os}), stack "
            f"{ctx.stack_name}\n{versions}kernel_modules: {ctx.kernel_modules}\n")


def render_files(rc: ResolvedCluster) -> dict[str, str]:
    """``<group>/<file>`` -> text: each compute group's node scripts, then its ``versions.txt``."""
    out: dict[str, str] = {}
    for name, ctx in blueprint_node_contexts(rc).items():
        out.update({f"{name}/{file}": text for file, text in render_node_scripts(ctx).items()})
        out[f"{name}/versions.txt"] = versions_text(rc.name, name, ctx)
    return out
