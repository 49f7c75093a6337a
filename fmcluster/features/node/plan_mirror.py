"""What a node's boot fetches from outside AWS, copied once per deploy into the cluster's mirror bucket (issue 23
item 4): the nodes read it from S3 (through the VPC's S3 gateway endpoint) and never from GitHub at boot.

A :class:`~fmcluster.resolved.mirror.MirrorObject` is one file: where it comes from, the S3 key it is read from,
and how its sha256 is known:

- pinned in the catalog: nccl-tests (``catalog/data/software.yaml`` ``artifacts.nccl_tests``), node_exporter and
  the head node's Prometheus, Alertmanager and Grafana (:mod:`fmcluster.features.observability.pins`, their
  upstream ``sha256sums.txt``);
- read at deploy time from the publisher's own index, because no pin exists offline: NCCL's ``.deb``/``.rpm``
  (official mode) and the GPU nodes' dcgm-exporter package from NVIDIA's CUDA repository index (apt ``Packages`` /
  dnf ``repodata`` primary), the Slurm
  exporter's release archive from its release's checksum list. The deploy checks the download against that hash
  and writes it next to the object (``<key>.sha256``); the node checks what it reads from S3 against it.

The copy is made by ``Custom::FmclusterMirror`` (:mod:`fmcluster.features.node.construct_mirror`) at deploy
time, so synthesis stays offline.

Bucket name: ``fmc-mirror-<account>-<suffix>`` with ``suffix`` derived from the cluster name and Region
(:func:`fmcluster.resolved.mirror.mirror_bucket_suffix`), so a node finds it from its instance identity document (its account) without a
lookup, and the template names it with ``AWS::AccountId`` (docs/software.md, "No internet at boot").
"""

from __future__ import annotations

from fmcluster.catalog.software import cuda_repository, nccl_tests_artifact
from fmcluster.features.node.plan_image import image_of
from fmcluster.features.node.plan_packages import package_plan
from fmcluster.features.observability.plan_mirror import dcgm_exporter_mirror_objects, head_mirror_objects
from fmcluster.resolved.cluster import ResolvedCluster, ResolvedGroup
from fmcluster.resolved.mirror import MirrorObject, mirror_key, repository_package

__all__ = ["MirrorObject", "mirror_objects", "nccl_mirror_objects"]


def nccl_mirror_objects(rc: ResolvedCluster, group: ResolvedGroup) -> tuple[MirrorObject, ...]:
    """NCCL's package files for ``group`` when its boot installs NCCL (official mode): the runtime and development
    packages of :func:`fmcluster.features.node.plan_packages.package_plan` (names and version glob, the catalog's
    NCCL version), for the group's OS and CPU architecture, from NVIDIA's CUDA repository
    (:func:`fmcluster.catalog.software.cuda_repository`). Required (``optional=False``): the node cannot run without
    NCCL, so a package the deploy cannot find or check fails the deployment with its reason. Keys:
    ``mirror/nccl/<os>/<arch>/<package>-<NCCL version>.<deb|rpm>``; the sha256 comes from the repository index at
    deploy time (:data:`fmcluster.resolved.mirror.INDEX_KINDS`). Empty when the group's boot does not install NCCL."""
    stack = rc.software
    if stack is None or not any(i.startswith("nccl ") for i in image_of(group).installs_at_boot):
        return ()
    os_name, arch = rc.blueprint.software.os_name, group.instance.cpu_architecture
    repo = cuda_repository(os_name, arch)
    return tuple(repository_package("nccl", repo.url, os_name, arch, p.name, version_glob=p.version,
                                    key_version=stack.nccl.split("-")[0], optional=False)
                 for p in package_plan(os_name, stack.driver, stack.cuda, stack.nccl).nccl)


def mirror_objects(rc: ResolvedCluster) -> list[MirrorObject]:
    """The files the nodes' boot would fetch from outside AWS, in a stable order: NCCL's packages per group whose
    boot installs NCCL (:func:`nccl_mirror_objects`), the nccl-tests source when a group builds it at boot, the
    dcgm-exporter package per GPU group
    (:func:`fmcluster.features.observability.plan_mirror.dcgm_exporter_mirror_objects`), then the head node's monitoring stack
    (:func:`fmcluster.features.observability.plan_mirror.head_mirror_objects`: node_exporter for both CPU
    architectures, which the compute nodes read too, exactly when fmcluster's own exporters run). Empty: no mirror."""
    out: dict[str, MirrorObject] = {}
    found = list(nccl_mirror_objects(rc, g) for g in rc.groups)
    if any("nccl_tests" in image_of(g).boot_path for g in rc.groups):  # the boot builds nccl-tests
        tests = nccl_tests_artifact()
        found.append((MirrorObject("nccl-tests", tests.url, mirror_key("nccl-tests", tests.url), tests.sha256 or None,
                                   optional=True),))
    found.extend(dcgm_exporter_mirror_objects(rc, g) for g in rc.groups)
    found.append(head_mirror_objects(rc))
    for objects in found:
        for o in objects:
            out.setdefault(o.key, o)
    return list(out.values())
