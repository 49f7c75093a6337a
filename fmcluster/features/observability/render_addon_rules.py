"""Alert rules for a cluster whose metrics the HyperPod observability EKS add-on writes (``collector`` ``eks_addon``,
HyperPod EKS): the same rule machinery and receiver as fmcluster's own collection, on the series the add-on publishes.

What the add-on publishes (https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-cluster-metrics.html):
"Instance metrics": node_exporter's default collectors on every node (enabled by default), so ``node_load1``
(loadavg collector, https://github.com/prometheus/node_exporter#enabled-by-default); "Accelerated compute metrics":
dcgm-exporter, whose ``DCGM_FI_DEV_GPU_TEMP`` the add-on's own default alerts read
(https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-alerts.html); "Network metrics": the EFA
node exporter (not enabled by default; fmcluster turns the category on), whose series are ``node_amazonefa_<counter>``
with labels ``device`` and ``port`` and ``node_amazonefa_info{device}`` one per device
(aws-samples/awsome-distributed-training ``4.validation_and_observability/3.efa-node-exporter/amazon_efa_linux.go``,
the README that page links). Which cluster metrics kube-state-metrics publishes by default is "Limited" without a list,
so no rule reads ``kube_*``.

NOT VERIFIED, and how the rules stay honest about it (R-EKS-9 warns):

- which label names the node on the add-on's series: the rules group by ``instance``, the label every Prometheus scrape
  target carries;
- whether the EFA counters reach the workspace as ``node_amazonefa_<counter>`` or with ``_total`` (the exporter declares
  them counters without the suffix; an OpenMetrics scrape or an OpenTelemetry export appends it): the rules match both
  (:func:`addon_counter`);
- whether the ``networkMetrics`` level fmcluster sets runs the EFA exporter (the page's Restricted Instance Group table
  says "when advanced mode is enabled"): ``EfaMetricsAbsent`` fires when no EFA series arrives at all;
- the node check's and the acceptance gate's verdicts are no metric on EKS (the node check cordons and taints the node;
  the gate runs on Slurm): no rule, docs/kubernetes.md says how to see them.

A node is judged against the smallest count of the groups (GPUs, EFA devices per node), since no label on the add-on's
series names the instance type: exact for a blueprint of one instance type, a lower bound otherwise.
"""

from __future__ import annotations

from dataclasses import replace

from fmcluster.features.observability.render_alert_types import AlertRule
from fmcluster.features.observability.render_context import ObservabilityContext

#: Series the add-on publishes that these rules read -> source (see the module docstring).
ADDON_SERIES: dict[str, str] = {
    "node_load1": "node_exporter loadavg collector (add-on instance metrics)",
    "DCGM_FI_DEV_GPU_TEMP": "dcgm-exporter (add-on accelerated compute metrics, its default alerts)",
    "node_amazonefa_info": "EFA node exporter amazon_efa_linux.go (add-on network metrics)",
    "node_amazonefa_rdma_read_wr_err": "EFA node exporter amazon_efa_linux.go (add-on network metrics)",
    "node_amazonefa_rdma_write_wr_err": "EFA node exporter amazon_efa_linux.go (add-on network metrics)",
}
#: How long a node, GPU or EFA device may be missing before alerting: HyperPod replaces a faulty node itself
#: (``node_recovery: Automatic``), and a replacement takes minutes.
MISSING_FOR = "15m"


def addon_counter(name: str) -> str:
    """A selector of the EFA exporter counter ``name`` under either name it may reach the workspace with (``<name>`` or
    ``<name>_total``): ``{__name__=~"<name>(_total)?"}``. One counter per selector: a range function drops the metric
    name, and two counters of one device would then clash ("vector cannot contain metrics with the same labelset").
    Raises ValueError for a name not in :data:`ADDON_SERIES`."""
    if name not in ADDON_SERIES:
        raise ValueError(f"not a series the add-on publishes: {name!r}; allowed {', '.join(sorted(ADDON_SERIES))}")
    return f'{{__name__=~"{name}(_total)?"}}'


def _errors(counter: str) -> str:
    return f"(sum by (instance, device) (increase({addon_counter(counter)}[10m])) > 0)"


def _min_positive(values: list[int]) -> int:
    positive = [v for v in values if v > 0]
    return min(positive) if positive else 0


