"""Base images fmcluster boots and what each one ships (``catalog/data/images.yaml``).

An :class:`ImageManifest` describes one orchestrator's official image (per version for ParallelCluster):
the GPU stack it carries (driver, kernel-module flavour, Fabric Manager, IMEX, CUDA, NCCL, EFA installer,
GDRCopy, DCGM), how the instance-store NVMe is handled, which services own the GPUs, whether a Lustre
client is present per OS, and how the image is referenced at deploy. Every value has a source key; values
in ``unverified`` only warn. This module parses and looks up; the image-mode rules live in
``fmcluster.features.node.rules_image`` and the per-group image facts in ``fmcluster.features.node.plan_image``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DATA = "data/images.yaml"

#: Components an image manifest records, in the order the plan and the boot check print them.
IMAGE_COMPONENTS = ("driver", "kernel_modules", "fabric_manager", "imex", "cuda", "nccl", "efa_installer",
                    "gdrcopy", "dcgm", "nccl_tests", "enroot_pyxis")
#: Components of the GPU stack fmcluster never installs while a node boots (official and bake modes).
GPU_STACK = ("driver", "fabric_manager", "imex", "cuda", "efa_installer", "gdrcopy")

ReferenceKind = Literal["parallelcluster", "ssm", "hyperpod"]
NvmeKind = Literal["parallelcluster-ephemeral", "dlami-raid", "none"]
#: How ``fmcluster plan`` names each reference kind (``{parameter}``: the SSM parameter for the node's CPU
#: architecture; ``{version}``: the image's ParallelCluster version). The meaning of each kind: images.yaml's header.
REFERENCE_TEXT: dict[ReferenceKind, str] = {
    "ssm": "SSM parameter {parameter}",
    "parallelcluster": "ParallelCluster Image.Os for version {version}",
    "hyperpod": "HyperPod default image",
}
#: Reference kinds whose AMI is found by a DescribeImages name filter (:func:`parallelcluster_ami_name_filter`), which
#: bake mode caches in ``cdk.context.json`` (``fmcluster image lookup``): no public SSM parameter names it.
NAME_FILTER_KINDS: frozenset[ReferenceKind] = frozenset({"parallelcluster"})


@dataclass(frozen=True)
class ImageReference:
    """How an image is chosen at deploy time.

    Attributes:
        kind: ``parallelcluster`` (``Image.Os`` for the cluster's ParallelCluster version), ``ssm`` (a public
            SSM parameter CloudFormation resolves at deploy) or ``hyperpod`` (HyperPod's default image).
        parameter: SSM parameter name with ``{arch}`` (``x86_64`` / ``arm64``) for ``ssm``; else ``None``.
        moving: True when the reference follows the newest release (``latest``): two deploys a month apart can
            boot different stacks.
    """

    kind: ReferenceKind
    parameter: str | None
    moving: bool

    def parameter_for(self, arch: str) -> str | None:
        """The SSM parameter for a CPU architecture (``x86_64`` or ``arm64``), or ``None``."""
        return None if self.parameter is None else self.parameter.format(arch=arch)

    @property
    def by_name_filter(self) -> bool:
        """True when the AMI is found by a name filter (:data:`NAME_FILTER_KINDS`), not a parameter or a default."""
        return self.kind in NAME_FILTER_KINDS

    def describe(self, arch: str, version: str | None) -> str:
        """How the plan names this reference (:data:`REFERENCE_TEXT`) for a node of CPU architecture ``arch``;
        ``version``: the image's ParallelCluster version (``ImageManifest.parallelcluster_version``)."""
        return REFERENCE_TEXT[self.kind].format(parameter=self.parameter_for(arch), version=version)


@dataclass(frozen=True)
class NvmeHandling:
    """What the image does with the instance-store NVMe: ``kind`` and the mount point it uses (``None`` for
    ``none``: the node's scratch step builds the array itself)."""

    kind: NvmeKind
    path: str | None


@dataclass(frozen=True)
class ImageManifest:
    """One base image and what it ships.

    Attributes:
        key: catalog key, e.g. ``parallelcluster-3.16.3``.
        title: human name.
        orchestrators: orchestrator profile keys that boot it (``parallelcluster``, ``pcs``, ``hyperpod-slurm``,
            ``hyperpod-eks``).
        parallelcluster_version: the ParallelCluster version whose official AMI this is, else ``None``.
        os: operating systems it exists for; ``default_os`` is the first.
        cpu_architectures: ``x86_64`` and/or ``arm64``.
        reference: :class:`ImageReference`.
        stack: the catalog software stack that describes its GPU stack (``catalog/data/software.yaml``).
        components: component -> version (or ``installed-disabled`` style state); ``None`` = not shipped.
        lustre_client: OS -> whether the image has a Lustre client.
        nvme: :class:`NvmeHandling`.
        gpu_services: systemd units the image owns around the GPUs; fmcluster never stops them.
        sources: field -> URL or repository path.
        unverified: fields whose value is not confirmed by a primary source (boot check reports, rules warn).
    """

    key: str
    title: str
    orchestrators: tuple[str, ...]
    parallelcluster_version: str | None
    os: tuple[str, ...]
    cpu_architectures: tuple[str, ...]
    reference: ImageReference
    stack: str
    components: dict[str, str | None]
    lustre_client: dict[str, bool]
    nvme: NvmeHandling
    gpu_services: tuple[str, ...]
    sources: dict[str, str]
    unverified: frozenset[str]

    @property
    def default_os(self) -> str:
        return self.os[0]

    def ships(self, component: str) -> bool:
        """True when the image carries ``component`` (any version)."""
        return self.components.get(component) is not None

    def has_lustre_client(self, os_name: str) -> bool:
        return bool(self.lustre_client.get(os_name, False))

    def is_verified(self, field_name: str) -> bool:
        return field_name not in self.unverified


@cache
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text(), Loader=_YAML_LOADER)
    return data


