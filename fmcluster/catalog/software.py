"""Known-good software stacks (driver, Fabric Manager, CUDA, NCCL, EFA installer, GDRCopy).

Data lives in ``catalog/data/software.yaml`` with a source per version
(research: shared/reference/version-matrix.md sections 1 and 1a).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

import yaml

_DATA = "data/software.yaml"
COMPONENTS = ("driver", "fabric_manager", "cuda", "nccl", "efa_installer", "gdrcopy")


@dataclass(frozen=True)
class SoftwareStack:
    """One resolved set of versions. ``libfabric``/``aws_ofi_nccl`` are what the EFA installer bundles
    (``None`` where the bundle table does not know)."""

    name: str
    description: str
    driver: str
    fabric_manager: str | None
    kernel_modules: str
    cuda: str
    nccl: str
    efa_installer: str
    gdrcopy: str
    families: tuple[str, ...]
    cpu_architectures: tuple[str, ...]
    os: tuple[str, ...]
    sources: dict[str, str]

    @property
    def libfabric(self) -> str | None:
        return efa_bundle(self.efa_installer).get("libfabric")

    @property
    def aws_ofi_nccl(self) -> str | None:
        return efa_bundle(self.efa_installer).get("aws_ofi_nccl")

    def with_overrides(self, overrides: dict[str, str]) -> SoftwareStack:
        """A copy with component versions replaced (keys from :data:`COMPONENTS`)."""
        return replace(self, **overrides) if overrides else self

    def versions(self) -> dict[str, str | None]:
        """Every resolved version, including the EFA installer's bundled components."""
        out: dict[str, str | None] = {c: getattr(self, c) for c in COMPONENTS}
        out["libfabric"] = self.libfabric
        out["aws_ofi_nccl"] = self.aws_ofi_nccl
        return out


@cache
def _raw() -> dict:
    return yaml.safe_load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text())


def default_stack_name() -> str:
    return str(_raw()["default_stack"])


def known_stacks() -> list[str]:
    return list(_raw()["stacks"])


def get_stack(name: str) -> SoftwareStack:
    """The named known-good stack. Raises ``KeyError`` for an unknown name."""
    raw = _raw()
    d = raw["stacks"][name]
    urls = raw["sources"]
    return SoftwareStack(
        name=name,
        description=d["description"],
        driver=str(d["driver"]),
        fabric_manager=None if d["fabric_manager"] is None else str(d["fabric_manager"]),
        kernel_modules=d["kernel_modules"],
        cuda=str(d["cuda"]),
        nccl=str(d["nccl"]),
        efa_installer=str(d["efa_installer"]),
        gdrcopy=str(d["gdrcopy"]),
        families=tuple(d["families"]),
        cpu_architectures=tuple(d["cpu_architectures"]),
        os=tuple(d["os"]),
        sources={k: urls[v] for k, v in d["sources"].items()},
    )


def efa_bundle(efa_installer: str) -> dict[str, str | None]:
    """libfabric and aws-ofi-nccl bundled by an EFA installer version ({} when unknown)."""
    return dict(_raw()["efa_installer_bundles"].get(efa_installer, {}))
