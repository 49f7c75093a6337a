"""``<name>-network``: VPC, subnets, endpoints, EFA security group, placement groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from constructs import Construct

from fmcluster.blueprint.model import NetworkSpec
from fmcluster.features.network.construct import GpuNetwork, Placement
from fmcluster.stacks.context import StackContext


class NetworkStack(Stack):
    """The VPC, GPU subnet, EFA security group and placement groups (``network``: :class:`GpuNetwork`) in the AZ
    ``placement`` (kept as :attr:`placement` for the stacks that place resources in the same AZ)."""

    def __init__(self, scope: Construct, id: str, *, spec: NetworkSpec, placement: Placement,
                 placement_group_names: Sequence[str], **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.placement = placement
        self.network = GpuNetwork(self, "Network", spec=spec, placement=placement,
                                  placement_group_names=placement_group_names)


def build_stack(ctx: StackContext) -> NetworkStack:
    """The feature registry's ``stack`` hook: ``<name>-network`` in the blueprint's AZ (``availability_zone`` or
    ``availability_zone_id``; never a context lookup), with a placement group per group that gets one."""
    rc, bp = ctx.rc, ctx.rc.blueprint
    return NetworkStack(
        ctx.app, rc.stacks.network, env=ctx.env, spec=bp.network,
        placement=Placement(az=bp.az_label, az_is_id=bp.availability_zone_id is not None),
        placement_group_names=rc.placement_group_names,
        description=f"fmcluster {bp.name}: VPC, GPU subnet, EFA security group, placement groups",
    )
