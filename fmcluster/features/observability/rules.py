"""Observability rules (metrics layer).

Sources are given per rule. Scope "observability" rules see only the section; scope "blueprint" rules
need the orchestrator too.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import RESERVATION_BACKED, Blueprint, ObservabilitySpec
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule


@rule(
    "R-OBS-1",
    source="https://prometheus.io/docs/prometheus/latest/configuration/configuration/ "
    "(scrape_timeout: 'Per-scrape timeout ... cannot be greater than the scrape interval')",
    scope="observability",
)
def scrape_timeout_within_interval(o: ObservabilitySpec) -> Iterator[Violation]:
    if o.scrape_timeout_seconds > o.scrape_interval_seconds:
        yield (
            "observability.scrape_timeout_seconds",
            (
                f"longer than scrape_interval_seconds ({o.scrape_interval_seconds} s), got {o.scrape_timeout_seconds}; "
                f"allowed 1..{o.scrape_interval_seconds} - lower the timeout or raise scrape_interval_seconds"
            ),
        )


@rule(
    "R-OBS-2",
    source="https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html (HyperPod cluster "
    "instances run in a SageMaker service account, so EC2 DescribeInstances in your account does not list them)",
    orchestrators=("hyperpod",),
)
def hyperpod_needs_slurm_discovery(bp: Blueprint) -> Iterator[Violation]:
    o = bp.observability
    if o.enabled and o.node_discovery == "ec2":
        yield (
            "observability.node_discovery",
            (
                "EC2 service discovery cannot find SageMaker HyperPod nodes, got 'ec2'; allowed slurm or auto "
                "- did you mean node_discovery: slurm?"
            ),
        )


@rule(
    "R-OBS-4",
    level="warning",
    source="fmcluster: grafana_authentication configures only Amazon Managed Grafana",
    scope="observability",
)
def grafana_auth_only_for_managed(o: ObservabilitySpec) -> Iterator[Violation]:
    if o.metrics != "managed" and "grafana_authentication" in o.model_fields_set:
        yield (
            "observability.grafana_authentication",
            (
                f"ignored because metrics is {o.metrics!r}, got {o.grafana_authentication!r}; "
                "allowed only with metrics: managed (self-hosted Grafana is reached through SSM port forwarding)"
            ),
        )


@rule(
    "R-OBS-5",
    level="warning",
    source="fmcluster: amp_vpc_endpoint and alert_email/alert_topic_arn configure the managed workspace path or the "
    "alert topic; https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-and-interface-VPC.html",
    scope="observability",
)
def receiver_and_endpoint_settings_apply(o: ObservabilitySpec) -> Iterator[Violation]:
    if o.amp_vpc_endpoint and o.metrics != "managed":
        yield (
            "observability.amp_vpc_endpoint",
            f"ignored because metrics is {o.metrics!r}, got true; allowed only with metrics: managed "
            "(only the managed Prometheus agent writes to Amazon Managed Service for Prometheus)",
        )
    if o.alert_email and o.alert_topic_arn:
        yield (
            "observability.alert_email",
            f"ignored because alert_topic_arn is set, got {o.alert_email!r}; "
            "allowed one of alert_email (a topic fmcluster creates) or alert_topic_arn (your topic: subscribe the address there)",
        )


@rule(
    "R-OBS-6",
    level="warning",
    source="https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-and-interface-VPC.html (private subnets "
    "reach AMP through a NAT gateway or an aps-workspaces interface endpoint); fmcluster cannot see an imported "
    "VPC's routes at synth, so this is a warning",
)
def imported_vpc_reaches_amp(bp: Blueprint) -> Iterator[Violation]:
    o = bp.observability
    if o.metrics == "managed" and bp.network.vpc_id and not o.amp_vpc_endpoint:
        yield (
            "observability.amp_vpc_endpoint",
            "the head node must reach Amazon Managed Service for Prometheus from the imported VPC "
            f"{bp.network.vpc_id}, got false; "
            "allowed true (an aps-workspaces interface endpoint) or false when the GPU subnet routes to a NAT gateway "
            "- set amp_vpc_endpoint: true for subnets without one",
        )


@rule(
    "R-OBS-7",
    source="fmcluster: alerts go to one SNS topic (render_alertmanager.py), which delivers only to confirmed "
    "subscriptions (https://aws.amazon.com/about-aws/whats-new/2023/05/amazon-sns-automatic-deletion-unconfirmed-"
    "subscriptions/: an email subscription is pending until confirmed, deleted after 48 hours unconfirmed)",
)
def metrics_need_a_receiver(bp: Blueprint) -> Iterator[Violation]:
    """Metrics on with no ``alert_email``, no ``alert_topic_arn`` and no explicit ``no_alert_receiver``:
    every alert, the Watchdog and the absent() rules would reach nobody."""
    o = bp.observability
    if o.enabled and not (o.alert_email or o.alert_topic_arn or o.no_alert_receiver):
        yield (
            "observability.alert_email",
            f"alerts reach nobody: metrics is {o.metrics!r} but no receiver is set, got none; allowed "
            "observability.alert_email (an address fmcluster subscribes; confirm the subscription email), "
            "observability.alert_topic_arn (your SNS topic) or observability.no_alert_receiver: true "
            "(the explicit choice to send alerts to nobody)",
        )


@rule(
    "R-OBS-8",
    source="fmcluster: no_alert_receiver is the explicit choice that alerts reach nobody (R-OBS-7); a receiver set "
    "beside it would still get every alert",
)
def no_receiver_and_a_receiver(bp: Blueprint) -> Iterator[Violation]:
    """``no_alert_receiver: true`` together with ``alert_email`` or ``alert_topic_arn``: the blueprint says both that
    alerts go nowhere and where they go; one of them is a leftover."""
    o = bp.observability
    receivers = [f for f in ("alert_email", "alert_topic_arn") if getattr(o, f)]
    if o.no_alert_receiver and receivers:
        yield (
            "observability.no_alert_receiver",
            f"no_alert_receiver is true but {' and '.join(receivers)} is set too, got true; allowed false with a "
            "receiver, or true with neither alert_email nor alert_topic_arn",
        )


@rule(
    "R-BUDGET-1", scope="cluster",
    source="fmcluster: the budget notifies the alert topic the observability stack creates or imports "
    "(ClusterObservability; docs/capacity.md \"Budget\"); that topic exists only with metrics on an orchestrator "
    "that runs Slurm",
)
def budget_needs_the_alert_topic(rc: ResolvedCluster) -> Iterator[Violation]:
    """A ``budget`` with no alert topic to notify: its thresholds would reach nobody."""
    bp = rc.blueprint
    if bp.budget is None:
        return
    o = bp.observability
    if not o.enabled or not rc.profile.runs_slurm:
        yield (
            "budget",
            f"the budget's notifications go to the alert topic, and this cluster has none, got observability.metrics "
            f"{o.metrics!r} on orchestrator {rc.profile.key!r}; allowed observability.metrics managed or self_hosted "
            "(with alert_email or alert_topic_arn) on a Slurm orchestrator, or no budget",
        )


@rule(
    "R-BUDGET-2", level="warning",
    source="Capacity Blocks are paid up front (EC2 API reference CapacityBlockOffering upfrontFee, 'The total price to "
    "be paid up front', https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlockOffering.html; EC2 "
    "user guide capacity-blocks-extend.html, 'Billing'); training plans too (SageMaker API reference "
    "CreateTrainingPlan: the plan is Scheduled 'after successful upfront payment', "
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingPlan.html). Not verified offline: "
    "that an On-Demand Capacity Reservation is billed whether or not instances run in it (EC2 user guide "
    "capacity-reservations-pricing-billing.html), and the HyperPod scale-down page's wording that metering stops only "
    "for on-demand instances (https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-scale-down.html)",
)
def budget_stop_saves_nothing_on_prepaid_capacity(bp: Blueprint) -> Iterator[Violation]:
    """``budget.stop_compute_at_percent`` with a compute group on reservation-backed capacity (``capacity_block``,
    ``training_plan``, ``odcr``): stopping its nodes ends the jobs and the reservation is paid all the same."""
    if bp.budget is None or bp.budget.stop_compute_at_percent is None:
        return
    for i, g in enumerate(bp.compute):
        if g.capacity.type in RESERVATION_BACKED:
            yield (
                f"compute[{i}].capacity.type",
                f"the budget's stop (stop_compute_at_percent {bp.budget.stop_compute_at_percent}) ends jobs without "
                f"reducing the cost of {g.name}'s prepaid capacity, got {g.capacity.type!r}; the reservation is paid "
                "whether its nodes run or not. Allowed as is (the stop still ends the jobs), or stop_compute_at_percent "
                "unset, or on_demand / spot capacity for the group",
            )
