"""Known-good software stacks and the facts the compatibility rules and node scripts need.

Data lives in ``catalog/data/software.yaml`` with a source per value (its ``sources`` table maps each key
to a URL or repository path). This module only parses and looks up;
the rules live in ``fmcluster.features.node.rules_software`` / ``.environment``.

Version strings are compared numerically per dotted field, ignoring suffixes such as ``-aws``,
``amzn5.0`` or a package release ``-1`` (:func:`parse_version`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: libyaml's safe loader when PyYAML has it (same result, ~10x faster on the catalog; every synth reads it).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DATA = "data/software.yaml"

#: Components a stack pins and a blueprint may override (``software.overrides``).
COMPONENTS = ("driver", "fabric_manager", "cuda", "nccl", "efa_installer", "gdrcopy")
#: Override keys beyond the version components.
EXTRA_OVERRIDES = ("aws_ofi_nccl", "kernel_modules")

#: Instance families with Blackwell GPUs (EC2 accelerated-computing instance types: B200, B300, GB200).
BLACKWELL_FAMILIES = ("p6-b200", "p6-b300", "p6e-gb200")
#: Grace-Blackwell families with an NVLink domain across nodes (R-DRV-6).
GRACE_BLACKWELL_FAMILIES = ("p6e-gb200", "p6e-gb300")
#: Hopper families (R-DRV-5).
HOPPER_FAMILIES = ("p5", "p5e", "p5en")

_LEADING = re.compile(r"^\d+(?:\.\d+)*")


# ---- versions --------------------------------------------------------------------------------
def parse_version(version: str) -> tuple[int, ...]:
    """``"2.1.0amzn5.0"`` -> ``(2, 1, 0)``; ``"1.16.3-aws"`` -> ``(1, 16, 3)``; ``"2.27.7-1"`` -> ``(2, 27, 7)``.

    Raises:
        ValueError: the string does not start with a number.
    """
    m = _LEADING.match(str(version).strip().lstrip("v"))
    if not m:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(p) for p in m.group(0).split("."))


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1; missing trailing fields count as 0 (``12.8`` == ``12.8.0``)."""
    pa, pb = parse_version(a), parse_version(b)
    n = max(len(pa), len(pb))
    pa, pb = pa + (0,) * (n - len(pa)), pb + (0,) * (n - len(pb))
    return (pa > pb) - (pa < pb)


def version_ge(a: str, b: str) -> bool:
    return compare_versions(a, b) >= 0


def version_lt(a: str, b: str) -> bool:
    return compare_versions(a, b) < 0


def same_version(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return compare_versions(a, b) == 0


def normalize_version(version: str, fields: int = 3) -> str:
    """``"12.8"`` -> ``"12.8.0"`` (numeric part only, padded to ``fields``)."""
    parts = list(parse_version(version))
    parts += [0] * (fields - len(parts))
    return ".".join(str(p) for p in parts[: max(fields, len(parts))])


def major(version: str) -> int:
    return parse_version(version)[0]


def major_minor(version: str) -> str:
    p = parse_version(version) + (0,)
    return f"{p[0]}.{p[1]}"


def driver_branch(driver: str) -> int:
    """``"570.172.08"`` -> ``570``."""
    return major(driver)


# ---- stacks ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SoftwareStack:
    """One resolved set of versions.

    ``libfabric`` is what the EFA installer bundles; ``aws_ofi_nccl`` is the installer's bundled
    plugin unless ``plugin_override`` replaces it (``None`` where the bundle table does not know).
    """

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
    plugin_override: str | None = None
    overridden: frozenset[str] = field(default_factory=frozenset)

    @property
    def libfabric(self) -> str | None:
        return efa_bundle(self.efa_installer).get("libfabric")

    @property
    def bundled_aws_ofi_nccl(self) -> str | None:
        return efa_bundle(self.efa_installer).get("aws_ofi_nccl")

    @property
    def aws_ofi_nccl(self) -> str | None:
        return self.plugin_override or self.bundled_aws_ofi_nccl

    @property
    def driver_branch(self) -> int:
        return driver_branch(self.driver)

    def with_overrides(self, overrides: dict[str, str]) -> SoftwareStack:
        """A copy with component versions replaced (keys from :data:`COMPONENTS` and
        :data:`EXTRA_OVERRIDES`); ``overridden`` records which keys the blueprint set."""
        if not overrides:
            return self
        changes: dict[str, Any] = {k: v for k, v in overrides.items() if k in COMPONENTS or k == "kernel_modules"}
        if "aws_ofi_nccl" in overrides:
            changes["plugin_override"] = overrides["aws_ofi_nccl"]
        return replace(self, **changes, overridden=frozenset(overrides))

    def versions(self) -> dict[str, str | None]:
        """Every resolved version, including the EFA installer's bundled components."""
        out: dict[str, str | None] = {c: getattr(self, c) for c in COMPONENTS}
        out["libfabric"] = self.libfabric
        out["aws_ofi_nccl"] = self.aws_ofi_nccl
        return out

    def comparable(self) -> dict[str, str | None]:
        """Versions plus kernel-module flavour: what 'the same combination' means (R-SW-4)."""
        return {**self.versions(), "kernel_modules": self.kernel_modules}


@cache
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text(), Loader=_YAML_LOADER)
    return data


