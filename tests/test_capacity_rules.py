"""Capacity rules R-CAP-1..9, R-AZ-3 and the capacity shape checks: tables of (patch, exact problems).

Each case patches ``blueprints.AZ_ID`` (a small valid blueprint placed by AZ ID) and asserts the exact
path, message and rule id of what the loader reports (errors via ``BlueprintError.problems``, warnings
via ``LoadResult.warnings``). A patch's ``compute`` list is the whole list: ``group()`` is the base's group.
"""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import AZ_ID, DROP, blueprint_text, group

CR = "cr-0123456789abcdef0"
CR2 = "cr-00000000000000001"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/plan-a"
GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/my-odcrs"

#: What a Local Zone blueprint needs to be valid (R-LZ-1: an existing VPC) and quiet (R-LZ-3: no FSx).
LOCAL_ZONE_VPC = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"},
                  "storage": {"lustre": None}}
#: Where EC2 sells p6e-gb200 Capacity Blocks (R-CAP-15): the Dallas Local Zone, by its ID.
DALLAS = {"availability_zone_id": "use1-dfw2-az1", **LOCAL_ZONE_VPC}

GB200 = {"software": {"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0", "os": "ubuntu-22.04"},
         # ParallelCluster needs head and compute nodes of one architecture (R-PC-2)
         "orchestrator": {"parallelcluster": {"head_node_instance_type": "m7g.4xlarge"}}}


def load(
    *patches: dict[str, Any],
) -> tuple[list[tuple[str, str, str | None, str]], list[tuple[str, str, str | None]]]:
    """(errors and warnings raised, warnings of a valid blueprint) as (path, message, rule id[, level]); the image
    rules (R-IMG-*: the base bakes a stack older than the official image's) are tests/features/node/test_image.py's."""
    try:
        result = load_blueprint_text(blueprint_text(*patches, base=AZ_ID))
    except BlueprintError as e:
        return [(p.path, p.message, p.rule_id, p.level) for p in e.problems if not _image_rule(p.rule_id)], []
    return [], [(w.path, w.message, w.rule_id) for w in result.warnings if not _image_rule(w.rule_id)]


def _image_rule(rule_id: str | None) -> bool:
    return (rule_id or "").startswith(("R-IMG-", "R-BAKE-"))


def test_base_is_valid() -> None:
    assert load() == ([], [])


