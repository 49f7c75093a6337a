"""Container images (``software.containers``) against the host they run on: the image's CUDA against the host
driver, its NCCL against the aws-ofi-nccl that will carry it over EFA (its own, or the host's that the rendered job
mounts), its CPU architecture against the group's, and enroot/pyxis on the orchestrator's image.

Host versions are the group's image lock (:attr:`fmcluster.resolved.ResolvedGroup.image`, one home per fact);
container facts come from ``catalog/data/containers.yaml`` through :attr:`fmcluster.resolved.ResolvedCluster.containers`.
A value the catalog marks unverified, a host value the boot check only reports, or an image the catalog does not
know is a warning, never an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.catalog.containers import PLUGIN_SHORT_NAME_SINCE, ContainerImage, cuda_family_min_driver
from fmcluster.catalog.software import (
    compare_versions,
    cuda_min_driver,
    known_bad,
    major,
    plugin_max_tested_nccl,
    version_lt,
)
from fmcluster.features.containers.plan import HOST_EFA_DIRS, ResolvedContainer, containers_of, pyxis_on_image
from fmcluster.features.node.plan_image import image_of
from fmcluster.resolved import ResolvedCluster, ResolvedGroup
from fmcluster.severity import did_you_mean
from fmcluster.validation.rules import Violation, rule

CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
CUDA_FWD = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"
CUDA_RN = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
OFI_RN = "https://github.com/aws/aws-ofi-nccl/blob/v1.21.1/RELEASENOTES.md"
MB_5033 = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5033"
CATALOG = "catalog/data/containers.yaml"


def _pairs(rc: ResolvedCluster) -> Iterator[tuple[ResolvedContainer, ContainerImage, ResolvedGroup]]:
    """(container, its catalog image, a group that runs it) for every catalog-known container."""
    for c in containers_of(rc):
        if c.catalog is None:
            continue
        for name in c.groups:
            yield c, c.catalog, rc.group(name)


def _host(g: ResolvedGroup, component: str) -> str | None:
    return image_of(g).lock.get(component)


def _host_unverified(g: ResolvedGroup, component: str) -> bool:
    return component in image_of(g).reported_only


def _on(g: ResolvedGroup) -> str:
    return f"on {g.path} ({g.name}, {g.instance.name})"


# ---- which image ---------------------------------------------------------------------------------------------
@rule("R-CTR-1", level="warning", source=CATALOG, scope="cluster")
def image_in_catalog(rc: ResolvedCluster) -> Iterator[Violation]:
    """An image the catalog does not know cannot be checked against the host: a warning, not an error."""
    from fmcluster.catalog.containers import known_container_images

    for c in containers_of(rc):
        if c.catalog is None:
            yield f"{c.path}.image", (
                "not in the container catalog, so its CUDA, NCCL and aws-ofi-nccl cannot be checked against the host, "
                f"got {c.spec.image!r}; allowed any image (checked: {', '.join(known_container_images())}); "
                + (f"jobs bind-mount the host's {' and '.join(HOST_EFA_DIRS)}" if rc.profile.runs_slurm
                   else "HyperPod EKS pods get nothing of the host's EFA stack, so the image must carry aws-ofi-nccl"))


@rule("R-CTR-9", source="software.containers[].groups (compute group names)", scope="cluster")
def groups_exist(rc: ResolvedCluster) -> Iterator[Violation]:
    names = [g.name for g in rc.groups]
    for c in containers_of(rc):
        for n in c.unknown_groups:
            yield f"{c.path}.groups", f"not a compute group, got {n!r}; allowed {', '.join(names)}{did_you_mean(n, names)}"


# ---- CUDA against the host driver ----------------------------------------------------------------------------
def _family_gap(img: ContainerImage, g: ResolvedGroup) -> tuple[str, str] | None:
    """(host driver, family minimum) when the host driver is below the image's CUDA family minimum."""
    driver = _host(g, "driver")
    floor = cuda_family_min_driver(img.cuda) if img.cuda else None
    if driver is None or floor is None or not version_lt(driver, floor):
        return None
    return driver, floor


@rule("R-CTR-2", source=f"{CUDA_COMPAT} (Table 1: CUDA 13.x needs driver >= 580, 12.x >= 525); {CUDA_FWD}",
      scope="cluster")
