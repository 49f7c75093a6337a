"""The node contract: for each component of a GPU node, how it is measured and whether a difference fails the node.

One contract per compute group, read by every judge of a node: the boot verify (``node/steps/verify.sh.j2``), the
node check and its Slurm/Kubernetes health-check mode (``node/fmcluster-node-check.sh.j2``), the Image Builder test
phase (``render_image_build.py``) and ``fmcluster plan`` (``fmcluster.review.plan``). Two kinds of row:

- ``version``: a lock component (``ResolvedImage.lock``) compared with what the probe measures. A difference fails
  the node only when the row is ``enforce``: fmcluster installed or built the component itself (a bake install, a
  boot install), or a primary source confirms the value (the manifest does not list it in ``unverified`` and the
  image reference is not ``moving``), or the blueprint declares the image itself (``custom`` mode: the AMI must
  carry the lock, R-IMG-7). Every other difference is *drift*: reported with the measured value, never fatal.
- ``function``: a fact the node cannot work without (driver loaded and equal to the installed driver, the type's
  GPU and EFA counts, services the type needs active, the plugin present, an initramfs). Always fails closed.

Decision: docs/decisions.md, item 45 (issue 23). A lock component the enforcement map does not cover is reported only
(:data:`UNJUDGED`), never enforced by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fmcluster.catalog.images import ImageManifest
from fmcluster.catalog.software import BLACKWELL_FAMILIES, GRACE_BLACKWELL_FAMILIES

if TYPE_CHECKING:
    from fmcluster.catalog import InstanceSpec
    from fmcluster.features.node.plan_image import ResolvedImage

Kind = Literal["version", "function"]

#: Lock component -> the probe (a function of ``node/templates/lib.sh.j2``) that measures it on the node.
VERSION_PROBES: dict[str, str] = {
    "driver": "driver_version",
    "kernel_modules": "module_flavor",
    "fabric_manager": "pkg_version",
    "imex": "pkg_version",
    "cuda": "cuda_version",
    "nccl": "pkg_version",
    "efa_installer": "efa_installer_version",
    "libfabric": "libfabric_version",
    "aws_ofi_nccl": "plugin_version",
    "gdrcopy": "pkg_version",
}
#: Components the EFA installer bundles: confirmed exactly when the installer version is.
EFA_BUNDLED = ("libfabric", "aws_ofi_nccl")
#: Components that exist only on a node that uses EFA.
EFA_COMPONENTS = ("efa_installer", *EFA_BUNDLED)


@dataclass(frozen=True)
class ContractRow:
    """One row of the node contract.

    Attributes:
        component: a lock component (``driver``, ``cuda``, ...) for ``version`` rows, a check name
            (``driver-loaded``, ``gpus``, ...) for ``function`` rows.
        probe: the ``lib.sh.j2`` shell function (or command) that measures it on the node.
        kind: ``version`` (compared with the lock) or ``function`` (always fails closed).
        enforce: a difference fails the node (``True``) or is reported as drift (``False``).
        reason: why, in a few words (shown by ``fmcluster plan``).
    """

    component: str
    probe: str
    kind: Kind
    enforce: bool
    reason: str


def _from_parent(component: str, manifest: ImageManifest | None) -> tuple[bool, str]:
    """Whether the image's (or parent's) recorded value of ``component`` is confirmed by a primary source."""
    if manifest is None:
        return False, "no catalog manifest for the image"
    if manifest.reference.moving:
        return False, f"{manifest.title} follows the newest release (moving reference)"
    source = "efa_installer" if component in EFA_BUNDLED else component
    if source in manifest.unverified:
        return False, f"{manifest.title}: {source} value not confirmed by a primary source"
    return True, f"{manifest.title}: {source} confirmed by {manifest.sources.get(source, 'the catalog sources')}"


def version_enforcement(mode: str, manifest: ImageManifest | None, lock: dict[str, str | None],
                        built: tuple[str, ...]) -> dict[str, tuple[bool, str]]:
    """Lock component -> (enforce, reason) for every component the lock needs (value not ``None``).

    ``mode`` is ``official``/``bake``/``custom``; ``built`` the components fmcluster installs itself (bake
    installs and boot installs, lock names). In ``custom`` mode every component is enforced (the blueprint declares
    that its AMI carries the lock); otherwise a component is enforced when fmcluster built it or a primary source
    confirms the image's value (:func:`_from_parent`). The bundled EFA components follow the installer, the module
    flavour follows the driver."""
    out: dict[str, tuple[bool, str]] = {}
    for c, v in lock.items():
        if v is None:
            continue
        owner = {"libfabric": "efa_installer", "aws_ofi_nccl": "efa_installer", "kernel_modules": "driver"}.get(c, c)
        if mode == "custom":
            out[c] = (True, "custom AMI: the blueprint declares it carries the lock")
        elif c in built or owner in built:
            out[c] = (True, "installed by fmcluster")
        else:
            out[c] = _from_parent(c, manifest)
    return out


def open_modules_required(inst: InstanceSpec) -> bool:
    """Whether ``inst``'s GPUs run only on NVIDIA's open kernel modules: Grace Hopper and Blackwell ("proprietary
    modules are not supported on these platforms", NVIDIA, https://developer.nvidia.com/blog/
    nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/). EFA GPUDirect RDMA on these types rides on
    the same modules (the p2p provider of nvidia.ko)."""
    return inst.family in BLACKWELL_FAMILIES or inst.family in GRACE_BLACKWELL_FAMILIES or inst.gpu.model.startswith("GH")


def _function_rows(inst: InstanceSpec, efa_enabled: bool, lustre: bool, lustre_efa: bool) -> list[ContractRow]:
    rows = [
        ContractRow("gpus", "nvidia-smi --query-gpu", "function", True, f"{inst.gpu.count} GPU(s) on {inst.name}"),
        ContractRow("driver-loaded", "loaded_driver_version", "function", True,
                    "the loaded nvidia module equals the installed one (modinfo -F version nvidia)"),
        ContractRow("kernel-modules-loaded", "lsmod", "function", True, "nvidia (and efa, ib_uverbs) loaded"),
        ContractRow("initramfs", "initramfs_path", "function", True, "an initramfs for the running kernel"),
    ]
    if inst.fabric_manager:
        rows.append(ContractRow("fabric-manager-active", "service_active", "function", True,
                                "NVSwitch type: Fabric Manager active and at the driver's version"))
    if inst.imex:
        rows.append(ContractRow("imex-active", "service_active", "function", True,
                                "NVLink-domain type: nvidia-imex active and at the driver's version"))
    if efa_enabled:
        rows += [
            ContractRow("efa-devices", "fi_info -p efa", "function", True, "the type's EFA device count"),
            ContractRow("aws-ofi-nccl-present", "plugin_library", "function", True, "the NCCL network plugin"),
            ContractRow("nccl-network", "fmcluster-node-check NCCL log", "function", True,
                        "NCCL does not select sockets and the plugin loads (NIC count, GDR: reported)"),
        ]
    if open_modules_required(inst):
        rows.append(ContractRow("kernel-modules-open", "loaded_module_flavor", "function", True,
                                "Grace Hopper / Blackwell GPUs run only on the open kernel modules"))
    if lustre:
        rows.append(ContractRow("lustre-mounted", "mountpoint", "function", True, "FSx for Lustre mounted"))
    if lustre and lustre_efa:
        rows.append(ContractRow("lustre-efa", "lnetctl net show --net efa", "function", True,
                                "EFA-enabled file system: LNet has an efa network with an interface up "
                                "(else the client reaches it over TCP only)"))
    return rows


#: What a lock component without a derived enforcement gets: reported only. Enforcing it would fail nodes on a value
#: nothing confirmed (decision 45: versions fail closed only where fmcluster built them or a source confirms them).
UNJUDGED = (False, "no enforcement derived for it: reported only")


def enforcement_of(image: ResolvedImage, component: str) -> tuple[bool, str]:
    """``(enforce, reason)`` of ``component`` in ``image.enforcement``, else :data:`UNJUDGED` (report only)."""
    return image.enforcement.get(component, UNJUDGED)


def node_contract(image: ResolvedImage, inst: InstanceSpec, *, efa_enabled: bool, lustre: bool,
                  lustre_efa: bool = False) -> tuple[ContractRow, ...]:
    """The contract of a group of ``inst`` booting ``image``: one ``version`` row per lock component the node
    needs (EFA components only with ``efa_enabled``), then the ``function`` rows (``lustre``: the orchestrator
    mounts FSx for Lustre on the node; ``lustre_efa``: the node configures LNet over EFA for an EFA-enabled file
    system, :mod:`fmcluster.features.node.plan_lustre_efa`)."""
    rows = [ContractRow(c, VERSION_PROBES[c], "version", *enforcement_of(image, c))
            for c, v in image.lock.items() if v is not None and (efa_enabled or c not in EFA_COMPONENTS)]
    return (*rows, *_function_rows(inst, efa_enabled, lustre, lustre_efa))
