"""What a change of a HyperPod cluster (``AWS::SageMaker::Cluster``) does to the nodes of each instance group.

CloudFormation decides replacement from the registry schema (create-only ``ClusterName``, ``VpcConfig``,
``Orchestrator/Eks``: ``fmcluster diff``); an update in place calls SageMaker's ``UpdateCluster``, whose documented
behaviour per instance group is:

- ``InstanceCount`` up: nodes are added; down: nodes are removed
  (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html:
  "For each instance group, you can change the instance type, the number of instances, the lifecycle configuration
  entrypoint script, and the path to the script"; scaling down removes nodes and the work on them).
- ``LifeCycleConfig``: "The UpdateCluster API only runs the lifecycle scripts for new instance groups"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-lifecycle-best-practices-slurm-slurm-update-cluster-lifecycle.html):
  running nodes keep the old scripts.
- Everything else (``InstanceType``, ``ImageId``, ``ThreadsPerCore``, ...): what happens to running nodes is not
  documented for an ``UpdateCluster`` call (a new image reaches nodes through ``UpdateClusterSoftware``, which
  replaces root volumes and does not drain jobs, but whether CloudFormation calls it is not documented), so the
  verdict is ``unknown`` and the diff warns. Cluster-level settings (``Tags``, ``NodeRecovery``) reach no node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fmcluster.review.impact import GroupImpact, ImpactKind, worst

UPDATE_DOC = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html"
LIFECYCLE_DOC = ("https://docs.aws.amazon.com/sagemaker/latest/dg/"
                 "sagemaker-hyperpod-lifecycle-best-practices-slurm-slurm-update-cluster-lifecycle.html")
UNKNOWN_WHY = ("not documented: what UpdateCluster does to running nodes of the group when this setting changes "
               f"({UPDATE_DOC})")


def review_resource_update(old_props: Mapping[str, Any], new_props: Mapping[str, Any], region: str) -> list[dict[str, Any]]:
    """No per-setting verdict beyond CloudFormation's create-only properties (HyperPod publishes no update policy
    per setting); the job impact is :func:`group_impacts`."""
    return []


def _groups(props: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    groups = (props or {}).get("InstanceGroups") or []
    return {str(g.get("InstanceGroupName")): dict(g) for g in groups if isinstance(g, dict)}


def _count(group: Mapping[str, Any]) -> int:
    try:
        return int(group.get("InstanceCount", 0))
    except (TypeError, ValueError):
        return 0


def _setting_kind(key: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[ImpactKind, str]:
    """What a change of one instance-group setting does to the group's running nodes, and its source."""
    if key == "InstanceCount":
        return ("grows" if _count(new) > _count(old) else "shrinks"), UPDATE_DOC
    if key == "LifeCycleConfig":
        return "not_applied", LIFECYCLE_DOC
    return "unknown", UNKNOWN_WHY


def group_impacts(old_props: Mapping[str, Any] | None, new_props: Mapping[str, Any] | None, region: str,
                  where: str, updated: Mapping[str, tuple[str, ...]] | None = None) -> list[GroupImpact]:
    """One :class:`fmcluster.review.impact.GroupImpact` per instance group of either side (``None``: the cluster
    resource is added or removed). ``updated`` (resources updated in place) is not used: an instance group names
    no other resource whose update reaches its nodes."""
    old, new = _groups(old_props), _groups(new_props)
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            out.append(GroupImpact(where, name, "added" if name not in old else "removed", source=UPDATE_DOC))
            continue
        changed = sorted(k for k in set(old[name]) | set(new[name]) if old[name].get(k) != new[name].get(k))
        found = [(k, *_setting_kind(k, old[name], new[name])) for k in changed]
        kind = worst([k for _, k, _ in found])
        causes = tuple(f"InstanceGroups[{name}].{k}" for k, kk, _ in found if kk == kind)
        source = next((s for _, kk, s in found if kk == kind), UPDATE_DOC)
        out.append(GroupImpact(where, name, kind, causes, source))
    return out
