"""Container images a blueprint may declare (``software.containers``) and what each carries
(``catalog/data/containers.yaml``): AWS Deep Learning Containers and NVIDIA NGC PyTorch tags with their CUDA, NCCL,
EFA installer, aws-ofi-nccl, CPU architectures and whether they carry the CUDA forward-compatibility libraries.

Every value has a source key; values in an entry's ``unverified`` only warn, ``None`` means unknown. This module
parses, validates the data (:func:`load_container_catalog` raises :class:`ContainerCatalogError` listing every
problem) and looks up; the container-vs-host rules live in ``fmcluster.features.containers.rules`` and the
per-blueprint resolution in ``fmcluster.features.containers.plan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from fmcluster.catalog.software import major, parse_version

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DATA = "data/containers.yaml"

FAMILIES = ("dlc", "ngc")
ARCHITECTURES = ("x86_64", "arm64")
#: Fields whose value may be listed in ``unverified`` and given a source.
FIELDS = ("image", "os", "cpu_architectures", "pytorch", "cuda", "nccl", "efa_installer", "aws_ofi_nccl",
          "efa_userspace", "cuda_compat", "nccl_net_plugin_default")
_VERSION_FIELDS = ("pytorch", "cuda", "nccl", "efa_installer")
#: aws-ofi-nccl installs ``libnccl-net-ofi.so`` from this release on, so ``NCCL_NET_PLUGIN=ofi`` selects it
#: (aws/aws-ofi-nccl RELEASENOTES.md 1.15.0; Makefile.am). The job environment sets that name only from here on.
PLUGIN_SHORT_NAME_SINCE = "1.15.0"


class ContainerCatalogError(ValueError):
    """The container catalog data is malformed; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class ContainerImage:
    """One catalog image.

    Attributes:
        key: catalog key, e.g. ``dlc-pytorch-2.9-cu130-ubuntu22.04``.
        title: human name.
        image: registry URI with tag (what ``srun --container-image`` takes).
        family: ``dlc`` or ``ngc``.
        os: the image's own OS.
        cpu_architectures: architectures the tag is published for (``x86_64``, ``arm64``).
        pytorch, cuda, nccl, efa_installer: versions in the image (``None``: unknown / none).
        aws_ofi_nccl: the plugin version the image carries; ``False``: it carries none; ``None``: unknown.
        efa_userspace: libfabric with the efa provider under ``/opt/amazon/efa`` (``None``: unknown).
        cuda_compat: carries the CUDA forward-compatibility libraries (``None``: unknown).
        nccl_net_plugin_default: ``NCCL_NET_PLUGIN`` set in the image's environment (``None``: none or unknown).
        sources: field -> URL / repository path.
        unverified: fields whose value no primary source confirmed (rules on them only warn).
    """

    key: str
    title: str
    image: str
    family: str
    os: str
    cpu_architectures: tuple[str, ...]
    pytorch: str | None
    cuda: str | None
    nccl: str | None
    efa_installer: str | None
    aws_ofi_nccl: str | bool | None
    efa_userspace: bool | None
    cuda_compat: bool | None
    nccl_net_plugin_default: str | None
    sources: dict[str, str]
    unverified: frozenset[str]

    @property
    def bundles_plugin(self) -> bool | None:
        """True when the image carries aws-ofi-nccl, False when it carries none, None when unknown."""
        if self.aws_ofi_nccl is None:
            return None
        return self.aws_ofi_nccl is not False

    @property
    def plugin_version(self) -> str | None:
        """The bundled aws-ofi-nccl version, or ``None`` (none or unknown)."""
        return self.aws_ofi_nccl if isinstance(self.aws_ofi_nccl, str) else None

    def verified(self, field: str) -> bool:
        """True when ``field`` has a value and a primary source confirms it."""
        return getattr(self, field) is not None and field not in self.unverified


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def _opt_bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) or v is None else None


def _check(key: str, d: Any, sources: dict[str, str]) -> list[str]:
    """Every problem of one ``images`` entry (``images.<key>.<field>: ...``)."""
    if not isinstance(d, dict):
        return [f"images.{key}: expected a mapping, got {type(d).__name__}"]
    out: list[str] = []
    where = f"images.{key}"
    known = {"title", "family", "sources", "unverified", *FIELDS}
    out += [f"{where}.{k}: unknown field; allowed {', '.join(sorted(known))}" for k in d if k not in known]
    for req in ("title", "image", "family", "os", "cpu_architectures", "sources"):
        if d.get(req) in (None, "", []):
            out.append(f"{where}.{req}: required")
    image = d.get("image")
    if isinstance(image, str) and (":" not in image.rsplit("/", 1)[-1] or " " in image):
        out.append(f"{where}.image: needs a tag (registry/path:tag), got {image!r}")
    if d.get("family") not in (None, *FAMILIES):
        out.append(f"{where}.family: got {d.get('family')!r}; allowed {', '.join(FAMILIES)}")
    archs = d.get("cpu_architectures") or []
    if not isinstance(archs, list) or any(a not in ARCHITECTURES for a in archs):
        out.append(f"{where}.cpu_architectures: got {archs!r}; allowed a list of {', '.join(ARCHITECTURES)}")
    for f in _VERSION_FIELDS:
        v = d.get(f)
        if v is not None:
            try:
                parse_version(str(v))
            except ValueError:
                out.append(f"{where}.{f}: not a version, got {v!r}")
    plugin = d.get("aws_ofi_nccl")
    if plugin is not None and plugin is not False:
        try:
            parse_version(str(plugin))
        except ValueError:
            out.append(f"{where}.aws_ofi_nccl: got {plugin!r}; allowed a version, false (none) or null (unknown)")
    for f in ("efa_userspace", "cuda_compat"):
        if d.get(f) is not None and not isinstance(d.get(f), bool):
            out.append(f"{where}.{f}: got {d.get(f)!r}; allowed true, false or null")
    unverified = d.get("unverified") or []
    out += [f"{where}.unverified: unknown field {u!r}; allowed {', '.join(FIELDS)}" for u in unverified if u not in FIELDS]
    for f, src in (d.get("sources") or {}).items():
        if f not in FIELDS:
            out.append(f"{where}.sources.{f}: unknown field; allowed {', '.join(FIELDS)}")
        if src not in sources:
            out.append(f"{where}.sources.{f}: unknown source key {src!r}")
    for f in FIELDS:
        if d.get(f) not in (None,) and f not in (d.get("sources") or {}) and f not in unverified:
            out.append(f"{where}.{f}: a value needs a source or must be listed in unverified")
    return out


