"""``<name>-network``: VPC, subnets, endpoints, EFA security group, placement groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from constructs import Construct

from fmcluster.blueprint.model import NetworkSpec
from fmcluster.features.network.construct import GpuNetwork, Placement


class NetworkStack(Stack):
    def __init__(self, scope: Construct, id: str, *, spec: NetworkSpec, placement: Placement,
                 placement_group_names: Sequence[str], **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.network = GpuNetwork(self, "Network", spec=spec, placement=placement,
                                  placement_group_names=placement_group_names)
