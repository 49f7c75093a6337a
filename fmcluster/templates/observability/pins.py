"""Pinned versions of everything the metrics layer installs on nodes, each with its source.

Downloaded archives carry a sha256 that the install script checks before unpacking. Where no checksum
could be sourced, the component comes from a signed package repository pinned by version (DCGM), or is
built from a pinned tag with Go module checksums verified by ``go.sum`` (Slurm exporter).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Archive:
    """A release tarball pinned by version and sha256 per CPU architecture (``amd64`` / ``arm64``)."""

    name: str
    version: str
    url: str  # ``{version}`` and ``{arch}`` are filled in by the install script
    sha256: dict[str, str]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class RepoPackage:
    """Packages from a signed distribution repository, pinned by upstream version (epoch and release resolved
    on the node against that exact version)."""

    packages: tuple[str, ...]
    version: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class SourceBuild:
    """A Go program built on the node from a pinned release tag."""

    name: str
    repository: str
    tag: str
    sources: tuple[str, ...]


#: Prometheus 2.53 is a long-term-support line; the agent mode (``--enable-feature=agent``) used for
#: remote write to AMP and SigV4 signing are both in it.
PROMETHEUS = Archive(
    name="prometheus",
    version="2.53.4",
    url="https://github.com/prometheus/prometheus/releases/download/v{version}/prometheus-{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "b8b497c4610d1b93208252b60c8f20f6b2e78596ae8df43397a2e805aa53d475",
        "arm64": "ec7236ecea7154d0bfe142921708b1ae7b5e921e100e0ee85ab92b7c444357e0",
    },
    sources=(
        "github.com/boxcutter/oci prometheus/prometheus docker-bake.hcl (PROMETHEUS_SHA256_AMD64/ARM64 for 2.53.4)",
        "a second repository pins the same amd64 sha256 for promtool 2.53.4 (tools install list)",
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
    sources=(
        "github.com/zulip/zulip puppet/zulip/manifests/common.pp (node_exporter 1.7.0 sha256 amd64/aarch64)",
        "several independent install scripts pin the same amd64/arm64 values",
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
    sources=(
        "github.com/zulip/zulip puppet/zulip/manifests/common.pp (grafana 10.4.2 sha256 amd64/aarch64)",
    ),
)

#: Go toolchain used only to build the Slurm exporter on the head node.
GO = Archive(
    name="go",
    version="1.22.2",
    url="https://go.dev/dl/go{version}.linux-{arch}.tar.gz",
    sha256={
        "amd64": "5901c52b7a78002aeff14a21f93e0f064f74ce1360fce51c6ee68cd471216a17",
        "arm64": "36e720b2d564980c162a48c7e97da2e407dfcc4239e1e58d98082dfa2486a0c1",
    },
    sources=("github.com/zulip/zulip puppet/zulip/manifests/common.pp (golang 1.22.2 sha256 amd64/aarch64)",),
)

#: DCGM exporter as a host package (systemd service running as root, so the profiling (DCP) fields work
#: without a container's SYS_ADMIN capability). Exporter 4.5.0 is released paired with DCGM 4.4.0
#: (image tag ``4.4.0-4.5.0-ubuntu22.04``); keep the pair together.
DCGM_EXPORTER = RepoPackage(
    packages=("datacenter-gpu-manager-exporter",),
    version="4.5.0",
    sources=(
        "https://docs.nvidia.com/datacenter/dcgm/latest/installation/install-dcgm-exporter.html (package-managed "
        "systemd service; releases pair a DCGM version with an exporter version)",
        "github.com/NVIDIA/dcgm-exporter packaging/config-files/systemd/nvidia-dcgm-exporter.service (User=root)",
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.0-4.5.0-ubuntu22.04 (pairing, several compose files)",
    ),
)
DCGM = RepoPackage(
    packages=("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary"),
    version="4.4.0",
    sources=(
        "https://docs.nvidia.com/datacenter/dcgm/latest/installation.html (DCGM 4 package names; the "
        "proprietary package carries the profiling module)",
    ),
)

#: DCGM 4 splits CUDA-dependent components into one package per CUDA major version (NVIDIA's install guide
#: installs ``datacenter-gpu-manager-4-cuda${CUDA_VERSION}``, the major version ``nvidia-smi`` reports).
DCGM_CUDA_PACKAGE_PREFIX = "datacenter-gpu-manager-4-cuda"

#: vpenso/prometheus-slurm-exporter 0.22 reads ``sinfo``/``squeue --json`` (Slurm >= 23.02) and needs
#: Go >= 1.21 (CHANGELOG.md 0.21).
SLURM_EXPORTER = SourceBuild(
    name="prometheus-slurm-exporter",
    repository="https://github.com/vpenso/prometheus-slurm-exporter.git",
    tag="0.22",
    sources=(
        "github.com/vpenso/prometheus-slurm-exporter CHANGELOG.md (0.21: --json collectors, Slurm >= 23.02, "
        "Go >= 1.21; 0.22)",
    ),
)

#: Ports the exporters listen on (compute nodes: all interfaces, reached from the head node through the
#: cluster security group; head-node-only services listen on 127.0.0.1).
NODE_EXPORTER_PORT = 9100
DCGM_EXPORTER_PORT = 9400
SLURM_EXPORTER_PORT = 8080
PROMETHEUS_PORT = 9090
GRAFANA_PORT = 3000
