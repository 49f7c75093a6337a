"""What a bake image build runs: one :class:`ImageBuildStep` per component, in order.

The ``<name>-image`` stack (``fmcluster.features.node.construct_image``) turns every step into one EC2 Image Builder component
(``build``, ``validate`` and ``test`` phases of ``ExecuteBash``). The ``build`` script of each step is rendered by
:func:`install_scripts` from the same templates, shared node library and per-OS package-manager partial the boot
path uses (``features/node/templates/install/<component>.sh.j2``; nccl-tests and the holds reuse the boot steps).

``validate`` re-runs the same script: every install script leaves a component that is already at the locked
version alone and fails when it cannot reach it, so a second run is the check. ``test`` (on an instance launched
from the new AMI) checks the lock file the boot path compares (:data:`LOCK_PATH`). The build instance has no GPU
(``fmcluster.features.node.construct_image.BUILD_INSTANCE_TYPES``); the GPU checks run at boot, in the node check.

Only what the parent image lacks at the locked version is built (``ResolvedImage.bake_installs``): a bake of the
parent's own stack adds NCCL, nccl-tests, the lock and the holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmcluster.features.node.plan_image import image_of
from fmcluster.features.node.render_context import LOCK_PATH, node_context
from fmcluster.features.node.render_scripts import script_data
from fmcluster.resolved import NODE_DIR, ResolvedCluster, ResolvedGroup
from fmcluster.templates.render import render

#: Where the image keeps its install scripts (run by the build and validate phases).
BUILD_SCRIPT_DIR = f"{NODE_DIR}/image-build"
_EOF = "FMCLUSTER_INSTALL_SCRIPT_EOF"
#: Component names: lowercase letters, digits and hyphens (they become Image Builder component names and
#: step names; Image Builder names allow ``[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]``, botocore imagebuilder
#: ``ResourceName``).
COMPONENT_NAME = re.compile(r"^[a-z][a-z0-9-]{1,40}$")
#: Seconds each step may run before Image Builder fails it (``timeoutSeconds`` of its ExecuteBash steps).
#: Estimates on a 16-vCPU build instance: the driver's DKMS build and the CUDA toolkit dominate.
STEP_TIMEOUT_S: dict[str, int] = {
    "library": 300,
    "cuda-repo": 600,
    "driver": 3600,
    "fabric-manager": 900,
    "imex": 900,
    "cuda": 3600,
    "nccl": 1800,
    "efa": 1800,
    "aws-ofi-nccl": 1800,
    "gdrcopy": 1800,
    "nccl-tests": 1800,
    "lock": 300,
    "measure": 300,
    "holds": 300,
}
#: Steps whose scripts are still placeholders (none: every step is rendered from the install templates).
PLACEHOLDER_COMPONENTS: frozenset[str] = frozenset()
#: ``ResolvedImage.bake_installs`` component -> the install step that builds it.
_STEP_OF = {"driver": "driver", "fabric_manager": "fabric-manager", "imex": "imex", "cuda": "cuda", "nccl": "nccl",
            "efa_installer": "efa", "gdrcopy": "gdrcopy"}


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


#: Characters of file content per component: Image Builder takes at most 16,000 characters of inline component data
#: (``construct_image.COMPONENT_DATA_LIMIT``), and the YAML document indents every line and adds its phases.
FILE_PART_CHARS = 9_000


def _file_steps(component: str, path: str, text: str) -> list[ImageBuildStep]:
    """Steps that write ``text`` to ``path`` in the image, one component per :data:`FILE_PART_CHARS` of it (split at
    line ends, the first writes, the next append: ``library``, ``library-part2``, ...); validate and test check that
    the file is there."""
    if f"\n{_EOF}\n" in text:
        raise ValueError(f"{component} contains its heredoc delimiter {_EOF}")
    parts: list[str] = [""]
    for line in text.split("\n"):
        if parts[-1] and len(parts[-1]) + len(line) + 1 > FILE_PART_CHARS:
            parts.append("")
        parts[-1] += ("\n" if parts[-1] else "") + line
    check = f"#!/bin/bash\nset -euo pipefail\ntest -s {path} || {{ echo 'fmcluster: {path} is missing' >&2; exit 1; }}\n"
    steps = []
    for i, part in enumerate(parts):
        name = component if i == 0 else f"{component}-part{i + 1}"
        redirect = ">" if i == 0 else ">>"
        build = (f"#!/bin/bash\nset -euo pipefail\ninstall -d -m 0755 {BUILD_SCRIPT_DIR}\n"
                 f"cat {redirect} {path} <<'{_EOF}'\n{part}\n{_EOF}\nchmod 0644 {path}\n")
        summary = f"write {path}" + (f" (part {i + 1} of {len(parts)})" if len(parts) > 1 else "")
        steps.append(ImageBuildStep(name, build, check, check, STEP_TIMEOUT_S[component], summary))
    return steps


def group_lock(group: ResolvedGroup) -> dict[str, str | None]:
    """The lock the image of ``group`` is built from: ``ResolvedImage.lock`` (component -> version)."""
    return dict(image_of(group).lock)


def lock_test(rc: ResolvedCluster, group: ResolvedGroup) -> str:
    """The ``test`` phase of the ``lock`` step: :data:`LOCK_PATH` on the new AMI must be, byte for byte, the lock
    document the build wrote (``install/lock.sh.j2``, ``NodeContext.lock_json``): the one format the boot verify of a
    baked node compares (issue 23: the test used to grep a field the build never wrote)."""
    doc = node_context(rc, group).lock_json
    if "'" in doc:
        raise ValueError("the lock document contains a single quote")
    return (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        f"test -s {LOCK_PATH} || {{ echo 'fmcluster: {LOCK_PATH} is missing or empty' >&2; exit 1; }}\n"
        f"printf '%s' '{doc}' | cmp -s - {LOCK_PATH} || "
        f"{{ echo \"fmcluster: {LOCK_PATH} is not the lock of group {group.name}: $(cat {LOCK_PATH})\" >&2; exit 1; }}\n"
    )


def image_build_steps(rc: ResolvedCluster, group: ResolvedGroup) -> list[ImageBuildStep]:
    """The build steps of ``group``'s image, in install order (see :func:`install_scripts`), limited to what the
    parent lacks at the locked version (``image_of(group).bake_installs``) plus nccl-tests, the lock and the holds."""
    wanted = {_STEP_OF[c] for c in image_of(group).bake_installs}
    if wanted & {"fabric-manager", "imex", "cuda", "nccl"}:
        wanted.add("cuda-repo")
    if rc.software is not None and rc.software.plugin_override:
        wanted.add("aws-ofi-nccl")
    wanted |= {"nccl-tests", "lock", "measure", "holds"}
    lock_check = lock_test(rc, group)
    library = f"{BUILD_SCRIPT_DIR}/lib.sh"
    steps: list[ImageBuildStep] = _file_steps("library", library, library_script(rc, group))
    for component, script in install_scripts(rc, group, library_path=library):
        if component not in wanted:
            continue
        # The build phase keeps the script in the image and runs it; validate runs it again (a no-op at the locked
        # version, a failure when it cannot reach it); test checks the lock file on an instance of the new AMI.
        # One copy per document keeps each component under Image Builder's 16,000-character inline limit.
        path = f"{BUILD_SCRIPT_DIR}/{component}.sh"
        if f"\n{_EOF}\n" in script:
            raise ValueError(f"install script {component} contains its heredoc delimiter {_EOF}")
        build = (f"#!/bin/bash\nset -euo pipefail\ninstall -d -m 0755 {BUILD_SCRIPT_DIR}\n"
                 f"cat > {path} <<'{_EOF}'\n{script}\n{_EOF}\nchmod 0755 {path}\nexec {path}\n")
        validate = f"#!/bin/bash\nset -euo pipefail\nexec {path}\n"
        test = lock_check if component == "lock" else validate
        steps.append(ImageBuildStep(component, build, validate, test, STEP_TIMEOUT_S[component],
                                    f"{component} from the lock ({rc.blueprint.software.stack_name})"))
    return steps


def placeholder_steps(steps: list[ImageBuildStep]) -> list[str]:
    """Components of ``steps`` that are still placeholders (their build exits 1)."""
    return [s.component for s in steps if s.component in PLACEHOLDER_COMPONENTS]


#: component -> (template, function it defines); the boot steps' templates define ``step_<name>``.
_TEMPLATES: dict[str, tuple[str, str]] = {
    "cuda-repo": ("node/install/cuda_repo.sh.j2", "install_cuda_repo"),
    "driver": ("node/install/driver.sh.j2", "install_driver"),
    "fabric-manager": ("node/install/fabric_manager.sh.j2", "install_fabric_manager"),
    "imex": ("node/install/imex.sh.j2", "install_imex"),
    "cuda": ("node/install/cuda.sh.j2", "install_cuda"),
    "nccl": ("node/install/nccl.sh.j2", "install_nccl"),
    "efa": ("node/install/efa.sh.j2", "install_efa"),
    "aws-ofi-nccl": ("node/install/aws_ofi_nccl.sh.j2", "install_aws_ofi_nccl"),
    "gdrcopy": ("node/install/gdrcopy.sh.j2", "install_gdrcopy"),
    "nccl-tests": ("node/steps/nccl_tests.sh.j2", "step_nccl_tests"),
    "lock": ("node/install/lock.sh.j2", "install_lock"),
    "measure": ("node/install/measure.sh.j2", "install_measure"),
    "holds": ("node/steps/holds.sh.j2", "step_holds"),
}


def library_script(rc: ResolvedCluster, group: ResolvedGroup) -> str:
    """The shared node library (log, retry, fetch, package helpers of the node's OS) as one file to source."""
    return render("node/install/_library.sh.j2", script_data(node_context(rc, group)))


def install_scripts(rc: ResolvedCluster, group: ResolvedGroup, *, library_path: str | None = None) -> list[tuple[str, str]]:
    """``[(component, rendered bash script), ...]`` in install order for ``group`` of ``rc``.

    Components: ``cuda-repo``, ``driver``, ``fabric-manager`` (types with NVSwitch; with nvlsm on NVLink5),
    ``imex`` (NVLink-domain types), ``cuda``, ``nccl``, ``efa`` (when the group uses EFA), ``aws-ofi-nccl``
    (only with ``software.overrides.aws_ofi_nccl``), ``gdrcopy``, ``nccl-tests``, ``lock``, ``measure``, ``holds``. With
    ``library_path`` each script sources the shared node library from there (:func:`library_script`) instead of
    inlining it. Otherwise each script is self-contained (``#!/usr/bin/env bash``, the shared library inlined) and idempotent (a component
    already at the locked version is left alone).

    Raises ``ValueError`` (from :func:`fmcluster.features.node.render_context.node_context`) when a download is not pinned
    (rule R-ART-1 reports it first).
    """
    ctx = node_context(rc, group)
    names = ["cuda-repo", "driver"]
    if ctx.fabric_manager:
        names.append("fabric-manager")
    if ctx.imex:
        names.append("imex")
    names += ["cuda", "nccl"]
    if ctx.efa_enabled:
        names.append("efa")
    if ctx.plugin_from_source:
        names.append("aws-ofi-nccl")
    names += ["gdrcopy", "nccl-tests", "lock", "measure", "holds"]
    data = {**script_data(ctx), "library_path": library_path}
    out: list[tuple[str, str]] = []
    for name in names:
        template, function = _TEMPLATES[name]
        out.append((name, render("node/install/_script.sh.j2",
                                 {**data, "component": name, "component_template": template,
                                  "component_function": function})))
    return out