# ---- errors --------------------------------------------------------------------------------------
ERROR_CASES = [
    pytest.param(
        {"compute": [group(capacity={"type": "training_plan", "arn": PLAN})]},
        [
            (
                "compute[0].capacity.type",
                "training plans only work with HyperPod, got orchestrator.kind "
                "'parallelcluster'; allowed on_demand, spot, odcr or capacity_block (or orchestrator.kind: "
                "hyperpod)",
                "R-CAP-1",
            )
        ],
        id="R-CAP-1 training plan on parallelcluster",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "training_plan", "arn": PLAN})], "orchestrator": {"kind": "pcs"}},
        [
            (
                "compute[0].capacity.type",
                "training plans only work with HyperPod, got orchestrator.kind 'pcs'; "
                "allowed on_demand, spot, odcr or capacity_block (or orchestrator.kind: hyperpod)",
                "R-CAP-1",
            )
        ],
        id="R-CAP-1 training plan on pcs",
    ),
    pytest.param(
        {
            "compute": [
                group(count=4, min_count=2, capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        [
            (
                "compute[0].min_count",
                "a Capacity Block runs a fixed number of nodes for its whole term, got "
                "min_count 2 with count 4; allowed min_count 4 or no min_count",
                "R-CAP-2",
            )
        ],
        id="R-CAP-2 dynamic nodes on a capacity block",
    ),
    pytest.param(
        {
            "compute": [
                group(),
                {
                    "name": "gpu2",
                    "instance_type": "p5.48xlarge",
                    "count": 3,
                    "min_count": 0,
                    "capacity": {"type": "capacity_block", "reservation_id": CR},
                },
            ]
        },
        [
            (
                "compute[1].min_count",
                "a Capacity Block runs a fixed number of nodes for its whole term, got "
                "min_count 0 with count 3; allowed min_count 3 or no min_count",
                "R-CAP-2",
            )
        ],
        id="R-CAP-2 second group, min_count 0",
    ),
    pytest.param(
        {
            "compute": [group(capacity={"type": "capacity_block", "reservation_id": CR})],
            "orchestrator": {"kind": "hyperpod"},
        },
        [
            (
                "compute[0].capacity.type",
                "HyperPod cannot launch into EC2 Capacity Blocks; reserve HyperPod capacity "
                "with a SageMaker training plan, got 'capacity_block' with orchestrator.kind 'hyperpod'; "
                "allowed "
                "on_demand, spot or training_plan - did you mean training_plan?",
                "R-CAP-4",
            )
        ],
        id="R-CAP-4 capacity block on hyperpod",
    ),
    pytest.param(
        {
            "compute": [group(capacity={"type": "odcr", "reservation_id": CR})],
            "orchestrator": {"kind": "hyperpod"},
        },
        [
            (
                "compute[0].capacity.type",
                "HyperPod cannot launch into EC2 On-Demand Capacity Reservations; reserve "
                "HyperPod capacity with a SageMaker training plan, got 'odcr' with orchestrator.kind "
                "'hyperpod'; "
                "allowed "
                "on_demand, spot or training_plan - did you mean training_plan?",
                "R-CAP-4",
            )
        ],
        id="R-CAP-4 odcr on hyperpod",
    ),
    pytest.param(
        {
            "compute": [
                group(),
                {
                    "name": "gb",
                    "instance_type": "p6e-gb200.36xlarge",
                    "count": 9,
                    "capacity": {"type": "capacity_block", "reservation_id": CR},
                },
            ]
        },
        [
            (
                "compute[1].instance_type",
                "all compute groups must share one CPU architecture (one software stack per blueprint), got "
                "p6e-gb200.36xlarge (arm64) in group 'gb' and p5.48xlarge (x86_64) in group 'gpu' (compute[0]); "
                "allowed x86_64 instance types here, or a separate blueprint for the arm64 groups",
                "R-CAP-9",
            )
        ],
        id="R-CAP-9 x86 and arm64 groups (R-CAP-7, R-SW-1, R-PC-2 stay quiet)",
    ),
    pytest.param(
        {"availability_zone_id": "usw2-az1"},
        [
            (
                "availability_zone_id",
                "not an AZ ID of region us-east-1, got 'usw2-az1'; allowed use1-az1, use1-az2, ... "
                "(AZ IDs of us-east-1 start with use1-)",
                "R-AZ-3",
            )
        ],
        id="R-AZ-3 AZ ID of another region",
    ),
    pytest.param(
        {"region": "ap-northeast-1", "availability_zone_id": "apne2-az4"},
        [
            (
                "availability_zone_id",
                "not an AZ ID of region ap-northeast-1, got 'apne2-az4'; allowed apne1-az1, apne1-az2, ... "
                "(AZ IDs of ap-northeast-1 start with apne1-)",
                "R-AZ-3",
            )
        ],
        id="R-AZ-3 AZ ID of the neighbouring region",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [
                group(instance_type="p6e-gb200.36xlarge", count=10, capacity={"type": "capacity_block", "reservation_id": CR})
            ],
        },
        [
            (
                "compute[0].count",
                "p6e-gb200.36xlarge is sold only as UltraServers of 9 or 18 instances, got count 10; "
                "allowed a multiple of 9 - did you mean 9 or 18?",
                "R-CAP-5",
            )
        ],
        id="R-CAP-5 gb200 count 10",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [
                group(instance_type="p6e-gb200.36xlarge", count=4, capacity={"type": "capacity_block", "reservation_id": CR})
            ],
        },
        [
            (
                "compute[0].count",
                "p6e-gb200.36xlarge is sold only as UltraServers of 9 or 18 instances, got count 4; "
                "allowed a multiple of 9 - did you mean 9?",
                "R-CAP-5",
            )
        ],
        id="R-CAP-5 gb200 count below one UltraServer",
    ),
    pytest.param(
        {**GB200, "compute": [group(instance_type="p6e-gb200.36xlarge", count=18)]},
        [
            (
                "compute[0].capacity.type",
                "p6e-gb200.36xlarge is sold only as reserved UltraServer capacity, got "
                "'on_demand'; allowed capacity_block on orchestrator.kind 'parallelcluster' - did you mean "
                "capacity_block?",
                "R-CAP-6",
            )
        ],
        id="R-CAP-6 gb200 on demand (the default capacity)",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [group(instance_type="p6e-gb200.36xlarge", count=18, capacity={"type": "spot"})],
            "orchestrator": {"kind": "pcs"},
        },
        [
            (
                "compute[0].capacity.type",
                "p6e-gb200.36xlarge is sold only as reserved UltraServer capacity, got "
                "'spot'; allowed capacity_block on orchestrator.kind 'pcs' - did you mean capacity_block?",
                "R-CAP-6",
            )
        ],
        id="R-CAP-6 gb200 spot on pcs",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [
                group(instance_type="p6e-gb200.36xlarge", count=9, capacity={"type": "odcr", "reservation_id": CR})
            ],
        },
        [
            (
                "compute[0].capacity.type",
                "p6e-gb200.36xlarge is sold only as reserved UltraServer capacity, got "
                "'odcr'; allowed capacity_block on orchestrator.kind 'parallelcluster' - did you mean "
                "capacity_block?",
                "R-CAP-6",
            )
        ],
        id="R-CAP-6 gb200 odcr",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [group(instance_type="p6e-gb200.36xlarge", count=18)],
            "orchestrator": {"kind": "hyperpod"},
        },
        [
            (
                "compute[0].capacity.type",
                "p6e-gb200.36xlarge is sold only as reserved UltraServer capacity, got "
                "'on_demand'; allowed training_plan on orchestrator.kind 'hyperpod' - did you mean "
                "training_plan?",
                "R-CAP-6",
            )
        ],
        id="R-CAP-6 gb200 on hyperpod needs a training plan",
    ),
    pytest.param(
        {"software": {"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0", "os": "ubuntu-24.04"}},
        [
            (
                "software.stack",
                "p5.48xlarge (compute[0]) has x86_64 CPUs and stack 'gb200-580-cuda13.0' is built for "
                "arm64, got 'gb200-580-cuda13.0'; allowed h100-570-cuda12.8, h100-580-cuda13.0, "
                "blackwell-580-cuda13.0",
                "R-CAP-7",
            )
        ],
        id="R-CAP-7 x86 instance with the arm64 stack",
    ),
    pytest.param(
        {
            "compute": [
                group(count=18, instance_type="p6e-gb200.36xlarge", capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        [
            (
                "software.stack",
                "p6e-gb200.36xlarge (compute[0]) has arm64 CPUs and stack 'h100-570-cuda12.8' is built "
                "for x86_64, got 'h100-570-cuda12.8'; allowed gb200-580-cuda13.0",
                "R-CAP-7",
            )
        ],
        id="R-CAP-7 gb200 with an x86 stack",
    ),
    pytest.param(
        {
            "compute": [
                group(capacity={"type": "odcr", "reservation_id": CR}),
                {
                    "name": "gpu2",
                    "instance_type": "p5en.48xlarge",
                    "count": 1,
                    "capacity": {"type": "odcr", "reservation_id": CR},
                },
            ]
        },
        [
            (
                "compute[1].instance_type",
                f"reservation {CR} is also used by compute[0] with p5.48xlarge and a "
                "reservation holds one instance type, got p5en.48xlarge; allowed p5.48xlarge",
                "R-CAP-8",
            )
        ],
        id="R-CAP-8 shared reservation, two instance types",
    ),
    pytest.param(
        {
            "compute": [
                group(capacity={"type": "odcr", "reservation_id": CR}),
                {
                    "name": "gpu2",
                    "instance_type": "p5.48xlarge",
                    "count": 1,
                    "capacity": {"type": "capacity_block", "reservation_id": CR},
                },
            ]
        },
        [
            (
                "compute[1].capacity.type",
                f"reservation {CR} is also used by compute[0] as 'odcr', got "
                "'capacity_block'; allowed 'odcr'",
                "R-CAP-8",
            )
        ],
        id="R-CAP-8 shared reservation, odcr and capacity block",
    ),
]


def cb_groups(*counts: int, same: bool = False) -> list[dict[str, Any]]:
    """p5.48xlarge Capacity Block groups of ``counts``, on one reservation (``same``) or one each."""
    return [group(name=f"g{i}", count=n, capacity={"type": "capacity_block",
                                                   "reservation_id": CR if same else f"cr-{i:017x}"})
            for i, n in enumerate(counts)]


GB200_CB = group(instance_type="p6e-gb200.36xlarge", count=18, capacity={"type": "capacity_block", "reservation_id": CR})

ERROR_CASES += [
    pytest.param(
        {"compute": cb_groups(65, same=True)},
        [("compute[0].count", f"a Capacity Block holds at most 64 instances, got count 65 on reservation {CR}; allowed "
          "at most 64 instances per reservation_id (for more nodes, buy more blocks and give each group its own "
          "reservation_id)", "R-CAP-13")],
        id="R-CAP-13 one group over a block",
    ),
    pytest.param(
        {"compute": cb_groups(8, 40, 40, same=True)},
        [("compute[2].count", f"a Capacity Block holds at most 64 instances, got 88 instances (compute[0] 8 + "
          f"compute[1] 40 + compute[2] 40) on reservation {CR}; allowed at most 64 instances per reservation_id (for "
          "more nodes, buy more blocks and give each group its own reservation_id)", "R-CAP-13")],
        id="R-CAP-13 groups sharing a block",
    ),
    pytest.param(
        {**GB200, "compute": [GB200_CB]},
        [("availability_zone_id", "EC2 sells p6e-gb200.36xlarge Capacity Blocks (compute[0]) only in us-east-1-dfw-2a, "
          "use1-dfw2-az1, got 'use1-az6'; allowed availability_zone us-east-1-dfw-2a or availability_zone_id "
          "use1-dfw2-az1, with region us-east-1 (a Local Zone: opt in to it, bring a VPC with a subnet there, R-LZ-1, "
          "and an orchestrator that runs in Local Zones, R-LZ-2)", "R-CAP-15")],
        id="R-CAP-15 gb200 capacity block in a regular AZ",
    ),
    pytest.param(
        {**GB200, "compute": [GB200_CB], "region": "us-west-2", "availability_zone_id": DROP,
         "availability_zone": "us-west-2a"},
        [("availability_zone", "EC2 sells p6e-gb200.36xlarge Capacity Blocks (compute[0]) only in us-east-1-dfw-2a, "
          "use1-dfw2-az1, got 'us-west-2a'; allowed availability_zone us-east-1-dfw-2a or availability_zone_id "
          "use1-dfw2-az1, with region us-east-1 (a Local Zone: opt in to it, bring a VPC with a subnet there, R-LZ-1, "
          "and an orchestrator that runs in Local Zones, R-LZ-2)", "R-CAP-15")],
        id="R-CAP-15 gb200 capacity block in another Region",
    ),
]


@pytest.mark.parametrize(("patch", "expected"), ERROR_CASES)
def test_capacity_rule_errors(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    problems, _ = load(patch)
    rule_ids = {e[2] for e in expected}
    assert [(p, m, r) for p, m, r, _lvl in problems if r in rule_ids] == expected
    assert all(lvl == "error" for *_x, r, lvl in problems if r in rule_ids)


def test_arch_rule_alone_reports_a_gb200_x86_stack() -> None:
    """R-CAP-7 (the stack cannot run on arm64) is the one finding at software.stack: R-SW-1 (known-good
    families) skips groups whose architecture the stack is not built for, so the mistake is not reported twice."""
    problems, _ = load(
        {
            "compute": [
                group(count=18, instance_type="p6e-gb200.36xlarge", capacity={"type": "capacity_block", "reservation_id": CR})
            ],
            **DALLAS,
        }
    )
    # R-PC-2: x86 head node; R-COMPUTE-3: the warning that gb200's catalog layout is unverified; R-KB-3: the Slurm
    # 25.11 block-topology known issue on a ParallelCluster UltraServer queue; R-LZ-4: the head node in the
    # Dallas Local Zone
    assert sorted(r for _p, _m, r, _l in problems) == ["R-CAP-7", "R-COMPUTE-3", "R-KB-3", "R-LZ-4",
                                                         "R-PC-2"]
    assert [p for p, _m, r, _l in problems if p == "software.stack"] == ["software.stack"]


# ---- warnings ------------------------------------------------------------------------------------
WARNING_CASES = [
    pytest.param(
        {"availability_zone_id": "use1-az99"},
        [("availability_zone_id", "not an Availability Zone ID recorded for us-east-1, got 'use1-az99'; allowed "
          "use1-az1, use1-az2, use1-az3, use1-az4, use1-az5, use1-az6 (or a zone your account has: fmcluster preflight "
          "checks it)", "R-AZ-4")],
        id="R-AZ-4 AZ ID not recorded",
    ),
    pytest.param(
        {
            "compute": [
                group(placement_group=True, capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        [
            (
                "compute[0].placement_group",
                "Capacity Block instances are already co-located in an EC2 UltraCluster, "
                "and a new placement group can make launches fail with insufficient capacity, got "
                "placement_group "
                "true "
                "with capacity type 'capacity_block'; allowed false or no placement_group (the default)",
                "R-CAP-3",
            )
        ],
        id="R-CAP-3 capacity block",
    ),
    pytest.param(
        {
            "compute": [
                group(placement_group=True, capacity={"type": "odcr", "resource_group_arn": GROUP_ARN})
            ]
        },
        [
            (
                "compute[0].placement_group",
                "the reserved instances are not guaranteed to fit in a new placement "
                "group, so launches can fail with insufficient capacity (create the reservation in a cluster "
                "placement "
                "group instead), got placement_group true with capacity type 'odcr'; allowed false or no "
                "placement_group (the default)",
                "R-CAP-3",
            )
        ],
        id="R-CAP-3 odcr by resource group",
    ),
    pytest.param(
        {
            "compute": [group(placement_group=True, capacity={"type": "training_plan", "arn": PLAN})],
            "orchestrator": {"kind": "hyperpod"},
        },
        [
            (
                "compute[0].placement_group",
                "HyperPod places training-plan capacity itself and has no "
                "placement-group setting, so the setting is ignored, got placement_group true with capacity "
                "type "
                "'training_plan'; allowed false or no placement_group (the default)",
                "R-CAP-3",
            )
        ],
        id="R-CAP-3 training plan",
    ),
    pytest.param(
        # valid on PCS (no error: test_capacity_rule_warnings checks), with this one warning
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR})], "orchestrator": {"kind": "pcs"},
         "software": {"os": "ubuntu-24.04"}},  # the PCS-ready DLAMI is Ubuntu 24.04 (R-PCS-2)
        [("compute[0].capacity",
          "the Capacity Block's end is not automated on orchestrator.kind 'pcs', got 'capacity_block'; allowed as is "
          "(run capacity-window/fmcluster-window-end from fmcluster render on the login node at EC2's warning) or "
          "orchestrator.kind: parallelcluster, which automates it", "R-CAP-10")],
        id="R-CAP-10 capacity block on pcs",
    ),
    pytest.param(
        # ParallelCluster automates the window: no R-CAP-10
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR})]},
        [],
        id="R-CAP-10 quiet on parallelcluster",
    ),
]


