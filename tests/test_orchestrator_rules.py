"""Orchestrator rules and settings: (blueprint fragment, expected path + message) tables."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DALLAS, blueprint_text

EKS = "arn:aws:eks:us-east-1:123456789012:cluster/training"
U24 = {"software": {"os": "ubuntu-24.04"}}


def _errors(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text(patch))
    return [(p.path, p.message, p.rule_id) for p in e.value.errors]


def _warnings(patch: dict[str, Any], *, image_rules: bool = False) -> list[tuple[str, str, str | None]]:
    """Warnings of ``patch``; the image rules (R-IMG-*, tests/features/node/test_image.py) and the first-job R-CTR-11
    (no pyxis on HyperPod's and PCS's official images, tests/features/containers/test_first_job_everywhere.py) only
    when asked for."""
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(patch)).warnings
            if image_rules or not (p.rule_id or "").startswith(("R-IMG-", "R-BAKE-", "R-CTR-11"))]


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        # orchestration: eks without an ARN creates the EKS cluster (R-EKS-* in tests/orchestrators/hyperpod_eks/test_eks.py)
        ({"orchestrator": {"kind": "hyperpod", "hyperpod": {"eks": {"kubernetes_version": "1.33"}}}},
         ("orchestrator.hyperpod.eks",
          "ignored with orchestration: slurm, got EKS cluster settings; allowed only with orchestration: eks", "R-HP-1")),
        ({"orchestrator": {"kind": "hyperpod", "hyperpod": {"eks_cluster_arn": EKS}}},
         ("orchestrator.hyperpod.eks_cluster_arn",
          f"ignored with orchestration: slurm, got {EKS!r}; allowed only with orchestration: eks", "R-HP-2")),
        ({"compute": [{"name": "controller", "instance_type": "p5.48xlarge", "count": 2}], "orchestrator": {"kind": "hyperpod"}},
         ("compute[0].name", "name reserved for the HyperPod Slurm controller instance group, got 'controller'; allowed any "
          "other name", "R-HP-3")),
        ({**U24, "compute": [{"name": "gp", "instance_type": "p5.48xlarge", "count": 2}], "orchestrator": {"kind": "pcs"}},
         ("compute[0].name", "too short for a PCS compute node group, got 'gp'; allowed 3-25 characters", "R-PCS-1")),
        ({**U24, "compute": [{"name": "login", "instance_type": "p5.48xlarge", "count": 2}], "orchestrator": {"kind": "pcs"}},
         ("compute[0].name", "name reserved for the PCS login node group, got 'login'; allowed any other name", "R-PCS-1")),
        # the PCS-ready DLAMI's OS is R-IMG-3's now (R-PCS-2 warns about custom AMIs, tests/features/node/test_image_stack.py)
        ({"software": {"os": "ubuntu-22.04"}, "orchestrator": {"kind": "pcs"}},
         # changed on purpose (issue 11): the image rules own the OS check (R-PCS-2 is gone)
         ("software.os", "AWS PCS-ready Deep Learning AMI (Base, Ubuntu 24.04) does not exist for this OS, got 'ubuntu-22.04'; "
          "allowed ubuntu-24.04", "R-IMG-3")),
        ({"compute": [{"name": "gb", "instance_type": "p6e-gb200.36xlarge", "count": 9,
                       "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}}],
          "software": {"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0", "os": "ubuntu-22.04"}, **DALLAS},
         ("orchestrator.parallelcluster.head_node_instance_type",
          "head node architecture differs from compute[0] (p6e-gb200.36xlarge is arm64), got m7i.4xlarge (x86_64); allowed "
          "an arm64 head node type, e.g. m7g.4xlarge", "R-PC-2")),
        ({**U24, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 40}], "orchestrator": {"kind": "pcs"}},
         ("orchestrator.pcs.size", "PCS size SMALL manages up to 32 compute nodes, got 40 nodes (sum of compute counts); "
          "allowed MEDIUM (up to 512) or LARGE (up to 2048) - did you mean MEDIUM?", "R-PCS-5")),
        # efa: false keeps 513 nodes inside the default /20 now that PCS uses efa (one address per EFA card)
        ({**U24, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 500, "efa": False},
                             {"name": "gpu2", "instance_type": "p5.48xlarge", "count": 13, "efa": False}],
          "orchestrator": {"kind": "pcs", "pcs": {"size": "MEDIUM"}}},
         ("orchestrator.pcs.size", "PCS size MEDIUM manages up to 512 compute nodes, got 513 nodes (sum of compute counts); "
          "allowed LARGE (up to 2048) - did you mean LARGE?", "R-PCS-5")),
        ({**U24, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2048, "efa": False},
                             {"name": "gpu2", "instance_type": "p5.48xlarge", "count": 1, "efa": False}],
          "orchestrator": {"kind": "pcs", "pcs": {"size": "LARGE"}}},
         ("orchestrator.pcs.size", "PCS size LARGE manages up to 2048 compute nodes, got 2049 nodes (sum of compute counts); "
          "allowed at most 2048 nodes with LARGE - lower the counts or split the cluster", "R-PCS-5")),
    ],
)
def test_rule_errors(patch: dict[str, Any], expected: tuple[str, str, str]) -> None:
    assert _errors(patch) == [expected]


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        # changed on purpose (issue 12 item 3): PCS defaults to efa, so R-PCS-3 has nothing to say by default
        # changed on purpose (issue 11): the floating PCS-ready DLAMI is the image rules' finding (R-PCS-4 is gone,
        # tests/features/node/test_image.py); PCS itself has nothing to say
        ({**U24, "orchestrator": {"kind": "pcs"}}, []),
        ({**U24, "orchestrator": {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}},
          "software": {"os": "ubuntu-24.04", "image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}}, [
            ("software.image.ami_id", "a custom AMI on AWS PCS must carry the PCS agent 1.5.0-1 or later and Slurm (node "
             "lifecycle actions need it), got 'ami-0123456789abcdef0', which fmcluster cannot inspect offline; allowed "
             "an AMI built from the PCS-ready DLAMI (or use mode bake, which builds from it)", "R-PCS-2"),
        ]),
        ({"compute": [{"name": "gpu", "instance_type": "p5e.48xlarge", "count": 2}], "orchestrator": {"kind": "hyperpod"}}, [
            ("compute[0].instance_type",
             "ml.p5e.48xlarge has no public HyperPod price in us-east-1, and cfn-lint reports E3644 for it, got "
             "'p5e.48xlarge'; allowed here p4d.24xlarge, p4de.24xlarge, p5.4xlarge, p5.48xlarge, p5en.48xlarge, "
             "p6-b200.48xlarge, p6-b300.48xlarge", "R-HP-4"),
        ]),
        ({"orchestrator": {"kind": "hyperpod"}}, []),
        ({}, []),
    ],
)
def test_rule_warnings(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert _warnings(patch) == expected


@pytest.mark.parametrize(
    ("patch", "path", "message"),
    [
        ({"orchestrator": {"parallelcluster": {"log_retention_days": 10}}}, "orchestrator.parallelcluster.log_retention_days",
         "not a CloudWatch Logs retention ParallelCluster accepts, got 10; allowed 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, "
         "365, 400, 545, 731, 1827, 3653"),
        ({"orchestrator": {"parallelcluster": {"deletion_policy": "Snapshot"}}}, "orchestrator.parallelcluster.deletion_policy",
         "invalid value, got 'Snapshot'; allowed Retain, Delete"),
        ({"orchestrator": {"parallelcluster": {"queue_update_strategy": "drain"}}},
         "orchestrator.parallelcluster.queue_update_strategy",
         "invalid value, got 'drain'; allowed DRAIN, TERMINATE, COMPUTE_FLEET_STOP - did you mean 'DRAIN'?"),
        ({"orchestrator": {"kind": "hyperpod", "hyperpod": {"efa_interface_type": "interface"}}},
         "orchestrator.hyperpod.efa_interface_type", "invalid value, got 'interface'; allowed efa, efa-only"),
    ],
)
def test_settings_shape(patch: dict[str, Any], path: str, message: str) -> None:
    assert [(p, m) for p, m, _ in _errors(patch)] == [(path, message)]


@pytest.mark.parametrize(
    ("size", "nodes"), [("SMALL", 32), ("MEDIUM", 33), ("MEDIUM", 512), ("LARGE", 513), ("LARGE", 2048)]
)
def test_pcs_size_fits_its_node_count(size: str, nodes: int) -> None:
    """R-PCS-5 boundaries: SMALL 32 nodes, MEDIUM 512, LARGE 2048 (counts summed over groups)."""
    first = min(nodes, 2000)
    # efa: false: one address per node, so the default /20 holds 2048 nodes (PCS uses efa interfaces)
    groups = [{"name": "gpu", "instance_type": "p5.48xlarge", "count": first, "efa": False}]
    if nodes > first:
        groups.append({"name": "gpu2", "instance_type": "p5.48xlarge", "count": nodes - first, "efa": False})
    result = load_blueprint_text(blueprint_text({**U24, "compute": groups, "orchestrator": {"kind": "pcs", "pcs": {"size": size}}}))
    assert [w.rule_id for w in result.warnings if w.rule_id == "R-PCS-5"] == []


def test_mixed_architectures_leave_the_head_node_alone() -> None:
    """x86_64 + arm64 groups: R-CAP-9 reports the mix; R-PC-2 (head node), R-CAP-7 and R-SW-1 (stack) stay quiet."""
    found = _errors({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
                                 {"name": "gb", "instance_type": "p6e-gb200.36xlarge", "count": 9,
                                  "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}}],
                 **DALLAS})
    # R-DRV-6 is its own finding: the official ParallelCluster image's R595 driver with EFA on the GB200 group
    assert [r for _p, _m, r in found] == ["R-CAP-9", "R-DRV-6"]