def source_url(key: str) -> str:
    """URL / repo path of a source key used in software.yaml."""
    return str(_raw()["sources"][key])


def default_stack_name() -> str:
    return str(_raw()["default_stack"])


def known_stacks() -> list[str]:
    """Catalog stacks, then the stacks an organisation file added (:func:`add_overlay_stacks`)."""
    return list(_raw()["stacks"]) + [n for n in _OVERLAY if n not in _raw()["stacks"]]


def catalog_stacks() -> list[str]:
    """The stacks of ``software.yaml`` only (what docs/software.md lists)."""
    return list(_raw()["stacks"])


# ---- organisation overlay (fmcluster.validation.organisation) ---------------------------------------
#: Stacks an organisation file adds, same shape as ``software.yaml``'s ``stacks`` entries except that
#: ``sources`` maps each component to its URL (not to a source key). Process-wide: one CLI run or synth.
_OVERLAY: dict[str, dict[str, Any]] = {}


def add_overlay_stacks(stacks: dict[str, dict[str, Any]]) -> list[str]:
    """Make ``stacks`` known next to the catalog's. Returns the names refused: one the catalog already has,
    or one an earlier overlay defined differently (an organisation cannot redefine a stack)."""
    refused = []
    for name, d in stacks.items():
        if name in _raw()["stacks"] or _OVERLAY.get(name, d) != d:
            refused.append(name)
        else:
            _OVERLAY[name] = d
    return refused


def overlay_stacks() -> list[str]:
    """Names of the stacks organisation files added in this process."""
    return list(_OVERLAY)


def get_stack(name: str) -> SoftwareStack:
    """The named known-good stack (catalog or organisation overlay). Raises ``KeyError`` for an unknown name."""
    overlay = name not in _raw()["stacks"]
    d = _OVERLAY[name] if overlay else _raw()["stacks"][name]
    return SoftwareStack(
        name=name,
        description=" ".join(str(d["description"]).split()),
        driver=str(d["driver"]),
        fabric_manager=None if d["fabric_manager"] is None else str(d["fabric_manager"]),
        kernel_modules=str(d["kernel_modules"]),
        cuda=str(d["cuda"]),
        nccl=str(d["nccl"]),
        efa_installer=str(d["efa_installer"]),
        gdrcopy=str(d["gdrcopy"]),
        families=tuple(d["families"]),
        cpu_architectures=tuple(d["cpu_architectures"]),
        os=tuple(d["os"]),
        sources={k: str(v) if overlay else source_url(v) for k, v in d["sources"].items()},
    )


def known_good_sets() -> list[tuple[str, dict[str, str | None]]]:
    """``(stack name, comparable versions)`` of every catalog stack (R-SW-4)."""
    return [(n, get_stack(n).comparable()) for n in known_stacks()]


