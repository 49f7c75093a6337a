"""What a bake image build runs: one :class:`ImageBuildStep` per component, in order.

The ``<name>-image`` stack (``fmcluster.constructs.image``) turns every step into one EC2 Image Builder component
(``build``, ``validate`` and ``test`` phases of ``ExecuteBash``). This module is the interface between the image
stack and the node step templates:

``image_build_steps(rc, group) -> list[ImageBuildStep]``

INTEGRATION NOTE (issue 11 item 3, worktree wt-boot): the per-component step templates of the boot-path rewrite
(driver, Fabric Manager, IMEX, CUDA, NCCL, EFA, GDRCopy, nccl-tests, upgrade guards) are meant to provide the
``build`` / ``validate`` / ``test`` scripts of every step. Until they land, the steps named in
:data:`PLACEHOLDER_COMPONENTS` are PLACEHOLDERS: their build script prints what it would install and exits 1, so a
bake build stops loudly at the first of them (and the image stack's synth carries a warning saying so, see
:func:`placeholder_steps`). The integration replaces :func:`_placeholder` with the rendered step templates and
empties :data:`PLACEHOLDER_COMPONENTS`; nothing else changes. Only the ``lock`` step is real today: it writes the
group's lock to :data:`LOCK_PATH` for the boot check.

The build instance has no GPU (``fmcluster.constructs.image.BUILD_INSTANCE_TYPES``): build and test scripts must not
need one (no ``nvidia-smi``; check installed packages, the kernel modules built for the image's kernel, the
initramfs and files instead). The GPU checks run at boot, in the node check.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from fmcluster.resolved import ResolvedCluster, ResolvedGroup

#: Where the image records the lock it was built from (read by the boot check).
LOCK_PATH = "/opt/fmcluster/lock.json"
#: Component names: lowercase letters, digits and hyphens (they become Image Builder component names and
#: step names; Image Builder names allow ``[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]``, botocore imagebuilder
#: ``ResourceName``).
COMPONENT_NAME = re.compile(r"^[a-z][a-z0-9-]{1,40}$")
#: Seconds each step may run before Image Builder fails it (``timeoutSeconds`` of its ExecuteBash steps).
#: Estimates on a 16-vCPU build instance: the driver's DKMS build and the CUDA toolkit dominate.
STEP_TIMEOUT_S: dict[str, int] = {
    "upgrade-guards": 300,
    "nvidia-driver": 3600,
    "fabric-manager": 900,
    "imex": 900,
    "cuda-toolkit": 3600,
    "nccl": 1800,
    "efa": 1800,
    "gdrcopy": 1800,
    "nccl-tests": 1800,
    "lock": 300,
}
#: Steps whose scripts are placeholders until the step templates land (see the module docstring).
PLACEHOLDER_COMPONENTS = frozenset(
    {"upgrade-guards", "nvidia-driver", "fabric-manager", "imex", "cuda-toolkit", "nccl", "efa", "gdrcopy",
     "nccl-tests"})


@dataclass(frozen=True)
class ImageBuildStep:
    """One image build step, one Image Builder component.

    Attributes:
        component: name, :data:`COMPONENT_NAME` (e.g. ``nvidia-driver``); unique in a group's list.
        build: bash run as root on the build instance (``build`` phase); must exit non-zero on failure.
        validate: bash check on the build instance after every build phase (``validate`` phase).
        test: bash check on an instance launched from the new AMI (``test`` phase); no GPU there.
        timeout_s: seconds each phase's step may run (``timeoutSeconds``).
        summary: what the step installs, e.g. ``NVIDIA driver 580.95.05 (open kernel modules)``.
    """

    component: str
    build: str
    validate: str
    test: str
    timeout_s: int
    summary: str


def _placeholder(component: str, summary: str) -> ImageBuildStep:
    text = (
        "#!/bin/bash\n"
        f"echo 'fmcluster: image build step {component} ({summary}) is a placeholder until the node step templates "
        "land (issue 11 item 3); the build stops here' >&2\n"
        "exit 1\n"
    )
    return ImageBuildStep(component, text, text, text, STEP_TIMEOUT_S[component], summary)


def group_lock(group: ResolvedGroup) -> dict[str, str | None]:
    """The lock the image of ``group`` is built from: ``ResolvedImage.lock`` (component -> version)."""
    return dict(group.image.lock)


def _lock_step(rc: ResolvedCluster, group: ResolvedGroup) -> ImageBuildStep:
    doc = {"blueprint": rc.name, "group": group.name, "stack": rc.blueprint.software.stack_name,
           "os": rc.blueprint.software.os_name, "lock": group_lock(group)}
    text = json.dumps(doc, indent=2, sort_keys=True)
    if "FMCLUSTER_LOCK_EOF" in text:
        raise ValueError("lock contains its heredoc delimiter FMCLUSTER_LOCK_EOF")
    build = (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        f"install -d -m 0755 {LOCK_PATH.rsplit('/', 1)[0]}\n"
        f"cat > {LOCK_PATH} <<'FMCLUSTER_LOCK_EOF'\n{text}\nFMCLUSTER_LOCK_EOF\n"
        f"chmod 0644 {LOCK_PATH}\n"
    )
    check = (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        f"test -s {LOCK_PATH} || {{ echo 'fmcluster: {LOCK_PATH} is missing or empty' >&2; exit 1; }}\n"
        f"grep -q '\"group\": \"{group.name}\"' {LOCK_PATH} || "
        f"{{ echo 'fmcluster: {LOCK_PATH} is not the lock of group {group.name}' >&2; exit 1; }}\n"
    )
    return ImageBuildStep("lock", build, check, check, STEP_TIMEOUT_S["lock"], f"write the lock to {LOCK_PATH}")


def image_build_steps(rc: ResolvedCluster, group: ResolvedGroup) -> list[ImageBuildStep]:
    """The build steps of ``group``'s image, in order: upgrade guards, driver, Fabric Manager (NVSwitch types),
    IMEX (NVLink-domain types), CUDA toolkit, NCCL, EFA installer, GDRCopy, nccl-tests, then the lock.

    Placeholders (:data:`PLACEHOLDER_COMPONENTS`) until the step templates land; see the module docstring.
    """
    lock = group_lock(group)
    wanted: list[tuple[str, str]] = [("upgrade-guards", "keep unattended upgrades away from NVIDIA, EFA, kernel and "
                                      "Slurm packages; needrestart never restarts slurmd")]
    wanted.append(("nvidia-driver", f"NVIDIA driver {lock.get('driver')} ({lock.get('kernel_modules')} kernel modules, "
                                    "DKMS, not loaded on the build instance)"))
    if lock.get("fabric_manager"):
        wanted.append(("fabric-manager", f"NVIDIA Fabric Manager {lock['fabric_manager']}"))
    if lock.get("imex"):
        wanted.append(("imex", f"NVIDIA IMEX {lock['imex']}"))
    wanted += [
        ("cuda-toolkit", f"CUDA toolkit {lock.get('cuda')}"),
        ("nccl", f"NCCL {lock.get('nccl')}"),
        ("efa", f"EFA installer {lock.get('efa_installer')} (libfabric {lock.get('libfabric')}, aws-ofi-nccl "
                f"{lock.get('aws_ofi_nccl')})"),
        ("gdrcopy", f"GDRCopy {lock.get('gdrcopy')}"),
        ("nccl-tests", f"nccl-tests built against NCCL {lock.get('nccl')} and CUDA {lock.get('cuda')}"),
    ]
    steps = [_placeholder(c, s) for c, s in wanted]
    steps.append(_lock_step(rc, group))
    return steps


def placeholder_steps(steps: list[ImageBuildStep]) -> list[str]:
    """Components of ``steps`` that are still placeholders (their build exits 1)."""
    return [s.component for s in steps if s.component in PLACEHOLDER_COMPONENTS]
