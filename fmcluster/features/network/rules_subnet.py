"""GPU subnet sizing rules: a new VPC's GPU subnet must hold the cluster (R-SUBNET-1) with headroom
(R-SUBNET-2), and the VPC must hold the GPU subnet beside its public /24 (R-SUBNET-3).

The count they judge is the resolved cluster's :attr:`ResolvedCluster.subnet`
(:func:`fmcluster.features.network.plan.subnet_usage`, which says what is counted). When a subnet is too
small and the blueprint chooses ``efa`` where its orchestrator lets it choose
(:attr:`OrchestratorProfile.efa_interface_type_setting`: PCS, HyperPod), the advice also names
``efa-only``; ParallelCluster chooses the type itself, so it is never advised there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from fmcluster.blueprint.model import Blueprint, NetworkSpec
from fmcluster.catalog.networking import SUBNET_SIZING_DOC, subnet_size
from fmcluster.catalog.vpc_layout import (
    LARGEST_GPU_PREFIX,
    MAX_PREFIX,
    PUBLIC_SUBNET_PREFIX,
    largest_gpu_subnet,
    smallest_vpc_for,
    vpc_holds,
)
from fmcluster.features.network.plan import SubnetUsage, as_subnet_usage, subnet_usage
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule
from fmcluster.validation.rules.capacity import az_id_prefix


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
    """The ``allowed ...`` part: a prefix that holds ``wanted`` addresses in a VPC that holds that
    subnet (R-SUBNET-3), or fewer nodes, and ``efa-only`` when :func:`_efa_only` advises it."""
    switch = "" if efa_only is None else f"{efa_only[0]}: efa-only ({efa_only[1]})"
    if wanted < LARGEST_GPU_PREFIX:
        text = (f"fewer nodes (even a /{LARGEST_GPU_PREFIX}, "
                f"the largest GPU subnet a new VPC holds beside its public /{PUBLIC_SUBNET_PREFIX}, "
                f"holds only {subnet_size(LARGEST_GPU_PREFIX)})")
        if efa_only is not None:
            text += f" or {switch} - did you mean {efa_only[0]}: efa-only?"
        return text
    text = f"/{wanted} or a shorter prefix"
    vpc_needed = None if vpc_holds(vpc_prefix, wanted) else smallest_vpc_for(wanted)
    if vpc_needed is not None:
        text += (f" in a network.vpc_cidr of /{vpc_needed} or larger "
                 f"(the VPC holds the public /{PUBLIC_SUBNET_PREFIX} and the GPU subnet, got /{vpc_prefix})")
    if switch:
        text += f", or {switch}"
    also = "" if vpc_needed is None else f" with a /{vpc_needed} vpc_cidr"
    return text + f" - did you mean gpu_subnet_prefix_length: {wanted}{also}?"


@rule("R-SUBNET-3", scope="network",
      source="aws-cdk-lib aws-ec2/lib/network-util.ts NetworkBuilder.addSubnets (subnets allocated in order, each "
      "aligned to its size; synth fails with 'exceeds remaining space'); fmcluster/features/network/construct.py (public "
      "/24, then the GPU subnet)")
def vpc_holds_gpu_subnet(net: NetworkSpec) -> Iterator[Violation]:
    """A new VPC must hold its public /24 subnet and the GPU subnet; otherwise synth, plan and deploy fail."""
    if net.gpu_subnet_id or net.vpc_id:
        return
    vpc_prefix = int(net.vpc_cidr.split("/")[1])
    gpu = net.gpu_subnet_prefix_length
    if vpc_holds(vpc_prefix, gpu):
        return
    largest = largest_gpu_subnet(vpc_prefix)
    vpc_needed = smallest_vpc_for(gpu)
    options = []
    if largest is not None:
        options.append(f"gpu_subnet_prefix_length /{largest} to /{MAX_PREFIX} in this VPC")
    if vpc_needed is not None:
        options.append(f"network.vpc_cidr /{vpc_needed} or larger for a /{gpu} GPU subnet")
    if not options:  # a /16 GPU subnet in a /24 VPC: both must change
        options.append(f"network.vpc_cidr /{smallest_vpc_for(MAX_PREFIX)} or larger, "
                       f"with gpu_subnet_prefix_length /{LARGEST_GPU_PREFIX} or longer")
    hint = (f"network.vpc_cidr: <a /{vpc_needed} CIDR>" if vpc_needed is not None
            else f"gpu_subnet_prefix_length: {largest or LARGEST_GPU_PREFIX}")
    yield "network.gpu_subnet_prefix_length", (
        f"the VPC is too small for the GPU subnet: "
        f"a new VPC must hold its public /{PUBLIC_SUBNET_PREFIX} subnet and the GPU subnet "
        f"(at most a /{LARGEST_GPU_PREFIX} GPU subnet in a /16 VPC), "
        f"got gpu_subnet_prefix_length {gpu} in network.vpc_cidr {net.vpc_cidr}; "
        f"allowed {' or '.join(options)} - did you mean {hint}?"
    )


@rule("R-SUBNET-1", scope="cluster", source=f"{SUBNET_SIZING_DOC} (5 reserved); "
      "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html (efa takes an address, "
      "efa-only none)")
def gpu_subnet_holds_cluster(rc: ResolvedCluster) -> Iterator[Violation]:
    """A new VPC's GPU subnet must hold every node's addresses, the management nodes and AWS's five."""
    bp, usage = rc.blueprint, as_subnet_usage(rc.subnet)
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
    bp, usage = rc.blueprint, as_subnet_usage(rc.subnet)
    if usage.fits and usage.fits_with_headroom is False:
        vpc_prefix = int(bp.network.vpc_cidr.split("/")[1])
        yield "network.gpu_subnet_prefix_length", (
            f"the GPU subnet leaves no headroom: {usage.recommended} IPv4 addresses recommended "
            f"({usage.required} required + {usage.recommended - usage.required} for replacement nodes, FSx and endpoints), "
            f"got /{usage.prefix_length} ({usage.subnet_addresses} addresses); "
            f"allowed {_fix(usage, usage.recommended_prefix_length, vpc_prefix, _efa_only(rc, usage, headroom=True))}"
        )


