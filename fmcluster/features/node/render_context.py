"""Typed render context for node scripts, built from the resolved cluster (:func:`fmcluster.resolved.resolve`).

Everything a template needs is computed here (package names per OS and driver branch, pinned
download URLs and hashes, the job environment with shell-quoted values), so the templates stay
dumb: no lookups, no version arithmetic, no quoting decisions.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from fmcluster.catalog.containers import PLUGIN_SHORT_NAME_SINCE
from fmcluster.catalog.software import (
    aws_ofi_nccl_artifact,
    cuda_repository,
    driver_artifact,
    efa_installer_artifact,
    gdrcopy_artifact,
    major,
    major_minor,
    nccl_tests_artifact,
    version_ge,
)
from fmcluster.features.node.plan_contract import open_modules_required
from fmcluster.features.node.plan_image import ResolvedImage, fabric_state_required, image_of
from fmcluster.features.node.plan_lustre_efa import FSX_EFA_MIN_KERNEL, FSX_GDS_TYPES
from fmcluster.features.node.plan_mirror import mirror_objects, nccl_mirror_objects
from fmcluster.features.node.plan_packages import Package, PackagePlan, package_plan  # noqa: F401 (re-exported)
from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
from fmcluster.resolved import NODE_DIR, ResolvedCluster, ResolvedGroup
from fmcluster.resolved.mirror import mirror_bucket_suffix, mirror_key

PROFILE_ENV_PATH = "/etc/profile.d/fmcluster.sh"
SCRATCH_LABEL = "fmc-scratch"
#: NCCL_SOCKET_IFNAME for NCCL's bootstrap connections (aws/aws-ofi-nccl doc/efa-env-var.md,
#: ADT-NT nccl-tests.Dockerfile).
NCCL_SOCKET_IFNAME = "^docker,lo,veth"
#: Where a baked image carries its lock (``image_build_steps`` writes it, the boot path compares it).
LOCK_PATH = f"{NODE_DIR}/lock.json"
#: Where a baked image carries its measured manifest (what the build's probes found, one value per lock component).
MEASURED_PATH = f"{NODE_DIR}/measured.json"
#: Where the boot verify writes the drift it found (one "<component>: <detail>" line each; absent: no drift).
DRIFT_PATH = f"{NODE_DIR}/drift.txt"
#: Where nccl-tests is built (the node check runs ``<dir>/build/all_reduce_perf``).
NCCL_TESTS_DIR = "/opt/nccl-tests"
#: MPI the EFA installer ships (aws-efa-installer installs Open MPI under /opt/amazon/openmpi; EFA user guide
#: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html builds nccl-tests with it).
MPI_HOME = "/opt/amazon/openmpi"

#: Named boot-path timeouts in seconds. Their sum with the step estimates stays far below ParallelCluster's
#: NODE_BOOTSTRAP_TIMEOUT = 2100 s (aws/aws-parallelcluster cli/src/pcluster/constants.py), the only documented
#: limit; they bound waits that would otherwise hang a node until the orchestrator kills it.
BOOT_TIMEOUTS_S: dict[str, int] = {
    # apt/dpkg lock wait (apt.conf DPkg::Lock::Timeout): cloud-init or unattended-upgrades may hold the lock
    "package_lock": 600,
    # a Fabric Manager unit reaching "active" after start (NVIDIA Fabric Manager user guide: the service
    # starts in seconds; 60 s covers a cold start)
    "fabric_manager_start": 60,
    # every GPU's "Fabric State: Completed" in nvidia-smi -q (registration with Fabric Manager / NVLSM / IMEX)
    "fabric_state": 300,
    # the image's NVMe array (DLAMI assembles it at boot, ParallelCluster before OnNodeConfigured) appearing
    "nvme_array": 120,
    # FSx for Lustre mounted by the orchestrator and answering read-only probes
    "fsx": 600,
    # each lnetctl call configuring LNet over EFA (a kernel-module operation: seconds; bounded so a hung LNet
    # fails the step with a message instead of hanging the boot)
    "lnetctl": 60,
    # the node check's single-node all_reduce_perf through the network plugin
    "nccl_check": 600,
}


#: Extended regular expressions (matched against installed package names) of what the boot path holds once,
#: after every install: NVIDIA, EFA, kernel and Slurm packages (apt-mark hold / dnf versionlock).
HOLD_PATTERNS: dict[str, str] = {
    "apt": "^(nvidia-|libnvidia-|cuda-|libcuda|libnccl|nvlsm|infiniband-diags|gdrdrv|libgdrapi|gdrcopy|efa|libfabric"
           "|ibverbs|libibverbs|rdma-core|linux-image-|linux-headers-|linux-modules-|linux-aws|slurm|libslurm)",
    "dnf": "^(nvidia-|libnvidia-|cuda-|libnccl|nvlsm|infiniband-diags|gdrcopy|efa|libfabric|libibverbs|rdma-core"
           "|kernel|slurm)",
}


def package_manager(os_name: str) -> str:
    """``apt`` for Ubuntu, ``dnf`` for Amazon Linux 2023: selects ``features/node/templates/pkg/<manager>.sh.j2``."""
    return "apt" if os_name.startswith("ubuntu") else "dnf"


@dataclass(frozen=True)
class EnvVar:
    """One job environment entry; ``quoted`` is safe to paste after ``export NAME=``."""

    name: str
    value: str
    quoted: str
    reason: str


def job_environment(*, efa_enabled: bool, plugin: str | None, user: dict[str, str]) -> tuple[EnvVar, ...]:
    """fmcluster's job settings that are still right (aws/aws-ofi-nccl doc/efa-env-var.md and src/platform-aws.cpp), then the
    blueprint's ``software.environment`` (which wins, being later). Values aws-ofi-nccl sets
    itself per platform are deliberately absent."""
    out: list[EnvVar] = []
    if efa_enabled:
        out.append(EnvVar("NCCL_SOCKET_IFNAME", NCCL_SOCKET_IFNAME, shlex.quote(NCCL_SOCKET_IFNAME),
                          "NCCL bootstrap sockets avoid docker/loopback/veth interfaces (ADT-NT)"))
        if plugin and version_ge(plugin, PLUGIN_SHORT_NAME_SINCE):
            out.append(EnvVar("NCCL_NET_PLUGIN", "ofi", "ofi",
                              "short name of aws-ofi-nccl >= 1.15.0 (libnccl-net-ofi.so); stops NGC images' "
                              "NCCL_NET_PLUGIN default from leaving NCCL on sockets (S13, R-NAME-1)"))
    for name, value in user.items():
        out.append(EnvVar(name, value, shlex.quote(value), "software.environment"))
    return tuple(out)


@dataclass(frozen=True)
class NodeContext:
    """Everything a node script needs for one compute group. Versions are fully resolved pins."""

    blueprint_name: str
    group_name: str
    orchestrator: str
    os: str
    instance_type: str
    family: str
    cpu_architecture: str
    gpu_model: str
    gpu_count: int
    efa_enabled: bool
    efa_device_count: int
    fabric_manager: bool
    nvlsm: bool
    imex: bool
    gdr_required: bool
    nvme_count: int
    scratch_path: str
    fsx_mount_point: str | None
    stack_name: str
    kernel_modules: str
    versions: dict[str, str | None]
    environment: dict[str, str] = field(default_factory=dict)
    # -- derived (filled by node_context) --
    driver_branch: int = 0
    fabric_state_required: bool = False
    plugin_from_source: bool = False
    driver_url: str = ""
    driver_sha256: str = ""
    efa_url: str = ""
    efa_signature_url: str = ""
    efa_key_url: str = ""
    efa_key_fingerprint: str = ""
    efa_sha256: str = ""
    gdrcopy_url: str = ""
    gdrcopy_sha256: str = ""
    plugin_url: str = ""
    plugin_sha256: str = ""
    cuda_repo_url: str = ""
    cuda_repo_key_url: str = ""
    cuda_repo_key_fingerprint: str = ""
    cuda_home: str = ""
    cuda_major: int = 0
    packages: PackagePlan | None = None
    job_env: tuple[EnvVar, ...] = ()
    paths: dict[str, str] = field(default_factory=dict)
    #: Exporter install script for this group's nodes (observability); "" when metrics are off.
    exporters_script: str = ""
    # -- image and boot path (features/node/plan_image.py) --
    #: ``official`` / ``bake`` / ``custom``
    image_mode: str = "official"
    #: component -> version the node must carry (``None``: not needed on this type)
    lock: dict[str, str | None] = field(default_factory=dict)
    #: the lock document (:func:`lock_document`) as written to LOCK_PATH: one line, sorted keys
    lock_json: str = ""
    #: Grace Hopper / Blackwell: proprietary modules loaded fail the node (plan_contract.open_modules_required)
    open_modules_required: bool = False
    #: lock components the boot verification compares (efa components only with EFA; NCCL when not installed at boot)
    verify_components: tuple[str, ...] = ()
    #: components whose difference is only reported (unverified official-image values)
    reported_only: tuple[str, ...] = ()
    installs_nccl: bool = False
    installs_nccl_tests: bool = False
    #: the boot path's steps (``ResolvedImage.boot_path``: the list the plan estimates)
    boot_path: tuple[str, ...] = ()
    gpu_services: tuple[str, ...] = ()
    #: ``parallelcluster-ephemeral`` / ``dlami-raid`` / ``none``
    nvme_kind: str = "none"
    #: mount point of the image's NVMe array ("" for ``none``)
    nvme_array_path: str = ""
    pkg_manager: str = "apt"
    #: ``ID`` and ``VERSION_ID`` of /etc/os-release the script expects (``ubuntu`` 22.04, ``amzn`` 2023)
    os_release_id: str = ""
    os_release_version: str = ""
    #: the per-OS package-manager partial included by the node scripts
    pkg_partial: str = "node/pkg/apt.sh.j2"
    hold_pattern: str = ""
    nccl_tests_version: str = ""
    nccl_tests_url: str = ""
    nccl_tests_sha256: str = ""
    timeouts: dict[str, int] = field(default_factory=dict)
    #: the cluster's Slurm command directory (``OrchestratorProfile.slurm_bin_dir``); "" where fmcluster does not know it
    slurm_bin_dir: str = ""
    #: the cluster's mirror (issue 23 item 4, fmcluster/resolved/mirror.py): Region, bucket name suffix, the
    #: nccl-tests source's key; the files a deploy copies there (fmcluster.features.node.plan_mirror.MirrorObject)
    region: str = ""
    mirror_bucket_suffix: str = ""
    nccl_tests_key: str = ""
    #: NCCL's package files in the mirror (official mode: the boot installs them from there, never from NVIDIA's
    #: repository; :func:`fmcluster.features.node.plan_mirror.nccl_mirror_objects`); empty when the image has NCCL
    nccl_mirror_keys: tuple[str, ...] = ()
    mirror_objects: tuple[Any, ...] = ()
    #: LNet over EFA to an EFA-enabled FSx for Lustre (``ResolvedImage.lustre_efa_interfaces``; 0: not configured)
    #: and whether FSx supports GPUDirect Storage on the type (reported at boot, never installed)
    lustre_efa_interfaces: int = 0
    lustre_gds_type: bool = False
    #: the oldest kernel an EFA Lustre client runs on for this OS ("": no bound; plan_lustre_efa.FSX_EFA_MIN_KERNEL)
    lustre_efa_min_kernel: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def lock_document(blueprint: str, group: str, stack: str, os_name: str, image: ResolvedImage) -> str:
    """The one lock format, as one JSON line (sorted keys): ``{"blueprint", "group", "stack", "os", "mode",
    "lock": {component: version|null}, "drift": [components reported, not enforced]}``. The bake writes it to
    :data:`LOCK_PATH`, the Image Builder test compares the file with it, the boot verify of a baked node compares
    the image's file with its own, the node check's pins are its ``lock``."""
    return json.dumps({"blueprint": blueprint, "group": group, "stack": stack, "os": os_name, "mode": image.mode,
                       "lock": image.lock, "drift": sorted(image.reported_only)}, sort_keys=True)


def node_paths(node_dir: str, plugin_override: str | None) -> dict[str, str]:
    """Where a node's fmcluster files go (``paths`` in the templates): under ``node_dir``
    (:attr:`ResolvedCluster.node_dir`), plus the login-shell hook, the scratch label and, when
    aws-ofi-nccl is built from source (``plugin_override``), its install prefix ("" otherwise)."""
    return {
        "prefix": node_dir,
        "node_check": f"{node_dir}/bin/fmcluster-node-check",
        "job_env": f"{node_dir}/etc/job-env.sh",
        "profile_env": PROFILE_ENV_PATH,
        "scratch_label": SCRATCH_LABEL,
        "plugin_prefix": f"{node_dir}/aws-ofi-nccl-{plugin_override}" if plugin_override else "",
        "lock": LOCK_PATH,
        "drift": DRIFT_PATH,
        "measured": MEASURED_PATH,
        "nccl_tests": NCCL_TESTS_DIR,
        "mpi_home": MPI_HOME,
    }


def node_context(rc: ResolvedCluster, group: ResolvedGroup, *, exporters_script: str = "") -> NodeContext:
    """Build the context for ``group`` of ``rc`` (pins = ``rc.software``: the named stack with the
    blueprint's overrides).

    ``exporters_script`` (from ``fmcluster.features.observability.render_exporters.render_exporter_script``) is
    embedded in the bootstrap and run after the node check; empty means no exporters.

    Expects a blueprint that passed the rules (a known stack; R-ART-1 guarantees every download is
    pinned); raises ``ValueError`` otherwise.
    """
    bp, inst, stack = rc.blueprint, group.instance, rc.software
    if stack is None:
        raise ValueError(f"unknown software stack {bp.software.stack_name!r}")
    software, lustre = bp.software, bp.storage.lustre
    arch = inst.cpu_architecture
    drv = driver_artifact(stack.driver, arch)
    gdr = gdrcopy_artifact(stack.gdrcopy)
    builds = image_of(group).bake_installs
    if ("driver" in builds and drv is None) or ("gdrcopy" in builds and gdr is None):
        raise ValueError(f"no pinned download for driver {stack.driver} ({arch}) or GDRCopy {stack.gdrcopy} (rule R-ART-1)")
    plugin = aws_ofi_nccl_artifact(stack.plugin_override) if stack.plugin_override else None
    if stack.plugin_override and plugin is None:
        raise ValueError(f"no pinned aws-ofi-nccl {stack.plugin_override} (rule R-ART-1)")
    efa = efa_installer_artifact(stack.efa_installer)
    repo = cuda_repository(software.os_name, arch)
    efa_enabled = group.spec.efa_enabled
    image = image_of(group)
    installs_nccl = any(i.startswith("nccl ") for i in image.installs_at_boot)
    installs_nccl_tests = "nccl-tests" in image.installs_at_boot
    tests = nccl_tests_artifact()
    efa_components = ("efa_installer", "libfabric", "aws_ofi_nccl")
    verify = tuple(c for c, v in image.lock.items() if v is not None
                   and not (c in efa_components and not efa_enabled) and not (c == "nccl" and installs_nccl))
    manager = package_manager(software.os_name)
    nvme_path = ""
    if image.nvme.kind == "parallelcluster-ephemeral":
        nvme_path = group.spec.scratch_path  # ParallelCluster mounts it at EphemeralVolume.MountDir = scratch_path
    elif image.nvme.kind != "none":
        nvme_path = image.nvme.path or ""
    return NodeContext(
        blueprint_name=rc.name,
        group_name=group.name,
        orchestrator=rc.profile.kind,
        slurm_bin_dir=rc.profile.slurm_bin_dir or "",
        os=software.os_name,
        instance_type=inst.name,
        family=inst.family,
        cpu_architecture=arch,
        gpu_model=inst.gpu.model,
        gpu_count=inst.gpu.count,
        efa_enabled=efa_enabled,
        efa_device_count=group.efa_devices,
        fabric_manager=inst.fabric_manager,
        nvlsm=inst.nvlsm,
        imex=inst.imex,
        gdr_required=inst.gdr_required,
        nvme_count=inst.nvme.count,
        scratch_path=group.spec.scratch_path,
        # Only where the orchestrator mounts it before the node scripts run (not HyperPod EKS: no host mount).
        fsx_mount_point=lustre.mount_point if lustre and rc.profile.lustre_on_nodes else None,
        stack_name=stack.name,
        kernel_modules=stack.kernel_modules,
        versions=stack.versions(),
        environment=dict(software.environment),
        driver_branch=stack.driver_branch,
        # Fabric registration ("Fabric ... State: Completed" in nvidia-smi -q) applies to Hopper and
        # Blackwell NVSwitch boards and to GB200 NVL domains (siderolabs/extensions PR #717; NVIDIA/nccl src/mnnvl.cc).
        fabric_state_required=fabric_state_required(inst),
        plugin_from_source=plugin is not None,
        driver_url=drv.url if drv else "",
        driver_sha256=drv.sha256 if drv else "",
        efa_url=efa.url,
        efa_signature_url=efa.signature_url,
        efa_key_url=efa.key_url,
        efa_key_fingerprint=efa.key_fingerprint,
        efa_sha256=efa.sha256 or "",
        gdrcopy_url=gdr.url if gdr else "",
        gdrcopy_sha256=gdr.sha256 if gdr else "",
        plugin_url=plugin.url if plugin else "",
        plugin_sha256=plugin.sha256 if plugin else "",
        cuda_repo_url=repo.url,
        cuda_repo_key_url=repo.key_url,
        cuda_repo_key_fingerprint=repo.key_fingerprint,
        cuda_home=f"/usr/local/cuda-{major_minor(stack.cuda)}",
        cuda_major=major(stack.cuda),
        packages=package_plan(software.os_name, stack.driver, stack.cuda, stack.nccl),
        job_env=job_environment(efa_enabled=efa_enabled, plugin=stack.aws_ofi_nccl, user=dict(software.environment)),
        paths=node_paths(rc.node_dir, stack.plugin_override),
        exporters_script=exporters_script,
        image_mode=image.mode,
        lock=dict(image.lock),
        lock_json=lock_document(rc.name, group.name, stack.name, software.os_name, image),
        open_modules_required=open_modules_required(inst),
        verify_components=verify,
        reported_only=tuple(sorted(image.reported_only)),
        installs_nccl=installs_nccl,
        installs_nccl_tests=installs_nccl_tests,
        boot_path=image.boot_path,
        gpu_services=image.gpu_services,
        nvme_kind=image.nvme.kind,
        nvme_array_path=nvme_path,
        pkg_manager=manager,
        os_release_id="ubuntu" if software.os_name.startswith("ubuntu") else "amzn",
        os_release_version=software.os_name.split("-")[-1],
        pkg_partial=f"node/pkg/{manager}.sh.j2",
        hold_pattern=HOLD_PATTERNS[manager],
        nccl_tests_version=tests.version,
        nccl_tests_url=tests.url,
        nccl_tests_sha256=tests.sha256,
        timeouts=dict(BOOT_TIMEOUTS_S),
        region=rc.blueprint.region,
        mirror_bucket_suffix=mirror_bucket_suffix(rc.name, rc.blueprint.region),
        nccl_tests_key=mirror_key("nccl-tests", tests.url),
        nccl_mirror_keys=tuple(o.key for o in nccl_mirror_objects(rc, group)),
        mirror_objects=tuple(mirror_objects(rc)),
        lustre_efa_interfaces=image.lustre_efa_interfaces,
        lustre_gds_type=inst.name in FSX_GDS_TYPES,
        lustre_efa_min_kernel=FSX_EFA_MIN_KERNEL.get(software.os_name, ""),
    )


def blueprint_node_contexts(rc: ResolvedCluster) -> dict[str, NodeContext]:
    """Compute group name -> NodeContext, in blueprint order, with the group's exporter script when
    metrics are on and fmcluster's own collection gathers them (``OrchestratorProfile.metrics_collector``
    ``head_node``; on HyperPod EKS the observability add-on runs the exporters as pods, and host exporters on the same
    ports would collide with them)."""

    def exporters(g: ResolvedGroup) -> str:
        if not image_of(g).exporters:  # one home: the resolved image says whether the node installs exporters
            return ""
        return render_exporter_script(exporter_context(rc, role="compute", group=g))

    return {g.name: node_context(rc, g, exporters_script=exporters(g)) for g in rc.groups}
