"""Install scripts for building an image from the lock (``software.image.mode: bake``).

:func:`image_build_steps` renders one standalone bash script per component, in install order, from the same
templates, shared node library and per-OS package-manager partial the boot path uses
(``templates/node/install/<component>.sh.j2``; nccl-tests and the holds reuse the boot steps). The EC2 Image
Builder stack (``<name>-image``) wraps each script as one component; the boot path of a baked node then only
verifies and configures.

Order: CUDA repository, driver, Fabric Manager (+ nvlsm), IMEX, CUDA toolkit, NCCL, EFA installer, aws-ofi-nccl
from source (when overridden), GDRCopy, nccl-tests, the lock file (``/opt/fmcluster/lock.json``), holds (once,
after every install).
"""

from __future__ import annotations

from fmcluster.resolved import ResolvedCluster, ResolvedGroup
from fmcluster.templates.context import node_context
from fmcluster.templates.node_scripts import script_data
from fmcluster.templates.render import render

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
    "holds": ("node/steps/holds.sh.j2", "step_holds"),
}


def image_build_steps(rc: ResolvedCluster, group: ResolvedGroup) -> list[tuple[str, str]]:
    """``[(component, rendered bash script), ...]`` in install order for ``group`` of ``rc``.

    Components: ``cuda-repo``, ``driver``, ``fabric-manager`` (types with NVSwitch; with nvlsm on NVLink5),
    ``imex`` (NVLink-domain types), ``cuda``, ``nccl``, ``efa`` (when the group uses EFA), ``aws-ofi-nccl``
    (only with ``software.overrides.aws_ofi_nccl``), ``gdrcopy``, ``nccl-tests``, ``lock``, ``holds``. Each
    script is self-contained (``#!/usr/bin/env bash``, the shared library inlined) and idempotent (a component
    already at the locked version is left alone).

    Raises ``ValueError`` (from :func:`fmcluster.templates.context.node_context`) when a download is not pinned
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
    names += ["gdrcopy", "nccl-tests", "lock", "holds"]
    data = script_data(ctx)
    out: list[tuple[str, str]] = []
    for name in names:
        template, function = _TEMPLATES[name]
        out.append((name, render("node/install/_script.sh.j2",
                                 {**data, "component": name, "component_template": template,
                                  "component_function": function})))
    return out
