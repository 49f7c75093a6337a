"""The node contract (features/node/plan_contract.py): no check fails closed on a value no primary source confirms.

Enumerated against every image manifest of the catalog (each as an official image and as a bake parent) and every
group of every example blueprint: a version row is enforced only when fmcluster installs the component itself, the
image is a custom AMI the blueprint declares, or the manifest records a confirmed value of a non-moving image.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fmcluster.catalog.images import get_image, known_images
from fmcluster.catalog.software import get_stack
from fmcluster.features.node.plan_contract import EFA_BUNDLED, node_contract, version_enforcement
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint
from tests.conftest import ROOT

#: lock component -> the manifest field whose verification it rests on
OWNER = {**dict.fromkeys(EFA_BUNDLED, "efa_installer"), "kernel_modules": "kernel_modules"}
EXAMPLES = sorted(p.stem for p in (ROOT / "blueprints").glob("*.yaml"))


def _lock(key: str) -> dict[str, str | None]:
    stack = get_stack(get_image(key).stack)
    return {"driver": stack.driver, "kernel_modules": stack.kernel_modules, "fabric_manager": stack.fabric_manager,
            "cuda": stack.cuda, "nccl": stack.nccl, "efa_installer": stack.efa_installer, "gdrcopy": stack.gdrcopy,
            **{c: stack.versions()[c] for c in EFA_BUNDLED}}


@pytest.mark.parametrize("mode", ["official", "bake"])
@pytest.mark.parametrize("key", known_images())
def test_no_unverified_or_moving_manifest_value_is_enforced(key: str, mode: str) -> None:
    manifest = get_image(key)
    enforcement = version_enforcement(mode, manifest, _lock(key), built=())
    for component, (enforce, reason) in enforcement.items():
        unconfirmed = manifest.reference.moving or OWNER.get(component, component) in manifest.unverified
        assert enforce != unconfirmed, (key, component, reason)


@pytest.mark.parametrize("key", known_images())
def test_what_fmcluster_builds_is_enforced_and_a_custom_ami_declares_its_lock(key: str) -> None:
    manifest, lock = get_image(key), _lock(key)
    built = version_enforcement("bake", manifest, lock, built=("driver", "gdrcopy", "efa_installer"))
    assert all(built[c][0] for c in ("driver", "kernel_modules", "gdrcopy", "efa_installer", *EFA_BUNDLED))
    assert all(enforce for enforce, _ in version_enforcement("custom", manifest, lock, built=()).values())


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_enforces_only_what_is_built_declared_or_confirmed(example: str) -> None:
    rc = resolve(load_blueprint(Path(ROOT / "blueprints" / f"{example}.yaml")))
    for g in rc.groups:
        im = g.image
        built = {*im.bake_installs, *(i.split(" ")[0] for i in im.installs_at_boot)}
        for row in im.contract:
            if row.kind == "function":
                assert row.enforce, (example, g.name, row.component)
                continue
            if not row.enforce or im.mode == "custom" or OWNER.get(row.component, row.component) in built \
                    or row.component in built:
                continue
            assert im.manifest is not None and not im.manifest.reference.moving, (example, g.name, row)
            assert OWNER.get(row.component, row.component) not in im.manifest.unverified, (example, g.name, row)


@pytest.mark.parametrize(("example", "drift"), [
    # the issue's cases: HyperPod's default image and the PCS-ready DLAMI `latest` move, so all they carry is drift;
    # only NCCL, which fmcluster installs at boot, fails closed
    ("hyperpod-p5", {"driver", "kernel_modules", "fabric_manager", "cuda", "efa_installer", "libfabric",
                     "aws_ofi_nccl", "gdrcopy"}),
    ("pcs-p5en", {"driver", "kernel_modules", "fabric_manager", "cuda", "efa_installer", "libfabric",
                  "aws_ofi_nccl", "gdrcopy"}),
    # p6-b200 bakes on ParallelCluster 3.16.3: the parent's unverified GDRCopy, CUDA and module flavour are drift
    ("p6-b200", {"cuda", "gdrcopy", "kernel_modules"}),
])
def test_the_issue_examples_report_their_unverified_values_as_drift(example: str, drift: set[str]) -> None:
    im = resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml")).groups[0].image
    assert {r.component for r in im.contract if r.kind == "version" and not r.enforce} == drift


@pytest.mark.parametrize(("enforcement", "expected"), [
    ({"driver": (True, "installed by fmcluster")}, (True, "installed by fmcluster")),
    ({"driver": (False, "not confirmed")}, (False, "not confirmed")),
    ({}, (False, "no enforcement derived for it: reported only")),
], ids=["enforced", "drift", "missing-is-reported-only"])
def test_a_component_without_enforcement_is_reported_only(enforcement: dict[str, tuple[bool, str]],
                                                           expected: tuple[bool, str]) -> None:
    """A lock component the enforcement map does not cover fails open (drift), never closed."""
    rc = resolve(load_blueprint(Path(ROOT / "blueprints" / "default.yaml")))
    g = rc.groups[0]
    image = dataclasses.replace(g.image, enforcement=enforcement)
    [driver] = [r for r in node_contract(image, g.instance, efa_enabled=True, lustre=False) if r.component == "driver"]
    assert (driver.enforce, driver.reason) == expected
