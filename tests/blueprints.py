"""Blueprint fragments for tests: a few named bases and one way to patch them.

One merge semantics everywhere (:func:`merge`):

- a dict in a patch merges into the dict it lands on, key by key, at any depth;
- any other value replaces what was there, lists included (a patch's ``compute`` list is the whole
  list: write every group it should hold, :func:`group` builds one from MINIMAL's group);
- :data:`DROP` as a value removes the key (``{"orchestrator": {"pcs": DROP}}``).

Patches apply left to right. Bases are never modified; every call returns a fresh copy.

Bases (each one says why it differs from MINIMAL):

- :data:`MINIMAL`: the smallest valid blueprint, the default base of rule tables and construct tests.
- :data:`PINNED_STACK`: MINIMAL with the software stack named, for tables whose messages name it.
- :data:`AZ_ID`: PINNED_STACK placed by AZ ID, for the capacity rules (reservations are bound to AZ IDs).
- :data:`PCS_EFA`: four p5 on PCS with ``efa`` interfaces, the layout that stresses subnet sizing.
- :data:`ACCOUNT`: names the S3 buckets and the FSx file system preflight looks up in an account.

:func:`example` loads a file of ``blueprints/`` for tests that change a shipped example.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Final

import yaml

ROOT = Path(__file__).resolve().parent.parent


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


#: A patch value that removes its key.
DROP: Final = _Drop()


def merge(base: dict[str, Any], *patches: dict[str, Any] | None) -> dict[str, Any]:
    """``base`` with ``patches`` applied left to right (dicts deep-merge, other values replace, DROP
    removes); a ``None`` patch changes nothing."""
    out = copy.deepcopy(base)
    for patch in patches:
        out = _merge(out, patch or {})
    return out


def _merge(dst: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(dst)
    for key, value in patch.items():
        if value is DROP:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge(out[key] if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


#: The smallest valid blueprint: one group of 2 x p5.48xlarge in us-east-1a on ParallelCluster (the
#: default orchestrator), the catalog's default software stack, no storage section (the defaults: FSx
#: and a checkpoint bucket) and ``metrics: none`` (no observability stack unless a test asks for one).
MINIMAL: Final[dict[str, Any]] = {
    "name": "t-cluster",
    "region": "us-east-1",
    "availability_zone": "us-east-1a",
    "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}],
    "observability": {"metrics": "none"},
}

#: MINIMAL with ``software.stack`` set to the stack the rule messages name (``h100-570-cuda12.8``, the catalog
#: default until decision XX moved it to R580), so a new catalog default does not rewrite the message tables. Pinning a
#: stack other than the official image's means building an image from it: ``software.image.mode: bake``, from a
#: pinned parent AMI (HyperPod has no public parameter for its image, R-BAKE-1; no lookup context needed).
PINNED_STACK: Final[dict[str, Any]] = merge(
    MINIMAL, {"software": {"image": {"mode": "bake", "parent_ami_id": "ami-0123456789abcdef0"}, "stack": "h100-570-cuda12.8"}})

#: PINNED_STACK placed by ``availability_zone_id`` (use1-az6) instead of an AZ name: capacity
#: reservations are bound to AZ IDs, and the capacity rules (R-CAP-*, R-AZ-3) read them.
AZ_ID: Final[dict[str, Any]] = merge(
    PINNED_STACK, {"availability_zone": DROP, "availability_zone_id": "use1-az6"}
)

#: Four p5.48xlarge on AWS PCS with ``efa`` interfaces (one IPv4 address per EFA card): the layout
#: that stresses GPU-subnet sizing. Ubuntu 24.04 is the OS of the default PCS AMI (R-PCS-2).
#: Switching orchestrator on this base drops the pcs settings: ``{"kind": "hyperpod", "pcs": DROP}``.
#: Where EC2 sells p6e-gb200 Capacity Blocks (R-CAP-15): the Dallas Local Zone by name, with the existing VPC a Local
#: Zone needs (R-LZ-1). A patch over MINIMAL (which places the blueprint by name); FSx stays (R-LZ-3 warns).
DALLAS: Final[dict[str, Any]] = {
    "availability_zone": "us-east-1-dfw-2a",
    "network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"},
}

PCS_EFA: Final[dict[str, Any]] = merge(
    PINNED_STACK,
    {
        "software": {"os": "ubuntu-24.04"},
        "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4}],
        "orchestrator": {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}},
    },
)

#: Four p5.48xlarge on ParallelCluster with FSx (4800 GiB, PERSISTENT_2) linked to s3://fm-datasets
#: and checkpoints in the existing bucket fm-checkpoints: the resources preflight looks up in a (fake)
#: account, which the preflight tests create. The official image (no bake parent to warn about), like a first blueprint.
ACCOUNT: Final[dict[str, Any]] = merge(
    MINIMAL,
    {
        "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4}],
        "storage": {
            "lustre": {
                "storage_capacity_gib": 4800,
                "data_repositories": [{"file_system_path": "/datasets", "s3_uri": "s3://fm-datasets/llm/"}],
            },
            "checkpoints": {"bucket": "fm-checkpoints"},
        },
        "orchestrator": {"kind": "parallelcluster"},
    },
)


def blueprint(*patches: dict[str, Any] | None, base: dict[str, Any] = MINIMAL) -> dict[str, Any]:
    """``base`` (MINIMAL unless given) with ``patches`` merged in, as data."""
    return merge(base, *patches)


def blueprint_text(*patches: dict[str, Any] | None, base: dict[str, Any] = MINIMAL) -> str:
    """:func:`blueprint` as YAML text, keys in the order written."""
    return to_yaml(blueprint(*patches, base=base))


def to_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def group(**overrides: Any) -> dict[str, Any]:
    """MINIMAL's compute group (``gpu``: 2 x p5.48xlarge) with ``overrides``."""
    return {**copy.deepcopy(MINIMAL["compute"][0]), **overrides}


def example(name: str) -> dict[str, Any]:
    """``blueprints/<name>.yaml`` as data (a fresh copy)."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "blueprints" / f"{name}.yaml").read_text())
    return data
