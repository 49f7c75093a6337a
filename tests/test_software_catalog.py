"""The software catalog: version arithmetic, data integrity, and every stack passing every rule."""

from __future__ import annotations

import re

import pytest

from fmcluster.catalog import get_instance, known_instance_types
from fmcluster.catalog.software import (
    _raw,
    aws_ofi_nccl_artifact,
    compare_versions,
    cuda_min_driver,
    driver_artifact,
    efa_bundle,
    efa_installer_artifact,
    gdrcopy_artifact,
    get_stack,
    known_stacks,
    parse_version,
    plugin_max_tested_nccl,
    plugin_min_for_instance,
)
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, group

HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.mark.parametrize(
    ("version", "parsed"),
    [("2.1.0amzn5.0", (2, 1, 0)), ("1.16.3-aws", (1, 16, 3)), ("2.27.7-1", (2, 27, 7)),
     ("2.27.7+cuda12.9", (2, 27, 7)), ("570.172.08", (570, 172, 8)), ("v1.12.1-aws", (1, 12, 1)), ("12.8", (12, 8))],
)
def test_parse_version_ignores_suffixes(version: str, parsed: tuple[int, ...]) -> None:
    assert parse_version(version) == parsed


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [("1.9.0", "1.50.0", -1), ("12.8", "12.8.0", 0), ("570.86.10", "570.124.06", -1), ("1.16.3-aws", "1.16.3", 0),
     ("2.1.0amzn5.0", "1.22.0", 1), ("580.65.06", "580.65.6", 0), ("2.28", "2.27.7", 1)],
)
def test_compare_is_numeric_per_field(a: str, b: str, result: int) -> None:
    assert compare_versions(a, b) == result


def test_lookups() -> None:
    assert cuda_min_driver("12.8") == "570.26"
    assert cuda_min_driver("12.8.1") == "570.124.06"
    assert cuda_min_driver("13.0.2") == "580.95.05"
    assert cuda_min_driver("12.7") is None
    assert plugin_max_tested_nccl("1.16.3") == "2.27.7"
    assert plugin_max_tested_nccl("1.17.1") == "2.28.3"
    assert plugin_max_tested_nccl("1.22.0") is None
    assert efa_bundle("1.43.2") == {"libfabric": "2.1.0amzn5.0", "aws_ofi_nccl": "1.16.3"}
    m = plugin_min_for_instance("p5.4xlarge")
    assert m is not None and m.functional == "1.16.2"


@pytest.mark.parametrize("name", known_stacks())
def test_stack_integrity(name: str) -> None:
    s = get_stack(name)
    assert s.fabric_manager in (None, s.driver)
    for family in s.families:
        instances = [get_instance(t) for t in known_instance_types() if get_instance(t).family == family]
        assert instances, family
        for inst in instances:
            assert inst.cpu_architecture in s.cpu_architectures
            assert (s.fabric_manager is not None) or not inst.nvswitch, f"{name}: {inst.name} has NVSwitch, no Fabric Manager"
    for arch in s.cpu_architectures:
        art = driver_artifact(s.driver, arch)
        assert art is not None and HEX64.match(art.sha256) and art.url.startswith("https://") and s.driver in art.url
    gdr = gdrcopy_artifact(s.gdrcopy)
    assert gdr is not None and HEX64.match(gdr.sha256) and f"v{s.gdrcopy}" in gdr.url
    efa = efa_installer_artifact(s.efa_installer)
    assert efa.url.endswith(f"aws-efa-installer-{s.efa_installer}.tar.gz")
    assert re.fullmatch(r"[0-9A-F]{40}", efa.key_fingerprint)
    v = s.versions()
    assert v["libfabric"] and v["aws_ofi_nccl"], "every stack pins an installer whose bundle is known"
    assert set(v) == {"driver", "fabric_manager", "cuda", "nccl", "efa_installer", "gdrcopy", "libfabric", "aws_ofi_nccl"}
    assert all(url.startswith(("https://", "shared/", "aws/", "NVIDIA ")) for url in s.sources.values())


def test_every_sha256_is_well_formed() -> None:
    art = _raw()["artifacts"]
    hashes = [a["sha256"] for per in art["nvidia_driver"].values() for a in per.values()]
    hashes += [a["sha256"] for a in art["gdrcopy"].values()]
    hashes += [a["sha256"] for a in art["aws_ofi_nccl"].values()]
    hashes += [a["sha256"] for a in art["efa_installer"]["sha256"].values()]
    assert hashes and all(HEX64.match(h) for h in hashes)
    assert all(aws_ofi_nccl_artifact(v) is not None for v in art["aws_ofi_nccl"])


def _blueprint(stack: str, instance_type: str, os_name: str) -> str:
    capacity = ({"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
                if get_instance(instance_type).capacity_block_only else {"type": "on_demand"})
    return blueprint_text({
        "software": {"stack": stack, "os": os_name},
        "compute": [group(instance_type=instance_type, count=9 if instance_type.startswith("p6e-gb200") else 2,
                          capacity=capacity)],
        # ParallelCluster needs a head node of the compute nodes' architecture (R-PC-2)
        "orchestrator": {"parallelcluster": {"head_node_instance_type":
                         "m7g.4xlarge" if get_instance(instance_type).cpu_architecture == "arm64" else "m7i.4xlarge"}},
    })


@pytest.mark.parametrize(
    ("stack", "instance_type"),
    [(s, t) for s in known_stacks() for t in known_instance_types() if get_instance(t).family in get_stack(s).families],
)
def test_every_stack_passes_every_software_rule_on_its_instance_types(stack: str, instance_type: str) -> None:
    """A known-good stack raises no software error and no software warning on any instance type it lists."""
    for os_name in get_stack(stack).os:
        res = load_blueprint_text(_blueprint(stack, instance_type, os_name))
        ours = [w for w in res.warnings if w.rule_id and w.rule_id.startswith(("R-SW", "R-EFA", "R-ART", "R-CUDA",
                                                                               "R-DRV", "R-FM", "R-NCCL", "R-GDR",
                                                                               "R-OFI", "R-ENV"))]
        assert ours == [], f"{stack} on {instance_type}/{os_name}: {[w.render() for w in ours]}"