def cuda_needs_host_driver(rc: ResolvedCluster) -> Iterator[Violation]:
    """The image's CUDA major release family needs a driver at or above its minimum; below it only the CUDA
    forward-compatibility package would help, and the rendered jobs run without the image's entrypoint that
    would enable it (pyxis ``--no-container-entrypoint`` by default). Verified values only (R-CTR-3 warns
    for the rest)."""
    for c, img, g in _pairs(rc):
        gap = _family_gap(img, g)
        if gap and img.verified("cuda") and not _host_unverified(g, "driver"):
            yield f"{c.path}.image", (
                f"CUDA {img.cuda} in {img.key} needs an NVIDIA driver >= {gap[1]} "
                f"(CUDA {major(img.cuda or '0')}.x minor version compatibility), got host driver {gap[0]} {_on(g)}; "
                "allowed an image built with an older CUDA family, or a software stack with a newer driver")


@rule("R-CTR-3", level="warning", source=f"{CUDA_COMPAT}; {CUDA_RN} (toolkit minimum drivers)", scope="cluster",
      suppressed_by=("R-CTR-2",))
def cuda_minor_version_compat(rc: ResolvedCluster) -> Iterator[Violation]:
    """Warns (a) where R-CTR-2's check rests on an unverified image or host value, (b) where the host driver
    meets the family minimum but not the toolkit's own minimum: the image runs under minor version
    compatibility, without features that need the newer driver (PTX JIT of newer PTX), and (c) where the
    image's CUDA is unknown."""
    for c, img, g in _pairs(rc):
        driver = _host(g, "driver")
        if img.cuda is None:
            yield f"{c.path}.image", f"CUDA of {img.key} is unknown, so the host driver cannot be checked, got cuda null; allowed a catalog value"
            continue
        if driver is None:
            continue
        gap = _family_gap(img, g)
        if gap:
            yield f"{c.path}.image", (
                f"CUDA {img.cuda} in {img.key} needs an NVIDIA driver >= {gap[1]}, got host driver {gap[0]} {_on(g)} "
                "(unverified image or host value); allowed an image whose CUDA family the driver supports")
            continue
        exact = cuda_min_driver(img.cuda)
        if exact is not None and version_lt(driver, exact):
            yield f"{c.path}.image", (
                f"CUDA {img.cuda} in {img.key} runs on host driver {driver} {_on(g)} only under minor version compatibility "
                f"(limited features, no PTX JIT of newer PTX), got driver {driver}; "
                f"allowed a driver >= {exact} for the full feature set")


@rule("R-CTR-4", level="warning", source=f"{CUDA_FWD} (the forward-compatibility package is for drivers older than "
      "the toolkit's); awsome-distributed-training nccl-tests.Dockerfile (cuda-compat purged)", scope="cluster")
def cuda_compat_on_newer_driver(rc: ResolvedCluster) -> Iterator[Violation]:
    """An image that carries ``cuda-compat`` libraries built from an older driver than the host's fails CUDA
    initialisation (errors 803/804) if they reach the loader path (the image's entrypoint adds them): the
    rendered job runs without the entrypoint; a job started with ``--container-entrypoint`` may not."""
    for c, img, g in _pairs(rc):
        driver = _host(g, "driver")
        compat = cuda_min_driver(img.cuda) if img.cuda else None
        if img.cuda_compat and driver and compat and major(driver) > major(compat):
            yield f"{c.path}.image", (
                f"{img.key} carries CUDA forward-compatibility libraries for driver R{major(compat)}, "
                f"older than the host driver {driver} {_on(g)}, got cuda_compat true; "
                "allowed them only off the loader path: run it without --container-entrypoint (the rendered job does)")


# ---- NCCL over EFA ---------------------------------------------------------------------------------------------
def _plugin_for(c: ResolvedContainer, img: ContainerImage, g: ResolvedGroup) -> tuple[str | None, str]:
    """(the aws-ofi-nccl version the container's NCCL will load, where it comes from)."""
    if c.mounts_host_plugin:
        return _host(g, "aws_ofi_nccl"), "the host's (bind-mounted by the rendered job)"
    return img.plugin_version, "the image's own"


@rule("R-CTR-5", source=f"{MB_5033} (NGC PyTorch images: no aws-ofi-nccl, NCCL_NET_PLUGIN=spcx); "
      f"{OFI_RN} (1.15.0: libnccl-net-ofi.so, NCCL_NET_PLUGIN=ofi)", scope="cluster",
      requires="runs_slurm")
