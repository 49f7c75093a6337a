"""Pinned versions of everything the metrics layer installs on nodes, each with where it is published and
how its content is checked.

Three kinds of pin, each checked on the node before use:
- :class:`Archive`: a release tarball per CPU architecture with a sha256 the install script checks before
  unpacking. ``sources`` name the release page and where the sha256 was taken from (the upstream
  ``sha256sums.txt`` / download page, cross-checked against independent pins in public repositories).
- :class:`Release`: a prebuilt release archive at a git tag whose commit is pinned too; its sha256 is read at deploy
  time from the release's own checksum list (``sha256_reason`` says why there is no pin).
- :class:`RepoPackage`: packages from a distribution repository pinned by upstream version; the deploy copies the
  package file into the cluster's mirror with the sha256 the repository index lists. ``sha256_reason`` says why
  there is no pin.

Every pin is listed in :data:`ALL_PINS`; tests/features/observability/test_observability_pins.py fails on a pin without a release
source, and ``make verify-pins`` (tools/verify_pins.py, needs internet) resolves every pin (HTTP HEAD for
archives, ``git ls-remote`` for tags, the upstream ``sha256sums.txt`` for every pinned sha256).
"""

from __future__ import annotations

from dataclasses import dataclass

ARCHES = ("amd64", "arm64")


@dataclass(frozen=True)
class Archive:
    """A release tarball pinned by version and sha256 per CPU architecture (``amd64`` / ``arm64``).

    ``url`` holds ``{version}`` and ``{arch}``; ``checksums_url`` is the upstream checksum list for the
    release (``sha256sums.txt``) that ``make verify-pins`` compares with ``sha256``.
    """

    name: str
    version: str
    url: str
    sha256: dict[str, str]
    release_page: str
    checksums_url: str
    sources: tuple[str, ...]

    def url_for(self, arch: str) -> str:
        return self.url.format(version=self.version, arch=arch)


@dataclass(frozen=True)
class RepoPackage:
    """Packages from a signed distribution repository, pinned by upstream version (epoch and release resolved
    on the node against that exact version)."""

    name: str
    packages: tuple[str, ...]
    version: str
    release_page: str
    sources: tuple[str, ...]
    sha256_reason: str


@dataclass(frozen=True)
class Release:
    """A program its project publishes as prebuilt release archives per CPU architecture, at a pinned tag whose
    commit is pinned too (the metric names are read from the source at that commit). No sha256 is pinned here
    (``sha256_reason``): the deploy reads it from the release's own checksum list ``checksums_url`` and checks the
    download against it (:mod:`fmcluster.features.node.handler_mirror`, index ``checksums``)."""

    name: str
    repository: str
    tag: str
    commit: str
    version: str
    url: str
    checksums_url: str
    release_page: str
    sources: tuple[str, ...]
    sha256_reason: str
    #: the executable inside the archive (at its top level)
    binary: str = ""

    def url_for(self, arch: str) -> str:
        return self.url.format(version=self.version, arch=arch)


#: Prometheus 3.13 is the current long-term-support line (support until 2027-07-31; 3.5 LTS ended July
#: 2026), https://prometheus.io/docs/introduction/release-cycle/. 3.x flags: ``--agent`` (agent mode is no
#: longer a feature flag) and ``--storage.agent.path``.
PROMETHEUS = Archive(
    name="prometheus",
    version="3.13.2",
    url="https://github.com/prometheus/prometheus/releases/download/v{version}/prometheus-{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "0e8c4d46101bd025ea8265e377d2caabc57f488fc1be1c367f37db69ea41be6f",
        "arm64": "7cecb17a6f41d59814e1a0581a1f81f79051ad5973d1ecf39e23a9f747d6572a",
    },
    release_page="https://github.com/prometheus/prometheus/releases/tag/v3.13.2",
    checksums_url="https://github.com/prometheus/prometheus/releases/download/v3.13.2/sha256sums.txt",
    sources=(
        "https://prometheus.io/docs/introduction/release-cycle/ (3.13 LTS; GitLab omnibus-gitlab MR !9666/!9746 "
        "'3.13 is an LTS release with support until July 2027')",
        "sha256 amd64 and arm64: upstream sha256sums.txt of v3.13.2, as pinned by independent public "
        "repositories (several Dockerfiles/CI pins; one records 'matched upstream release sha256sums.txt')",
    ),
)

NODE_EXPORTER = Archive(
    name="node_exporter",
    version="1.7.0",
    url="https://github.com/prometheus/node_exporter/releases/download/v{version}/node_exporter-{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "a550cd5c05f760b7934a2d0afad66d2e92e681482f5f57a917465b1fba3b02a6",
        "arm64": "e386c7b53bc130eaf5e74da28efc6b444857b77df8070537be52678aefd34d96",
    },
    release_page="https://github.com/prometheus/node_exporter/releases/tag/v1.7.0",
    checksums_url="https://github.com/prometheus/node_exporter/releases/download/v1.7.0/sha256sums.txt",
    sources=(
        "github.com/zulip/zulip puppet/zulip/manifests/common.pp (node_exporter 1.7.0 sha256 amd64/aarch64)",
        "several independent install scripts pin the same amd64/arm64 values",
    ),
)

