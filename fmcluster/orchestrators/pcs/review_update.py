"""What a change of an AWS PCS compute node group (``AWS::PCS::ComputeNodeGroup``) does to its nodes.

CloudFormation replaces a node group whose create-only ``Name``, ``ClusterId`` or ``InstanceConfigs`` change
(registry schema, ``fmcluster diff``). An update in place is PCS's ``UpdateComputeNodeGroup``, documented in
https://docs.aws.amazon.com/pcs/latest/userguide/working-with_cng_update.html ("Considerations when updating"):

- a new AMI or launch template version: "AWS PCS replaces existing instances in the node group after a node group
  update operation. If there are jobs running on a node, those jobs are allowed to complete before AWS PCS replaces
  the node" (drained, then replaced);
- a lower maximum instance count: "AWS PCS terminates running instances associated with the removed Slurm nodes.
  The running jobs on the removed nodes fail and return to their queues";
- "Updates that don't impact the configuration of specific nodes don't affect running nodes. For example, adding a
  subnet and changing the allocation strategy" (``SubnetIds``, ``SpotOptions``, ``PurchaseOption``, ``Tags``);
- anything else (``IamInstanceProfileArn``, ``SlurmConfiguration``, a lower minimum alone): not documented, so
  ``unknown`` and a warning.

fmcluster's node groups name their launch template's ``LatestVersionNumber``: a change of ``LaunchTemplateData`` is
an in-place update that creates a new template version
(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-ec2-launchtemplate.html,
``LatestVersionNumber``), so the attribute changes without the node group's template text changing: a launch template
whose data is updated in place (``updated``) counts as a new version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fmcluster.review.impact import GroupImpact, ImpactKind, worst

UPDATE_DOC = "https://docs.aws.amazon.com/pcs/latest/userguide/working-with_cng_update.html"
UNKNOWN_WHY = f"not documented: what PCS does to running nodes when this setting changes ({UPDATE_DOC})"
#: Settings whose change makes PCS replace the group's instances once their jobs end. Node lifecycle actions:
#: "Configuration changes drain and replace existing nodes"
#: (https://docs.aws.amazon.com/pcs/latest/userguide/cng-node-lifecycle-actions.html); fmcluster's lifecycle scripts
#: are content-addressed S3 assets, so any change to a rendered script is such a change.
_REPLACES = {"CustomLaunchTemplate", "AmiId", "NodeLifecycleActions"}
#: Settings whose change does not reach running nodes.
_UNTOUCHED = {"SubnetIds", "SpotOptions", "PurchaseOption", "Tags"}
_REF = re.compile(r"<ref ([^>]+?)(?: \(new\))?>")


def review_resource_update(old_props: Mapping[str, Any], new_props: Mapping[str, Any], region: str) -> list[dict[str, Any]]:
    """No per-setting verdict beyond CloudFormation's create-only properties; the job impact is
    :func:`group_impacts`."""
    return []


def _count(props: Mapping[str, Any], key: str) -> int:
    try:
        return int((props.get("ScalingConfiguration") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0


def _scaling(old: Mapping[str, Any], new: Mapping[str, Any]) -> ImpactKind:
    if _count(new, "MaxInstanceCount") < _count(old, "MaxInstanceCount"):
        return "shrinks"
    if _count(new, "MinInstanceCount") < _count(old, "MinInstanceCount"):
        return "unknown"
    return "grows" if (_count(new, "MaxInstanceCount"), _count(new, "MinInstanceCount")) != (
        _count(old, "MaxInstanceCount"), _count(old, "MinInstanceCount")) else "untouched"


def _setting_kind(key: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> ImpactKind:
    if key in _REPLACES:
        return "drained_replaced"
    if key in _UNTOUCHED:
        return "untouched"
    if key == "ScalingConfiguration":
        return _scaling(old, new)
    return "unknown"


def _template_updated(props: Mapping[str, Any], updated: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether the launch template version the group names belongs to a launch template whose
    ``LaunchTemplateData`` CloudFormation updates in place (a new version; a change of the template resource's own
    tags makes none)."""
    version = str((props.get("CustomLaunchTemplate") or {}).get("Version", ""))
    return any(path.startswith("LaunchTemplateData") for m in _REF.findall(version) for path in updated.get(m, ()))


def group_impacts(old_props: Mapping[str, Any] | None, new_props: Mapping[str, Any] | None, region: str,
                  where: str, updated: Mapping[str, tuple[str, ...]] | None = None) -> list[GroupImpact]:
    """One :class:`fmcluster.review.impact.GroupImpact` for the node group (``None``: added or removed);
    ``updated``: ``stack/logical id`` -> changed property paths of every resource CloudFormation updates in place."""
    props = new_props if new_props is not None else old_props or {}
    name = str(props.get("Name", where.rpartition("/")[2]))
    if old_props is None or new_props is None:
        return [GroupImpact(where, name, "added" if old_props is None else "removed", source=UPDATE_DOC)]
    changed = {k for k in set(old_props) | set(new_props) if old_props.get(k) != new_props.get(k)}
    if _template_updated(new_props, updated or {}):
        changed.add("CustomLaunchTemplate")
    found = {k: _setting_kind(k, old_props, new_props) for k in sorted(changed)}
    kind = worst(list(found.values()))
    causes = tuple(k for k, v in found.items() if v == kind and kind != "untouched")
    return [GroupImpact(where, name, kind, causes, UNKNOWN_WHY if kind == "unknown" else UPDATE_DOC)]