def gpu_rules(ctx: ObservabilityContext) -> list[AlertRule]:
    """GPUs missing per node (fewer than the smallest GPU count of the groups) and in the cluster (fewer than the
    groups keep running); none without GPU groups."""
    per_node = _min_positive([g.gpus_per_node for g in ctx.groups])
    kept = sum(g.gpus_per_node * g.min_count for g in ctx.groups)
    rules = []
    if per_node:
        rules.append(AlertRule(
            "GpuMissing",
            f"count by (instance) (DCGM_FI_DEV_GPU_TEMP) < {per_node}",
            "5m",
            "critical",
            "{{ $labels.instance }} reports fewer GPUs than its instance type has",
            f"dcgm-exporter on this node reports fewer than {per_node} GPUs (the smallest count of the blueprint's "
            "groups): a GPU fell off the bus or the driver lost it. Cordon the node (kubectl cordon) and replace it.",
        ))
    if kept:
        rules.append(AlertRule(
            "GpusBelowPlan",
            f"(count(DCGM_FI_DEV_GPU_TEMP) or vector(0)) < {kept}",
            MISSING_FOR,
            "warning",
            "{{ $value }} GPUs report metrics, fewer than the cluster keeps",
            f"The blueprint's groups keep {kept} GPUs running; fewer report DCGM metrics. A node is down or being "
            "replaced, or dcgm-exporter stopped: check `kubectl get nodes` and the HyperPod console.",
        ))
    return rules


def efa_rules(ctx: ObservabilityContext) -> list[AlertRule]:
    """EFA devices missing on a node, RDMA work-request errors, and no EFA series at all while EFA nodes run; none
    without EFA hardware in the groups."""
    per_node = _min_positive([g.efa_interfaces_per_node for g in ctx.groups])
    if not per_node:
        return []
    rules = [
        AlertRule(
            "EfaDeviceMissing",
            f"count by (instance) (node_amazonefa_info) < {per_node}",
            "5m",
            "critical",
            "{{ $labels.instance }} has fewer EFA devices than its instance type",
            f"The EFA exporter on this node lists fewer than {per_node} devices (the smallest count of the "
            "blueprint's groups): NCCL would use fewer network cards. Cordon the node (kubectl cordon) and replace it.",
        ),
        AlertRule(
            "EfaWorkRequestErrors",
            f"{_errors('node_amazonefa_rdma_read_wr_err')} or {_errors('node_amazonefa_rdma_write_wr_err')}",
            "0m",
            "warning",
            "RDMA work-request errors on {{ $labels.device }} of {{ $labels.instance }}",
            "The EFA device completed RDMA reads or writes with errors in the last 10 minutes.",
        ),
    ]
    if any(g.efa_interfaces_per_node and g.min_count for g in ctx.groups):
        rules.append(AlertRule(
            "EfaMetricsAbsent",
            "absent(node_amazonefa_info)",
            MISSING_FOR,
            "warning",
            "No EFA metrics arrive from the cluster",
            "EFA nodes run, but the workspace receives no EFA exporter series: the observability add-on's network "
            "metrics are off or at a level that does not run the EFA exporter (aws eks describe-addon-configuration), "
            "so EFA faults are not watched.",
        ))
    return rules


def node_rules(ctx: ObservabilityContext) -> list[AlertRule]:
    """Fewer nodes report node_exporter metrics than the groups keep running; none when every group may be empty."""
    kept = sum(g.min_count for g in ctx.groups)
    if not kept:
        return []
    return [AlertRule(
        "NodesBelowPlan",
        f"(count(node_load1) or vector(0)) < {kept}",
        MISSING_FOR,
        "warning",
        "{{ $value }} nodes report metrics, fewer than the cluster keeps",
        f"The blueprint's groups keep {kept} nodes running; fewer report node metrics. HyperPod replaces faulty "
        "nodes itself; if this lasts, check `kubectl get nodes` and the HyperPod console.",
    )]


#: Slurm advice in a rule's description -> what to do on Kubernetes instead.
KUBERNETES_ADVICE = {"Drain the node in Slurm": "Cordon the node (kubectl cordon)"}


def on_kubernetes(rule: AlertRule) -> AlertRule:
    """``rule`` with its Slurm advice (:data:`KUBERNETES_ADVICE`) worded for Kubernetes."""
    description = rule.description
    for slurm, kubernetes in KUBERNETES_ADVICE.items():
        description = description.replace(slurm, kubernetes)
    return replace(rule, description=description)


def addon_alert_groups(ctx: ObservabilityContext, dcgm_gpu_rules: list[AlertRule],
                       pipeline: list[AlertRule]) -> dict[str, list[AlertRule]]:
    """Rule groups by name: ``<name>-gpu`` (``dcgm_gpu_rules``, the DCGM-only GPU rules of fmcluster's own set, worded
    for Kubernetes, then :func:`gpu_rules`), ``<name>-efa`` (:func:`efa_rules`, when the groups have EFA),
    ``<name>-nodes`` (:func:`node_rules`, when nodes are kept running) and ``<name>-pipeline`` (``pipeline``: the
    Watchdog)."""
    name = ctx.blueprint_name
    groups = {f"{name}-gpu": [on_kubernetes(r) for r in dcgm_gpu_rules] + gpu_rules(ctx),
              f"{name}-efa": efa_rules(ctx), f"{name}-nodes": node_rules(ctx), f"{name}-pipeline": pipeline}
    return {group: rules for group, rules in groups.items() if rules}
