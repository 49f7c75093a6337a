"""OS packages the node scripts install from NVIDIA's CUDA repository, per OS and driver branch (one home for the
names and version globs: the boot scripts, the image build and the mirror (:mod:`fmcluster.features.node.plan_mirror`)
read them here)."""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.catalog.software import major, major_minor


@dataclass(frozen=True)
class Package:
    """One OS package pinned by version. ``version`` may end in ``*`` (a glob: apt preferences
    and dnf both accept it); the scripts verify the installed version against it."""

    name: str
    version: str


@dataclass(frozen=True)
class PackagePlan:
    """Packages from NVIDIA's signed CUDA repository, per purpose, for one OS and driver branch.

    Names per branch follow NVIDIA/gpu-driver-container ubuntu22.04/install.sh (Ubuntu: unversioned
    names from R580, ``-<branch>`` names before) and the ParallelCluster cookbook
    (``nvidia-fabric-manager`` on RPM systems). RPM names for R580 IMEX/Fabric Manager are not
    confirmed by a public source (docs/software.md, open questions).
    """

    fabric_manager: tuple[Package, ...]
    fabric_manager_service: str
    nvlsm: tuple[Package, ...]
    imex: tuple[Package, ...]
    cuda: tuple[Package, ...]
    nccl: tuple[Package, ...]
    nccl_query: str
    gdrcopy_query: str
    gdrcopy_hold: tuple[str, ...]


def package_plan(os_name: str, driver: str, cuda: str, nccl: str) -> PackagePlan:
    branch = major(driver)
    cuda_mm = major_minor(cuda).replace(".", "-")
    nccl_base = nccl.split("-")[0]
    nccl_release = nccl.split("-")[1] if "-" in nccl else "1"
    if os_name.startswith("ubuntu"):
        suffix = "" if branch >= 580 else f"-{branch}"
        return PackagePlan(
            fabric_manager=(Package(f"nvidia-fabricmanager{suffix}", f"{driver}-1"),
                            Package(f"libnvidia-nscq{suffix}", f"{driver}-1")),
            fabric_manager_service="nvidia-fabricmanager",
            nvlsm=(Package("nvlsm", "*"), Package("infiniband-diags", "*")),
            imex=(Package(f"nvidia-imex{suffix}", f"{driver}-1"),),
            cuda=(Package(f"cuda-toolkit-{cuda_mm}", f"{cuda}-1"),),
            nccl=(Package("libnccl2", f"{nccl_base}-{nccl_release}+cuda{major(cuda)}*"),
                  Package("libnccl-dev", f"{nccl_base}-{nccl_release}+cuda{major(cuda)}*")),
            nccl_query="libnccl2",
            gdrcopy_query="gdrcopy",
            gdrcopy_hold=("gdrdrv-dkms", "libgdrapi", "gdrcopy", "gdrcopy-tests"),
        )
    return PackagePlan(
        fabric_manager=(Package("nvidia-fabric-manager", f"{driver}-1"),),
        fabric_manager_service="nvidia-fabricmanager",
        nvlsm=(Package("nvlsm", "*"),),
        imex=(Package("nvidia-imex", f"{driver}-1*"),),
        cuda=(Package(f"cuda-toolkit-{cuda_mm}", f"{cuda}-1"),),
        nccl=(Package("libnccl", f"{nccl_base}-{nccl_release}+cuda{major(cuda)}*"),
              Package("libnccl-devel", f"{nccl_base}-{nccl_release}+cuda{major(cuda)}*")),
        nccl_query="libnccl",
        gdrcopy_query="gdrcopy",
        gdrcopy_hold=("gdrcopy", "gdrcopy-kmod", "gdrcopy-devel"),
    )
