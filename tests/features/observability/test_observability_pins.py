"""Every pin of the metrics layer is real and sourced (fmcluster/features/observability/pins.py), and the
Slurm metric names that rules and dashboards use are the ones the pinned exporter publishes.

Offline checks only; ``make verify-pins`` (tools/verify_pins.py) resolves the pins on the internet.
"""

from __future__ import annotations

import re

import pytest
import yaml

from fmcluster.features.observability import pins
from fmcluster.features.observability.render_files import render_observability_files
from fmcluster.features.observability.render_metrics import SLURM_EXPORTER_SOURCES
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint
from tests.conftest import ROOT
from tools.verify_pins import checks

SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


@pytest.mark.parametrize("pin", pins.ALL_PINS, ids=lambda p: p.name)
def test_every_pin_has_a_release_page_and_a_source(pin: pins.Archive | pins.RepoPackage | pins.Release) -> None:
    assert pin.release_page.startswith("https://"), pin.name
    assert pin.sources and all(len(s) > 20 for s in pin.sources), f"{pin.name}: no source for the pin"
    if isinstance(pin, pins.Archive):
        assert set(pin.sha256) == set(pins.ARCHES), pin.name
        assert all(SHA256.match(v) for v in pin.sha256.values()), pin.name
        assert pin.checksums_url.startswith("https://"), pin.name
        assert pin.version in pin.url_for("amd64") and "arm64" in pin.url_for("arm64")
    else:
        assert len(pin.sha256_reason) > 40, f"{pin.name}: no reason why there is no sha256"
    if isinstance(pin, pins.Release):
        assert re.fullmatch(r"[0-9a-f]{40}", pin.commit), pin.name
        assert pin.tag == f"v{pin.version}" and pin.checksums_url.startswith(pin.release_page.replace("/tag/", "/download/"))
        assert {pin.url_for(a).rsplit("/", 1)[1] for a in pins.ARCHES} == {
            f"{pin.binary}_linux_{a}.tar.gz" for a in pins.ARCHES}  # the repository's archives name_template at v1.7.0


def test_pin_table_is_complete() -> None:
    """Every pin the module defines is in ALL_PINS (so the source test and verify-pins see it)."""
    defined = {
        v.name for v in vars(pins).values() if isinstance(v, (pins.Archive, pins.RepoPackage, pins.Release))
    }
    assert defined == {p.name for p in pins.ALL_PINS}


def test_versions_follow_the_sources() -> None:
    assert _version(pins.PROMETHEUS.version)[:2] == (3, 13)  # the current LTS line (release-cycle page)
    assert "rivosinc/prometheus-slurm-exporter" in pins.SLURM_EXPORTER.repository
    # dcgm-exporter 4.5.3-4.8.2 drops DCGM_FI_DEV_XID_ERRORS and other fields (NVIDIA/dcgm-exporter #700)
    assert not _version("4.8.0") <= _version(pins.DCGM_EXPORTER.version) <= _version("4.8.2")
    # the DCGM pin is the exporter release's pair (tag <dcgm>-<exporter>)
    assert pins.DCGM_EXPORTER.release_page.endswith(f"/{pins.DCGM.version}-{pins.DCGM_EXPORTER.version}")


def test_slurm_metric_names_are_the_pinned_exporters() -> None:
    """Every slurm_* name in the rendered rules and dashboards is recorded with the exporter source file and
    line that define it at the pinned commit (tools/verify_pins.py re-reads those lines from GitHub)."""
    files = render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))
    used = {
        m
        for path, text in files.items()
        if path.endswith((".json", ".yml")) and "/exporters/" not in path
        for m in re.findall(r"\bslurm_[a-z_]+\b", text)
    }
    assert used, "rules and dashboards use no Slurm metric"
    assert used <= set(SLURM_EXPORTER_SOURCES), sorted(used - set(SLURM_EXPORTER_SOURCES))
    for path, line in SLURM_EXPORTER_SOURCES.values():
        assert re.fullmatch(r"exporter/[a-z_]+\.go", path) and line > 0
    # the vpenso exporter's names are gone
    assert not any(m.startswith(("slurm_nodes_", "slurm_queue_")) for m in used)


def test_verify_pins_covers_every_pin_and_metric() -> None:
    urls = [c.target for c in checks()]
    for pin in pins.ALL_PINS:
        if isinstance(pin, pins.Archive):
            assert pin.url_for("amd64") in urls and pin.url_for("arm64") in urls
        elif isinstance(pin, pins.Release):
            assert pin.repository in urls and pin.url_for("amd64") in urls and pin.url_for("arm64") in urls
    raw = [u for u in urls if u.startswith("https://raw.githubusercontent.com/rivosinc/")]
    assert {u.rsplit("/", 1)[1] for u in raw} == {"nodes.go", "jobs.go"}
    assert all(pins.SLURM_EXPORTER.commit in u for u in raw)


def test_rules_file_names_no_unpinned_exporter() -> None:
    rules = yaml.safe_load(
        render_observability_files(resolve(load_blueprint(ROOT / "blueprints" / "default.yaml")))[
            "observability/rules/llm-train-alerts.yml"
        ]
    )
    exprs = " ".join(r["expr"] for g in rules["groups"] for r in g["rules"])
    assert "DCGM_FI_DEV_XID_ERRORS" not in exprs and "DCGM_EXP_XID_ERRORS_COUNT" in exprs
