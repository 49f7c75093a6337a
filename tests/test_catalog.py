"""The catalog: instance facts every rule and construct relies on (per type, with sources), the types
outside it, Regions, and the software stacks (version arithmetic, data integrity, every stack passing
every software rule on its instance types)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from fmcluster.blueprint.model import DEFAULT_PCLUSTER_VERSION
from fmcluster.catalog import UnknownInstanceType, cpu_architecture_of, get_instance, known_instance_types, memory_gib_of
from fmcluster.catalog.images import ImageManifest, get_image, known_images, official_image
from fmcluster.catalog.regions import known_regions
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

# (type, GPU model, GPUs, vCPUs, network cards, EFA interfaces, EFA cards, Gbps, NVMe disks, NVSwitch, arch, HyperPod name)
TABLE = [
    ("p4d.24xlarge", "A100", 8, 96, 4, 4, tuple(range(4)), 400, 8, True, "x86_64", "ml.p4d.24xlarge"),
    ("p4de.24xlarge", "A100", 8, 96, 4, 4, tuple(range(4)), 400, 8, True, "x86_64", "ml.p4de.24xlarge"),
    ("p5.4xlarge", "H100", 1, 16, 1, 1, (0,), 100, 1, False, "x86_64", "ml.p5.4xlarge"),
    ("p5.48xlarge", "H100", 8, 192, 32, 32, tuple(range(32)), 3200, 8, True, "x86_64", "ml.p5.48xlarge"),
    ("p5e.48xlarge", "H200", 8, 192, 32, 32, tuple(range(32)), 3200, 8, True, "x86_64", "ml.p5e.48xlarge"),
    ("p5en.48xlarge", "H200", 8, 192, 16, 16, tuple(range(16)), 3200, 8, True, "x86_64", "ml.p5en.48xlarge"),
    ("p6-b200.48xlarge", "B200", 8, 192, 8, 8, tuple(range(8)), 3200, 8, True, "x86_64", "ml.p6-b200.48xlarge"),
    ("p6-b300.48xlarge", "B300", 8, 192, 17, 16, tuple(range(1, 17)), 6400, 8, True, "x86_64", "ml.p6-b300.48xlarge"),
    ("p6e-gb200.36xlarge", "GB200", 4, 144, 17, 16, tuple(range(1, 17)), 3200, 4, False, "arm64", "ml.p6e-gb200.36xlarge"),
]


# ---- GPU instance types ----------------------------------------------------------------------------
def test_catalog_holds_exactly_the_nine_types() -> None:
    assert sorted(known_instance_types()) == sorted(row[0] for row in TABLE)


@pytest.mark.parametrize("row", TABLE, ids=[r[0] for r in TABLE])
def test_instance_facts(row: tuple) -> None:
    name, gpu, gpus, vcpus, cards, efa, efa_cards, gbps, nvme, nvswitch, arch, hp = row
    i = get_instance(name)
    assert (i.gpu.model, i.gpu.count, i.vcpus, i.network_cards, i.max_efa_interfaces) == (gpu, gpus, vcpus, cards, efa)
    assert i.efa_cards == efa_cards and i.efa_interface_count == efa
    assert (i.network_gbps, i.nvme.count, i.fabric_manager, i.cpu_architecture, i.hyperpod_name) == (gbps, nvme, nvswitch, arch, hp)
    assert i.source_of("vcpus").startswith(("http", "third-party"))


def test_p6_b300_card_zero_is_ena_only_and_verified() -> None:
    """aws-parallelcluster #7143 quotes AWS: card 0 ENA-only, cards 1-16 EFA (changed on purpose, issue 12 item 8)."""
    i = get_instance("p6-b300.48xlarge")
    assert not i.card0_has_efa
    assert i.is_verified("efa_cards") and "issues/7143" in i.source_of("efa_cards")


