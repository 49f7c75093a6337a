"""``<name>-observability``: metrics workspaces (managed) or just the node policy and settings (self-hosted).

Independent of the orchestrator and of the other stacks; the cluster stack consumes its outputs.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.blueprint.model import BudgetSpec, ObservabilitySpec
from fmcluster.features.network.stack import NetworkStack
from fmcluster.features.observability.construct import ClusterObservability
from fmcluster.features.observability.endpoints import (
    OUTPUT_ALERT_TOPIC_ARN,
    OUTPUT_AMP_LOG_GROUP,
    OUTPUT_GRAFANA_URL,
    OUTPUT_NODE_POLICY_ARN,
    OUTPUT_QUERY_URL,
    OUTPUT_REMOTE_WRITE_URL,
    OUTPUT_SSM_PARAMETER,
)
from fmcluster.features.observability.render_alert_rules import render_alert_rules
from fmcluster.features.observability.render_context import observability_context
from fmcluster.resolved import BLUEPRINT_TAG
from fmcluster.stacks.context import StackContext


class ObservabilityStack(Stack):
    """The metrics layer (``observability``: ClusterObservability) and its outputs: node policy ARN, SSM
    parameter ``parameter_name``, Grafana URL, the alert topic and, when managed, the AMP remote-write and
    query URLs. ``window_events``: the capacity window's rule may publish to the alert topic; ``budget``/
    ``budget_tag``: the cluster's budget (:class:`ClusterObservability`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: ObservabilitySpec,
        cluster_name: str,
        parameter_name: str,
        alert_rules: str,
        vpc: ec2.IVpc | None = None,
        subnet: ec2.ISubnet | None = None,
        security_group: ec2.ISecurityGroup | None = None,
        window_events: bool = False,
        budget: BudgetSpec | None = None,
        budget_tag: tuple[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.observability = ClusterObservability(
            self, "Observability", spec=spec, cluster_name=cluster_name, parameter_name=parameter_name,
            alert_rules=alert_rules, vpc=vpc, subnet=subnet, security_group=security_group,
            window_events=window_events, budget=budget, budget_tag=budget_tag,
        )
        obs = self.observability
        CfnOutput(
            self,
            OUTPUT_NODE_POLICY_ARN,
            value=obs.node_policy.managed_policy_arn,
            description="Attach to the role of the node running Prometheus",
        )
        CfnOutput(
            self,
            OUTPUT_SSM_PARAMETER,
            value=obs.parameter.parameter_name,
            description="JSON settings the head node reads at boot",
        )
        CfnOutput(self, OUTPUT_GRAFANA_URL, value=obs.grafana_url)
        if obs.alert_topic_arn is not None:
            CfnOutput(self, OUTPUT_ALERT_TOPIC_ARN, value=obs.alert_topic_arn,
                      description="SNS topic every alert (and the daily Watchdog) is sent to")
        if obs.log_group is not None:
            CfnOutput(self, OUTPUT_AMP_LOG_GROUP, value=obs.log_group.log_group_name,
                      description="CloudWatch Logs group of the AMP alert manager and ruler (delivery errors)")
        if obs.remote_write_url is not None and obs.query_url is not None:
            CfnOutput(self, OUTPUT_REMOTE_WRITE_URL, value=obs.remote_write_url)
            CfnOutput(self, OUTPUT_QUERY_URL, value=obs.query_url)


def build_stack(ctx: StackContext) -> ObservabilityStack | None:
    """The feature registry's ``stack`` hook: ``<name>-observability`` when ``observability.metrics`` is not ``none``
    (else ``None``), with the rendered alert rules, in the ``network`` stack's GPU subnet; the alert topic admits the
    capacity window's rule where the orchestrator automates a window's end, and carries the blueprint's budget."""
    rc, bp = ctx.rc, ctx.rc.blueprint
    if rc.stacks.observability is None:
        return None
    net = ctx.stack("network", NetworkStack).network
    return ObservabilityStack(
        ctx.app, rc.stacks.observability, env=ctx.env, spec=bp.observability, cluster_name=bp.name,
        parameter_name=rc.observability_parameter, alert_rules=render_alert_rules(observability_context(rc)),
        vpc=net.vpc, subnet=net.gpu_subnet, security_group=net.efa_security_group,
        window_events=rc.profile.window_automation and any(g.announced_end for g in bp.compute),
        budget=bp.budget, budget_tag=(BLUEPRINT_TAG, rc.tags[BLUEPRINT_TAG]),
        description=f"fmcluster {bp.name}: {bp.observability.metrics} metrics (Prometheus, Grafana, alert rules)",
    )
