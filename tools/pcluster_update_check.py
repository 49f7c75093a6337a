"""Run ParallelCluster's own update check on pairs of cluster configurations, offline.

Runs in ``.venv-pcluster``. For each pair it builds ``pcluster.config.config_patch.ConfigPatch`` (what
``pcluster update-cluster --dryrun`` runs, aws/aws-parallelcluster ``cli/src/pcluster/config/config_patch.py``) and
calls ``check()`` twice: on a cluster whose compute fleet, head node and login nodes run, and on one where they are
stopped. The cluster object answers only those state questions (no AWS call leaves the machine).

stdin: ``[{"old": {...}, "new": {...}, "region": "us-east-1"}, ...]``
stdout: one list per pair of ``{"path", "key", "policy", "running", "stopped"}`` (check results: SUCCEEDED,
ACTION NEEDED, FAILED), as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


class _Instance:
    def __init__(self, state: str) -> None:
        self.state = state


class FakeCluster:
    """The state questions the update policies' condition checkers ask (``pcluster/models/cluster.py``)."""

    def __init__(self, running: bool) -> None:
        self.name = "fmcluster"
        self.stack_name = "fmcluster"
        self.running = running
        self.head_node_instance = _Instance("running" if running else "stopped")

    def has_running_capacity(self, *_: Any, **__: Any) -> bool:
        return self.running

    def has_running_login_nodes(self, *_: Any, **__: Any) -> bool:
        return self.running


def check(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    from pcluster.config.config_patch import ConfigPatch

    results = {}
    for running in (True, False):
        patch = ConfigPatch(FakeCluster(running), old, new)
        for change in patch.changes:
            outcome = change.update_policy.check(change, patch)[0].value
            key = (".".join(change.path), change.key, change.update_policy.name)
            results.setdefault(key, {})["running" if running else "stopped"] = outcome
    return [{"path": p, "key": k, "policy": pol, **v} for (p, k, pol), v in results.items()]


def main() -> None:
    pairs = json.load(sys.stdin)
    out = []
    for pair in pairs:
        os.environ["AWS_DEFAULT_REGION"] = pair.get("region", "us-east-1")
        out.append(check(pair["old"], pair["new"]))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