def test_gb200_unverified_values_are_flagged() -> None:
    i = get_instance("p6e-gb200.36xlarge")
    assert {"vcpus", "network_cards", "max_efa_interfaces"} <= i.unverified
    assert i.is_verified("gpu.count") and not i.is_verified("gpu.memory_gib")
    assert i.ultraserver_sizes == (9, 18) and i.capacity_block_only


def test_blackwell_hgx_needs_nvlsm_and_hopper_does_not() -> None:
    assert [get_instance(t).nvlsm for t in ("p5.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge")] == [False, True, True]


def test_unknown_type_lists_known_ones_and_suggests() -> None:
    with pytest.raises(UnknownInstanceType) as exc:
        get_instance("p5.48xlage")
    text = str(exc.value)
    assert "allowed p4d.24xlarge, p4de.24xlarge" in text
    assert text.endswith("- did you mean 'p5.48xlarge'?")


# ---- types outside the GPU catalog (head and login nodes): architecture and memory ------------
@pytest.mark.parametrize(("instance_type", "arch", "memory"), [
    ("m7i.4xlarge", "x86_64", 64.0), ("m7g.4xlarge", "arm64", 64.0), ("c7gn.16xlarge", "arm64", 128.0),
    ("r8g.large", "arm64", 16.0), ("c6a.large", "x86_64", 4.0), ("t3.large", "x86_64", 8.0),
    ("t3.nano", "x86_64", 0.5), ("t4g.2xlarge", "arm64", 32.0), ("t3a.micro", "x86_64", 1.0), ("t2.small", "x86_64", 2.0),
    ("t1.micro", "x86_64", None), ("t3.metal", "x86_64", None), ("i4i.large", "x86_64", None),
    ("p6e-gb200.36xlarge", "arm64", None), ("p5.48xlarge", "x86_64", None), ("ml.m5.4xlarge", "x86_64", None),
    ("not-a-type", None, None),
])
def test_instance_type_helpers(instance_type: str, arch: str | None, memory: float | None) -> None:
    assert (cpu_architecture_of(instance_type), memory_gib_of(instance_type)) == (arch, memory)


def test_burstable_memory_is_ec2s() -> None:
    """The burstable sizes' memory is what EC2 DescribeInstanceTypes reports (MemoryInfo.SizeInMiB / 1024, as
    ParallelCluster's HeadNodeMemorySizeValidator reads it), as moto recorded it for every t2/t3/t3a/t4g type."""
    import gzip
    import json
    from importlib import resources

    pytest.importorskip("moto")
    recorded = json.loads(gzip.decompress(resources.files("moto").joinpath("ec2/resources/instance_types.json.gz")
                                          .read_bytes()))
    burstable = {t: d["MemoryInfo"]["SizeInMiB"] / 1024 for t, d in recorded.items() if t.split(".")[0] in
                 ("t2", "t3", "t3a", "t4g")}
    assert len(burstable) == 28  # 7 sizes of 4 families
    assert {t: memory_gib_of(t) for t in burstable} == burstable


# ---- Regions: botocore's endpoints data ------------------------------------------------------------
def test_known_regions_cover_every_partition_sorted() -> None:
    regions = known_regions()
    assert {"us-east-1", "eu-west-1", "us-gov-west-1", "cn-north-1"} <= set(regions)  # aws, aws-us-gov, aws-cn
    assert list(regions) == sorted(set(regions))


# ---- software stacks: version arithmetic, data integrity, every stack passing every rule ---------
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
    # A stack that describes an official image is never downloaded (the image carries it); every other stack can be
    # baked, so each of its downloads is pinned.
    bakeable = _official_image_of(name) is None
    for arch in s.cpu_architectures if bakeable else ():
        art = driver_artifact(s.driver, arch)
        assert art is not None and HEX64.match(art.sha256) and art.url.startswith("https://") and s.driver in art.url
    if bakeable:
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


