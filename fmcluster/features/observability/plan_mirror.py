"""What the monitoring install reads from the cluster's mirror bucket instead of the internet (issue 23 item 4; the
mirror itself: :mod:`fmcluster.features.node.plan_mirror`): on the head node Prometheus, node_exporter, and when
self-hosted Alertmanager and Grafana (release archives with a pinned sha256, :mod:`.pins`), and the Slurm exporter's
prebuilt release archive (sha256 read at deploy time from the release's checksum list, :data:`.pins.SLURM_EXPORTER`);
on GPU compute nodes the dcgm-exporter package file (:func:`dcgm_exporter_mirror_objects`).

The head node's CPU architecture is not in the resolved model (each orchestrator picks its head, controller or
login instance), so every archive is mirrored for both architectures (:data:`.pins.ARCHES`); the script picks its
own with ``uname -m``. A compute group's OS and architecture are known, so its package files are mirrored for them
only. Every object is optional: the monitoring install never fails the node.
"""

from __future__ import annotations

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog.software import cuda_repository
from fmcluster.features.observability import pins
from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.resolved import ResolvedCluster, ResolvedGroup
from fmcluster.resolved.mirror import MirrorObject, mirror_key, repository_package

#: The mirror's component name (the key's folder) of the dcgm-exporter package files.
DCGM_EXPORTER_COMPONENT = "dcgm-exporter"


def fmcluster_collects(bp: Blueprint, profile: OrchestratorProfile) -> bool:
    """Metrics are on and fmcluster's own exporters and Prometheus collect them (``OrchestratorProfile.
    metrics_collector`` ``head_node``; on HyperPod EKS the observability add-on runs its exporters as pods, on the same
    ports). The node feature's ``ResolvedImage.exporters`` reads it too."""
    return bp.observability.enabled and profile.metrics_collector == "head_node"


def head_archives(metrics: str) -> tuple[pins.Archive, ...]:
    """The pinned archives the head node installs for ``metrics`` (``managed``: Prometheus agent and node_exporter;
    ``self_hosted``: also Alertmanager and Grafana)."""
    both = (pins.PROMETHEUS, pins.NODE_EXPORTER)
    return both + ((pins.ALERTMANAGER, pins.GRAFANA) if metrics == "self_hosted" else ())


def head_mirror_objects(rc: ResolvedCluster) -> tuple[MirrorObject, ...]:
    """The head node's mirror objects, or ``()`` when fmcluster runs no head-node collector (metrics off, or the
    HyperPod observability add-on collects)."""
    if not fmcluster_collects(rc.blueprint, rc.profile):
        return ()
    out = [MirrorObject(a.name, a.url_for(arch), mirror_key(a.name, a.url_for(arch)), a.sha256[arch], optional=True)
           for a in head_archives(rc.blueprint.observability.metrics) for arch in pins.ARCHES]
    se = pins.SLURM_EXPORTER
    out += [MirrorObject(se.name, se.url_for(arch), mirror_key(se.name, se.url_for(arch)), None, optional=True,
                         index="checksums", index_url=se.checksums_url) for arch in pins.ARCHES]
    return tuple(out)


def dcgm_exporter_mirror_objects(rc: ResolvedCluster, group: ResolvedGroup) -> tuple[MirrorObject, ...]:
    """The dcgm-exporter package file(s) of :data:`.pins.DCGM_EXPORTER` (names and upstream version from the pin) for a
    GPU group whose nodes run fmcluster's exporters, for the group's OS and CPU architecture, from NVIDIA's CUDA
    repository (:func:`fmcluster.catalog.software.cuda_repository`, where NVIDIA's install guide installs the
    ``datacenter-gpu-manager-exporter`` package from: https://docs.nvidia.com/datacenter/dcgm/latest/installation/
    install-dcgm-exporter.html). The sha256 comes from the repository's index at deploy time (apt ``Packages.gz`` /
    dnf primary, as NCCL's), matching ``<version>-*`` (any packaging revision; UNVERIFIED offline: the exact
    version string NVIDIA's index carries for 4.7.1, so a package the index lists under another form is skipped by the
    deploy and reported missing on the node). Optional: GPU metrics are monitoring, never a reason to fail a
    deployment or a node. Keys ``mirror/dcgm-exporter/<os>/<arch>/<package>-<version>.<deb|rpm>``; empty for a group
    without GPUs or when fmcluster's exporters do not run.

    DCGM itself is not mirrored: an image without DCGM 4 gets no GPU metrics (the exporter script says so). DCGM 4's
    packages split by CUDA major version (``datacenter-gpu-manager-4-cuda<major>``, chosen from the driver on the
    node, https://docs.nvidia.com/datacenter/dcgm/latest/installation.html) plus a proprietary part, and their full
    dependency set in NVIDIA's repository was not verified offline; every image in the catalog ships DCGM 4
    (``components.dcgm`` in fmcluster/catalog/data/images.yaml)."""
    if not fmcluster_collects(rc.blueprint, rc.profile) or group.instance.gpu.count == 0:
        return ()
    os_name, arch, pin = rc.blueprint.software.os_name, group.instance.cpu_architecture, pins.DCGM_EXPORTER
    repo = cuda_repository(os_name, arch)
    return tuple(repository_package(DCGM_EXPORTER_COMPONENT, repo.url, os_name, arch, name,
                                    version_glob=f"{pin.version}-*", key_version=pin.version, optional=True)
                 for name in pin.packages)