def image_source_url(key: str) -> str:
    """URL / repository path of a source key used in images.yaml."""
    return str(_raw()["sources"][key])


def known_images() -> list[str]:
    return list(_raw()["images"])


def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


@cache
def get_image(key: str) -> ImageManifest:
    """The manifest called ``key``. Raises ``KeyError`` for an unknown key."""
    d = _raw()["images"][key]
    ref = d["reference"]
    nvme = d["nvme"]
    return ImageManifest(
        key=key,
        title=str(d["title"]),
        orchestrators=tuple(d["orchestrators"]),
        parallelcluster_version=_str_or_none(d.get("parallelcluster_version")),
        os=tuple(d["os"]),
        cpu_architectures=tuple(d["cpu_architectures"]),
        reference=ImageReference(kind=ref["kind"], parameter=ref.get("parameter"), moving=bool(ref["moving"])),
        stack=str(d["stack"]),
        components={c: _str_or_none(d["components"].get(c)) for c in IMAGE_COMPONENTS},
        lustre_client={str(k): bool(v) for k, v in d["lustre_client"].items()},
        nvme=NvmeHandling(kind=nvme["kind"], path=nvme.get("path")),
        gpu_services=tuple(d["gpu_services"]),
        sources={k: image_source_url(v) for k, v in d["sources"].items()},
        unverified=frozenset(d.get("unverified", ())),
    )


def official_image(orchestrator: str, parallelcluster_version: str | None = None) -> ImageManifest | None:
    """The official image of an orchestrator profile key (for ParallelCluster: of that version), or ``None``
    when the catalog has no manifest for it (e.g. ParallelCluster 3.15.0)."""
    for key in known_images():
        m = get_image(key)
        if orchestrator not in m.orchestrators:
            continue
        if m.parallelcluster_version is not None and m.parallelcluster_version != parallelcluster_version:
            continue
        return m
    return None


def image_stacks() -> frozenset[str]:
    """Software stacks that describe an official image (a bake or custom default never picks these)."""
    return frozenset(get_image(k).stack for k in known_images())


def bakeable_stacks() -> list[str]:
    """Catalog stacks a blueprint can pin and bake (every download pinned), in catalog order: all but
    :func:`image_stacks`."""
    from fmcluster.catalog.software import known_stacks

    return [s for s in known_stacks() if s not in image_stacks()]


@dataclass(frozen=True)
class BootLimit:
    """How long an orchestrator lets a node configure: ``limit_s`` (``None`` when undocumented), source, note."""

    limit_s: int | None
    source: str
    note: str


def boot_limit(orchestrator: str) -> BootLimit:
    """The boot limit of an orchestrator profile key. Raises ``KeyError`` for an unknown key."""
    d = _raw()["boot_limits"][orchestrator]
    return BootLimit(limit_s=None if d["limit_s"] is None else int(d["limit_s"]),
                     source=image_source_url(d["source"]), note=str(d["note"]))


#: Name part of ParallelCluster's official AMIs per OS: ``aws-parallelcluster-<version>-<part>-<arch>*``, owner
#: ``amazon``, state ``available``; the newest non-deprecated image wins. Source: aws/aws-parallelcluster 3.16.1
#: ``cli/src/pcluster/constants.py`` ``OS_TO_IMAGE_NAME_PART_MAP`` and ``cli/src/pcluster/aws/ec2.py``
#: ``get_official_image_id`` / ``_find_valid_official_image`` (read from the installed package).
PARALLELCLUSTER_AMI_NAME_PART = {
    "ubuntu-22.04": "ubuntu-2204-lts-hvm",
    "ubuntu-24.04": "ubuntu-2404-lts-hvm",
    "amazon-linux-2023": "amzn2023-hvm",
}
#: Owner alias of ParallelCluster's official AMIs (``Owners`` of DescribeImages; same source).
PARALLELCLUSTER_AMI_OWNER = "amazon"


def parallelcluster_ami_name_filter(version: str, os_name: str, arch: str) -> str:
    """DescribeImages ``name`` filter of ParallelCluster ``version``'s official AMI for ``os_name`` (fmcluster OS
    name, e.g. ``ubuntu-22.04``) and ``arch`` (``x86_64`` / ``arm64``). Raises ``KeyError`` for an OS without one."""
    return f"aws-parallelcluster-{version}-{PARALLELCLUSTER_AMI_NAME_PART[os_name]}-{arch}*"
