"""LNet over EFA to an EFA-enabled FSx for Lustre file system (issue 23 item 8, docs/decisions.md item 54).

The plan (which groups configure it, with FSx's interface count per type; why the others mount over TCP), the node
contract row, and the rendered ``lustre_efa`` boot step run in the boot simulation (tests/fixtures/boot_sim) against
stub ``lnetctl`` / ``modprobe`` / ``ip`` / ``umount`` / ``mount`` following the real tools' output formats: the node
comes up with LNet over EFA and its Lustre mount remounted, and fails naming the fault where the image cannot. The
rules R-FSX-12..14 are in test_lustre_efa_rules.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fmcluster.catalog import get_instance
from fmcluster.features.node.plan_lustre_efa import lustre_efa_gap, lustre_efa_interfaces
from fmcluster.features.node.render_context import node_context
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import example, merge, to_yaml
from tests.fixtures.boot_sim import harness, images


def blueprint(patch: dict[str, Any] | None = None, name: str = "efa-lustre") -> Any:
    return load_blueprint_text(to_yaml(merge(example(name), patch or {}))).blueprint


# ---- plan: which groups configure LNet over EFA, and with how many interfaces ---------------------------------------
# (instance type, group efa, orchestrator mounts Lustre on the host, interfaces, words of the reason it does not)
PLAN = [
    ("p5.48xlarge", True, True, 8, None),
    ("p5en.48xlarge", True, True, 8, None),
    ("p6-b200.48xlarge", True, True, 8, None),
    ("p6-b300.48xlarge", True, True, 16, None),
    ("p6e-gb200.36xlarge", True, True, 8, None),
    ("p4d.24xlarge", True, True, 0, "not in FSx's EFA client table"),
    ("p5.48xlarge", False, True, 0, "EFA off"),
    ("p5.48xlarge", True, False, 0, "CSI driver"),
]


@pytest.mark.parametrize(("instance", "efa", "on_nodes", "interfaces", "reason"), PLAN)
def test_interfaces_per_type_follow_fsx_table(instance: str, efa: bool, on_nodes: bool, interfaces: int,
                                               reason: str | None) -> None:
    bp, inst = blueprint(), get_instance(instance)
    assert lustre_efa_interfaces(bp, inst, efa_enabled=efa, lustre_on_nodes=on_nodes) == interfaces
    gap = lustre_efa_gap(bp, inst, efa_enabled=efa, lustre_on_nodes=on_nodes)
    assert (gap is None) == (reason is None)
    assert reason is None or reason in (gap or "")


def test_a_file_system_without_efa_configures_nothing() -> None:
    bp = blueprint({"storage": {"lustre": {"efa_enabled": False}}})
    inst = get_instance("p5.48xlarge")
    assert lustre_efa_interfaces(bp, inst, efa_enabled=True, lustre_on_nodes=True) == 0
    assert lustre_efa_gap(bp, inst, efa_enabled=True, lustre_on_nodes=True) is None


@pytest.mark.parametrize(("efa_fs", "steps", "row"), [
    (True, ("scratch", "lustre_efa", "fsx", "job_env"), True),
    (False, ("scratch", "fsx", "job_env"), False),
])
def test_boot_path_and_contract(efa_fs: bool, steps: tuple[str, ...], row: bool) -> None:
    """The step runs before the FSx wait, and the contract's lustre-efa row (always enforced) exists only with it."""
    g = resolve(blueprint({"storage": {"lustre": {"efa_enabled": efa_fs}}})).groups[0]
    at = g.image.boot_path.index("scratch")
    assert g.image.boot_path[at:at + len(steps)] == steps
    rows = [r for r in g.image.contract if r.component == "lustre-efa"]
    assert [(r.kind, r.enforce) for r in rows] == ([("function", True)] if row else [])
    assert ("lustre-efa" in [s.name for s in g.image.boot_steps]) == efa_fs


# ---- the rendered step in the boot simulation ----------------------------------------------------------------------
def efa_lustre_context(patch: dict[str, Any] | None = None) -> tuple[Any, Any]:
    rc = resolve(blueprint(patch))
    g = rc.groups[0]
    ctx = harness.sim_context(node_context(rc, g, exporters_script="x"))
    return ctx, g.image


def boot(tmp_path: Path, **state: Any) -> Any:
    ctx, image = efa_lustre_context()
    comp = images.published(image.manifest.key)
    kernel = state.pop("kernel", None)
    s = harness.image_state(ctx, image.manifest, components=comp)
    s = replace(s, **state)
    if kernel:
        s = replace(s, kernel=kernel)
    return ctx, harness.boot(tmp_path, ctx, s)