def _official_image_of(stack: str) -> ImageManifest | None:
    return next((get_image(k) for k in known_images() if get_image(k).stack == stack), None)


def _blueprint(stack: str, instance_type: str, os_name: str) -> str:
    """A stack that describes an official image is booted as shipped (official mode on that image's orchestrator,
    without FSx where the image has no Lustre client); every other stack is baked into an image."""
    inst = get_instance(instance_type)
    capacity = ({"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
                if inst.capacity_block_only else {"type": "on_demand"})
    head = "m7g.4xlarge" if inst.cpu_architecture == "arm64" else "m7i.4xlarge"
    image = _official_image_of(stack)
    patch: dict[str, Any] = {
        "software": {"image": {"mode": "official" if image else "bake"}, "stack": stack, "os": os_name},
        "compute": [group(instance_type=instance_type, count=9 if instance_type.startswith("p6e-gb200") else 2,
                          capacity=capacity)],
        # ParallelCluster needs a head node of the compute nodes' architecture (R-PC-2)
        "orchestrator": {"parallelcluster": {"head_node_instance_type": head}},
    }
    if image is not None and image.orchestrators[0] == "parallelcluster":
        patch["orchestrator"]["parallelcluster"]["version"] = image.parallelcluster_version
    elif image is not None:
        patch["orchestrator"] = {"kind": image.orchestrators[0].split("-")[0]}
    parent = image or official_image("parallelcluster", DEFAULT_PCLUSTER_VERSION)
    if parent is not None and not parent.has_lustre_client(os_name):
        patch["storage"] = {"lustre": None}
    if inst.capacity_block_zones:  # sold only there (R-CAP-15): a Local Zone needs an existing VPC (R-LZ-1)
        patch |= {"availability_zone": inst.capacity_block_zones[0],
                  "network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}
    return blueprint_text(patch)


def _oses(stack: str) -> list[str]:
    image = _official_image_of(stack)
    return [o for o in get_stack(stack).os if image is None or o in image.os]


@pytest.mark.parametrize(
    ("stack", "instance_type"),
    [(s, t) for s in known_stacks() for t in known_instance_types() if get_instance(t).family in get_stack(s).families],
)
def test_every_stack_passes_every_software_rule_on_its_instance_types(stack: str, instance_type: str) -> None:
    """A known-good stack raises no software error and no software warning on any instance type it lists."""
    for os_name in _oses(stack):
        res = load_blueprint_text(_blueprint(stack, instance_type, os_name))
        ours = [w for w in res.warnings if w.rule_id and w.rule_id.startswith(("R-SW", "R-EFA", "R-ART", "R-CUDA",
                                                                               "R-DRV", "R-FM", "R-NCCL", "R-GDR",
                                                                               "R-OFI", "R-ENV"))]
        assert ours == [], f"{stack} on {instance_type}/{os_name}: {[w.render() for w in ours]}"


def test_every_image_reference_kind_has_plan_text_and_names_its_source() -> None:
    """The plan's reference line comes from the catalog (one text per reference kind): the SSM parameter for the
    architecture, the ParallelCluster version, or HyperPod's default image; only ParallelCluster's is a name filter."""
    from typing import get_args

    from fmcluster.catalog.images import REFERENCE_TEXT, ReferenceKind

    assert set(REFERENCE_TEXT) == set(get_args(ReferenceKind))
    seen = {}
    for key in known_images():
        m = get_image(key)
        arch = m.cpu_architectures[0]
        seen[m.reference.kind] = (m.reference.describe(arch, m.parallelcluster_version), m.reference.by_name_filter)
        if m.reference.kind == "ssm":
            assert seen["ssm"] == (f"SSM parameter {m.reference.parameter_for(arch)}", False)
    assert seen["parallelcluster"][1] is True
    assert seen["parallelcluster"][0].startswith("ParallelCluster Image.Os for version 3.")
    assert seen["hyperpod"] == ("HyperPod default image", False)
