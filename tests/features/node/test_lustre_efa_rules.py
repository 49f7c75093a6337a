"""Rules about LNet over EFA to an EFA-enabled FSx for Lustre (R-FSX-12..14, fmcluster/features/node/rules_lustre_efa.py;
issue 23 item 8): each rule's exact message where it fires and silence where it does not."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint.errors import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import example, merge, to_yaml

EFA_FS = {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 12000, "per_unit_storage_throughput": 1000,
          "efa_enabled": True, "mount_point": "/fsx"}


def problems(name: str, patch: dict[str, Any], rule_id: str) -> list[tuple[str, str, str]]:
    try:
        found = load_blueprint_text(to_yaml(merge(example(name), patch))).warnings
    except BlueprintError as e:
        found = e.problems
    return [(p.level, p.path, p.message) for p in found if p.rule_id == rule_id]


# (example, patch, rule, expected (level, path, message))
RULES = [
    ("efa-lustre", {"compute": [{"name": "a100", "instance_type": "p4d.24xlarge", "count": 2}]}, "R-FSX-12",
     [("warning", "compute[0].instance_type",
       "compute group 'a100' reaches the EFA-enabled file system over TCP only: p4d.24xlarge is not in FSx's EFA "
       "client table (EFA to the file system needs Nitro v4 or newer, not recorded for this type), got p4d.24xlarge; "
       "allowed as is (TCP throughput), or an instance type FSx lists for EFA clients on an orchestrator that mounts "
       "Lustre on the host")]),
    ("efa-lustre", {}, "R-FSX-12", []),
    ("hyperpod-eks", {"storage": {"lustre": EFA_FS}}, "R-FSX-12",
     [("warning", "compute[0].instance_type",
       "compute group 'gpu' reaches the EFA-enabled file system over TCP only: hyperpod-eks mounts FSx for Lustre "
       "through its CSI driver, and fmcluster does not configure LNet over EFA on those nodes "
       "(https://docs.aws.amazon.com/eks/latest/userguide/fsx-csi-tuning-efa.html shows it in launch-template user "
       "data), got p5.48xlarge; allowed as is (TCP throughput), or an instance type FSx lists for EFA clients on an "
       "orchestrator that mounts Lustre on the host")]),
    ("efa-lustre", {}, "R-FSX-13",
     [("warning", "compute[0].instance_type",
       "compute group 'gpu' configures LNet over EFA to the file system, and whether AWS ParallelCluster 3.16.3 "
       "official AMI carries the Lustre client's EFA driver (kefalnd) and, on Ubuntu, kernel 6.8+ is not recorded: "
       "a node without them fails its boot naming the module, got AWS ParallelCluster 3.16.3 official AMI; allowed "
       "as is, an image that carries them (FSx: the Deep Learning AMI does), or storage.lustre.efa_enabled: false")]),
    ("efa-lustre", {"compute": [{"name": "a100", "instance_type": "p4d.24xlarge", "count": 2}]}, "R-FSX-13", []),
    ("efa-lustre", {"compute": [{"name": "gpu", "instance_type": "p6-b300.48xlarge", "count": 65}]}, "R-FSX-14",
     [("error", "storage.lustre.efa_enabled",
       "the compute nodes would open more EFA connections to the file system than FSx allows (1024), got 1040 "
       "(gpu: 1040; nodes x EFA interfaces per node); allowed fewer nodes on EFA-enabled groups, or "
       "storage.lustre.efa_enabled: false")]),
    ("efa-lustre", {"compute": [{"name": "gpu", "instance_type": "p6-b300.48xlarge", "count": 64}]}, "R-FSX-14", []),
]


@pytest.mark.parametrize(("name", "patch", "rule_id", "expected"), RULES)
def test_rules(name: str, patch: dict[str, Any], rule_id: str, expected: list[tuple[str, str, str]]) -> None:
    assert problems(name, patch, rule_id) == expected
