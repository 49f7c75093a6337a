"""The known-bad matrix (catalog/data/software.yaml ``known_bad``): every entry sourced, its version ranges as a
table, the exporter pin outside it, and R-KB-3 (Slurm 25.11 topology/block on ParallelCluster). R-OFI-FAB-7 and
R-KB-2 are rows of tests/features/node/test_software_rules.py, R-CTR-7 of tests/features/containers/test_containers.py."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.catalog.software import known_bad, known_bad_entries, known_bad_matches
from fmcluster.features.observability.pins import DCGM_EXPORTER
from fmcluster.validation import load_blueprint_text
from tests.blueprints import example, to_yaml


def test_the_four_entries_of_issue_28_are_sourced() -> None:
    entries = {kb.key: kb for kb in known_bad_entries()}
    assert set(entries) == {"ofi-broadcast-hang", "gin-type-mismatch", "dcgm-exporter-xid-loss", "slurm-block-powerdown"}
    assert {k: kb.sources[0].split()[0] for k, kb in entries.items()} == {
        "ofi-broadcast-hang": "https://github.com/aws/deep-learning-containers/pull/6551",
        "gin-type-mismatch": "https://github.com/aws/aws-ofi-nccl/issues/1355",
        "dcgm-exporter-xid-loss": "https://github.com/NVIDIA/dcgm-exporter/issues/646",
        "slurm-block-powerdown": "https://github.com/aws/aws-parallelcluster-cookbook/pull/3123",
    }


#: (versions, the entries they fall into)
MATCHES: list[tuple[dict[str, Any], list[str]]] = [
    ({"aws_ofi_nccl": "1.18.0", "efa_installer": "1.49.0"}, ["ofi-broadcast-hang"]),
    ({"aws_ofi_nccl": "1.20.0", "efa_installer": "1.47.0"}, ["ofi-broadcast-hang"]),   # the installer line alone
    ({"aws_ofi_nccl": "1.20.0", "efa_installer": "1.49.0", "nccl": "2.30.4"}, []),
    ({"aws_ofi_nccl": "1.20.0", "nccl": "2.31.2"}, ["gin-type-mismatch"]),
    ({"aws_ofi_nccl": "1.21.0", "nccl": "2.32.6"}, []),
    ({"aws_ofi_nccl": None, "nccl": "2.31.2"}, []),                                    # unknown plugin: no claim
    ({"dcgm_exporter": "4.8.2"}, ["dcgm-exporter-xid-loss"]),
    ({"dcgm_exporter": "4.7.1"}, []),
    ({"slurm": "25.11"}, ["slurm-block-powerdown"]),
    ({"slurm": "25.05"}, []),
    ({"slurm": "26.05"}, []),
]


@pytest.mark.parametrize(("versions", "keys"), MATCHES)
def test_version_ranges(versions: dict[str, Any], keys: list[str]) -> None:
    assert [kb.key for kb in known_bad_matches(versions)] == keys


def test_the_exporter_that_runs_is_not_known_bad() -> None:
    assert not known_bad("dcgm-exporter-xid-loss").matches({"dcgm_exporter": DCGM_EXPORTER.version})


R_KB_3 = (
    "known-bad: Slurm 25.11 topology/block drops a node from its block when it powers down and never re-adds it on "
    "power-up, so --exclusive=topo jobs fail until scontrol reconfigure (SchedMD-confirmed; workaround "
    "Topology=default:<BlockName> on the NodeName lines); ParallelCluster uses topology/block for p6e-gb200.36xlarge "
    "and runs Slurm 25.11 (whether it carries the workaround is not verified), got p6e-gb200.36xlarge on "
    "ParallelCluster 3.16.3; allowed nodes that never power down (min_count == count) on a block-topology queue, or a "
    "ParallelCluster whose slurm.conf carries the Topology=default:<BlockName> workaround, or 'scontrol reconfigure' "
    "after nodes of the queue power up")


@pytest.mark.parametrize(("name", "expected"), [
    ("p6e-gb200", [("compute[0].instance_type", "warning", R_KB_3)]),   # UltraServer type on ParallelCluster 3.16
    ("default", []),                                                    # p5: topology/tree, no block
    ("p6-b300", []),                                                    # PCS: fmcluster writes no block topology
])
def test_block_topology_power_down(name: str, expected: list[tuple[str, str, str]]) -> None:
    warnings = load_blueprint_text(to_yaml(example(name))).warnings
    assert [(w.path, w.level, w.message) for w in warnings if w.rule_id == "R-KB-3"] == expected
