"""Names of the cluster's mirror (issue 23 item 4): the bucket a deploy copies the boot's outside downloads into,
and the key of each file. One definition for the plan, the construct and the node scripts (which compute the bucket
from their account: ``fmc-mirror-<account id><suffix>``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MIRROR_PREFIX = "mirror"
#: Template metadata key of a resource whose contents every deployment re-creates (the mirror bucket: copies of
#: public files), so ``fmcluster diff`` does not treat replacing or moving it as losing data.
REGENERATED = "fmcluster:regenerated"
BUCKET_PREFIX = "fmc-mirror-"


def mirror_key(component: str, url: str) -> str:
    """``mirror/<component>/<file name of url>``; ``url`` may hold a shell variable (``${FMC_ARCH}``)."""
    return f"{MIRROR_PREFIX}/{component}/{url.rsplit('/', 1)[-1]}"


def mirror_bucket_suffix(cluster_name: str, region: str) -> str:
    """``-<10 hex>`` from the cluster name and Region: the bucket is ``fmc-mirror-<account id><suffix>`` (34
    characters, within S3's 63)."""
    return "-" + hashlib.sha256(f"{cluster_name}:{region}".encode()).hexdigest()[:10]


#: How the deploy learns an object's sha256 when the catalog has no pin (:attr:`MirrorObject.index`):
#: ``apt``: the ``SHA256`` field of the package's paragraph in the repository's ``Packages`` index (flat
#: repository, https://wiki.debian.org/DebianRepository/Format "Flat Repository Format"); ``dnf``: the package's
#: ``<checksum type="sha256">`` in the ``primary`` metadata that ``repodata/repomd.xml`` points to (createrepo_c's
#: format, github.com/rpm-software-management/createrepo_c); ``checksums``: the file's line in the release's
#: published ``sha256sum``-format list (GoReleaser's ``<project>_<version>_checksums.txt``,
#: https://goreleaser.com/customization/checksum).
INDEX_KINDS = ("apt", "dnf", "checksums")
#: Architecture names in a package repository's index per EC2 CPU architecture: the ``Architecture`` field of the
#: apt ``Packages`` index (Debian names) and the ``<arch>`` of dnf primary metadata (RPM names).
INDEX_ARCH = {"apt": {"x86_64": "amd64", "arm64": "arm64"}, "dnf": {"x86_64": "x86_64", "arm64": "aarch64"}}
#: File name extension of a package file per index kind.
PACKAGE_EXT = {"apt": "deb", "dnf": "rpm"}


def package_index(os_name: str) -> str:
    """``apt`` for Ubuntu, ``dnf`` for Amazon Linux 2023: the index kind of the node OS's packages."""
    return "apt" if os_name.startswith("ubuntu") else "dnf"


def package_key(component: str, os_name: str, arch: str, package: str, version: str) -> str:
    """``mirror/<component>/<os>/<EC2 arch>/<package>-<version>.<deb|rpm>``: the key of one OS package file, which
    the deploy resolves from the repository index (``index`` ``apt``/``dnf``) and the node installs from the file."""
    return f"{MIRROR_PREFIX}/{component}/{os_name}/{arch}/{package}-{version}.{PACKAGE_EXT[package_index(os_name)]}"


def recorded_sha256_key(key: str) -> str:
    """``<key>.sha256``: the hash the deploy measured and checked for ``key``, which nodes read when the catalog has
    no pin (one line, 64 lower-case hex digits)."""
    return f"{key}.sha256"


@dataclass(frozen=True)
class MirrorObject:
    """One file of the mirror.

    Attributes:
        component: what it is (``nccl-tests``, ``node_exporter``, ``nccl``, ``prometheus``, ...).
        url: where the deploy downloads it from; for ``index`` ``apt``/``dnf`` the repository's base URL (the file
            name comes from the index).
        key: the S3 key nodes read (``mirror/<component>/<file name>``).
        sha256: the catalog's pin (lower-case hex), or ``None``: the deploy takes the hash from ``index`` (or, without
            one, records the hash it measured) and writes it to :func:`recorded_sha256_key`.
        optional: ``True`` when a node does without it (a failed download is reported, never fatal).
        index: ``""`` or one of :data:`INDEX_KINDS`: where the deploy reads the expected sha256.
        index_url: the checksum list (``checksums``); empty for ``apt``/``dnf`` (the index is under ``url``).
        package: the package name in the index (``apt``/``dnf``).
        version: the version (``fnmatch`` glob, as the apt pin) the package must match (``apt``/``dnf``), without an
            epoch: the deploy drops apt's ``<epoch>:`` prefix before matching (dnf's primary keeps the epoch apart).
        arch: the architecture in the index (``amd64``/``arm64`` for apt, ``x86_64``/``aarch64`` for dnf).
    """

    component: str
    url: str
    key: str
    sha256: str | None
    optional: bool
    index: str = ""
    index_url: str = ""
    package: str = ""
    version: str = ""
    arch: str = ""

    def as_property(self) -> dict[str, str]:
        """The custom resource's entry (strings only: CloudFormation passes properties as strings); the index
        fields only when the deploy resolves the hash from an index."""
        out = {"Url": self.url, "Key": self.key, "Sha256": self.sha256 or "", "Optional": str(self.optional).lower()}
        if self.index:
            out.update(Index=self.index, IndexUrl=self.index_url, Package=self.package, Version=self.version,
                       Arch=self.arch)
        return out


def repository_package(component: str, repository_url: str, os_name: str, arch: str, package: str, *,
                       version_glob: str, key_version: str, optional: bool) -> MirrorObject:
    """One OS package file of a package repository (``repository_url``, its base), whose sha256 the deploy reads
    from the repository's own index (:func:`package_index` of ``os_name``): the ``version_glob`` the package must
    match, the index's name of the EC2 CPU ``arch``, and the key :func:`package_key` with ``key_version``."""
    kind = package_index(os_name)
    return MirrorObject(component, repository_url, package_key(component, os_name, arch, package, key_version), None,
                        optional=optional, index=kind, package=package, version=version_glob,
                        arch=INDEX_ARCH[kind][arch])