# ---- EFA installer bundles -------------------------------------------------------------------
def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def efa_bundle(efa_installer: str) -> dict[str, str | None]:
    """libfabric and aws-ofi-nccl bundled by an EFA installer version ({} when unknown)."""
    d = _raw()["efa_installer_bundles"].get(str(efa_installer))
    if d is None:
        return {}
    return {"libfabric": _str_or_none(d.get("libfabric")), "aws_ofi_nccl": _str_or_none(d.get("aws_ofi_nccl"))}


def known_efa_installers() -> list[str]:
    return [str(v) for v in _raw()["efa_installer_bundles"]]


# ---- artifacts (everything fetched by URL) ---------------------------------------------------
@dataclass(frozen=True)
class Artifact:
    """A download pinned by URL and sha256."""

    url: str
    sha256: str
    source: str


@dataclass(frozen=True)
class EfaInstallerArtifact:
    """The EFA installer tarball: URL, detached GPG signature, pinned key fingerprint, and the
    tarball's sha256 where a public source records one (``None`` otherwise)."""

    version: str
    url: str
    signature_url: str
    key_url: str
    key_fingerprint: str
    key_source: str
    sha256: str | None
    sha256_source: str | None


def driver_artifact(version: str, arch: str) -> Artifact | None:
    d = _raw()["artifacts"]["nvidia_driver"].get(str(version), {}).get(arch)
    return None if d is None else Artifact(d["url"], d["sha256"], source_url(d["source"]))


def driver_artifacts(arch: str) -> list[str]:
    """Driver versions with a pinned installer for ``arch``."""
    return [str(v) for v, per in _raw()["artifacts"]["nvidia_driver"].items() if arch in per]


def efa_installer_artifact(version: str) -> EfaInstallerArtifact:
    d = _raw()["artifacts"]["efa_installer"]
    sha = d["sha256"].get(str(version))
    return EfaInstallerArtifact(
        version=str(version),
        url=d["url"].format(version=version),
        signature_url=d["signature_url"].format(version=version),
        key_url=d["key_url"],
        key_fingerprint=d["key_fingerprint"],
        key_source=source_url(d["key_source"]),
        sha256=sha["sha256"] if sha else None,
        sha256_source=source_url(sha["source"]) if sha else None,
    )


def gdrcopy_artifact(version: str) -> Artifact | None:
    d = _raw()["artifacts"]["gdrcopy"].get(str(version))
    return None if d is None else Artifact(d["url"], d["sha256"], source_url(d["source"]))


def gdrcopy_artifacts() -> list[str]:
    return [str(v) for v in _raw()["artifacts"]["gdrcopy"]]


def aws_ofi_nccl_artifact(version: str) -> Artifact | None:
    d = _raw()["artifacts"]["aws_ofi_nccl"].get(str(version))
    return None if d is None else Artifact(d["url"], d["sha256"], source_url(d["source"]))


def aws_ofi_nccl_artifacts() -> list[str]:
    return [str(v) for v in _raw()["artifacts"]["aws_ofi_nccl"]]


@dataclass(frozen=True)
class NcclTestsArtifact:
    """The pinned nccl-tests source archive (``artifacts.nccl_tests`` in software.yaml)."""

    version: str
    url: str
    sha256: str
    source: str


def nccl_tests_artifact() -> NcclTestsArtifact:
    """The nccl-tests release the boot path (official mode) and the image build compile against the pinned
    NCCL and CUDA."""
    d = _raw()["artifacts"]["nccl_tests"]
    return NcclTestsArtifact(str(d["version"]), d["url"].format(version=d["version"]), d["sha256"],
                             source_url(d["source"]))


@dataclass(frozen=True)
class Repository:
    url: str
    key_url: str
    key_fingerprint: str
    source: str


