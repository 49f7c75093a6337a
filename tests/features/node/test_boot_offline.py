"""No internet at boot (issue 23 item 4): every URL in every example's rendered boot scripts (each group's
``bootstrap.sh``, the exporter scripts of compute and head nodes), and where it goes. What a node used to fetch from
GitHub (nccl-tests source, node_exporter) is read from the cluster's mirror bucket; what is still fetched from outside
AWS is listed here by name, so the list can only shrink."""

from __future__ import annotations

import re
from functools import cache
from urllib.parse import urlparse

import pytest

from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint
from tests.conftest import EXAMPLES

URL = re.compile(r"https?://[^\s\"'`)|]+")
#: Hosts inside AWS: the instance metadata service, the node itself and AWS endpoints (S3, AMP remote write, SSM).
AWS_HOSTS = re.compile(r"^(169\.254\.169\.254|127\.0\.0\.1|([a-z0-9.-]+\.)?amazonaws\.com|\*)$")
#: Outside AWS and still fetched at boot (NOT DONE, issue 23 item 4): NVIDIA's CUDA repository for NCCL in official
#: mode (an apt/dnf repository, not one file), and the head node's monitoring stack (Prometheus, Alertmanager,
#: Grafana, the Go toolchain and the Slurm exporter's git source, whose build also fetches Go modules).
STILL_OUTSIDE = {
    "developer.download.nvidia.com": "CUDA repository for NCCL (official mode), compute nodes",
    "github.com": "head node: Prometheus, Alertmanager, Slurm exporter source",
    "go.dev": "head node: Go toolchain to build the Slurm exporter",
    "dl.grafana.com": "head node: Grafana",
}


def code_lines(text: str) -> list[str]:
    """Lines of a shell script without comments (whole-line and trailing ``  # ...``)."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        out.append(re.split(r"\s+#\s", line, maxsplit=1)[0])
    return out


@cache
def boot_urls(example: str) -> dict[str, set[str]]:
    """``{file: URLs in its code}`` for the boot scripts of one example."""
    rendered = render_blueprint(load_blueprint(next(p for p in EXAMPLES if p.stem == example)))
    out: dict[str, set[str]] = {}
    for folder, files in rendered.items():
        for name, text in files.items():
            if name == "bootstrap.sh" or folder == "observability/exporters":
                out[f"{folder}/{name}"] = {u for line in code_lines(text) for u in URL.findall(line)}
    return out


def outside(url: str) -> bool:
    return not AWS_HOSTS.match(urlparse(url).hostname or "*")


NVIDIA = "developer.download.nvidia.com"
HEAD = {"github.com", "go.dev"}
#: (example, the hosts outside AWS its boot scripts still reach, by script). Official mode installs NCCL from NVIDIA's
#: repository on the compute nodes; the head node's monitoring stack (self-hosted metrics adds Grafana).
OUTSIDE = [
    ("default", {"bootstrap.sh": {NVIDIA}, "head.sh": HEAD}),
    ("efa-lustre", {"bootstrap.sh": {NVIDIA}, "head.sh": HEAD}),
    ("hyperpod-eks", {"bootstrap.sh": {NVIDIA}}),
    ("hyperpod-p5", {"bootstrap.sh": {NVIDIA}, "head.sh": HEAD}),
    ("p5en-capacity-block", {"bootstrap.sh": {NVIDIA}}),
    ("p6-b200", {"head.sh": HEAD}),  # bake: NCCL and nccl-tests are in the image
    ("p6-b300", {"head.sh": HEAD}),
    ("p6e-gb200", {"head.sh": HEAD | {"dl.grafana.com"}}),  # custom image
    ("pcs-p5en", {"bootstrap.sh": {NVIDIA}}),
]


def test_the_table_covers_every_example() -> None:
    assert sorted(e for e, _ in OUTSIDE) == sorted(p.stem for p in EXAMPLES)


@pytest.mark.parametrize(("example", "expected"), OUTSIDE)
def test_boot_scripts_reach_outside_aws_only_where_listed(example: str, expected: dict[str, set[str]]) -> None:
    """No compute script fetches from GitHub any more; what remains outside AWS is exactly the table."""
    found: dict[str, set[str]] = {}
    for f, urls in boot_urls(example).items():
        hosts = {urlparse(u).hostname or "" for u in urls if outside(u)}
        if hosts:
            found.setdefault(f.rsplit("/", 1)[-1], set()).update(hosts)
    assert found == expected
    assert all(STILL_OUTSIDE.get(h) for hosts in found.values() for h in hosts)


# (example, the mirror keys its compute boot reads)
MIRRORED = [
    ("default", {"mirror/nccl-tests/v2.17.6.tar.gz", "mirror/node_exporter/node_exporter-1.7.0.linux-${FMC_ARCH}.tar.gz"}),
    ("p6-b200", {"mirror/node_exporter/node_exporter-1.7.0.linux-${FMC_ARCH}.tar.gz"}),  # the bake carries nccl-tests
    ("pcs-p5en", {"mirror/nccl-tests/v2.17.6.tar.gz"}),  # metrics off
]


@pytest.mark.parametrize(("example", "keys"), MIRRORED)
def test_boot_reads_the_mirror(example: str, keys: set[str]) -> None:
    rendered = render_blueprint(load_blueprint(next(p for p in EXAMPLES if p.stem == example)))
    text = "\n".join(t for folder, files in rendered.items() for n, t in files.items()
                     if n == "bootstrap.sh" or (folder == "observability/exporters" and n.startswith("compute")))
    found = set(re.findall(r"\"(mirror/[^\"]+)\"", "\n".join(code_lines(text))))
    assert found == keys
