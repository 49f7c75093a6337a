"""Instance catalog: the values every rule and construct relies on, per type, with sources."""

from __future__ import annotations

import pytest

from fmcluster.catalog import UnknownInstanceType, get_instance, known_instance_types

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
