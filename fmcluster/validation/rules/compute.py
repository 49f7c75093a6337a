"""Compute-group rules (names, counts, EFA)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from fmcluster.blueprint.model import ComputeGroup
from fmcluster.catalog import get_instance
from fmcluster.catalog.instances import UnknownInstanceType
from fmcluster.validation.rules import Violation, rule


@rule("R-COMPUTE-1", source="https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html (queue names unique)",
      scope="compute")
def unique_group_names(groups: list[ComputeGroup]) -> Iterator[Violation]:
    counts = Counter(g.name for g in groups)
    for i, g in enumerate(groups):
        if counts[g.name] > 1 and [x.name for x in groups].index(g.name) != i:
            yield f"compute[{i}].name", f"duplicate compute group name, got {g.name!r}; allowed a name not used by another group"


@rule("R-COMPUTE-2", source="https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html (MinCount <= MaxCount)",
      scope="compute")
def min_not_above_count(groups: list[ComputeGroup]) -> Iterator[Violation]:
    for i, g in enumerate(groups):
        if g.min_count is not None and g.min_count > g.count:
            yield f"compute[{i}].min_count", f"larger than count, got {g.min_count}; allowed 0..{g.count}"


#: Network-layout fields launch templates and subnet sizing take from the catalog.
LAYOUT_FIELDS = ("network_cards", "max_efa_interfaces", "efa_cards", "max_enis_per_card", "ipv4_per_interface")


@rule("R-COMPUTE-3", level="warning", scope="compute",
      source="fmcluster/catalog/data/instances.yaml (unverified values); "
      "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html (fmcluster preflight)")
def layout_unverified(groups: list[ComputeGroup]) -> Iterator[Violation]:
    """A group whose instance type has a network layout no primary source confirmed (p6e-gb200): the launch
    templates and subnet sizing follow the catalog, so say so and point at preflight, which compares it
    with DescribeInstanceTypes in the account. Reported once per instance type."""
    seen: set[str] = set()
    for i, g in enumerate(groups):
        if g.instance_type in seen:
            continue
        seen.add(g.instance_type)
        try:
            inst = get_instance(g.instance_type)
        except UnknownInstanceType:
            continue
        fields = [f for f in LAYOUT_FIELDS if not inst.is_verified(f)]
        if fields:
            yield f"compute[{i}].instance_type", (
                f"the catalog's network layout of {inst.name} is unverified ({', '.join(fields)}), got "
                f"{inst.network_cards} network cards with EFA on {len(inst.efa_cards)} of them; allowed as is, "
                "but run fmcluster preflight to compare it with DescribeInstanceTypes before deploying"
            )