#: Self-hosted alert routing: Alertmanager on the head node sends to SNS (``sns_configs`` with SigV4).
ALERTMANAGER = Archive(
    name="alertmanager",
    version="0.28.1",
    url="https://github.com/prometheus/alertmanager/releases/download/v{version}/alertmanager-{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "5ac7ab5e4b8ee5ce4d8fb0988f9cb275efcc3f181b4b408179fafee121693311",
        "arm64": "d8832540e5b9f613d2fd759e31d603173b9c61cc7bb5e3bc7ae2f12038b1ce4f",
    },
    release_page="https://github.com/prometheus/alertmanager/releases/tag/v0.28.1",
    checksums_url="https://github.com/prometheus/alertmanager/releases/download/v0.28.1/sha256sums.txt",
    sources=(
        "github.com/boxcutter/oci alertmanager docker-bake.hcl (ALERTMANAGER_SHA256_AMD64/ARM64 for 0.28.1)",
        "github.com/boxcutter/boxcutter-chef-cookbooks boxcutter_prometheus alertmanager recipe (same arm64 sha256)",
    ),
)

#: Grafana OSS 10.4 matches the Amazon Managed Grafana workspace version used for the managed mode, so the
#: same generated dashboards load in both.
GRAFANA = Archive(
    name="grafana",
    version="10.4.2",
    url="https://dl.grafana.com/oss/release/grafana-{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "b12b55d4ea266fa298395c82d5f8372f544b386efab28e9d96ebc887aef37560",
        "arm64": "9ccd91189b540a1e8cde5028136609aa8ad4dd7332e670cb431d1e3fa28d90a4",
    },
    release_page="https://grafana.com/grafana/download/10.4.2",
    checksums_url="https://dl.grafana.com/oss/release/grafana-10.4.2.linux-{arch}.tar.gz.sha256",
    sources=(
        "github.com/zulip/zulip puppet/zulip/manifests/common.pp (grafana 10.4.2 sha256 amd64/aarch64)",
    ),
)

#: Slurm exporter: rivosinc/prometheus-slurm-exporter, maintained (v1.7.0, 2025-08-13), a successor of the
#: unmaintained vpenso exporter (whose last tag is 0.20, commit 895c7c6b, 2022; awslabs/awsome-distributed-ai
#: #644). Default mode ``-slurm.cli-fallback`` runs ``sinfo``/``squeue`` with its own format strings, so it
#: needs no Slurm JSON plugin and works with every Slurm version our orchestrators ship. Not chosen: Slurm's
#: own OpenMetrics endpoint (https://slurm.schedmd.com/metrics.html, "Slurm 25.11 introduced"), which needs
#: Slurm >= 25.11 and ``MetricsType=metrics/openmetrics`` plus no ``PrivateData`` in slurm.conf on every
#: orchestrator (ParallelCluster 3.15 ships Slurm 25.11.4, aws-parallelcluster 3.15.1 notes in
#: awslabs/awsome-distributed-ai #1211; PCS offers 24.11 and 25.05 too; HyperPod's version is not ours to set).
SLURM_EXPORTER = Release(
    name="prometheus-slurm-exporter",
    repository="https://github.com/rivosinc/prometheus-slurm-exporter.git",
    tag="v1.7.0",
    commit="529aabaaf39fa7b70f5ba01644e2b2ca5b30574a",
    version="1.7.0",
    # The archive name is the repository's own template at tag v1.7.0: `.goreleaser.yaml` sets
    # `archives: - name_template: '{{ .ProjectName }}_{{ .Os }}_{{ .Arch }}'` (rivosinc/prometheus-slurm-exporter
    # commit 529aabaa; no version in the name, unlike GoReleaser's default and the 1.6.4 archives). The checksum list
    # is GoReleaser's default {{ .ProjectName }}_{{ .Version }}_checksums.txt (sha256,
    # https://goreleaser.com/customization/checksum): that file sets no `checksum:` section. Its release workflow
    # (rivosinc/prometheus-slurm-exporter/.github/workflows/release.yml) runs GoReleaser on every published release.
    # UNVERIFIED: the release page itself was not read offline; a name that does not exist makes the deploy skip the
    # optional object and the head node report the exporter missing.
    url="https://github.com/rivosinc/prometheus-slurm-exporter/releases/download/v{version}/"
    "prometheus-slurm-exporter_linux_{arch}.tar.gz",
    checksums_url="https://github.com/rivosinc/prometheus-slurm-exporter/releases/download/v1.7.0/"
    "prometheus-slurm-exporter_1.7.0_checksums.txt",
    release_page="https://github.com/rivosinc/prometheus-slurm-exporter/releases/tag/v1.7.0",
    sources=(
        "github.com/rivosinc/prometheus-slurm-exporter tag v1.7.0 = commit 529aabaa (git tag list)",
        "main.go flags -web.listen-address (default :9092), -slurm.cli-fallback (default true); .goreleaser.yaml "
        "builds linux amd64/arm/arm64, archives named {{ .ProjectName }}_{{ .Os }}_{{ .Arch }}, default checksum name",
    ),
    sha256_reason="the only sha256 published is the release's own checksum list (GoReleaser), which the deploy "
    "reads over HTTPS and checks the archive against; no independent pin was found offline",
    binary="prometheus-slurm-exporter",
)

