"""Proprietary NVIDIA kernel modules on instance types that use EFA GPUDirect RDMA are an error, also
with ``allow_untested`` (issue 12 item 11; R-DRV-2, R-DRV-1 for Blackwell).

Sources: aws-parallelcluster #6015 (P4/P5 + EFA + the non-OSS NVIDIA driver on current kernels: EFA
communication stops; OpenRM + EFA >= 1.29.0 fixes it), amazon-eks-ami #1494 (the kernel change stops
the proprietary driver from linking to open-source modules such as EFA), aws-ofi-nccl
src/platform-aws.cpp (the types where GPUDirect RDMA is required: catalog ``gdr_required``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.blueprints import group
from tests.features.node.test_software_rules import B200, B300, problems, sw

PROPRIETARY = sw(kernel_modules="proprietary")
UNTESTED = {"software": {"allow_untested": True}}
MSG = ("proprietary NVIDIA kernel modules break EFA GPUDirect RDMA on current kernels ({on} with EFA), got proprietary; "
       "allowed open (software.allow_untested does not lift this)")
BLACKWELL = ("Blackwell GPUs run only on the open NVIDIA kernel modules ({on}), got proprietary; allowed open")


def _stack(name: str, instance_type: str) -> dict[str, Any]:
    return {"software": {"image": {"mode": "bake"}, "stack": name}, "compute": [group(instance_type=instance_type)]}


# (id, patches, expected errors as (rule, path, message)), every GDR family, with and without allow_untested
CASES = [
    ("p5", [PROPRIETARY], [("R-DRV-2", MSG.format(on="compute[0] is p5.48xlarge"))]),
    ("p5-allow-untested", [PROPRIETARY, UNTESTED], [("R-DRV-2", MSG.format(on="compute[0] is p5.48xlarge"))]),
    ("p4d", [_stack("h100-570-cuda12.8", "p4d.24xlarge"), PROPRIETARY, UNTESTED],
     [("R-DRV-2", MSG.format(on="compute[0] is p4d.24xlarge"))]),
    ("p5e", [{"compute": [group(instance_type="p5e.48xlarge")]}, PROPRIETARY, UNTESTED],
     [("R-DRV-2", MSG.format(on="compute[0] is p5e.48xlarge"))]),
    ("p5en", [{"compute": [group(instance_type="p5en.48xlarge")]}, PROPRIETARY, UNTESTED],
     [("R-DRV-2", MSG.format(on="compute[0] is p5en.48xlarge"))]),
    ("b200-allow-untested", [B200, PROPRIETARY, UNTESTED],
     [("R-DRV-1", BLACKWELL.format(on="compute[0] is p6-b200.48xlarge"))]),
    ("b300-allow-untested", [B300, PROPRIETARY, UNTESTED],
     [("R-DRV-1", BLACKWELL.format(on="compute[0] is p6-b300.48xlarge"))]),
]


@pytest.mark.parametrize(("case", "patches", "expected"), CASES, ids=[c[0] for c in CASES])
def test_proprietary_modules_with_efa_gdr_are_an_error(case: str, patches: list[dict[str, Any]],
                                                       expected: list[tuple[str, str]]) -> None:
    found = problems(*patches)
    errors = [(p.rule_id, p.message) for p in found if p.level == "error" and p.rule_id in ("R-DRV-1", "R-DRV-2")]
    assert errors == expected
    assert all(p.path == "software.overrides.kernel_modules" for p in found if p.rule_id in ("R-DRV-1", "R-DRV-2"))


@pytest.mark.parametrize(("case", "patches"), [
    ("open-modules", [sw(kernel_modules="open")]),
    ("p5-4xlarge-no-gdr-required", [{"compute": [group(instance_type="p5.4xlarge")]}, PROPRIETARY, UNTESTED]),
    ("efa-disabled", [{"compute": [group(efa=False)]}, PROPRIETARY, UNTESTED]),
])
def test_no_finding(case: str, patches: list[dict[str, Any]]) -> None:
    assert [p for p in problems(*patches) if p.rule_id == "R-DRV-2"] == []