WARNING_CASES += [
    pytest.param(
        {"compute": cb_groups(64, 64, 64, 64, 64)},
        [("compute[4].count", "an AWS Organization can hold at most 256 instances in Capacity Blocks on a date, got "
          "320 instances in this blueprint's capacity_block groups; allowed at most 256 on any date across your "
          "Organization (fewer nodes, or blocks whose dates do not overlap)", "R-CAP-14")],
        id="R-CAP-14 five full blocks",
    ),
    pytest.param({"compute": cb_groups(64, 64, 64, 64)}, [], id="R-CAP-14 quiet at 256"),
]


@pytest.mark.parametrize(("patch", "expected"), WARNING_CASES)
def test_capacity_rule_warnings(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    problems, warnings = load(patch)
    assert problems == []
    assert [w for w in warnings if w[2] in {e[2] for e in expected}] == expected




@pytest.mark.parametrize("patch", [
    {"availability_zone_id": "use1-dfw2-az1", **LOCAL_ZONE_VPC},  # a Local Zone ID: not in the table, not judged by it
    {"region": "ap-northeast-1", "availability_zone_id": "apne1-az4"},
    {"availability_zone_id": "use1-az3"},
])
def test_recorded_zone_ids_stay_quiet(patch: dict[str, Any]) -> None:
    problems, warnings = load(patch)
    assert problems == [] and [w for w in warnings if w[2] == "R-AZ-4"] == []


# ---- valid: each rule stays quiet on what it allows -----------------------------------------------
VALID_CASES = [
    pytest.param(
        {"compute": [group(count=4, capacity={"type": "capacity_block", "reservation_id": CR})]},
        id="capacity block, min_count omitted",
    ),
    pytest.param(
        {
            "compute": [
                group(count=4, min_count=4, capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        id="capacity block, min_count equals count",
    ),
    pytest.param(
        {"compute": [group(count=4, min_count=0, capacity={"type": "odcr", "reservation_id": CR})]},
        id="odcr with dynamic nodes",
    ),
    pytest.param(
        {"compute": [group(count=4, min_count=0, capacity={"type": "spot"})]}, id="spot dynamic"
    ),
    pytest.param(
        {
            "compute": [
                group(placement_group=False, capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        id="capacity block, placement group off",
    ),
    pytest.param({"compute": [group(placement_group=True)]}, id="on demand with a placement group"),
    pytest.param(
        {
            "compute": [group(capacity={"type": "training_plan", "arn": PLAN})],
            "orchestrator": {"kind": "hyperpod"},
        },
        id="training plan on hyperpod",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "on_demand"})], "orchestrator": {"kind": "hyperpod"}},
        id="on demand on hyperpod",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [
                group(instance_type="p6e-gb200.36xlarge", count=27, capacity={"type": "capacity_block", "reservation_id": CR})
            ],
            **DALLAS,
        },
        id="gb200 three x36 UltraServers on a capacity block",
    ),
    pytest.param(
        {
            **GB200,
            "compute": [
                group(instance_type="p6e-gb200.36xlarge", count=18, capacity={"type": "training_plan", "arn": PLAN})
            ],
            "orchestrator": {"kind": "hyperpod"},
        },
        id="gb200 x72 on a hyperpod training plan",
    ),
    pytest.param(
        {
            "compute": [
                group(capacity={"type": "odcr", "reservation_id": CR}),
                {
                    "name": "gpu2",
                    "instance_type": "p5.48xlarge",
                    "count": 1,
                    "capacity": {"type": "odcr", "reservation_id": CR},
                },
                {
                    "name": "gpu3",
                    "instance_type": "p5en.48xlarge",
                    "count": 1,
                    "capacity": {"type": "odcr", "reservation_id": CR2},
                },
            ]
        },
        id="two groups share a reservation, a third has its own",
    ),
    pytest.param({"region": "us-gov-west-1", "availability_zone_id": "usgw1-az1"}, id="GovCloud AZ ID"),
    # A Local Zone needs an existing VPC (R-LZ-1) and FSx there is unconfirmed (R-LZ-3): tests/features/network.
    pytest.param({"availability_zone_id": "use1-dfw2-az1", **LOCAL_ZONE_VPC}, id="Local Zone ID"),
    pytest.param(
        {"compute": [group(), {"name": "gpu2", "instance_type": "p5en.48xlarge", "count": 1}]},
        id="two x86_64 groups of different families",
    ),
]


VALID_CASES += [
    pytest.param({"compute": cb_groups(64)}, id="R-CAP-13 a full block"),
    pytest.param({"compute": cb_groups(32, 32, same=True)}, id="R-CAP-13 two groups filling one block"),
    pytest.param({"compute": cb_groups(40, 40)}, id="R-CAP-13 two blocks"),
    pytest.param({"compute": [group(count=100, capacity={"type": "odcr", "reservation_id": CR})]},
                 id="R-CAP-13 an ODCR is no Capacity Block"),
    # UltraServer blocks are bought by UltraServer count (no per-block instance limit on the page): 72 = 4 x18
    pytest.param({**GB200, **DALLAS, "compute": [{**GB200_CB, "count": 72}]}, id="R-CAP-13 gb200 UltraServers"),
    pytest.param({**GB200, **DALLAS, "compute": [GB200_CB]}, id="R-CAP-15 gb200 in the Dallas Local Zone by ID"),
    pytest.param({**GB200, **LOCAL_ZONE_VPC, "availability_zone_id": DROP, "availability_zone": "us-east-1-dfw-2a",
                  "compute": [GB200_CB]}, id="R-CAP-15 gb200 in the Dallas Local Zone by name"),
]


@pytest.mark.parametrize("patch", VALID_CASES)
def test_capacity_rules_accept(patch: dict[str, Any]) -> None:
    errors, warnings = load(patch)
    assert errors == []
    # Warnings of other layers (e.g. R-HP-4: no public HyperPod price for a training-plan-only type) are not capacity findings.
    assert [w for w in warnings if w[2] and w[2].startswith(("R-CAP", "R-AZ", "R-SUBNET"))] == []


def test_reservation_backed_groups_get_no_placement_group_by_default() -> None:
    from fmcluster.blueprint.model import ComputeGroup

    kinds = {
        "on_demand": {"type": "on_demand"},
        "spot": {"type": "spot"},
        "odcr": {"type": "odcr", "reservation_id": CR},
        "capacity_block": {"type": "capacity_block", "reservation_id": CR},
        "training_plan": {"type": "training_plan", "arn": PLAN},
    }
    got = {
        k: ComputeGroup(name="g1", instance_type="p5.48xlarge", count=1, capacity=v).uses_placement_group
        for k, v in kinds.items()
    }
    assert got == {
        "on_demand": True,
        "spot": True,
        "odcr": False,
        "capacity_block": False,
        "training_plan": False,
    }


# ---- shape: what the model's types already refuse --------------------------------------------------
SHAPE_CASES = [
    pytest.param(
        {
            "compute": [
                group(capacity={"type": "capacity_block", "reservation_id": CR, "allocation_strategy": "capacity-optimized"})
            ]
        },
        (
            "compute[0].capacity.allocation_strategy",
            "unknown key 'allocation_strategy'; allowed ends_at, preload_lead_minutes, reservation_id, starts_at, type",
        ),
        id="no spot options on a capacity block",
    ),
    pytest.param(
        {
            "compute": [
                group(instance_type=["p5.48xlarge", "p5en.48xlarge"], capacity={"type": "capacity_block", "reservation_id": CR})
            ]
        },
        (
            "compute[0].instance_type",
            "one instance type per compute group, got a list of 2; allowed a single "
            "type such as p5.48xlarge (use one compute group per type)",
        ),
        id="one instance type",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block"})]},
        ("compute[0].capacity.reservation_id",
         "required key 'reservation_id' is missing, got nothing; allowed the key with a value (docs/blueprint.md)"),
        id="capacity block needs a reservation id",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": "cr-123"})]},
        (
            "compute[0].capacity.reservation_id",
            "invalid format, got 'cr-123'; allowed cr- followed by 17 hex digits",
        ),
        id="reservation id too short",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "odcr", "reservation_id": "cr-0123456789ABCDEF0"})]},
        (
            "compute[0].capacity.reservation_id",
            "invalid format, got 'cr-0123456789ABCDEF0'; allowed cr- followed by 17 hex digits",
        ),
        id="reservation id upper case",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "odcr", "reservation_id": CR, "resource_group_arn": GROUP_ARN})]},
        ("compute[0].capacity", "set exactly one of reservation_id or resource_group_arn, got both; allowed "
         "reservation_id (one Capacity Reservation) or resource_group_arn (a resource group of them)"),
        id="odcr with two targets",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "odcr"})]},
        ("compute[0].capacity", "set exactly one of reservation_id or resource_group_arn, got neither; allowed "
         "reservation_id (one Capacity Reservation) or resource_group_arn (a resource group of them)"),
        id="odcr without a target",
    ),
    pytest.param(
        {"compute": [group(count=0, capacity={"type": "capacity_block", "reservation_id": CR})]},
        ("compute[0].count", "out of range, got 0; allowed >= 1"),
        id="count above zero",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "reserved"})]},
        (
            "compute[0].capacity.type",
            "invalid type, got 'reserved'; allowed on_demand, spot, odcr, capacity_block, training_plan",
        ),
        id="unknown capacity type",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR,
                                     "starts_at": "2026-12-14T11:30:00"})]},
        ("compute[0].capacity.starts_at", "must be a date and time with its time zone, got '2026-12-14T11:30:00'; "
         "allowed e.g. 2026-12-10T11:30:00Z"),
        id="window start without a time zone",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR, "ends_at": 1765000000})]},
        ("compute[0].capacity.ends_at", "must be a date and time with its time zone, got 1765000000; "
         "allowed e.g. 2026-12-10T11:30:00Z"),
        id="window end as a number",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR,
                                     "starts_at": "2026-12-14T11:30:00Z", "ends_at": "2026-12-14T11:30:00Z"})]},
        ("compute[0].capacity.ends_at", "must be after starts_at (2026-12-14T11:30:00+00:00), got "
         "2026-12-14T11:30:00+00:00; allowed an end after the start"),
        id="window ending at its start",
    ),
    pytest.param(
        {"compute": [group(capacity={"type": "capacity_block", "reservation_id": CR, "preload_lead_minutes": 2})]},
        ("compute[0].capacity.preload_lead_minutes", "out of range, got 2; allowed >= 5"),
        id="preload lead too short",
    ),
]