def second_az_subnet_problems(bp: Blueprint, *, what: str, az: str | None, az_path: str, subnet_ids: Sequence[str],
                              subnets_path: str, cidrs: tuple[str, str] | None) -> Iterator[Violation]:
    """The problems of a pair of subnets in two AZs that fmcluster adds to a new VPC (``az``: the second AZ, at
    ``az_path``; ``cidrs``: :func:`fmcluster.catalog.vpc_layout.tail_subnet_pair`, ``None`` when the VPC is full) or
    that an imported VPC names (``subnet_ids`` at ``subnets_path``). ``what`` names the subnets in messages
    (e.g. ``EKS control-plane subnets``). Rules R-EKS-3 and R-ACCT-2."""
    if bp.network.vpc_id is not None:
        if len(set(subnet_ids)) < 2:
            yield subnets_path, (
                f"the {what} need two Availability Zones, got {len(set(subnet_ids))} subnet(s) with an imported VPC; "
                "allowed at least two subnet ids in different AZs of network.vpc_id"
            )
        if az is not None:
            yield az_path, f"ignored with an imported VPC, got {az!r}; allowed nothing (name the subnets in {subnets_path})"
        return
    if subnet_ids:
        yield subnets_path, (
            f"subnets of an imported VPC, got {', '.join(subnet_ids)} with a new VPC; allowed nothing "
            f"(fmcluster creates the {what}; name their second AZ in {az_path})"
        )
    by_id = bp.availability_zone_id is not None
    form = (f"an AZ ID of {bp.region} such as {az_id_prefix(bp.region)}-az4" if by_id
            else f"an AZ name of {bp.region} such as {bp.region}b")
    if az is None:
        yield az_path, (
            f"the {what} need two Availability Zones, got none besides {bp.az_label}; allowed {form} other than "
            f"{bp.az_label}"
        )
    elif az == bp.az_label:
        yield az_path, f"same AZ as the GPU subnet, got {az!r}; allowed {form} other than {bp.az_label}"
    elif by_id != ("-az" in az) or (not by_id and az[:-1] != bp.region) or (
            by_id and az.split("-")[0] != az_id_prefix(bp.region)):
        yield az_path, f"not {form}, got {az!r}; allowed {form} other than {bp.az_label}"
    if cidrs is None:
        gpu = f"/{bp.network.gpu_subnet_prefix_length}"
        yield "network.vpc_cidr", (
            f"no room for the two /28 {what} after the public /24 and the {gpu} GPU subnet, "
            f"got {bp.network.vpc_cidr}; allowed a larger VPC or a smaller network.gpu_subnet_prefix_length"
        )