#: DCGM exporter as a host package (systemd service running as root). 4.7.1 (tag ``4.4.2-4.7.1``, commit
#: b921c57e, 2025-12-10) is the newest release outside 4.5.3-4.8.2, which drops DCGM_FI_DEV_XID_ERRORS and
#: other fields (NVIDIA/dcgm-exporter #700, #646). Its XID collector publishes DCGM_EXP_XID_ERRORS_COUNT
#: with an ``xid`` label (internal/pkg/collector/xid_collector.go at that tag).
DCGM_EXPORTER = RepoPackage(
    name="dcgm-exporter",
    packages=("datacenter-gpu-manager-exporter",),
    version="4.7.1",
    release_page="https://github.com/NVIDIA/dcgm-exporter/releases/tag/4.4.2-4.7.1",
    sources=(
        "https://docs.nvidia.com/datacenter/dcgm/latest/installation/install-dcgm-exporter.html (package-managed "
        "systemd service; 'RPM and Debian package versions identify the exporter version'; releases pair a "
        "DCGM version with an exporter version)",
        "github.com/NVIDIA/dcgm-exporter tag 4.4.2-4.7.1 (commit b921c57eb70015d779d1e8237d609925614d7965); "
        "packaging/config-files/systemd/nvidia-dcgm-exporter.service (User=root)",
        "NVIDIA/dcgm-exporter #700 (4.5.3-4.8.2 lacks DCGM_FI_DEV_XID_ERRORS; 4.4.1-4.6.0 had it)",
    ),
    sha256_reason="no pin exists offline: the deploy reads the package file's sha256 from NVIDIA's CUDA repository "
    "index (apt Packages.gz / dnf primary), checks the download against it and records it in the cluster's mirror; "
    "the node checks its copy against that record and installs the file with no repository "
    "(fmcluster/features/observability/plan_mirror.py)",
)
#: DCGM paired with the exporter release above. Never installed by fmcluster: the image's own DCGM
#: (ParallelCluster 3.16 images ship 4.6.0 and run their own health check; DLAMIs ship 4.7.0) is used as is, a
#: different major version skips the exporter with a warning, and an image without DCGM gets no GPU metrics (its
#: dependency set in NVIDIA's repository was not verified offline: plan_mirror.dcgm_exporter_mirror_objects).
DCGM = RepoPackage(
    name="dcgm",
    packages=("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary"),
    version="4.4.2",
    release_page="https://docs.nvidia.com/datacenter/dcgm/latest/release-notes/index.html",
    sources=(
        "https://docs.nvidia.com/datacenter/dcgm/latest/installation.html (DCGM 4 package names; the "
        "proprietary package carries the profiling module)",
        "github.com/NVIDIA/dcgm-exporter tag 4.4.2-4.7.1 (first half of the tag: the paired DCGM version)",
    ),
    sha256_reason="not installed by fmcluster (the image's own DCGM is used); the version is the exporter's pair",
)
DCGM_MAJOR = DCGM.version.split(".")[0]

ALL_PINS: tuple[Archive | RepoPackage | Release, ...] = (
    PROMETHEUS, NODE_EXPORTER, ALERTMANAGER, GRAFANA, SLURM_EXPORTER, DCGM_EXPORTER, DCGM,
)

#: Ports the exporters listen on (compute nodes: all interfaces, reached from the head node through the
#: cluster security group; head-node-only services listen on 127.0.0.1).
NODE_EXPORTER_PORT = 9100
DCGM_EXPORTER_PORT = 9400
#: rivosinc exporter default (main.go: 'Address to listen on for telemetry (default: :9092)').
SLURM_EXPORTER_PORT = 9092
PROMETHEUS_PORT = 9090
ALERTMANAGER_PORT = 9093
GRAFANA_PORT = 3000
#: Every port Prometheus scrapes on another node (the security group must allow them from the head node).
REMOTE_SCRAPE_PORTS = (NODE_EXPORTER_PORT, DCGM_EXPORTER_PORT)