@pytest.mark.parametrize(("patch", "expected"), SHAPE_CASES)
def test_capacity_shape(patch: dict[str, Any], expected: tuple[str, str]) -> None:
    problems, _ = load(patch)
    assert [(p, m) for p, m, _r, _l in problems] == [expected]


def test_az_id_prefix_matches_every_zone_moto_knows() -> None:
    """The derived AZ-ID prefix agrees with moto's copy of every Region's zone IDs."""
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    from fmcluster.validation.rules.capacity import az_id_prefix

    zones = [(region, z.zone_id) for region, zs in RegionsAndZonesBackend.zones.items() for z in zs]
    assert len(zones) > 100
    assert [(r, z) for r, z in zones if z.rsplit("-az", 1)[0] != az_id_prefix(r)] == []


@pytest.mark.parametrize(("starts", "ends", "path"), [
    ("2024-01-01T11:30:00Z", "2024-01-03T11:30:00Z", "compute[0].capacity.ends_at"),  # over
    ("2026-04-20T11:30:00Z", "2026-05-20T11:30:00Z", "compute[0].capacity.starts_at"),  # started (suite date 2026-05-01)
])
def test_a_capacity_block_in_the_past_warns(starts: str, ends: str, path: str) -> None:
    """R-CAP-11 against the suite's evaluation date (FMCLUSTER_SUPPORT_DATE, tests/conftest.py): a window that is
    over or has started gets a warning naming the field; one still ahead gets none."""
    cap = {"type": "capacity_block", "reservation_id": CR, "starts_at": starts, "ends_at": ends}
    errors, warnings = load({"compute": [group(capacity=cap)]})
    assert errors == []
    [(got_path, message, _)] = [w for w in warnings if w[2] == "R-CAP-11"]
    assert got_path == path and "in the past (today is 2026-05-01)" in message
    ahead = {**cap, "starts_at": "2026-06-01T11:30:00Z", "ends_at": "2026-06-03T11:30:00Z"}
    assert [w for w in load({"compute": [group(capacity=ahead)]})[1] if w[2] == "R-CAP-11"] == []


