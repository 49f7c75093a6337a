"""Software compatibility rules: the resolved stack (catalog stack + ``software.overrides``)
against itself, against the instance types of the compute groups, and against the known-good sets.

Every rule reads the *resolved* versions, so overrides go through exactly the same checks as the
catalog stacks. Facts and their sources: the source keys of catalog/data/software.yaml (rule ids below keep
its numbering where one exists) and catalog/data/software.yaml. A rule reports its problem at the
YAML key the user set (``software.overrides.<component>``) or, when the value came from the
stack, at ``software.stack``.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, ComputeGroup, SoftwareSpec
from fmcluster.catalog import get_instance
from fmcluster.catalog.images import bakeable_stacks
from fmcluster.catalog.instances import InstanceSpec
from fmcluster.catalog.software import (
    BLACKWELL_FAMILIES,
    GRACE_BLACKWELL_FAMILIES,
    HOPPER_FAMILIES,
    KnownBad,
    SoftwareStack,
    aws_ofi_nccl_artifact,
    aws_ofi_nccl_artifacts,
    compare_versions,
    cuda_min_driver,
    driver_artifact,
    driver_artifacts,
    efa_bundle,
    gdrcopy_artifact,
    gdrcopy_artifacts,
    get_stack,
    known_bad,
    known_cuda_versions,
    known_efa_installers,
    known_good_sets,
    known_stacks,
    major,
    plugin_max_tested_nccl,
    plugin_min_for_instance,
    same_version,
    version_ge,
    version_lt,
)
from fmcluster.features.node.plan_image import image_of
from fmcluster.resolved import ResolvedCluster
from fmcluster.resolved.cluster import software_stack
from fmcluster.validation.rules import Violation, rule

EFA_RN = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-changelog.html"
OFI_RN = "https://github.com/aws/aws-ofi-nccl/blob/v1.21.1/RELEASENOTES.md"
OFI_PLAT = "https://github.com/aws/aws-ofi-nccl/blob/master/src/platform-aws.cpp"
CUDA_RN = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
NV_OPEN = "https://download.nvidia.com/XFree86/Linux-aarch64/580.159.03/README/kernel_open.html"
NCCL_SRC = "https://github.com/NVIDIA/nccl (makefiles/common.mk; tag v2.25.1-1)"
GDR_CL = "https://github.com/NVIDIA/gdrcopy/blob/master/CHANGELOG.md"
EFA_KDRV = "https://github.com/amzn/amzn-drivers/blob/master/kernel/linux/efa/RELEASENOTES.md"
FM_DOC = "https://github.com/NVIDIA/yum-packaging-fabric-manager"


# ---- helpers ---------------------------------------------------------------------------------
def where(stack: SoftwareStack, *components: str) -> str:
    """YAML path to blame: the first of ``components`` the blueprint overrode, else the stack."""
    for c in components:
        if c in stack.overridden:
            return f"software.overrides.{c}"
    return "software.stack"


def _groups(bp: Blueprint) -> Iterator[tuple[int, ComputeGroup, InstanceSpec]]:
    for i, g in enumerate(bp.compute):
        yield i, g, get_instance(g.instance_type)


def _on(i: int, inst: InstanceSpec) -> str:
    return f"compute[{i}] is {inst.name}"


# ---- stack selection ---------------------------------------------------------------------------
@rule("R-SW-1", source="catalog/data/software.yaml (families each known-good stack was validated on)",
      suppressed_by=("R-CAP-9",))
def stack_covers_instance_families(bp: Blueprint) -> Iterator[Violation]:
    """Skips groups whose CPU architecture the stack is not built for (R-CAP-7 reports those, more
    precisely); suppressed when the groups mix architectures (R-CAP-9: no stack can fit all)."""
    stack = get_stack(bp.software.stack_name)
    families = known_good_families(stack)
    for i, _g, inst in _groups(bp):
        if inst.cpu_architecture not in stack.cpu_architectures:
            continue
        if inst.family not in families:
            fits = [s for s in bakeable_stacks() if inst.family in get_stack(s).families]
            yield "software.stack", (
                f"stack is not known-good for the {inst.family} family ({_on(i, inst)}), got {stack.name!r}; "
                f"allowed {', '.join(fits) or 'none'}" + (f" - did you mean {fits[0]!r}?" if fits else "")
            )


def known_good_families(stack: SoftwareStack) -> set[str]:
    """Families the stack's exact versions are known-good on: its own, and those of every catalog stack pinning the
    same versions and kernel-module flavour (h100-580-cuda13.0 and blackwell-580-cuda13.0 pin the same set, so one
    cluster of p5 and p6-b200 groups can share it and its NCCL)."""
    same = [get_stack(n) for n in known_stacks() if get_stack(n).comparable() == get_stack(stack.name).comparable()]
    return set(stack.families).union(*(s.families for s in same))


@rule("R-SW-2", source="catalog/data/software.yaml (operating systems each stack supports)")
def stack_supports_os(bp: Blueprint) -> Iterator[Violation]:
    stack = get_stack(bp.software.stack_name)
    if bp.software.os_name not in stack.os:
        yield "software.os", f"not supported by stack {stack.name!r}, got {bp.software.os_name!r}; allowed {', '.join(stack.os)}"


def _untested(software: SoftwareSpec) -> tuple[str, str, str] | None:
    """(path, what differs, closest stack) when the resolved set equals no known-good set.

    The path is the first overridden component that differs from the closest known-good stack
    (``software.overrides.<component>``), else ``software.overrides``."""
    stack = software_stack(software)
    if not stack.overridden:
        return None
    mine = stack.comparable()
    best: tuple[int, str, list[str]] | None = None
    # the blueprint's own stack first, so that it wins ties
    for name, versions in sorted(known_good_sets(), key=lambda nv: nv[0] != software.stack_name):
        diff = [k for k in mine if not _same(mine[k], versions[k])]
        if not diff:
            return None
        if best is None or len(diff) < best[0]:
            best = (len(diff), name, diff)
    assert best is not None
    _, closest, diff = best
    got = ", ".join(f"{k}={mine[k]}" for k in diff)
    blamed = sorted(set(diff) & set(stack.overridden))
    return (f"software.overrides.{blamed[0]}" if blamed else "software.overrides"), got, closest


def _same(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return same_version(a, b) and a.split("-")[0].lower() == b.split("-")[0].lower()
    except ValueError:
        return a == b


#: The specific error rules of this module. R-SW-4 and R-SW-5 judge the whole combination and
#: are suppressed while any of these reports: an override that breaks a specific rule is also in
#: no known-good stack, and a second, vaguer finding next to the precise one (often at another
#: path) only confuses. tests/test_rules.py checks this lists every error rule of the module.
SPECIFIC_RULES = (
    "R-SW-1", "R-SW-2", "R-EFA-1", "R-EFA-2", "R-ART-1", "R-CUDA-1", "R-DRV-1", "R-DRV-2", "R-DRV-3", "R-DRV-6", "R-DRV-7", "R-FM-1",
    "R-FM-3", "R-NCCL-1", "R-GDR-1", "R-OFI-NCCL-1", "R-OFI-NCCL-3", "R-OFI-FAB-1", "R-OFI-FAB-2", "R-OFI-FAB-4",
    "R-OFI-FAB-5", "R-OFI-FAB-6", "R-OFI-FAB-7", "R-OFI-PLAT-1",
)


@rule("R-SW-4", source="catalog/data/software.yaml (known-good stacks); docs/software.md (allow_untested)",
      suppressed_by=SPECIFIC_RULES)
def combination_is_known_good(bp: Blueprint) -> Iterator[Violation]:
    """A resolved combination that no known-good stack contains is an error unless
    ``allow_untested: true`` (then R-SW-5 warns instead). Reported at the overridden component that
    differs from the closest known-good stack; suppressed while a specific software error rule reports."""
    software = bp.software
    found = _untested(software)
    if found and not software.allow_untested:
        path, got, closest = found
        yield path, (
            f"this combination is in no known-good stack, got {got}; allowed the versions of a catalog stack, "
            f"or set software.allow_untested: true - did you mean the versions of {closest!r}?"
        )


@rule("R-SW-5", level="warning", source="catalog/data/software.yaml (known-good stacks)", suppressed_by=SPECIFIC_RULES)
def combination_untested_warning(bp: Blueprint) -> Iterator[Violation]:
    """R-SW-4's warning when ``allow_untested`` is true; likewise suppressed while a specific error reports."""
    software = bp.software
    found = _untested(software)
    if found and software.allow_untested:
        path, got, closest = found
        yield path, (
            f"untested combination accepted because allow_untested is true, got {got}; "
            f"allowed the versions of a catalog stack - closest is {closest!r}"
        )


