"""Job impact: what a change does to the nodes of each queue / instance group / node group and to the jobs on them.

``fmcluster diff`` knows, per resource, what CloudFormation does, and for ParallelCluster what ``pcluster
update-cluster`` does with each setting (``fmcluster.orchestrators.parallelcluster.review_update``). A reviewer
asks another question: which running work does this change hit, and how long until the nodes are back? This module
answers it per node group, from the same verdicts:

- each orchestrator's ``review_update`` module (the registry's ``update_review`` hook) gives
  ``group_impacts(old_props, new_props, region, where, updated)`` (``updated``: ``stack/logical id`` -> changed
  property paths of every resource CloudFormation updates in place): one :class:`GroupImpact` per group of its cluster resource, from
  that orchestrator's documented update behaviour (ParallelCluster's ``QueueUpdateStrategy`` and update policies;
  the HyperPod ``UpdateCluster`` and PCS ``UpdateComputeNodeGroup`` documentation);
- :func:`job_impacts` adds what CloudFormation decides for the whole resource: a replaced or moved cluster resource
  replaces every group of it (a new cluster: running and queued work is lost with the old one), and an update that
  fails in the same stack leaves every group as it is (the stack update rolls back);
- :func:`with_boot` adds the plan's node boot estimate (``estimated_boot_s``, ``fmcluster plan``) to every group
  whose nodes boot, when the new side is a blueprint.

Shapes: :class:`GroupImpact` (``as_dict`` for JSON); kinds :data:`ImpactKind`, their words :data:`NODES` and
:data:`JOBS`, worst first in :data:`ORDER`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

#: What happens to a group's nodes, from harmless to worst: ``untouched`` (nothing reaches running nodes);
#: ``not_applied`` (running nodes keep the old setting, only nodes launched later get it); ``added`` (a new group:
#: its nodes boot); ``grows`` (more nodes boot); ``unknown`` (the service does not document what its running nodes
#: do: check before deploying); ``shrinks`` (the removed nodes are terminated with their jobs); ``drained_replaced``
#: (drained: running jobs finish, then the nodes are replaced); ``requeued`` (terminated and replaced now: running
#: jobs end and are requeued); ``fleet_stop`` (the update needs the compute fleet stopped first: every running job
#: ends); ``removed`` (the group goes: its nodes are terminated); ``replaced`` (the cluster resource or node group is
#: replaced: new nodes, the old ones go with their jobs); ``update_fails`` (the stack update fails and rolls back:
#: nothing changes).
ImpactKind = Literal["untouched", "not_applied", "added", "grows", "unknown", "shrinks", "drained_replaced",
                     "requeued", "fleet_stop", "removed", "replaced", "update_fails"]
#: Worst first: a group with several causes gets the worst kind.
ORDER: tuple[ImpactKind, ...] = ("update_fails", "replaced", "fleet_stop", "removed", "requeued", "drained_replaced",
                                 "shrinks", "unknown", "grows", "added", "not_applied", "untouched")
#: What happens to the group's nodes, per kind.
NODES: Mapping[ImpactKind, str] = {
    "untouched": "untouched",
    "not_applied": "untouched: running nodes keep the old setting, only nodes launched later get the new one",
    "added": "new group: its nodes boot",
    "grows": "more nodes boot; the running ones are untouched",
    "unknown": "not documented by the service: check before deploying",
    "shrinks": "the removed nodes are terminated",
    "drained_replaced": "drained, then replaced once their running jobs end",
    "requeued": "terminated and replaced now",
    "fleet_stop": "the compute fleet must be stopped before the deploy, then started again",
    "removed": "the group is removed: its nodes are terminated",
    "replaced": "replaced with its resource: new nodes, the old ones are terminated (a replaced cluster resource is a "
                "new cluster)",
    "update_fails": "untouched: the stack update fails and rolls back",
}
#: What happens to the jobs on the group's nodes, per kind.
JOBS: Mapping[ImpactKind, str] = {
    "untouched": "keep running",
    "not_applied": "keep running",
    "added": "none yet",
    "grows": "keep running",
    "unknown": "unknown",
    "shrinks": "jobs on the removed nodes end",
    "drained_replaced": "running jobs finish; new jobs wait for the new nodes",
    "requeued": "running jobs end and are requeued",
    "fleet_stop": "every running job ends when the fleet stops",
    "removed": "running jobs end",
    "replaced": "running jobs end (a new cluster starts with an empty queue)",
    "update_fails": "keep running",
}
#: Kinds whose nodes boot after the deploy (the boot estimate applies).
BOOTS: frozenset[ImpactKind] = frozenset({"added", "grows", "drained_replaced", "requeued", "fleet_stop", "replaced"})
#: Kinds a reviewer must see (a warning in the diff): running work is hit, or nobody knows.
HITS: frozenset[ImpactKind] = frozenset({"unknown", "shrinks", "drained_replaced", "requeued", "fleet_stop",
                                         "removed", "replaced"})


@dataclass(frozen=True)
class GroupImpact:
    """What a change does to one node group.

    Attributes:
        cluster: the cluster resource as ``stack/logical id`` (a PCS node group: the node group resource itself).
        group: the group's name as the orchestrator knows it (ParallelCluster queue, HyperPod instance group, PCS
            compute node group name), which is the blueprint's compute group name.
        kind: :data:`ImpactKind`.
        causes: the settings that cause it (``SlurmQueues[gpu].ComputeResources[p5-48xlarge].InstanceType``),
            empty for ``untouched``.
        source: the documentation the verdict rests on (URL), or why it is unknown.
        boot_s: seconds until a new node of the group is ready (the plan's ``estimated_boot_s``), ``None`` when the
            new side is not a blueprint, the group is not in it, or no node boots.
    """

    cluster: str
    group: str
    kind: ImpactKind
    causes: tuple[str, ...] = ()
    source: str = ""
    boot_s: int | None = None

    @property
    def nodes(self) -> str:
        return NODES[self.kind]

    @property
    def jobs(self) -> str:
        return JOBS[self.kind]

    @property
    def hits_work(self) -> bool:
        """Whether running work is hit (or nobody knows): :data:`HITS`."""
        return self.kind in HITS

    def time_text(self) -> str:
        """How long it takes, in words: ``-`` when no node boots, else the boot estimate and what it follows."""
        if self.kind not in BOOTS:
            return "-"
        boot = f"~{self.boot_s} s per node (plan estimate)" if self.boot_s is not None else "boot time not estimated"
        after = {"drained_replaced": "after its running jobs end, ", "fleet_stop": "after the fleet is started again, ",
                 "replaced": "after the new resource is created, "}.get(self.kind, "")
        return after + boot

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "causes": list(self.causes), "nodes": self.nodes, "jobs": self.jobs,
                "time": self.time_text()}


def worst(kinds: Sequence[ImpactKind]) -> ImpactKind:
    """The worst of ``kinds`` by :data:`ORDER` (``untouched`` for none)."""
    return min(kinds, key=ORDER.index, default="untouched")


def _reviewer(type_: str) -> Any:
    """The orchestrator module that judges ``type_`` (registry ``update_review``), or ``None``."""
    from fmcluster.orchestrators.registry import UPDATE_REVIEWERS

    module = UPDATE_REVIEWERS.get(type_)
    return importlib.import_module(module) if module else None


#: CloudFormation replaces a resource by creating a new one and deleting the old one
#: (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html).
REPLACEMENT_SOURCE = ("CloudFormation replaces the resource: "
                      "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html")
#: A failed stack update rolls every resource of the stack back to its previous state
#: (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/stack-failure-options.html).
ROLLBACK_SOURCE = ("the stack update fails and rolls back: "
                   "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/stack-failure-options.html")


def job_impacts(old_res: Mapping[tuple[str, str], Mapping[str, Any]], new_res: Mapping[tuple[str, str], Mapping[str, Any]],
                changes: Sequence[Any], region: str) -> list[GroupImpact]:
    """Every node group of every cluster resource on either side, with what the change does to it.

    ``old_res``/``new_res``: ``(stack, logical id) -> template resource``, properties normalized so that references
    to replaced resources differ (:class:`fmcluster.review.diff._Normalizer`); ``changes``: the diff's
    ``ResourceChange`` list (``stack``, ``logical_id``, ``action``, ``level``, ``causes``). Sorted by cluster and
    group. A resource type no orchestrator registers has no groups.
    """
    by_key = {(c.stack, c.logical_id): c for c in changes}
    updated = {f"{c.stack}/{c.logical_id}": tuple(p.path for p in c.properties) for c in changes if c.action == "update"}
    failing_stacks = {c.stack for c in changes if c.action == "fail"}
    out: list[GroupImpact] = []
    for key in sorted(set(old_res) | set(new_res)):
        old, new = old_res.get(key), new_res.get(key)
        type_ = (new or old or {}).get("Type", "")
        reviewer = _reviewer(str(type_))
        if reviewer is None:
            continue
        where = f"{key[0]}/{key[1]}"
        found: list[GroupImpact] = reviewer.group_impacts(
            dict((old or {}).get("Properties") or {}) if old else None,
            dict((new or {}).get("Properties") or {}) if new else None, region, where, updated)
        change = by_key.get(key)
        out.extend(_cloudformation(g, change, key[0] in failing_stacks) for g in found)
    return sorted(out, key=lambda g: (g.cluster, g.group))


def _cloudformation(g: GroupImpact, change: Any, stack_fails: bool) -> GroupImpact:
    """``g`` with what CloudFormation decides for the whole resource: a failing update of its stack wins, then a
    replacement or move of the resource."""
    if stack_fails:
        causes = g.causes if g.kind == "update_fails" else ()
        return replace(g, kind="update_fails", causes=causes or ("another resource of the stack",),
                       source=g.source if g.kind == "update_fails" else ROLLBACK_SOURCE)
    if change is not None and change.action in ("replace", "move"):
        return replace(g, kind="replaced", causes=tuple(change.causes), source=REPLACEMENT_SOURCE)
    return g


def with_boot(impacts: Sequence[GroupImpact], boot_s: Mapping[str, int]) -> list[GroupImpact]:
    """``impacts`` with each booting group's estimate from ``boot_s`` (compute group name -> the plan's
    ``estimated_boot_s``, from the NEW blueprint)."""
    return [replace(g, boot_s=boot_s.get(g.group)) if g.kind in BOOTS else g for g in impacts]


def blueprint_boot_s(path: str, org: str | None = None) -> dict[str, int]:
    """Compute group name -> ``estimated_boot_s`` of the blueprint at ``path`` (the plan's figure, one home:
    ``ResolvedImage.estimated_boot_s``). Raises what loading the blueprint raises."""
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint

    rc = resolve(load_blueprint(path, org=org))
    return {rg.spec.name: rg.image.estimated_boot_s for rg in rc.groups}


# ---- rendering ----------------------------------------------------------------------------------
def text_lines(impacts: Sequence[GroupImpact], *, verbose: bool = False) -> list[str]:
    """Text lines: one per group that is not untouched (every group with ``verbose``); none when there is none."""
    shown = [g for g in impacts if verbose or g.kind != "untouched"]
    if not shown:
        return []
    lines = ["jobs (per node group):"]
    for g in shown:
        lines.append(f"  {g.group} ({g.cluster}): {g.nodes}; jobs: {g.jobs}; time: {g.time_text()}")
        if g.causes:
            lines.append(f"      because {', '.join(g.causes)}")
    return lines


def markdown_lines(impacts: Sequence[GroupImpact]) -> list[str]:
    """A markdown table of every group (empty list for none)."""
    if not impacts:
        return []
    lines = ["**Jobs:** what the change does to each node group", "",
             "| group | cluster | nodes | running jobs | time | because |", "|---|---|---|---|---|---|"]
    for g in impacts:
        because = ", ".join(f"`{c}`" for c in g.causes).replace("|", "\\|")
        lines.append(f"| `{g.group}` | {g.cluster} | {g.nodes} | {g.jobs} | {g.time_text()} | {because} |")
    return lines + [""]