def parse_container_catalog(data: Any) -> tuple[dict[str, ContainerImage], str, dict[int, str]]:
    """``(images by key, default example key, CUDA major -> minimum driver)`` from the YAML document ``data``.

    Raises:
        ContainerCatalogError: with every problem (unknown fields, missing sources, bad versions, a default
            example that is not an image, an image URI used twice).
    """
    if not isinstance(data, dict):
        raise ContainerCatalogError(["top level: expected a mapping"])
    sources = {str(k): str(v) for k, v in (data.get("sources") or {}).items()}
    raw = data.get("images") or {}
    problems = [p for k, d in raw.items() for p in _check(str(k), d, sources)]
    uris = [str(d.get("image")) for d in raw.values() if isinstance(d, dict) and d.get("image")]
    problems += [f"images: image {u!r} listed more than once" for u in sorted({u for u in uris if uris.count(u) > 1})]
    default = str(data.get("default_example", ""))
    if default not in raw:
        problems.append(f"default_example: {default!r} is not an image key; allowed {', '.join(map(str, raw))}")
    floors: dict[int, str] = {}
    for k, v in ((data.get("cuda_family_min_driver") or {}).get("table") or {}).items():
        try:
            floors[int(k)] = str(v)
            parse_version(str(v))
        except ValueError:
            problems.append(f"cuda_family_min_driver.table.{k}: not a CUDA major and driver version, got {v!r}")
    if problems:
        raise ContainerCatalogError(problems)
    images = {}
    for key, d in raw.items():
        plugin = d.get("aws_ofi_nccl")
        images[str(key)] = ContainerImage(
            key=str(key), title=str(d["title"]), image=str(d["image"]), family=str(d["family"]), os=str(d["os"]),
            cpu_architectures=tuple(d["cpu_architectures"]), pytorch=_opt_str(d.get("pytorch")),
            cuda=_opt_str(d.get("cuda")), nccl=_opt_str(d.get("nccl")), efa_installer=_opt_str(d.get("efa_installer")),
            aws_ofi_nccl=False if plugin is False else _opt_str(plugin), efa_userspace=_opt_bool(d.get("efa_userspace")),
            cuda_compat=_opt_bool(d.get("cuda_compat")), nccl_net_plugin_default=_opt_str(d.get("nccl_net_plugin_default")),
            sources={f: sources[s] for f, s in (d.get("sources") or {}).items()},
            unverified=frozenset(d.get("unverified") or ()),
        )
    return images, default, floors


@cache
def load_container_catalog() -> tuple[dict[str, ContainerImage], str, dict[int, str]]:
    """:func:`parse_container_catalog` of the packaged ``containers.yaml`` (cached)."""
    text = resources.files("fmcluster.catalog").joinpath(_DATA).read_text()
    return parse_container_catalog(yaml.load(text, Loader=_YAML_LOADER))


def known_container_images() -> list[str]:
    """Catalog keys, in file order."""
    return list(load_container_catalog()[0])


def get_container_image(key: str) -> ContainerImage:
    """The catalog image ``key``. Raises ``KeyError`` for an unknown key."""
    return load_container_catalog()[0][key]


def find_container_image(ref: str) -> ContainerImage | None:
    """The catalog image a blueprint reference names: a catalog key, or the image's registry URI with tag
    (an ``enroot`` style ``registry#path:tag`` is accepted too); ``None`` when the catalog does not know it."""
    images = load_container_catalog()[0]
    if ref in images:
        return images[ref]
    uri = ref.replace("#", "/", 1)
    return next((i for i in images.values() if i.image == uri), None)


def default_example_image() -> ContainerImage:
    """The image the rendered example training job uses when the blueprint declares none for a group."""
    images, default, _ = load_container_catalog()
    return images[default]


def cuda_family_min_driver(cuda: str) -> str | None:
    """Minimum driver of the CUDA major release family of ``cuda`` under minor version compatibility
    (``"13.4.1"`` -> ``"580"``), or ``None`` for a family the table does not know (NVIDIA CUDA Compatibility
    guide, Minor Version Compatibility, Table 1)."""
    try:
        return load_container_catalog()[2].get(major(cuda))
    except ValueError:
        return None