def test_node_comes_up_with_lnet_over_efa_and_remounts(tmp_path: Path) -> None:
    ctx, r = boot(tmp_path)
    assert r.returncode == 0, r.output[-3000:]
    lnet = r.state["lnet"]
    # p5.48xlarge: 32 EFA devices, FSx's default of 8 interfaces, spread one in four
    assert [ni["if"] for ni in lnet["nets"]["efa"]] == [f"rdmap{79 + i}s0" for i in range(0, 32, 4)]
    assert [ni["if"] for ni in lnet["nets"]["tcp"]] == ["ens32"]
    assert lnet["discovery"] == 1 and lnet["udsp"] == ["--src efa --priority 0"]
    assert r.ran("modprobe kefalnd ipif_name=ens32")
    # the orchestrator had mounted over TCP: unmounted after LNet had EFA, then mounted again from fstab
    order = [a for a in r.actions if a.startswith(("lnetctl udsp", "umount /fsx", "mount /fsx"))]
    assert order == ["lnetctl udsp add --src efa --priority 0", "umount /fsx", "mount /fsx"]
    assert r.state["mounts"]["/fsx"]["fstype"] == "lustre"
    assert "PASS lustre-efa: 8 LNet EFA interface(s) up" in r.output
    assert "reported: GPUDirect Storage unavailable: nvidia-fs is not loaded" in r.output


def test_amazon_linux_2023_has_no_kernel_bound(tmp_path: Path) -> None:
    """FSx lists Amazon Linux 2023 without a kernel bound: its 6.1 kernel configures LNet over EFA."""
    ctx, image = efa_lustre_context({"software": {"os": "amazon-linux-2023"}})
    s = harness.image_state(ctx, image.manifest, components=images.published(image.manifest.key))
    assert s.kernel.startswith("6.1.")
    r = harness.boot(tmp_path, ctx, s)
    assert r.returncode == 0, r.output[-3000:]
    assert len(r.state["lnet"]["nets"]["efa"]) == 8


def test_gds_is_reported_when_nvidia_fs_is_loaded(tmp_path: Path) -> None:
    ctx, image = efa_lustre_context()
    s = harness.image_state(ctx, image.manifest, components=images.published(image.manifest.key))
    s = replace(s, modules=[*s.modules, "nvidia_fs"])
    r = harness.boot(tmp_path, ctx, s)
    assert r.returncode == 0, r.output[-3000:]
    assert "GPUDirect Storage: nvidia-fs loaded" in r.output


def test_a_mount_without_fstab_entry_is_remounted_from_its_source(tmp_path: Path) -> None:
    """HyperPod mounts through FsxLustreConfig, with no documented fstab entry: the remount uses the mount's source."""
    _, r = boot(tmp_path, lustre_in_fstab=False)
    assert r.returncode == 0, r.output[-3000:]
    assert [a for a in r.actions if a.startswith(("umount", "mount "))][-2:] == [
        "umount /fsx", "mount -t lustre -o relatime,flock 10.0.0.5@tcp:/abcdefgh /fsx"]
    assert r.state["mounts"]["/fsx"] == {"source": "10.0.0.5@tcp:/abcdefgh", "fstype": "lustre"}


def test_a_busy_mount_is_kept_with_a_warning(tmp_path: Path) -> None:
    _, r = boot(tmp_path, fsx_busy=True)
    assert r.returncode == 0, r.output[-3000:]
    assert "could not unmount /fsx (busy)" in r.output
    assert [a for a in r.actions if a.startswith("mount /fsx")] == []


# (fault, state change, words the failure names)
FAULTS = [
    ("no EFA LNet driver", {"missing_modules": ("kefalnd",)}, "has no EFA LNet driver"),
    ("no Lustre client", {"missing_modules": ("lnet",)}, "no Lustre client modules"),
    ("EFA interfaces down", {"efa_ni_status": "down"}, "lists no EFA network interface up"),
    ("Ubuntu kernel before 6.8", {"kernel": "6.5.0-1024-aws"}, "needs kernel 6.8 or newer on ubuntu-22.04"),
]


@pytest.mark.parametrize(("fault", "change", "words"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_node_that_cannot_use_efa_to_the_file_system_fails_naming_it(tmp_path: Path, fault: str,
                                                                       change: dict[str, Any], words: str) -> None:
    _, r = boot(tmp_path, **dict(change))
    assert r.returncode == 1
    error = next(line for line in r.output.splitlines() if "ERROR:" in line)
    assert "[lustre_efa] ERROR: " in error and words in error