@pytest.mark.parametrize(("starts", "ends", "nearest"), [
    ("2026-06-01T04:55:00Z", "2026-06-01T11:30:00Z", None),  # 6 h 35 min: botocore's CapacityBlockDurationHours example
    ("2026-06-01T11:30:00Z", "2026-06-02T11:30:00Z", None),  # 1 day
    ("2026-06-01T11:30:00Z", "2026-06-15T11:30:00Z", None),  # 14 days, the last 1-day step
    ("2026-06-01T02:00:00Z", "2026-06-15T11:30:00Z", None),  # 14 days asked, started early on its first day
    ("2026-06-01T11:30:00Z", "2026-06-16T11:30:00Z", "14"),  # 15 days: between the steps (breaker item 9)
    ("2026-06-01T11:30:00Z", "2026-06-18T23:30:00Z", "14 or 21"),  # 17.5 days: both steps as near
    ("2026-06-01T11:30:00Z", "2026-06-22T11:30:00Z", None),  # 21 days, the first 7-day step
    ("2026-06-01T11:30:00Z", "2026-06-26T11:30:00Z", "28"),  # 25 days
    ("2026-06-01T11:30:00Z", "2026-11-30T11:30:00Z", None),  # 182 days
    ("2026-06-01T11:30:00Z", "2026-12-02T11:30:00Z", "182"),  # 184 days
    ("2026-06-01T11:30:00Z", "9999-12-31T11:30:00Z", "182"),  # a typo
], ids=["6h35m", "1-day", "14-days", "14-days-early-start", "15-days", "17.5-days", "21-days", "25-days", "182-days",
        "184-days", "year-9999"])
