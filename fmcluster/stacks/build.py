"""Blueprint -> stacks: resolve once, then call the stack hooks of the registries in their declared order
(:data:`fmcluster.features.registry.STACK_ORDER`); each hook hands its construct the blueprint section and the
resolved cluster's derived facts. The builder names no feature: the hooks do.

Stacks are region-bound and account-agnostic (``env`` has a region, no account), so synthesis
needs no credentials and makes no lookups: the AZ comes from the blueprint, never from context.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App, Environment, Stack, Tags

from fmcluster.blueprint.model import Blueprint
from fmcluster.features.registry import FEATURES, ORCHESTRATOR, ORCHESTRATOR_LATE, STACK_ORDER
from fmcluster.orchestrators.registry import row_for
from fmcluster.resolved import BLUEPRINT_TAG, resolve
from fmcluster.stacks.context import StackContext

ALLOW_DATA_DESTRUCTION = "fmcluster:allowDataDestruction"

#: CDK feature flags fmcluster relies on. Set here (not only in cdk.json) so that the CLI, tests,
#: `fmcluster plan` and library users synthesize the same templates.
FEATURE_FLAGS = {
    "@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": True,
    "@aws-cdk/aws-s3:createDefaultLoggingPolicy": True,
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/core:defaultCrossStackReferences": "strong",
}


#: Resource types whose ``Tags`` are create-only: a tag change REPLACES the resource. They get no
#: blueprint tags (a new or changed tag would replace e.g. a placement group whose name the cluster
#: stack imports, and CloudFormation cannot change an imported export). Source: the registry schema's
#: ``createOnlyProperties`` as shipped with cfn-lint (``AWS::EC2::PlacementGroup``: ``/properties/Tags``);
#: tests/test_diff_exports.py checks that this covers every synthesized type whose Tags are create-only.
REPLACE_ON_TAG_CHANGE = ("AWS::EC2::PlacementGroup",)


@dataclass(frozen=True)
class ClusterStacks:
    """The stacks of one blueprint, by role (:class:`fmcluster.resolved.cluster.StackNames`); the optional ones are
    ``None`` when the blueprint needs none."""

    network: Stack
    storage: Stack
    cluster: Stack
    observability: Stack | None = None
    eks: Stack | None = None
    image: Stack | None = None
    accounting: Stack | None = None
    addons: Stack | None = None

    def all(self) -> list[Stack]:
        return [self.network, self.storage, self.cluster, *([self.observability] if self.observability else []),
                *([self.eks] if self.eks else []), *([self.image] if self.image else []),
                *([self.accounting] if self.accounting else []), *([self.addons] if self.addons else [])]


def _build_stack(ctx: StackContext, provider: str) -> Stack | None:
    """The stack of ``provider`` (a feature's ``stack`` hook; the orchestrator row's extra stack for
    :data:`fmcluster.features.registry.ORCHESTRATOR`, kept in ``ctx.extra``; its late stack for
    :data:`fmcluster.features.registry.ORCHESTRATOR_LATE`), or ``None`` when it adds none."""
    if provider == ORCHESTRATOR_LATE:
        return row_for(ctx.rc.blueprint.orchestrator).build_late_stack(ctx)
    if provider != ORCHESTRATOR:
        stack: Stack | None = FEATURES[provider].build_stack(ctx)
        return stack
    ctx.extra = row_for(ctx.rc.blueprint.orchestrator).build_extra_stack(ctx)
    return ctx.extra.stack if ctx.extra is not None else None


def _flag(app: App, name: str) -> bool:
    value = app.node.try_get_context(name)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def build_app(app: App, bp: Blueprint) -> ClusterStacks:
    """Add the network, storage, observability (when ``observability.metrics`` is not ``none``), image (when
    ``software.image.mode`` is ``bake``), EKS (HyperPod EKS with an EKS cluster fmcluster creates), cluster and
    add-ons (HyperPod EKS add-ons that need nodes, after the cluster stack) stacks of ``bp`` (a validated blueprint) to ``app``; returns them.

    Resolves ``bp`` once (:func:`fmcluster.resolved.resolve`) and calls the stack hooks in the order of
    :data:`fmcluster.features.registry.STACK_ORDER` (each feature's ``stack`` hook, and the orchestrator row's extra
    stack), each with a :class:`fmcluster.stacks.context.StackContext` holding the stacks built before it; every
    stack is tagged ``fmcluster:stack: <role>``, every resource with the blueprint's tags.

    Must be called before anything else is added to ``app`` (it sets CDK feature flags that the
    app's context does not already set).
    """
    for flag, value in FEATURE_FLAGS.items():
        if app.node.try_get_context(flag) is None:
            app.node.set_context(flag, value)
    rc = resolve(bp)
    ctx = StackContext(app, rc, Environment(region=bp.region), _flag(app, ALLOW_DATA_DESTRUCTION))
    for role, provider in STACK_ORDER:
        stack = _build_stack(ctx, provider)
        if stack is not None:
            ctx.built[role] = stack
            Tags.of(stack).add("fmcluster:stack", role)
    for k, v in rc.tags.items():
        # fmcluster's own tag is fixed for a blueprint name (a new name is a new set of stacks), so it stays
        # on every resource; the blueprint's tags stay off REPLACE_ON_TAG_CHANGE types.
        exclude = [] if k == BLUEPRINT_TAG else list(REPLACE_ON_TAG_CHANGE)
        Tags.of(app).add(k, v, exclude_resource_types=exclude)
    return ClusterStacks(**ctx.built)