def image_without_plugin_reaches_host_plugin(rc: ResolvedCluster) -> Iterator[Violation]:
    """An image without aws-ofi-nccl on an EFA group uses the host's, bind-mounted with libfabric, and selected
    with ``NCCL_NET_PLUGIN=ofi`` over the image's own default (NGC: ``spcx``). That short name exists from
    aws-ofi-nccl 1.15.0; with an older or unknown host plugin NCCL stays on sockets."""
    for c, img, g in _pairs(rc):
        if not g.spec.efa_enabled or img.bundles_plugin is not False or not img.verified("aws_ofi_nccl"):
            continue
        host = _host(g, "aws_ofi_nccl")
        if host is None or version_lt(host, PLUGIN_SHORT_NAME_SINCE):
            default = f" (its NCCL_NET_PLUGIN default is {img.nccl_net_plugin_default})" if img.nccl_net_plugin_default else ""
            yield f"{c.path}.image", (
                f"{img.key} carries no aws-ofi-nccl{default}, and the host's plugin cannot be selected by name {_on(g)}, "
                f"got host aws-ofi-nccl {host or 'unknown'}; "
                f"allowed a host aws-ofi-nccl >= {PLUGIN_SHORT_NAME_SINCE} or an image that carries the plugin "
                "(NCCL would fall back to sockets)")


@rule("R-CTR-6", level="warning", source=f"{OFI_RN} (NCCL version each release is tested with)", scope="cluster",
      requires="runs_slurm")
def plugin_tested_with_image_nccl(rc: ResolvedCluster) -> Iterator[Violation]:
    """The aws-ofi-nccl the container's NCCL loads (its own or the host's) should have been tested with an NCCL at
    least as new; unknown NCCL, plugin or bundling cannot be checked."""
    for c, img, g in _pairs(rc):
        if not g.spec.efa_enabled:
            continue
        plugin, origin = _plugin_for(c, img, g)
        if img.bundles_plugin is None:
            yield f"{c.path}.image", (
                f"whether {img.key} carries aws-ofi-nccl is unknown {_on(g)}, got aws_ofi_nccl null; "
                f"allowed a catalog value (the rendered job bind-mounts the host's {' and '.join(HOST_EFA_DIRS)})")
        if img.nccl is None or plugin is None:
            yield f"{c.path}.image", (
                f"NCCL {img.nccl or 'unknown'} of {img.key} cannot be checked against {origin} aws-ofi-nccl "
                f"{plugin or 'unknown'} {_on(g)}, got an unknown version; allowed catalog values for both")
            continue
        tested = plugin_max_tested_nccl(plugin)
        if tested is not None and compare_versions(img.nccl, tested) > 0:
            yield f"{c.path}.image", (
                f"NCCL {img.nccl} of {img.key} is newer than {origin} aws-ofi-nccl {plugin} was tested with {_on(g)}, "
                f"got NCCL {img.nccl}; allowed NCCL <= {tested} or a newer plugin")


@rule("R-CTR-13", source="https://github.com/aws/aws-ofi-nccl/blob/master/src/nccl_ofi_net.cpp ('EFA provider "
      "requires at least libfabric version 1.22.0'; the plugin selects the efa provider of its libfabric)",
      scope="cluster", requires="runs_slurm")
def image_plugin_has_efa_provider(rc: ResolvedCluster) -> Iterator[Violation]:
    """An image that brings its own aws-ofi-nccl keeps its own libfabric (the host's is not mounted): on an EFA
    group that libfabric must have the efa provider (the EFA installer's ``/opt/amazon/efa``)."""
    for c, img, g in _pairs(rc):
        if g.spec.efa_enabled and img.bundles_plugin and img.efa_userspace is False and img.verified("efa_userspace"):
            yield f"{c.path}.image", (
                f"{img.key} carries aws-ofi-nccl {img.plugin_version or ''} without an EFA libfabric {_on(g)}, "
                "got efa_userspace false; allowed an image built with the EFA installer (libfabric with the efa provider)")


@rule("R-CTR-7", source="catalog/data/software.yaml known_bad.ofi-broadcast-hang: "
      "https://github.com/aws/deep-learning-containers/pull/6551; https://github.com/aws/deep-learning-containers/pull/6668 "
      "(aws-ofi-nccl 1.18 broadcast hang, fixed in 1.20.0)", scope="cluster")
def image_plugin_known_bad(rc: ResolvedCluster) -> Iterator[Violation]:
    hang = known_bad("ofi-broadcast-hang")
    for c, img, g in _pairs(rc):
        v = img.plugin_version
        if g.spec.efa_enabled and v and hang.matches({"aws_ofi_nccl": v}):
            yield f"{c.path}.image", (
                f"{img.key} carries aws-ofi-nccl {v}, which hangs large inter-node NCCL broadcasts {_on(g)}, "
                f"got aws-ofi-nccl {v}; allowed an image with aws-ofi-nccl >= 1.20.0 (EFA installer >= 1.49.0)")