# ---- EFA installer bundle --------------------------------------------------------------------
@rule("R-EFA-1", source=f"{EFA_RN}; catalog/data/software.yaml efa_installer_bundles", scope="software")
def efa_installer_known(software: SoftwareSpec) -> Iterator[Violation]:
    """The rules need the libfabric and aws-ofi-nccl an installer bundles: unknown installers are refused."""
    stack = software_stack(software)
    if not efa_bundle(stack.efa_installer):
        yield where(stack, "efa_installer"), (
            f"unknown EFA installer version (its bundled libfabric and aws-ofi-nccl are not in the catalog), "
            f"got {stack.efa_installer}; allowed {', '.join(known_efa_installers())}"
        )


@rule("R-EFA-2", source=f"{EFA_RN} (installers before 1.39 bundle no aws-ofi-nccl)", scope="software")
def plugin_resolves(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if efa_bundle(stack.efa_installer) and stack.aws_ofi_nccl is None:
        yield where(stack, "efa_installer"), (
            f"EFA installer {stack.efa_installer} bundles no aws-ofi-nccl, got aws_ofi_nccl unset; "
            f"allowed an installer >= 1.40.0 or software.overrides.aws_ofi_nccl set to one of {', '.join(aws_ofi_nccl_artifacts())}"
        )


@rule("R-EFA-3", level="warning", source=f"{EFA_RN} (bundles whose libfabric is not listed)", scope="software")
def libfabric_known(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if efa_bundle(stack.efa_installer) and stack.libfabric is None:
        yield where(stack, "efa_installer"), (
            f"the libfabric bundled by EFA installer {stack.efa_installer} is not known, got libfabric unknown; "
            "allowed an installer whose libfabric is in the catalog (the libfabric rules and the node check skip it)"
        )


# ---- pinned downloads ------------------------------------------------------------------------
@rule("R-ART-1", source="catalog/data/software.yaml artifacts (every download is pinned by version and sha256)",
      scope="cluster")
def downloads_are_pinned(rc: ResolvedCluster) -> Iterator[Violation]:
    """Only an image build downloads, and only what its parent lacks at the locked version
    (``ResolvedImage.bake_installs``); official and custom images carry everything."""
    stack = rc.software
    if stack is None:
        return
    baking = [g for g in rc.groups if image_of(g).mode == "bake"]
    # An architecture the stack is not built for is R-CAP-7's finding; do not report it twice.
    archs = {g.instance.cpu_architecture for g in baking if "driver" in image_of(g).bake_installs}
    for arch in sorted(archs & set(stack.cpu_architectures)):
        if driver_artifact(stack.driver, arch) is None:
            yield where(stack, "driver"), (
                f"no pinned NVIDIA driver installer (URL + sha256) for {arch}, got driver {stack.driver}; "
                f"allowed {', '.join(driver_artifacts(arch)) or 'none'}"
            )
    if any("gdrcopy" in image_of(g).bake_installs for g in baking) and gdrcopy_artifact(stack.gdrcopy) is None:
        yield where(stack, "gdrcopy"), (
            f"no pinned GDRCopy source archive (URL + sha256), got {stack.gdrcopy}; allowed {', '.join(gdrcopy_artifacts())}"
        )
    if baking and stack.plugin_override and aws_ofi_nccl_artifact(stack.plugin_override) is None:
        yield "software.overrides.aws_ofi_nccl", (
            f"no pinned aws-ofi-nccl source archive (URL + sha256), got {stack.plugin_override}; "
            f"allowed {', '.join(aws_ofi_nccl_artifacts())}"
        )


# ---- driver <-> CUDA <-> GPU -----------------------------------------------------------------
@rule("R-CUDA-1", source=f"{CUDA_RN} (CUDA Toolkit and Corresponding Driver Versions)",
      scope="software")
def driver_meets_cuda_minimum(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    minimum = cuda_min_driver(stack.cuda)
    if minimum is None:
        yield where(stack, "cuda"), (
            f"unknown CUDA toolkit version (no minimum driver on record), got {stack.cuda}; "
            f"allowed {', '.join(known_cuda_versions())}"
        )
    elif version_lt(stack.driver, minimum):
        yield where(stack, "driver", "cuda"), (
            f"driver too old for CUDA {stack.cuda}, got {stack.driver}; allowed >= {minimum}"
        )


@rule("R-DRV-1", source=f"{NV_OPEN}")
def blackwell_needs_open_modules(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.family in BLACKWELL_FAMILIES and stack.kernel_modules != "open":
            yield where(stack, "kernel_modules"), (
                f"Blackwell GPUs run only on the open NVIDIA kernel modules ({_on(i, inst)}), "
                f"got {stack.kernel_modules}; allowed open"
            )


#: Proprietary NVIDIA modules and EFA GPUDirect RDMA: a kernel change stopped the proprietary driver
#: from linking to open-source modules such as EFA, so P4/P5 nodes on current kernels lose EFA
#: communication unless they run the open modules (OpenRM) with EFA installer >= 1.29.0; ParallelCluster
#: >= 3.8.0 ships OpenRM for that reason.
DRV2_SOURCES = (
    "https://github.com/aws/aws-parallelcluster/issues/6015; https://github.com/awslabs/amazon-eks-ami/issues/1494; "
    "https://github.com/aws/aws-parallelcluster-cookbook/pull/2509; gdr_required: " + OFI_PLAT
)


@rule("R-DRV-2", source=DRV2_SOURCES)
def gdr_needs_open_modules(bp: Blueprint) -> Iterator[Violation]:
    """Proprietary kernel modules on a group whose instance type uses EFA GPUDirect RDMA (``gdr_required``:
    aws-ofi-nccl refuses to run without GDR there) are an error, also with ``allow_untested``: not an
    untested combination but one that breaks EFA. Blackwell is R-DRV-1's finding (no proprietary
    modules at all); groups with ``efa: false`` use no GPUDirect RDMA over EFA."""
    stack = software_stack(bp.software)
    if stack.kernel_modules == "open":
        return
    for i, g, inst in _groups(bp):
        if inst.gdr_required and g.efa_enabled and inst.family not in BLACKWELL_FAMILIES:
            yield where(stack, "kernel_modules"), (
                f"proprietary NVIDIA kernel modules break EFA GPUDirect RDMA on current kernels ({_on(i, inst)} with EFA), "
                f"got {stack.kernel_modules}; allowed open (software.allow_untested does not lift this)"
            )
            return


@rule("R-DRV-3", source=f"{NCCL_SRC} (Blackwell needs CUDA >= 12.8)")
def blackwell_needs_cuda_12_8(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.family in BLACKWELL_FAMILIES and version_lt(stack.cuda, "12.8"):
            yield where(stack, "cuda"), (
                f"Blackwell GPUs need CUDA 12.8 or newer ({_on(i, inst)}), got {stack.cuda}; allowed >= 12.8"
            )


@rule("R-DRV-4", level="warning", source="fmcluster: B300 sm_103 needs CUDA >= 12.9 and driver >= 580 (unverified: no primary source found)")
def b300_floor(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.family != "p6-b300":
            continue
        if stack.driver_branch < 580:
            yield where(stack, "driver"), f"ship R580 or newer on B300 ({_on(i, inst)}), got {stack.driver}; allowed >= 580"
        if version_lt(stack.cuda, "12.9"):
            yield where(stack, "cuda"), (
                f"native B300 (sm_103) code needs CUDA 12.9 or newer ({_on(i, inst)}), got {stack.cuda}; allowed >= 12.9"
            )


@rule("R-DRV-5", level="warning", source="aws/aws-ofi-nccl doc/efa-env-var.md (p5 needs CUDA >= 12.0, i.e. driver >= 525.60.13); "
      "aws/aws-parallelcluster CHANGELOG.md (every ParallelCluster Hopper stack since 3.8.0 uses driver >= 535)")
def hopper_driver_floor(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.family in HOPPER_FAMILIES and stack.driver_branch < 535:
            yield where(stack, "driver"), f"driver below the Hopper floor ({_on(i, inst)}), got {stack.driver}; allowed >= 535"


@rule("R-DRV-6", source="https://github.com/NVIDIA/aicr/issues/2383 (R595 removes NVreg_GrdmaPciTopoCheckOverride; "
      "NVIDIA pins 580.173.02 on P6e-GB200/GB300)")
def gb200_r595_with_efa(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, g, inst in _groups(bp):
        if inst.family in GRACE_BLACKWELL_FAMILIES and g.efa_enabled and stack.driver_branch >= 595:
            yield where(stack, "driver"), (
                f"R595 breaks the EFA GPUDirect path on Grace-Blackwell ({_on(i, inst)}, EFA on), got {stack.driver}; "
                "allowed R580 (stack gb200-580-cuda13.0 in your own image, software.image.mode: custom: "
                "the official images ship R595, and a bake over them would downgrade the parent, R-IMG-11)"
            )


@rule("R-DRV-7", source=f"{EFA_KDRV} (efa 2.17.3: P2P with NVIDIA 580)", scope="software")
def r580_needs_efa_1_43_3(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if stack.driver_branch >= 580 and version_lt(stack.efa_installer, "1.43.3"):
        yield where(stack, "efa_installer", "driver"), (
            f"driver {stack.driver} needs the EFA kernel driver >= 2.17.3 for GPU P2P, got EFA installer "
            f"{stack.efa_installer}; allowed >= 1.43.3"
        )


# ---- Fabric Manager / NVLSM --------------------------------------------------------------------
@rule("R-FM-1", source=f"{FM_DOC} (Fabric Manager must match the driver)", scope="software")
def fabric_manager_equals_driver(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if stack.fabric_manager is not None and stack.fabric_manager != stack.driver:
        yield where(stack, "fabric_manager", "driver"), (
            f"Fabric Manager must equal the driver version exactly, got {stack.fabric_manager} with driver "
            f"{stack.driver}; allowed {stack.driver}"
        )


@rule("R-FM-3", source="https://github.com/siderolabs/extensions/pull/717; "
      "https://github.com/NVIDIA/gpu-driver-container (nvlsm from R550)")
def nvlsm_driver_branch(bp: Blueprint) -> Iterator[Violation]:
    """B200/B300 need nvlsm next to Fabric Manager; fmcluster installs it for every group whose
    instance needs it, from NVIDIA's repository, which carries it for the branches that support
    Blackwell (>= 570)."""
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.nvlsm and stack.driver_branch < 570:
            yield where(stack, "driver"), (
                f"NVLink5 systems need nvlsm with a Blackwell-capable Fabric Manager ({_on(i, inst)}), got driver "
                f"{stack.driver}; allowed >= 570"
            )


# ---- NCCL / GDRCopy vs GPU ---------------------------------------------------------------------
@rule("R-NCCL-1", source=f"{NCCL_SRC} (v2.25.1-1: Blackwell/SM100 support)")
def blackwell_needs_nccl_2_25_1(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    for i, _g, inst in _groups(bp):
        if inst.family in BLACKWELL_FAMILIES and version_lt(stack.nccl, "2.25.1"):
            yield where(stack, "nccl"), f"Blackwell needs NCCL 2.25.1 or newer ({_on(i, inst)}), got {stack.nccl}; allowed >= 2.25.1"


@rule("R-GDR-1", source=f"{GDR_CL} (2.5.1: Blackwell, CUDA 13.0)")
def gdrcopy_floor(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    if version_ge(stack.gdrcopy, "2.5.1"):
        return
    if major(stack.cuda) >= 13:
        yield where(stack, "gdrcopy", "cuda"), f"CUDA 13 needs GDRCopy 2.5.1 or newer, got {stack.gdrcopy}; allowed >= 2.5.1"
        return
    for i, _g, inst in _groups(bp):
        if inst.family in BLACKWELL_FAMILIES:
            yield where(stack, "gdrcopy"), (
                f"Blackwell needs GDRCopy 2.5.1 or newer ({_on(i, inst)}), got {stack.gdrcopy}; allowed >= 2.5.1"
            )
            return


# ---- aws-ofi-nccl <-> NCCL / libfabric / EFA installer / CUDA ---------------------------------
def _plugin(software: SoftwareSpec) -> tuple[SoftwareStack, str] | None:
    stack = software_stack(software)
    return (stack, stack.aws_ofi_nccl) if stack.aws_ofi_nccl else None


@rule("R-OFI-NCCL-1", source=f"{OFI_RN} (1.10.0: requires NCCL >= 2.17.1)", scope="software")
def plugin_needs_nccl_2_17_1(software: SoftwareSpec) -> Iterator[Violation]:
    if (p := _plugin(software)) and version_ge(p[1], "1.10.0") and version_lt(p[0].nccl, "2.17.1"):
        yield where(p[0], "nccl", "aws_ofi_nccl"), (
            f"aws-ofi-nccl {p[1]} needs NCCL 2.17.1 or newer, got {p[0].nccl}; allowed >= 2.17.1"
        )


@rule("R-OFI-NCCL-2", level="warning", source=f"{OFI_RN} (NCCL version each release is tested with)", scope="software")
def nccl_tested_by_plugin(software: SoftwareSpec) -> Iterator[Violation]:
    if not (p := _plugin(software)):
        return
    tested = plugin_max_tested_nccl(p[1])
    if tested and compare_versions(p[0].nccl, tested) > 0:
        yield where(p[0], "nccl", "aws_ofi_nccl", "efa_installer"), (
            f"NCCL newer than aws-ofi-nccl {p[1]} was tested with, got {p[0].nccl}; allowed <= {tested} or a newer plugin"
        )


@rule("R-OFI-NCCL-3", source=f"{OFI_RN} (1.17.2: fixes crash with NCCL 2.28 when libfabric init fails)", scope="software")
def nccl_2_28_needs_plugin_1_17_2(software: SoftwareSpec) -> Iterator[Violation]:
    if (p := _plugin(software)) and version_ge(p[0].nccl, "2.28") and version_lt(p[1], "1.17.2"):
        yield where(p[0], "aws_ofi_nccl", "efa_installer", "nccl"), (
            f"NCCL {p[0].nccl} needs aws-ofi-nccl 1.17.2 or newer, got {p[1]}; allowed >= 1.17.2"
        )


@rule("R-OFI-FAB-1", source=f"{OFI_RN} (1.8.0-1.12.x require libfabric >= 1.18.0)", scope="software")
def old_plugin_libfabric_floor(software: SoftwareSpec) -> Iterator[Violation]:
    p = _plugin(software)
    if p and p[0].libfabric and version_ge(p[1], "1.8.0") and version_lt(p[1], "1.13.0") and version_lt(p[0].libfabric, "1.18.0"):
        yield where(p[0], "efa_installer", "aws_ofi_nccl"), (
            f"aws-ofi-nccl {p[1]} needs libfabric 1.18.0 or newer, got {p[0].libfabric}; allowed >= 1.18.0"
        )


@rule("R-OFI-FAB-2", source="https://github.com/aws/aws-ofi-nccl/blob/master/src/nccl_ofi_net.cpp "
      "('EFA provider requires at least libfabric version 1.22.0')", scope="software")
def plugin_libfabric_floor(software: SoftwareSpec) -> Iterator[Violation]:
    p = _plugin(software)
    if p and p[0].libfabric and version_ge(p[1], "1.13.0") and version_lt(p[0].libfabric, "1.22.0"):
        yield where(p[0], "efa_installer", "aws_ofi_nccl"), (
            f"aws-ofi-nccl {p[1]} refuses the efa provider below libfabric 1.22.0, got libfabric {p[0].libfabric} "
            f"(EFA installer {p[0].efa_installer}); allowed EFA installer >= 1.34.0"
        )


@rule("R-OFI-FAB-4", source=f"{OFI_RN} (1.11.1/1.12.1: vf-sorting regression with EFA installer >= 1.35.0)",
      scope="software")
def plugin_regression_with_new_efa(software: SoftwareSpec) -> Iterator[Violation]:
    p = _plugin(software)
    if p and version_ge(p[0].efa_installer, "1.35.0") and any(same_version(p[1], bad) for bad in ("1.11.0", "1.12.0")):
        yield where(p[0], "aws_ofi_nccl", "efa_installer"), (
            f"known-bad aws-ofi-nccl with EFA installer {p[0].efa_installer} (vf-sorting regression), got {p[1]}; "
            f"allowed 1.11.1, 1.12.1 or newer"
        )


@rule("R-OFI-FAB-5", source="https://github.com/aws/aws-ofi-nccl/issues/584; "
      "awsome-distributed-training 1.architectures/efa-cheatsheet.md", scope="software")
def nccl_2_19_needs_efa_1_29_1(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if version_ge(stack.nccl, "2.19") and version_lt(stack.efa_installer, "1.29.1"):
        yield where(stack, "efa_installer", "nccl"), (
            f"NCCL {stack.nccl} fails to register memory on EFA installers before 1.29.1, got {stack.efa_installer}; "
            "allowed >= 1.29.1"
        )


@rule("R-OFI-FAB-6", source=f"{OFI_RN} (1.17.1: compatibility across CUDA 12 and CUDA 13)", scope="software")
def cuda13_needs_plugin_1_17_1(software: SoftwareSpec) -> Iterator[Violation]:
    if (p := _plugin(software)) and major(p[0].cuda) >= 13 and version_lt(p[1], "1.17.1"):
        yield where(p[0], "aws_ofi_nccl", "efa_installer", "cuda"), (
            f"CUDA {p[0].cuda} needs aws-ofi-nccl 1.17.1 or newer, got {p[1]}; allowed >= 1.17.1"
        )


#: Known-bad combinations of the catalog (catalog/data/software.yaml ``known_bad``) these rules report.
BROADCAST_HANG = known_bad("ofi-broadcast-hang")
GIN_MISMATCH = known_bad("gin-type-mismatch")


def _kb_source(kb: KnownBad) -> str:
    return f"catalog/data/software.yaml known_bad.{kb.key}: {'; '.join(kb.sources)}"


@rule("R-OFI-FAB-7", source=_kb_source(BROADCAST_HANG), scope="software")
def plugin_1_18_0_is_bad(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if BROADCAST_HANG.matches(stack.versions()):
        got = f"aws-ofi-nccl {stack.aws_ofi_nccl} (EFA installer {stack.efa_installer})"
        yield where(stack, "aws_ofi_nccl", "efa_installer"), (
            f"known-bad: inter-node broadcast hang, got {got}; allowed EFA installer >= 1.49.0 (aws-ofi-nccl >= 1.20.0)"
        )


@rule("R-KB-2", level="warning", source=_kb_source(GIN_MISMATCH), scope="software")
def gin_device_type_mismatch(software: SoftwareSpec) -> Iterator[Violation]:
    """Only GPU-initiated networking (NCCL_GIN_TYPE, EFA-GDA) fails, and fmcluster never turns it on: a warning."""
    stack = software_stack(software)
    if GIN_MISMATCH.matches(stack.versions()):
        yield where(stack, "aws_ofi_nccl", "efa_installer", "nccl"), (
            f"known-bad for GPU-initiated networking: {GIN_MISMATCH.what}, got NCCL {stack.nccl} with aws-ofi-nccl "
            f"{stack.aws_ofi_nccl}; allowed {GIN_MISMATCH.fix}")


@rule("R-OFI-PLAT-1", source=f"{OFI_PLAT} (functional minimum per instance type)")
def plugin_knows_instance_type(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    if not stack.aws_ofi_nccl:
        return
    for i, g, inst in _groups(bp):
        m = plugin_min_for_instance(inst.name)
        if g.efa_enabled and m and version_lt(stack.aws_ofi_nccl, m.functional):
            yield where(stack, "aws_ofi_nccl", "efa_installer"), (
                f"aws-ofi-nccl too old for {inst.name} ({_on(i, inst)}: {m.note}), got {stack.aws_ofi_nccl}; "
                f"allowed >= {m.functional}"
            )


@rule("R-OFI-PLAT-2", level="warning", source=f"{OFI_PLAT} (tuned minimum per instance type)")
def plugin_tuned_for_instance_type(bp: Blueprint) -> Iterator[Violation]:
    stack = software_stack(bp.software)
    if not stack.aws_ofi_nccl:
        return
    for i, g, inst in _groups(bp):
        m = plugin_min_for_instance(inst.name)
        if (g.efa_enabled and m and m.tuned and version_ge(stack.aws_ofi_nccl, m.functional)
                and version_lt(stack.aws_ofi_nccl, m.tuned)):
            yield where(stack, "aws_ofi_nccl", "efa_installer"), (
                f"aws-ofi-nccl lacks the tuned defaults for {inst.name} ({_on(i, inst)}: {m.note}), "
                f"got {stack.aws_ofi_nccl}; allowed >= {m.tuned}"
            )