def cuda_repository(os_name: str, arch: str) -> Repository:
    """NVIDIA's signed CUDA repository for a node OS and CPU architecture.

    ``key_fingerprint`` is the full fingerprint on Ubuntu; on Amazon Linux 2023 only the key id
    suffix is known (see software.yaml).
    """
    repos = _raw()["repositories"]["nvidia_cuda"]
    repo_arch = {"x86_64": "x86_64", "arm64": "sbsa"}[arch]
    if os_name.startswith("ubuntu"):
        d = repos["ubuntu"]
        distro = "ubuntu" + os_name.split("-")[1].replace(".", "")
        fmt = {"distro": distro, "arch": repo_arch}
        return Repository(d["url"].format(**fmt), d["key_url"].format(**fmt), d["key_fingerprint"], source_url(d["source"]))
    d = repos["amazon-linux-2023"]
    fmt = {"arch": repo_arch}
    return Repository(d["url"].format(**fmt), d["key_url"].format(**fmt), d["key_fingerprint_suffix"], source_url(d["source"]))


# ---- compatibility tables --------------------------------------------------------------------
def cuda_min_driver(cuda: str) -> str | None:
    """Minimum Linux driver for a CUDA toolkit version (R-CUDA-1), ``None`` if not in the table."""
    try:
        key = normalize_version(cuda)
    except ValueError:
        return None
    v = _raw()["cuda_min_driver"]["table"].get(key)
    return None if v is None else str(v)


def known_cuda_versions() -> list[str]:
    return [str(v) for v in _raw()["cuda_min_driver"]["table"]]


def plugin_max_tested_nccl(plugin: str) -> str | None:
    """Newest NCCL the aws-ofi-nccl release was tested with (R-OFI-NCCL-2), ``None`` if unknown."""
    for row in _raw()["plugin_tested_nccl"]["table"]:
        if version_ge(plugin, str(row["plugin_min"])) and compare_versions(plugin, str(row["plugin_max"])) <= 0:
            return str(row["nccl"])
    return None


@dataclass(frozen=True)
class PluginMinimum:
    functional: str
    tuned: str | None
    note: str


def plugin_min_for_instance(instance_type: str) -> PluginMinimum | None:
    d = _raw()["plugin_min_by_instance"]["table"].get(instance_type)
    if d is None:
        return None
    return PluginMinimum(str(d["functional"]), _str_or_none(d["tuned"]), str(d["note"]))



# ---- known-bad combinations ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownBad:
    """One known-bad combination of ``software.yaml``'s ``known_bad`` table.

    Attributes:
        key: its name (``ofi-broadcast-hang``).
        what: what fails.
        when: alternatives; each maps a component to an inclusive ``(min, max)`` version range (``max`` ``None``: open).
        fix: what to run instead.
        level: ``error`` or ``warning``.
        rule: the rule (or test) that reports it.
        sources: URLs.
    """

    key: str
    what: str
    when: tuple[dict[str, tuple[str, str | None]], ...]
    fix: str
    level: str
    rule: str
    sources: tuple[str, ...]

    def matches(self, versions: dict[str, str | None]) -> bool:
        """True when one alternative holds for ``versions`` (component -> version; a missing or ``None`` version
        never matches)."""
        return any(all(_within(versions.get(c), lo, hi) for c, (lo, hi) in alt.items()) for alt in self.when)


def _within(version: str | None, lo: str, hi: str | None) -> bool:
    if version is None:
        return False
    return version_ge(version, lo) and (hi is None or compare_versions(version, hi) <= 0)


def known_bad(key: str) -> KnownBad:
    """The entry ``key`` of the known-bad table. Raises ``KeyError`` for an unknown key."""
    d = _raw()["known_bad"][key]
    return KnownBad(
        key=key, what=" ".join(str(d["what"]).split()),
        when=tuple({c: (str(r[0]), None if r[1] is None else str(r[1])) for c, r in alt.items()} for alt in d["when"]),
        fix=" ".join(str(d["fix"]).split()), level=str(d["level"]), rule=str(d["rule"]),
        sources=tuple(source_url(k) for k in d["sources"]),
    )


def known_bad_entries() -> list[KnownBad]:
    """Every entry of the known-bad table, in file order."""
    return [known_bad(k) for k in _raw()["known_bad"]]


def known_bad_matches(versions: dict[str, str | None]) -> list[KnownBad]:
    """The entries ``versions`` (component -> version) falls into."""
    return [kb for kb in known_bad_entries() if kb.matches(versions)]
