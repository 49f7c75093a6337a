"""Render every node script of one compute group.

Contract used by ``fmcluster.features.node.construct_bootstrap`` and ``fmcluster render``: returns
``{file name: script text}``; ``bootstrap.sh`` is the self-contained entry point a node runs
(ParallelCluster downloads only that file): it carries the shared node library, the boot steps, the node
check and the job environment file inside itself (quoted heredocs) and installs them. The other entries are
the same texts, returned for review.

The boot path is a list of small step templates (``features/node/templates/steps/<step>.sh.j2``, each defining
``step_<step>``) chosen here from the group's facts (:func:`boot_path`); the package manager is a partial
chosen in :mod:`fmcluster.features.node.render_context` (``pkg_partial``), so no template branches on the OS.
"""

from __future__ import annotations

from typing import Any

from fmcluster.features.node.render_context import NodeContext
from fmcluster.features.observability.render_exporters import TEXTFILE_DIR
from fmcluster.templates.render import render

ENTRY_POINT = "bootstrap.sh"
NODE_CHECK = "fmcluster-node-check"
JOB_ENV = "job-env.sh"
#: The shared helper library (log/die/retry/fetch, version probes, package-manager partial).
NODE_LIB = "node/lib.sh.j2"

#: Heredoc delimiters used to embed files in bootstrap.sh; an embedded text must not contain them.
NODE_CHECK_EOF = "FMCLUSTER_NODE_CHECK_EOF"
JOB_ENV_EOF = "FMCLUSTER_JOB_ENV_EOF"


def boot_path(ctx: NodeContext) -> list[str]:
    """The boot steps of a group, in order (each a template ``node/steps/<name>.sh.j2``): the resolved boot path
    (``ResolvedImage.boot_path``, the list ``fmcluster plan`` estimates; :func:`fmcluster.features.node.plan_image.boot_path`
    says what is in it), then ``exporters`` (last, non-fatal, not estimated) when the group has an exporter script."""
    return [*ctx.boot_path, *(["exporters"] if ctx.exporters_script else [])]


def plugin_dirs(ctx: NodeContext) -> list[str]:
    """Where the aws-ofi-nccl library is looked for: the from-source prefix, else the EFA installer's
    ``/opt/amazon/ofi-nccl`` library directories."""
    if ctx.plugin_from_source:
        return [f"{ctx.paths['plugin_prefix']}/lib"]
    triplet = "aarch64" if ctx.cpu_architecture == "arm64" else "x86_64"
    return ["/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64", f"/opt/amazon/ofi-nccl/lib/{triplet}-linux-gnu"]


def script_data(ctx: NodeContext) -> dict[str, Any]:
    """The template data of a group: the context plus the boot path and the plugin directories."""
    dirs = plugin_dirs(ctx)
    return {**ctx.as_dict(), "boot_path": boot_path(ctx), "plugin_dirs": dirs,
            "plugin_dirs_shell": " ".join(f'"${{FMC_ROOT}}{d}"' for d in dirs),
            # node_exporter's textfile collector directory: the node check exports its drift there (node facts)
            "textfile_dir": TEXTFILE_DIR}


def render_node_lib(ctx: NodeContext) -> str:
    """The shared node library for ``ctx``'s OS, standalone (functions only), for embedding in another script,
    e.g. the exporter script: ``{% include "node/lib.sh.j2" %}`` with this module's :func:`script_data`."""
    return render(NODE_LIB, script_data(ctx))


def render_boot_steps(ctx: NodeContext) -> dict[str, str]:
    """Step name -> that step's rendered function, in boot order (for review and golden files)."""
    data = _bootstrap_data(ctx)
    return {s: render(f"node/steps/{s}.sh.j2", data) for s in data["boot_path"]}


def _bootstrap_data(ctx: NodeContext) -> dict[str, Any]:
    data = script_data(ctx)
    node_check = render(f"node/{NODE_CHECK}.sh.j2", data)
    job_env = render(f"node/{JOB_ENV}.j2", data)
    for text, eof in ((node_check, NODE_CHECK_EOF), (job_env, JOB_ENV_EOF)):
        if any(line.strip() == eof for line in text.splitlines()):
            raise ValueError(f"embedded script contains its heredoc delimiter {eof}")
    return {**data, "node_check_script": node_check, "node_check_eof": NODE_CHECK_EOF,
            "job_env_script": job_env, "job_env_eof": JOB_ENV_EOF}


def render_node_scripts(ctx: NodeContext) -> dict[str, str]:
    data = _bootstrap_data(ctx)
    bootstrap = render("node/bootstrap.sh.j2", data)
    return {ENTRY_POINT: bootstrap, NODE_CHECK: data["node_check_script"], JOB_ENV: data["job_env_script"]}
