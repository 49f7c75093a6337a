"""What a node's boot fetches from outside AWS, copied once per deploy into the cluster's mirror bucket (issue 23
item 4): the nodes read it from S3 (through the VPC's S3 gateway endpoint) and never from GitHub at boot.

A :class:`MirrorObject` is one file: where it comes from, the S3 key it is read from, and the sha256 the catalog
pins (nccl-tests: ``catalog/data/software.yaml`` ``artifacts.nccl_tests``; node_exporter:
:data:`fmcluster.features.observability.pins.NODE_EXPORTER`). The copy is made by ``Custom::FmclusterMirror``
(:mod:`fmcluster.features.node.construct_mirror`) at deploy time, so synthesis stays offline. An object without
a pin would have its sha256 recorded by the deploy (the handler says so); every object listed today has a pin.

Bucket name: ``fmc-mirror-<account>-<suffix>`` with ``suffix`` derived from the cluster name and Region
(:func:`fmcluster.resolved.mirror.mirror_bucket_suffix`), so a node finds it from its instance identity document (its account) without a
lookup, and the template names it with ``AWS::AccountId``. Not mirrored yet (still fetched at boot): NVIDIA's CUDA
repository for NCCL in official mode, and the head node's Prometheus, Alertmanager, Grafana, Go toolchain and
Slurm exporter source (docs/software.md, "No internet at boot").
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.catalog.software import nccl_tests_artifact
from fmcluster.features.node.plan_image import image_of
from fmcluster.features.observability.pins import NODE_EXPORTER
from fmcluster.resolved.cluster import ResolvedCluster
from fmcluster.resolved.mirror import mirror_key

#: Debian architecture names of the release archives per EC2 CPU architecture.
ARCHIVE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@dataclass(frozen=True)
class MirrorObject:
    """One file of the mirror.

    Attributes:
        component: what it is (``nccl-tests``, ``node_exporter``).
        url: where the deploy downloads it from.
        key: the S3 key nodes read (``mirror/<component>/<file name>``).
        sha256: the catalog's pin (lower-case hex), or ``None`` (the deploy records the hash it measured).
        optional: ``True`` when a node does without it (a failed download is reported, never fatal).
    """

    component: str
    url: str
    key: str
    sha256: str | None
    optional: bool

    def as_property(self) -> dict[str, str]:
        """The custom resource's entry (strings only: CloudFormation passes properties as strings)."""
        return {"Url": self.url, "Key": self.key, "Sha256": self.sha256 or "", "Optional": str(self.optional).lower()}


def mirror_objects(rc: ResolvedCluster) -> list[MirrorObject]:
    """The files the compute nodes' boot would fetch from outside AWS, in a stable order: the nccl-tests source
    when a group builds it at boot, node_exporter per CPU architecture when metrics are on. Empty: no mirror."""
    out: dict[str, MirrorObject] = {}
    if any("nccl_tests" in image_of(g).boot_path for g in rc.groups):  # the boot builds nccl-tests
        tests = nccl_tests_artifact()
        out.setdefault("nccl-tests", MirrorObject("nccl-tests", tests.url, mirror_key("nccl-tests", tests.url),
                                                  tests.sha256 or None, optional=True))
    if rc.blueprint.observability.metrics != "none":
        for arch in sorted({g.instance.cpu_architecture for g in rc.groups}):
            a = ARCHIVE_ARCH[arch]
            url = NODE_EXPORTER.url_for(a)
            out.setdefault(url, MirrorObject("node_exporter", url, mirror_key("node_exporter", url),
                                             NODE_EXPORTER.sha256[a], optional=True))
    return list(out.values())
