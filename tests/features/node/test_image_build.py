"""The image-build install scripts (fmcluster.features.node.render_image_build): one per component, in install order, from
the same library and package-manager partial as the boot path; shellcheck-clean; the lock they write is the
one the boot path of a baked node compares."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.node.render_context import LOCK_PATH, node_context
from fmcluster.features.node.render_image_build import image_build_steps, install_scripts
from fmcluster.features.node.render_scripts import render_node_scripts
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import example, merge, to_yaml
from tests.conftest import ROOT
from tests.test_render import shellcheck


def _rc(data: dict[str, Any]) -> Any:
    return resolve(load_blueprint_text(to_yaml(data)).blueprint)


CASES = {
    # p6-b200 bakes blackwell-580-cuda13.0 on ParallelCluster, Ubuntu 22.04
    "p6-b200": (lambda: resolve(load_blueprint(ROOT / "blueprints/p6-b200.yaml")),
                ["cuda-repo", "driver", "fabric-manager", "cuda", "nccl", "efa", "gdrcopy", "nccl-tests", "lock", "measure", "holds"]),
    "al2023-efa-off": (lambda: _rc(merge(example("default"), {"software": {"image": {"mode": "bake"}, "stack": "h100-570-cuda12.8",
                                                                         "os": "amazon-linux-2023"},
                                                            "compute": [{"name": "gpu", "instance_type": "p5.48xlarge",
                                                                         "count": 2, "efa": False}]})),
                       ["cuda-repo", "driver", "fabric-manager", "cuda", "nccl", "gdrcopy", "nccl-tests", "lock", "measure", "holds"]),
    "plugin-from-source": (lambda: _rc(merge(example("default"), {"software": {
        "image": {"mode": "bake"}, "stack": "h100-570-cuda12.8", "overrides": {"aws_ofi_nccl": "1.16.3"}}})),
        ["cuda-repo", "driver", "fabric-manager", "cuda", "nccl", "efa", "aws-ofi-nccl", "gdrcopy", "nccl-tests", "lock",
         "measure", "holds"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_components_in_install_order_and_shellcheck_clean(case: str, tmp_path: Path) -> None:
    make_rc, names = CASES[case]
    rc = make_rc()
    steps = install_scripts(rc, rc.groups[0])
    assert [n for n, _ in steps] == names
    paths = []
    for name, text in steps:
        assert text.startswith("#!/usr/bin/env bash\n") and f'component "{name}"' in text
        p = tmp_path / f"{name}.sh"
        p.write_text(text)
        paths.append(str(p))
    proc = subprocess.run([shellcheck(), "--shell=bash", "--format=gcc", *paths], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_lock_component_writes_the_lock_the_boot_path_compares(tmp_path: Path) -> None:
    rc = resolve(load_blueprint(ROOT / "blueprints/p6-b200.yaml"))
    g = rc.groups[0]
    script = dict(install_scripts(rc, g))["lock"]
    (tmp_path / "lock.sh").write_text(script)
    proc = subprocess.run(["bash", str(tmp_path / "lock.sh")], env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(tmp_path)},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "opt/fmcluster/lock.json").read_text()
    doc = json.loads(written)
    assert doc["lock"] == g.image.lock and doc["group"] == g.name and doc["drift"] == sorted(g.image.reported_only)
    boot = render_node_scripts(node_context(rc, g))["bootstrap.sh"]
    assert f"readonly FMC_LOCK_JSON='{written}'" in boot


@pytest.mark.parametrize("example_name", ["p6-b200", "p6-b300"])
def test_image_test_phase_passes_on_the_lock_the_build_wrote(tmp_path: Path, example_name: str) -> None:
    """The rendered lock component's build, then its test phase, on one file tree (issue 23: the p6-b300 test grepped
    a field the build never wrote, so AWS::ImageBuilder::Image failed). A lock from another group fails the test."""
    rc = resolve(load_blueprint(ROOT / f"blueprints/{example_name}.yaml"))
    g = rc.groups[0]
    lock = next(s for s in image_build_steps(rc, g) if s.component == "lock")
    root = tmp_path / "root"
    build = dict(install_scripts(rc, g))["lock"]
    (tmp_path / "lock.sh").write_text(build)
    env = {"PATH": "/usr/bin:/bin", "FMC_ROOT": str(root)}
    assert subprocess.run(["bash", str(tmp_path / "lock.sh")], env=env, check=False).returncode == 0
    test = lock.test.replace(LOCK_PATH, f"{root}{LOCK_PATH}")
    proc = subprocess.run(["bash", "-c", test], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    (root / LOCK_PATH.lstrip("/")).write_text(node_context(rc, g).lock_json.replace(f'"group": "{g.name}"', '"group": "x"'))
    proc = subprocess.run(["bash", "-c", test], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and f"is not the lock of group {g.name}" in proc.stderr


def test_driver_component_is_the_pinned_runfile_with_its_sha256() -> None:
    rc = resolve(load_blueprint(ROOT / "blueprints/p6-b200.yaml"))
    ctx = node_context(rc, rc.groups[0])
    driver = dict(install_scripts(rc, rc.groups[0]))["driver"]
    assert f'fetch "{ctx.driver_url}" "${{run}}" "{ctx.driver_sha256}"' in driver
    assert '--kernel-module-type="${FMC_LOCK_KERNEL_MODULES}"' in driver
