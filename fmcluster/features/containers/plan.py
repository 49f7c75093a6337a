"""The blueprint's container images (``software.containers``), resolved once against the container catalog.

A :class:`ResolvedContainer` says which catalog image a declaration names (``None``: the catalog does not know it,
rule R-CTR-1 warns), which compute groups run it (default every group) and which group names it lists that the
blueprint does not have (rule R-CTR-9). How a job reaches the host's EFA stack from the image
(:attr:`ResolvedContainer.mounts_host_plugin`) is decided here once: the rules and the rendered example job read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fmcluster.blueprint.model import Blueprint, ContainerSpec
from fmcluster.catalog.containers import ContainerImage, default_example_image, find_container_image
from fmcluster.features.node.plan_image import image_of

if TYPE_CHECKING:  # the resolved cluster holds this module's plan: typing only
    from fmcluster.orchestrators.profile import OrchestratorProfile
    from fmcluster.resolved import ResolvedCluster, ResolvedGroup

#: Host directories of the EFA installer's libfabric and aws-ofi-nccl (aws-efa-installer; the DLC Dockerfiles
#: put the same paths on LD_LIBRARY_PATH: aws/deep-learning-containers docker/pytorch/Dockerfile.cuda).
HOST_EFA_DIRS = ("/opt/amazon/efa", "/opt/amazon/ofi-nccl")


@dataclass(frozen=True)
class ResolvedContainer:
    """One ``software.containers`` entry.

    Attributes:
        spec: the blueprint entry.
        index: its position (YAML path ``software.containers[index]``).
        catalog: the catalog image it names, or ``None`` when the catalog does not know it.
        groups: names of the compute groups that run it (the blueprint's, in blueprint order).
        unknown_groups: names in ``spec.groups`` that are not compute groups.
    """

    spec: ContainerSpec
    index: int
    catalog: ContainerImage | None
    groups: tuple[str, ...]
    unknown_groups: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"software.containers[{self.index}]"

    @property
    def image(self) -> str:
        """The URI ``srun --container-image`` takes (the catalog's for a catalog key)."""
        return self.catalog.image if self.catalog is not None else self.spec.image

    @property
    def mounts_host_plugin(self) -> bool:
        """True when jobs must reach the host's aws-ofi-nccl and libfabric (:data:`HOST_EFA_DIRS` bind-mounted):
        the image carries no plugin, or the catalog does not say whether it does. An image with its own plugin
        keeps it (its plugin is built against its own libfabric)."""
        return self.catalog is None or self.catalog.bundles_plugin is not True


def containers_plan(bp: Blueprint, profile: OrchestratorProfile) -> tuple[ResolvedContainer, ...]:
    """The feature registry's ``plan`` hook (slot ``ResolvedCluster.containers``): :func:`resolve_containers` of
    ``bp`` (the same for every orchestrator ``profile``)."""
    return resolve_containers(bp)


def containers_of(rc: ResolvedCluster) -> tuple[ResolvedContainer, ...]:
    """``rc.containers`` (typed by the core as :class:`fmcluster.resolved.slots.ContainerSlot`) as this feature's
    :class:`ResolvedContainer` entries.

    Raises:
        TypeError: an entry is something else (the slot was filled by another hook: a wiring mistake).
    """
    bad = [type(c).__name__ for c in rc.containers if not isinstance(c, ResolvedContainer)]
    if bad:
        raise TypeError(f"resolved containers expected, got {', '.join(bad)}")
    return tuple(c for c in rc.containers if isinstance(c, ResolvedContainer))


def enroot_uri(uri: str) -> str:
    """The form ``srun --container-image`` (pyxis/enroot) takes: ``registry#path:tag`` when the first path component
    names a registry host (has a ``.`` or ``:``, or is ``localhost``), else unchanged (Docker Hub): ``nvcr.io/nvidia/
    pytorch:26.08-py3`` -> ``nvcr.io#nvidia/pytorch:26.08-py3`` (NVIDIA/enroot doc/cmd/import.md
    ``docker://[USER@][REGISTRY#]IMAGE[:TAG]``; https://github.com/NVIDIA/pyxis/blob/master/tests/docker_image.bats). Already-converted URIs pass."""
    if "#" in uri or "/" not in uri:
        return uri
    host, rest = uri.split("/", 1)
    return f"{host}#{rest}" if ("." in host or ":" in host or host == "localhost") else uri


def resolve_containers(bp: Blueprint) -> tuple[ResolvedContainer, ...]:
    """Every ``software.containers`` entry of ``bp``, in order."""
    names = [g.name for g in bp.compute]
    out = []
    for i, spec in enumerate(bp.software.containers):
        listed = spec.groups if spec.groups is not None else names
        out.append(ResolvedContainer(
            spec=spec, index=i, catalog=find_container_image(spec.image),
            groups=tuple(n for n in names if n in listed),
            unknown_groups=tuple(n for n in listed if n not in names)))
    return tuple(out)


def group_container(containers: tuple[ResolvedContainer, ...], group: str) -> ResolvedContainer | None:
    """The first declared container that ``group`` runs, or ``None``."""
    return next((c for c in containers if group in c.groups), None)


def example_image(containers: tuple[ResolvedContainer, ...], group: str) -> tuple[str, ContainerImage | None]:
    """``(URI, catalog image or None)`` of the image the rendered example training job of ``group`` uses: the
    group's first declared container, else the catalog's example image."""
    declared = group_container(containers, group)
    if declared is not None:
        return declared.image, declared.catalog
    default = default_example_image()
    return default.image, default


def pyxis_on_image(group: ResolvedGroup) -> bool:
    """Whether ``srun --container-image`` works on the group's nodes, from the catalog's ``enroot_pyxis`` component of
    the group's official image (``installed-disabled`` on ParallelCluster, which fmcluster enables; ``null`` on the
    PCS-ready DLAMI and the HyperPod image: not shipped or not known). A custom image, or one the catalog has no
    manifest for, is the user's: assumed to have them (R-CTR-11 is silent there too)."""
    manifest = image_of(group).manifest
    if manifest is None or image_of(group).mode == "custom":
        return True
    return manifest.components.get("enroot_pyxis") is not None


#: The folder under the shared file system a user's first jobs run from where home is not shared.
USER_JOB_DIR = "$USER/first-job"


def first_job_dir(rc: ResolvedCluster) -> str | None:
    """Where the first jobs are submitted from and write their output: ``None`` = your home, where the orchestrator
    shares it with the compute nodes (``OrchestratorProfile.home_shared``); else ``<storage.lustre.mount_point>``
    (the jobs then refuse another folder). Also ``None`` without a Lustre file system (nothing shared to use)."""
    lustre = rc.blueprint.storage.lustre
    if rc.profile.home_shared or lustre is None:
        return None
    return lustre.mount_point
