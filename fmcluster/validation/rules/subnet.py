"""GPU subnet sizing rules: a new VPC's GPU subnet must hold the cluster (R-SUBNET-1) with headroom
(R-SUBNET-2).

The count they judge is the resolved cluster's :attr:`ResolvedCluster.subnet`
(:func:`fmcluster.resolved.subnet.subnet_usage`, which says what is counted). When a subnet is too
small and the blueprint chooses ``efa`` where its orchestrator lets it choose
(:attr:`OrchestratorProfile.efa_interface_type_setting`: PCS, HyperPod), the advice also names
``efa-only``; ParallelCluster chooses the type itself, so it is never advised there.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.catalog.networking import SUBNET_SIZING_DOC, subnet_size
from fmcluster.resolved import ResolvedCluster
from fmcluster.resolved.subnet import MIN_PREFIX, SubnetUsage, subnet_usage
from fmcluster.validation.rules import Violation, rule


def _efa_only(rc: ResolvedCluster, usage: SubnetUsage, *, headroom: bool) -> tuple[str, str] | None:
    """(setting, "then N addresses ...") when the blueprint chooses ``efa`` where it could choose
    ``efa-only`` (PCS, HyperPod) and that saves addresses; None otherwise (always for ParallelCluster)."""
    bp = rc.blueprint
    setting = rc.profile.efa_interface_type_setting
    if setting is None or usage.efa_interface_type != "efa":
        return None
    alt = subnet_usage(bp, efa_interface_type="efa-only", profile=rc.profile)
    if alt.node_addresses == usage.node_addresses:  # no group has EFA: nothing to save
        return None
    caveat = rc.profile.efa_only_caveat
    then = f"then {alt.recommended} recommended" if headroom else f"then {alt.required} needed"
    return setting, then + caveat


def _fix(usage: SubnetUsage, wanted: int, vpc_prefix: int, efa_only: tuple[str, str] | None) -> str:
    """The ``allowed ...`` part: a prefix that holds ``wanted`` addresses (or fewer nodes), and
    ``efa-only`` when :func:`_efa_only` advises it."""
    switch = "" if efa_only is None else f"{efa_only[0]}: efa-only ({efa_only[1]})"
    if wanted < MIN_PREFIX:
        text = f"fewer nodes (even a /{MIN_PREFIX} holds only {subnet_size(MIN_PREFIX)})"
        if efa_only is not None:
            text += f" or {switch} - did you mean {efa_only[0]}: efa-only?"
        return text
    text = f"/{wanted} or a shorter prefix"
    if wanted <= vpc_prefix:
        text += f" (the VPC must be larger than the subnet, got network.vpc_cidr /{vpc_prefix})"
    if switch:
        text += f", or {switch}"
    return text + f" - did you mean gpu_subnet_prefix_length: {wanted}?"


@rule("R-SUBNET-1", scope="cluster", source=f"{SUBNET_SIZING_DOC} (5 reserved); "
      "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html (efa takes an address, "
      "efa-only none)")
def gpu_subnet_holds_cluster(rc: ResolvedCluster) -> Iterator[Violation]:
    """A new VPC's GPU subnet must hold every node's addresses, the management nodes and AWS's five."""
    bp, usage = rc.blueprint, rc.subnet
    if usage.fits is False:
        vpc_prefix = int(bp.network.vpc_cidr.split("/")[1])
        yield "network.gpu_subnet_prefix_length", (
            f"the GPU subnet is too small for the cluster: {usage.required} IPv4 addresses needed "
            f"({usage.node_addresses} for nodes, {sum(n for _, n in usage.management)} for management nodes, "
            f"{usage.aws_reserved} reserved by AWS), "
            f"got /{usage.prefix_length} ({usage.subnet_addresses} addresses); "
            f"allowed {_fix(usage, usage.min_prefix_length, vpc_prefix, _efa_only(rc, usage, headroom=False))}"
        )


@rule("R-SUBNET-2", level="warning", scope="cluster",
      source="fmcluster headroom policy, docs/capacity.md (10% + FSx estimate + "
      "service interfaces; the FSx interface count is unverified)")
def gpu_subnet_headroom(rc: ResolvedCluster) -> Iterator[Violation]:
    """Fits, but without room for replacement nodes, FSx interfaces and endpoints."""
    bp, usage = rc.blueprint, rc.subnet
    if usage.fits and usage.fits_with_headroom is False:
        vpc_prefix = int(bp.network.vpc_cidr.split("/")[1])
        yield "network.gpu_subnet_prefix_length", (
            f"the GPU subnet leaves no headroom: {usage.recommended} IPv4 addresses recommended "
            f"({usage.required} required + {usage.recommended - usage.required} for replacement nodes, FSx and endpoints), "
            f"got /{usage.prefix_length} ({usage.subnet_addresses} addresses); "
            f"allowed {_fix(usage, usage.recommended_prefix_length, vpc_prefix, _efa_only(rc, usage, headroom=True))}"
        )
