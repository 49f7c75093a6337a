"""Observability rules (metrics layer).

Sources are given per rule. Scope "observability" rules see only the section; scope "blueprint" rules
need the orchestrator too.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, ObservabilitySpec
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
    "R-OBS-3",
    level="warning",
    source="fmcluster: the exporters and the head-node Prometheus are installed by Slurm node scripts; "
    "HyperPod on EKS runs no Slurm controller",
    orchestrators=("hyperpod-eks",),
)
def hyperpod_eks_not_covered(bp: Blueprint) -> Iterator[Violation]:
    o = bp.observability
    if o.enabled:
        yield (
            "observability.metrics",
            (
                f"HyperPod on EKS gets the {o.metrics} workspaces but no head-node Prometheus, got orchestration eks; "
                "allowed slurm for the full metrics layer - install the EKS observability add-on to scrape the exporters"
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
