"""``<name>-addons``: the EKS add-ons that need nodes, deployed after ``<name>-cluster`` (docs/decisions.md 50).

Why a stack of their own: an add-on that fails to create (the training operator without cert-manager, the observability
add-on without room on a node) rolls back the stack it is in. In ``<name>-cluster`` that rollback deletes the HyperPod
cluster after hours of deep health checks; here it deletes only the add-ons, and a second ``cdk deploy`` retries them.
CloudFormation deploys a stack only after the stacks it depends on are complete, so the worker groups have joined
before the first add-on is created (https://docs.aws.amazon.com/cdk/v2/guide/stacks.html, stack dependencies).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Fn, Stack

from fmcluster.orchestrators.hyperpod_eks.addons import EksWorkloadAddons, MetricsWorkspace
from fmcluster.orchestrators.hyperpod_eks.plan import as_eks_plan
from fmcluster.resolved import ResolvedCluster


def metrics_workspace(observability: Any) -> MetricsWorkspace | None:
    """The AMP workspace of the observability construct
    (:class:`fmcluster.features.observability.construct.ClusterObservability`), or ``None`` when it has none
    (self-hosted, or no observability stack)."""
    ws = getattr(observability, "workspace", None)
    if ws is None:
        return None
    # The endpoint without the attribute's trailing "/" (MetricsWorkspace): built from the workspace id.
    endpoint = Fn.join("", ["https://aps-workspaces.", Stack.of(ws).region, ".", Stack.of(ws).url_suffix,
                            "/workspaces/", ws.attr_workspace_id])
    return MetricsWorkspace(arn=ws.attr_arn, prometheus_endpoint=endpoint)


def build_late_stack(ctx: Any) -> Stack | None:
    """The registry row's late-stack hook: ``<name>-addons`` with the plan's add-ons that need nodes, depending on
    ``<name>-cluster``; ``None`` when the plan has none (``rc.stacks.addons``). ``ctx``:
    :class:`fmcluster.stacks.context.StackContext` (the builder tags the stack ``fmcluster:stack: addons``); the
    observability stack's workspace, when there is one, feeds the observability add-on."""
    rc: ResolvedCluster = ctx.rc
    plan = as_eks_plan(rc.eks)
    if plan is None or rc.stacks.addons is None or not plan.addons_after_nodes:
        return None
    stack = Stack(ctx.app, rc.stacks.addons, env=ctx.env,
                  description=f"fmcluster {rc.name}: EKS add-ons that need nodes (after the HyperPod cluster)")
    cluster_arn = stack.format_arn(service="eks", resource="cluster", resource_name=plan.cluster_name)
    observability = getattr(ctx.built.get("observability"), "observability", None)
    EksWorkloadAddons(stack, "EksAddons", plan=plan, cluster_name=plan.cluster_name, cluster_arn=cluster_arn,
                      tags=rc.tags, workspace=metrics_workspace(observability))
    stack.add_stack_dependency(ctx.built["cluster"], "the add-ons' pods need the HyperPod worker groups' nodes")
    return stack