@rule("R-CTR-12", source=f"{MB_5033}; https://github.com/NVIDIA-NeMo/RL/issues/1973 (no plugin on the loader path: "
      "NCCL falls back to sockets on EFA)", scope="cluster", orchestrators=("hyperpod-eks",))
def pod_image_carries_plugin(rc: ResolvedCluster) -> Iterator[Violation]:
    """On HyperPod EKS a pod sees only its image's libraries (nothing of the host's EFA stack is mounted), so an
    image on an EFA group must carry aws-ofi-nccl itself."""
    for c, img, g in _pairs(rc):
        if g.spec.efa_enabled and img.bundles_plugin is False:
            yield f"{c.path}.image", (
                f"{img.key} carries no aws-ofi-nccl and HyperPod EKS pods get none from the host {_on(g)}, "
                "got aws_ofi_nccl false; allowed an image that carries the plugin (NCCL would fall back to sockets)")


# ---- architecture and runtime --------------------------------------------------------------------------------
@rule("R-CTR-8", source=f"{CATALOG} (architectures each tag is published for)", scope="cluster")
def image_architecture(rc: ResolvedCluster) -> Iterator[Violation]:
    for c, img, g in _pairs(rc):
        arch = g.instance.cpu_architecture
        if arch not in img.cpu_architectures and img.verified("cpu_architectures"):
            yield f"{c.path}.image", (f"{img.key} is not published for {arch} {_on(g)}, got "
                                      f"{', '.join(img.cpu_architectures)}; allowed an image for {arch}")


@rule("R-CTR-10", level="warning", source=f"{CATALOG} (architectures each tag is published for; unverified)",
      scope="cluster")
def image_architecture_unverified(rc: ResolvedCluster) -> Iterator[Violation]:
    for c, img, g in _pairs(rc):
        arch = g.instance.cpu_architecture
        if arch not in img.cpu_architectures and not img.verified("cpu_architectures"):
            yield f"{c.path}.image", (f"{img.key} may not be published for {arch} {_on(g)} (unverified), got "
                                      f"{', '.join(img.cpu_architectures)}; allowed an image for {arch}")


@rule("R-CTR-11", level="warning", source="catalog/data/images.yaml (enroot_pyxis per official image); "
      "https://docs.aws.amazon.com/parallelcluster/latest/ug/support-container-pyxis.html", scope="cluster",
      requires="runs_slurm")
def runtime_on_image(rc: ResolvedCluster) -> Iterator[Violation]:
    """Containers need enroot and pyxis on the nodes: fmcluster enables them on ParallelCluster's official images;
    an image that ships none (the PCS-ready DLAMI, per the catalog) or whose state is unverified is reported, for a
    declared container and for the first-job container of a GPU group that declares none."""
    for c in containers_of(rc):
        for name in c.groups:
            g = rc.group(name)
            manifest = image_of(g).manifest
            if manifest is None or image_of(g).mode == "custom":
                continue
            state = manifest.components.get("enroot_pyxis")
            if state is None:
                yield f"{c.path}", (f"{manifest.title} is not known to ship enroot/pyxis, "
                                    f"and fmcluster installs none there {_on(g)}, got {c.spec.name!r}; "
                                    "allowed containers on images with enroot and pyxis "
                                    "(software.image.mode: custom with an image that has them; a bake does not add them)")
            elif not manifest.is_verified("enroot_pyxis"):
                yield f"{c.path}", (f"enroot/pyxis on {manifest.title} is unverified ({state}) {_on(g)}, got "
                                    f"{c.spec.name!r}; allowed any, check `srun --container-image` once the cluster is up")
    yield from _first_job_without_pyxis(rc)


def _first_job_without_pyxis(rc: ResolvedCluster) -> Iterator[Violation]:
    """R-CTR-11 for the example FSDP job (docs/first-job.md), which uses a container even when none is declared: where
    the group's image has no pyxis (:func:`pyxis_on_image`) fmcluster renders it to run on the host instead."""
    declared = {name for c in containers_of(rc) for name in c.groups}
    for g in rc.groups:
        if g.instance.gpu.count and g.name not in declared and not pyxis_on_image(g):
            manifest = image_of(g).manifest
            title = manifest.title if manifest else "the image"
            yield f"{g.path}.instance_type", (
                f"{title} has no enroot/pyxis (catalog), so the first FSDP job {_on(g)} runs on the host, got no "
                "container runtime; allowed as is (fsdp-train.sbatch then needs FMC_PYTHON: a Python with PyTorch "
                "on the shared file system, docs/first-job.md) or software.image.mode: custom with an image that has "
                "enroot and pyxis")


