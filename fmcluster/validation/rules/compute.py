"""Compute-group rules (names, counts, EFA)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from fmcluster.blueprint.model import ComputeGroup
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