def test_a_capacity_block_lasts_a_duration_ec2_sells(starts: str, ends: str, nearest: str | None) -> None:
    """R-CAP-12: EC2 sells 1 to 14 days in 1-day steps, then 21 to 182 in 7-day steps; a block ends at 11:30 UTC, so
    it lasts within a day of one. Anything else warns, naming the nearest durations."""
    cap = {"type": "capacity_block", "reservation_id": CR, "starts_at": starts, "ends_at": ends}
    errors, warnings = load({"compute": [group(capacity=cap)]})
    assert errors == []
    found = [(p, m) for p, m, r in warnings if r == "R-CAP-12"]
    if nearest is None:
        assert found == []
        return
    [(path, message)] = found
    assert path == "compute[0].capacity.ends_at"
    assert ("; allowed 1 to 14 days in 1-day steps or 21 to 182 days in 7-day steps (EC2 Capacity Blocks for ML; "
            f"within a day of one, as blocks end at 11:30 UTC), nearest {nearest} days, unless the block was extended "
            "(extensions add their own lengths, up to 182 days in total); ") in message


def test_zone_rule_defers_to_hyperpod_capacity_types() -> None:
    """A gb200 Capacity Block on HyperPod outside the Dallas Local Zone: R-CAP-4 (use a training plan) is the finding,
    not R-CAP-15 (whose advice, the Local Zone, would not make a Capacity Block work on HyperPod)."""
    problems, _ = load({**GB200, "compute": [GB200_CB], "orchestrator": {"kind": "hyperpod", "hyperpod": {
        "controller_instance_type": "ml.m7g.4xlarge", "login_instance_type": None}}})
    rules = {r for _p, _m, r, _l in problems}
    assert "R-CAP-4" in rules and "R-CAP-15" not in rules
