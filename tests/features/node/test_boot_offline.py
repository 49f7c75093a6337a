"""No internet at boot (issue 23 item 4): every URL in every example's rendered boot scripts (each group's
``bootstrap.sh``, the exporter scripts of compute and head nodes), and where it goes. What a node used to fetch from
outside AWS (NCCL and the GPU nodes' dcgm-exporter from NVIDIA's repository, the nccl-tests source, node_exporter, the
head node's Prometheus, Alertmanager, Grafana and Slurm exporter) is read from the cluster's mirror bucket; anything still fetched from outside
AWS would have to be listed here by name (STILL_OUTSIDE, empty)."""

from __future__ import annotations

import re
from functools import cache
from urllib.parse import urlparse

import pytest

from fmcluster.features.node.plan_mirror import mirror_objects
from fmcluster.resolved import resolve
from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint
from tests.conftest import EXAMPLES

URL = re.compile(r"https?://[^\s\"'`)|]+")
#: Hosts inside AWS: the instance metadata service, the node itself and AWS endpoints (S3, AMP remote write, SSM).
AWS_HOSTS = re.compile(r"^(169\.254\.169\.254|127\.0\.0\.1|([a-z0-9.-]+\.)?amazonaws\.com|\*)$")
#: Outside AWS and still fetched at boot, by host, with the reason: nothing.
STILL_OUTSIDE: dict[str, str] = {}


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


#: (example, the hosts outside AWS its boot scripts still reach, by script): none for every example.
OUTSIDE: list[tuple[str, dict[str, set[str]]]] = [
    (e, {}) for e in ("default", "efa-lustre", "hyperpod-eks", "hyperpod-p5", "p5en-capacity-block", "p6-b200",
                      "p6-b300", "p6e-gb200", "pcs-p5en")]


def test_the_table_covers_every_example() -> None:
    assert sorted(e for e, _ in OUTSIDE) == sorted(p.stem for p in EXAMPLES)


@pytest.mark.parametrize(("example", "expected"), OUTSIDE)
def test_boot_scripts_reach_outside_aws_only_where_listed(example: str, expected: dict[str, set[str]]) -> None:
    """No boot script fetches from outside AWS; what remained would be exactly the table."""
    found: dict[str, set[str]] = {}
    for f, urls in boot_urls(example).items():
        hosts = {urlparse(u).hostname or "" for u in urls if outside(u)}
        if hosts:
            found.setdefault(f.rsplit("/", 1)[-1], set()).update(hosts)
    assert found == expected
    assert all(STILL_OUTSIDE.get(h) for hosts in found.values() for h in hosts)


NE = "mirror/node_exporter/node_exporter-1.7.0.linux-${FMC_ARCH}.tar.gz"
DCGM_2204 = "mirror/dcgm-exporter/ubuntu-22.04/x86_64/datacenter-gpu-manager-exporter-4.7.1.deb"
# (example, the mirror keys its compute boot reads): official mode installs NCCL from the mirror's package files; GPU
# nodes with metrics on install dcgm-exporter from its package file (it was installed from the image's repositories)
MIRRORED = [
    ("default", {"mirror/nccl/ubuntu-22.04/x86_64/libnccl2-2.31.2.deb",
                 "mirror/nccl/ubuntu-22.04/x86_64/libnccl-dev-2.31.2.deb", "mirror/nccl-tests/v2.17.6.tar.gz", NE,
                 DCGM_2204}),
    ("p6-b200", {NE, DCGM_2204}),  # the bake carries NCCL and nccl-tests
    ("pcs-p5en", {"mirror/nccl/ubuntu-24.04/x86_64/libnccl2-2.31.2.deb",
                  "mirror/nccl/ubuntu-24.04/x86_64/libnccl-dev-2.31.2.deb", "mirror/nccl-tests/v2.17.6.tar.gz"}),
]


def _keys(example: str, select: str) -> set[str]:
    rendered = render_blueprint(load_blueprint(next(p for p in EXAMPLES if p.stem == example)))
    text = "\n".join(t for folder, files in rendered.items() for n, t in files.items()
                     if (select == "compute" and (n == "bootstrap.sh" or (folder == "observability/exporters"
                                                                        and n.startswith("compute"))))
                     or (select == "head" and folder == "observability/exporters" and n == "head.sh"))
    return set(re.findall(r"\"(mirror/[^\"]+)\"", "\n".join(code_lines(text))))


@pytest.mark.parametrize(("example", "keys"), MIRRORED)
def test_boot_reads_the_mirror(example: str, keys: set[str]) -> None:
    """Every key a compute node reads is one the deploy copies (node_exporter for the group's architecture)."""
    assert _keys(example, "compute") == keys
    copied = {o.key for o in mirror_objects(resolve(load_blueprint(next(p for p in EXAMPLES if p.stem == example))))}
    assert {k.replace("${FMC_ARCH}", "amd64") for k in keys} <= copied


HEAD = {"mirror/prometheus/prometheus-3.13.2.linux-${FMC_ARCH}.tar.gz", NE,
        "mirror/prometheus-slurm-exporter/prometheus-slurm-exporter_linux_${FMC_ARCH}.tar.gz"}
SELF_HOSTED = {"mirror/alertmanager/alertmanager-0.28.1.linux-${FMC_ARCH}.tar.gz",
               "mirror/grafana/grafana-10.4.2.linux-${FMC_ARCH}.tar.gz"}


# (example, the mirror keys the head node's monitoring install reads): managed metrics, self-hosted (p6e-gb200)
@pytest.mark.parametrize(("example", "keys"), [("default", HEAD), ("p6e-gb200", HEAD | SELF_HOSTED)])
def test_head_node_reads_the_mirror(example: str, keys: set[str]) -> None:
    """Every key the head script reads is one the deploy copies (for both architectures)."""
    assert _keys(example, "head") == keys
    copied = {o.key for o in mirror_objects(resolve(load_blueprint(next(p for p in EXAMPLES if p.stem == example))))}
    assert {k.replace("${FMC_ARCH}", a) for k in keys for a in ("amd64", "arm64")} <= copied
