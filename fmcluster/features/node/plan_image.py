"""Per-group image facts: which image a node boots, the lock it is verified against, what the boot path
still installs, and an estimate of how long the boot path takes.

The boot path never installs the GPU stack (driver, Fabric Manager, IMEX, CUDA toolkit, EFA installer,
GDRCopy): in ``official`` mode the image carries it, in ``bake`` mode fmcluster's image stack built it into
the AMI, in ``custom`` mode the AMI must carry it and the boot check fails closed on any difference.

Boot-time estimate (issue 23 item 9): the orchestrator's own parts (``OrchestratorProfile.boot_parts``: its node
configuration before fmcluster's script and the node's registration, each with its source or marked ``model:``),
then fmcluster's boot steps (:data:`STEP_SECONDS`) and the exporters when metrics are on. fmcluster's step figures
are engineering estimates (models), not measurements: download sizes over an assumed 50 MB/s, build times on a 48+
core P-series host, and the services' documented start-up waits. ``bench/README.md`` records the estimate per
example. Not counted: EC2's own launch and OS boot before the orchestrator starts, and HyperPod's on-start deep
health checks (no published duration).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog import InstanceSpec
from fmcluster.catalog.images import BootLimit, ImageManifest, NvmeHandling, boot_limit, official_image
from fmcluster.catalog.software import BLACKWELL_FAMILIES, HOPPER_FAMILIES, SoftwareStack
from fmcluster.features.node.plan_contract import ContractRow, node_contract, version_enforcement
from fmcluster.features.node.plan_lustre_efa import lustre_efa_interfaces
from fmcluster.features.observability.plan_mirror import fmcluster_collects
from fmcluster.orchestrators.profile import BootPart
from fmcluster.orchestrators.registry import profile_for

if TYPE_CHECKING:
    from fmcluster.resolved.cluster import ResolvedGroup

#: Seconds each boot step is estimated to take (see module docstring for the method).
STEP_SECONDS: dict[str, int] = {
    # package queries, nvidia-smi, module and initramfs checks against the lock
    "verify": 10,
    # apt/dnf holds, unattended-upgrades and needrestart configuration
    "guard-upgrades": 5,
    # Fabric Manager start and the GPU fabric reaching "Completed" on NVSwitch systems
    "fabric-manager": 60,
    # nvidia-imex start on NVLink-domain (IMEX) systems
    "imex": 15,
    # NCCL package files from the cluster's mirror over the S3 gateway endpoint: ~250 MB at 50 MB/s plus dpkg/rpm unpacking
    "nccl": 25,
    # nccl-tests source (< 1 MB) built with MPI against the pinned NCCL and CUDA, make -j on the node
    "nccl-tests": 60,
    # reusing the image's NVMe array is a mount check; building one is mdadm + mkfs.xfs
    "scratch-reuse": 2,
    "scratch-build": 25,
    # LNet over EFA to an EFA-enabled file system: module loads, lnetctl, and a remount of a mount made over TCP
    "lustre-efa": 15,
    # FSx for Lustre client mount and the wait for the file system to answer
    "fsx": 20,
    "job-environment": 2,
    # the node check in full mode: one single-node all_reduce through the network plugin
    "node-check": 45,
    # the exporters (metrics on): node_exporter (~10 MB) from the cluster's mirror over S3, DCGM exporter, units
    "exporters": 30,
}
#: Where every :data:`STEP_SECONDS` figure comes from.
STEP_SOURCE = "model: fmcluster's estimate (fmcluster/features/node/plan_image.py STEP_SECONDS)"


#: Boot-path steps (:attr:`ResolvedImage.boot_path`) with an estimate, and the estimate's name in :data:`STEP_SECONDS`.
#: ``scratch`` is ``scratch-reuse`` or ``scratch-build`` (the image's NVMe handling); ``preflight``, ``fabric_state``
#: and ``holds`` are not estimated (the exporters are added by :attr:`ResolvedImage.boot_steps`).
ESTIMATED_AS: dict[str, str] = {
    "verify": "verify", "guard_upgrades": "guard-upgrades", "fabric_manager": "fabric-manager", "imex": "imex",
    "nccl": "nccl", "nccl_tests": "nccl-tests", "lustre_efa": "lustre-efa", "fsx": "fsx", "job_env": "job-environment",
    "node_check": "node-check",
}


def estimate_name(step: str, nvme: NvmeHandling) -> str | None:
    """The :data:`STEP_SECONDS` name of the boot-path ``step`` (``None``: not estimated)."""
    if step == "scratch":
        return "scratch-reuse" if nvme.kind != "none" else "scratch-build"
    return ESTIMATED_AS.get(step)


def fabric_state_required(inst: InstanceSpec) -> bool:
    """Whether the boot path waits for fabric registration ("Fabric ... State: Completed" in ``nvidia-smi -q``): Hopper
    and Blackwell NVSwitch boards and GB200 NVL domains (siderolabs/extensions PR #717; NVIDIA/nccl src/mnnvl.cc)."""
    return (inst.nvswitch or inst.imex) and (inst.family in HOPPER_FAMILIES or inst.family in BLACKWELL_FAMILIES)


@dataclass(frozen=True)
class BootStep:
    """One part of boot-to-ready: ``name``, estimated ``seconds`` and ``source`` (``model: ...`` when it is an
    estimate without a published figure)."""

    name: str
    seconds: int
    source: str = STEP_SOURCE


@dataclass(frozen=True)
class ResolvedImage:
    """What one compute group boots.

    Attributes:
        mode: ``official``, ``bake`` or ``custom`` (``software.image.mode``).
        manifest: the official image of the orchestrator (the image itself in official mode, the parent in
            bake mode); ``None`` when the catalog has none (e.g. ParallelCluster 3.15.0).
        ami_id: custom mode's AMI, or bake mode's pinned parent; else ``None``.
        lock: component -> version the node must have (``driver``, ``kernel_modules``, ``fabric_manager``,
            ``imex``, ``cuda``, ``nccl``, ``efa_installer``, ``libfabric``, ``aws_ofi_nccl``, ``gdrcopy``);
            ``None`` for a component the node must not need (no Fabric Manager on a type without NVSwitch).
        enforcement: lock component -> (enforce, reason), derived once here
            (:func:`fmcluster.features.node.plan_contract.version_enforcement`): enforced only what fmcluster
            installed or built, what a primary source confirms, or what a custom AMI declares.
        reported_only: lock components whose difference is drift (reported with the measured value, never
            fatal): the components :attr:`enforcement` does not enforce. The node contract
            (:func:`fmcluster.features.node.plan_contract.node_contract`) reads it.
        installs_at_boot: what the boot path still installs, e.g. ``("nccl 2.31.2", "nccl-tests")``; never a
            component of :data:`fmcluster.catalog.images.GPU_STACK`.
        bake_installs: bake mode: lock components the image build installs because its parent does not carry
            them at the locked version (``driver``, ``fabric_manager``, ``imex``, ``cuda``, ``nccl``,
            ``efa_installer``, ``gdrcopy``); empty in the other modes. Only these need pinned downloads (R-ART-1).
        boot_path: the boot path's steps in order, each a template ``node/steps/<step>.sh.j2`` (:func:`boot_path`):
            the one list the node bootstrap renders and :attr:`boot_steps` estimates.
        limit: the orchestrator's boot limit (:class:`fmcluster.catalog.images.BootLimit`).
        nvme: how the image handles the instance-store NVMe (reuse it when it has an array).
        gpu_services: services the image owns; the boot path never stops them.
        contract: the node contract (:func:`fmcluster.features.node.plan_contract.node_contract`): what every judge
            of the node (boot verify, node check, health check, image test, ``fmcluster plan``) checks and whether
            a difference fails closed.
        lustre_efa_interfaces: EFA interfaces the node adds to LNet for an EFA-enabled FSx for Lustre file system
            (FSx's default for the type); 0 when the group does not configure LNet over EFA
            (:func:`fmcluster.features.node.plan_lustre_efa.lustre_efa_interfaces`).
    """

    mode: str
    manifest: ImageManifest | None
    ami_id: str | None
    lock: dict[str, str | None]
    enforcement: dict[str, tuple[bool, str]]
    reported_only: frozenset[str]
    installs_at_boot: tuple[str, ...]
    bake_installs: tuple[str, ...]
    boot_path: tuple[str, ...]
    limit: BootLimit
    nvme: NvmeHandling
    gpu_services: tuple[str, ...]
    orchestrator_parts: tuple[BootPart, ...] = ()
    exporters: bool = False
    contract: tuple[ContractRow, ...] = ()
    lustre_efa_interfaces: int = 0

    @property
    def boot_steps(self) -> tuple[BootStep, ...]:
        """fmcluster's own estimated steps, in order: those of :attr:`boot_path` (:func:`estimate_name`), then the
        exporters when :attr:`exporters` is set."""
        names = [estimate_name(s, self.nvme) for s in self.boot_path] + (["exporters"] if self.exporters else [])
        return tuple(BootStep(n, STEP_SECONDS[n]) for n in names if n is not None)

    @property
    def boot_parts(self) -> tuple[BootStep, ...]:
        """Every estimated part of boot-to-ready: the orchestrator's :attr:`orchestrator_parts`, then
        :attr:`boot_steps`."""
        return (*(BootStep(p.name, p.seconds, p.source) for p in self.orchestrator_parts), *self.boot_steps)

    @property
    def estimated_boot_s(self) -> int:
        """Sum of :attr:`boot_parts` in seconds: boot-to-ready from the orchestrator's start on the node."""
        return sum(s.seconds for s in self.boot_parts)

    @property
    def script_boot_s(self) -> int:
        """Sum of :attr:`boot_steps`: the part of :attr:`estimated_boot_s` that is fmcluster's own script."""
        return sum(s.seconds for s in self.boot_steps)

    @property
    def limit_s(self) -> int | None:
        return self.limit.limit_s

    @property
    def source(self) -> str:
        """Human description of the image, e.g. ``AWS ParallelCluster 3.16.3 official AMI``."""
        if self.mode == "custom":
            return f"custom AMI {self.ami_id}"
        title = self.manifest.title if self.manifest is not None else "unknown official image"
        if self.mode == "bake":
            parent = f" (parent {self.ami_id})" if self.ami_id else ""
            return f"baked by fmcluster from {title}{parent}"
        return title


def blueprint_official_image(bp: Blueprint) -> ImageManifest | None:
    """The orchestrator's official image for the blueprint: the catalog's image of its registry key and release
    (``OrchestratorSpec.profile_key``, ``OrchestratorSpec.release``: ParallelCluster per version), the same one the
    blueprint's software defaults come from."""
    return official_image(bp.orchestrator.profile_key, bp.orchestrator.release)


def node_lock(stack: SoftwareStack, inst: InstanceSpec) -> dict[str, str | None]:
    """The versions a node of ``inst`` must carry for ``stack``: Fabric Manager only on NVSwitch types and
    IMEX only on NVLink-domain types (``None`` otherwise)."""
    versions = stack.versions()
    return {
        "driver": stack.driver,
        "kernel_modules": stack.kernel_modules,
        "fabric_manager": stack.fabric_manager if inst.fabric_manager else None,
        "imex": stack.driver if inst.imex else None,
        "cuda": stack.cuda,
        "nccl": stack.nccl,
        "efa_installer": stack.efa_installer,
        "libfabric": versions["libfabric"],
        "aws_ofi_nccl": versions["aws_ofi_nccl"],
        "gdrcopy": stack.gdrcopy,
    }


def _installs_at_boot(mode: str, manifest: ImageManifest | None, lock: dict[str, str | None]) -> tuple[str, ...]:
    if mode != "official" or manifest is None:
        return ()
    out: list[str] = []
    if not manifest.ships("nccl") and lock.get("nccl"):
        out.append(f"nccl {lock['nccl']}")
    if not manifest.ships("nccl_tests"):
        out.append("nccl-tests")
    return tuple(out)


#: Lock components an image build can install, in install order.
BUILDABLE = ("driver", "fabric_manager", "imex", "cuda", "nccl", "efa_installer", "gdrcopy")


def _bake_installs(mode: str, manifest: ImageManifest | None, lock: dict[str, str | None]) -> tuple[str, ...]:
    if mode != "bake":
        return ()
    shipped = manifest.components if manifest is not None else {}
    return tuple(c for c in BUILDABLE if lock.get(c) and shipped.get(c) != lock.get(c))


def boot_path(installs: tuple[str, ...], inst: InstanceSpec, fsx: bool, lustre_efa: bool = False) -> tuple[str, ...]:
    """The boot steps of a group of ``inst``, in order (each a template ``node/steps/<step>.sh.j2``).

    preflight -> verify -> guard-upgrades -> Fabric Manager / IMEX / fabric state (where the type has them) -> what
    the image lacks (``installs``: NCCL, nccl-tests; official mode) -> holds (once, after every install) -> scratch
    (instance-store NVMe) -> LNet over EFA (``lustre_efa``: the group configures it for an EFA-enabled file system,
    :mod:`fmcluster.features.node.plan_lustre_efa`) -> FSx wait (``fsx``: the orchestrator mounts Lustre on the node)
    -> job environment -> node check. The observability feature's ``exporters`` step follows when it gives the group an exporter script."""
    steps = ["preflight", "verify", "guard_upgrades"]
    if inst.fabric_manager:
        steps.append("fabric_manager")
    if inst.imex:
        steps.append("imex")
    if fabric_state_required(inst):
        steps.append("fabric_state")
    if any(i.startswith("nccl ") for i in installs):
        steps.append("nccl")
    if "nccl-tests" in installs:
        steps.append("nccl_tests")
    steps.append("holds")
    if inst.nvme.count:
        steps.append("scratch")
    if fsx and lustre_efa:
        steps.append("lustre_efa")
    if fsx:
        steps.append("fsx")
    steps += ["job_env", "node_check"]
    return tuple(steps)


def resolve_image(bp: Blueprint, inst: InstanceSpec, stack: SoftwareStack | None, *,
                  efa_enabled: bool = True) -> ResolvedImage:
    """The :class:`ResolvedImage` of a group of ``inst`` in ``bp`` (``stack`` = the resolved software stack,
    ``None`` when its name is unknown: the lock is then empty and the rules report the name; ``efa_enabled``: the
    group uses EFA, so the contract checks the EFA components)."""
    spec = bp.software.image
    manifest = blueprint_official_image(bp)
    lock = node_lock(stack, inst) if stack is not None else {}
    # Never a GPU_STACK component: _installs_at_boot only adds NCCL and nccl-tests (tests/features/node/test_image.py checks it).
    installs = _installs_at_boot(spec.mode, manifest, lock)
    bakes = _bake_installs(spec.mode, manifest, lock)
    # A reference that follows the newest release (PCS-ready DLAMI `latest`, HyperPod's default) boots whatever AWS
    # published last, and an unverified value is an assumption: a difference in either is drift, not a failure.
    built = (*bakes, *(i.split(" ")[0] for i in installs if i.startswith("nccl ")))
    enforcement = version_enforcement(spec.mode, manifest, lock, built)
    # Baked and custom images are built from (or must match) the official image's NVMe handling only when they
    # derive from it; a custom AMI is unknown, so the boot path looks for an array before building one.
    nvme = manifest.nvme if (manifest is not None and spec.mode != "custom") else NvmeHandling("none", None)
    profile = profile_for(bp.orchestrator)
    lustre = bp.storage.lustre is not None and profile.lustre_on_nodes
    lnet_efa = lustre_efa_interfaces(bp, inst, efa_enabled=efa_enabled, lustre_on_nodes=profile.lustre_on_nodes)
    image = ResolvedImage(
        mode=spec.mode,
        manifest=manifest,
        ami_id=spec.ami_id or spec.parent_ami_id,
        lock=lock,
        enforcement=enforcement,
        reported_only=frozenset(c for c, (enforce, _) in enforcement.items() if not enforce),
        installs_at_boot=installs,
        bake_installs=bakes,
        # FSx wait only where the orchestrator mounts Lustre before the node scripts run (not HyperPod EKS: no host mount).
        boot_path=boot_path(installs, inst, lustre, lustre_efa=lnet_efa > 0),
        limit=boot_limit(profile.key),
        nvme=nvme,
        gpu_services=manifest.gpu_services if (manifest is not None and spec.mode != "custom") else (),
        orchestrator_parts=profile.boot_parts,
        # host exporters only where fmcluster's own collection gathers them (the observability feature says)
        exporters=fmcluster_collects(bp, profile),
        lustre_efa_interfaces=lnet_efa,
    )
    return replace(image, contract=node_contract(image, inst, efa_enabled=efa_enabled, lustre=lustre,
                                                 lustre_efa=lnet_efa > 0))


def image_of(group: ResolvedGroup) -> ResolvedImage:
    """``group.image`` (typed by the core as :class:`fmcluster.resolved.slots.ImageSlot`) as this feature's
    :class:`ResolvedImage`.

    Raises:
        TypeError: it is something else (the slot was filled by another hook: a wiring mistake).
    """
    if isinstance(group.image, ResolvedImage):
        return group.image
    raise TypeError(f"resolved image expected, got {type(group.image).__name__}")
