"""Render every node script of one compute group.

Contract used by ``fmcluster.constructs.bootstrap`` and ``fmcluster render``: returns
``{file name: script text}``; ``bootstrap.sh`` is the self-contained entry point a node runs
(ParallelCluster downloads only that file): it carries the node check and the job environment
file inside itself (quoted heredocs) and installs them. The other entries are the same texts,
returned for review.
"""

from __future__ import annotations

from fmcluster.templates.context import NodeContext
from fmcluster.templates.render import render

ENTRY_POINT = "bootstrap.sh"
NODE_CHECK = "fmcluster-node-check"
JOB_ENV = "job-env.sh"

#: Heredoc delimiters used to embed files in bootstrap.sh; an embedded text must not contain them.
NODE_CHECK_EOF = "FMCLUSTER_NODE_CHECK_EOF"
JOB_ENV_EOF = "FMCLUSTER_JOB_ENV_EOF"


def render_node_scripts(ctx: NodeContext) -> dict[str, str]:
    data = ctx.as_dict()
    node_check = render(f"node/{NODE_CHECK}.sh.j2", data)
    job_env = render(f"node/{JOB_ENV}.j2", data)
    for text, eof in ((node_check, NODE_CHECK_EOF), (job_env, JOB_ENV_EOF)):
        if any(line.strip() == eof for line in text.splitlines()):
            raise ValueError(f"embedded script contains its heredoc delimiter {eof}")
    bootstrap = render(
        "node/bootstrap.sh.j2",
        {**data, "node_check_script": node_check, "node_check_eof": NODE_CHECK_EOF,
         "job_env_script": job_env, "job_env_eof": JOB_ENV_EOF},
    )
    return {ENTRY_POINT: bootstrap, NODE_CHECK: node_check, JOB_ENV: job_env}
