"""Software compatibility and environment rules as tables.

Each row: patches on ``blueprints.PINNED_STACK`` (a compute list is the whole list), the rule id,
the YAML path and the exact message. A failing row asserts that problem is reported (at its level);
a passing row asserts the rule stays silent for a combination just on the other side of the
boundary. Problems of other rules in the same blueprint are allowed. R-SW-4/R-SW-5 (untested
combination) stay silent while a more specific software error rule fires.
"""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError, Problem
from fmcluster.catalog.software import (
    aws_ofi_nccl_artifacts,
    driver_artifacts,
    gdrcopy_artifacts,
    get_stack,
    known_cuda_versions,
    known_efa_installers,
)
from fmcluster.features.node import rules_software
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules import environment as env_rules
from tests import blueprints
from tests.blueprints import PINNED_STACK, blueprint_text, group

H100_580 = {"software": {"image": {"mode": "bake"}, "stack": "h100-580-cuda13.0"}}
B200 = {"software": {"image": {"mode": "bake"}, "stack": "blackwell-580-cuda13.0"}, "compute": [group(instance_type="p6-b200.48xlarge")]}
B300 = {"software": {"image": {"mode": "bake"}, "stack": "blackwell-580-cuda13.0"}, "compute": [group(instance_type="p6-b300.48xlarge")]}
GB200 = {
    "software": {"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0"},
    "compute": [group(instance_type="p6e-gb200.36xlarge", capacity={"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"})],
}


def problems(*patches: dict[str, Any]) -> list[Problem]:
    try:
        return list(load_blueprint_text(blueprint_text(*patches, base=PINNED_STACK)).warnings)
    except BlueprintError as e:
        return list(e.problems)


def sw(**overrides: Any) -> dict[str, Any]:
    return {"software": {"overrides": overrides}}


def of(rule_id: str, found: list[Problem]) -> list[tuple[str, str, str]]:
    return [(p.level, p.path, p.message) for p in found if p.rule_id == rule_id]


ALLOWED_DRIVERS = ", ".join(driver_artifacts("x86_64"))

# (rule id, patches, level, path, exact message)
FAILING = [
    # changed on purpose (issue 11): blackwell-580 pins exactly h100-580's versions, so it is known-good on p5 too;
    # the R570 stack on a Blackwell group is the mismatch
    ("R-SW-1", [{"compute": [group(instance_type="p6-b200.48xlarge")]}], "error", "software.stack",
     "stack is not known-good for the p6-b200 family (compute[0] is p6-b200.48xlarge), got 'h100-570-cuda12.8'; "
     "allowed blackwell-580-cuda13.0 - did you mean 'blackwell-580-cuda13.0'?"),
    ("R-SW-4", [sw(nccl="2.27.6")], "error", "software.overrides.nccl",
     "this combination is in no known-good stack, got nccl=2.27.6; allowed the versions of a catalog stack, "
     "or set software.allow_untested: true - did you mean the versions of 'h100-570-cuda12.8'?"),
    # the driver override equals the stack's: R-SW-4 blames the component that differs, not the first overridden one
    ("R-SW-4", [sw(driver="570.172.08", nccl="2.27.6")], "error", "software.overrides.nccl",
     "this combination is in no known-good stack, got nccl=2.27.6; allowed the versions of a catalog stack, "
     "or set software.allow_untested: true - did you mean the versions of 'h100-570-cuda12.8'?"),
    ("R-SW-5", [sw(nccl="2.27.6"), {"software": {"allow_untested": True}}], "warning", "software.overrides.nccl",
     "untested combination accepted because allow_untested is true, got nccl=2.27.6; allowed the versions of a "
     "catalog stack - closest is 'h100-570-cuda12.8'"),
    ("R-EFA-1", [sw(efa_installer="1.44.0")], "error", "software.overrides.efa_installer",
     "unknown EFA installer version (its bundled libfabric and aws-ofi-nccl are not in the catalog), got 1.44.0; "
     f"allowed {', '.join(known_efa_installers())}"),
    ("R-EFA-2", [sw(efa_installer="1.36.0")], "error", "software.overrides.efa_installer",
     "EFA installer 1.36.0 bundles no aws-ofi-nccl, got aws_ofi_nccl unset; allowed an installer >= 1.40.0 or "
     f"software.overrides.aws_ofi_nccl set to one of {', '.join(aws_ofi_nccl_artifacts())}"),
    ("R-EFA-3", [sw(efa_installer="1.45.1")], "warning", "software.overrides.efa_installer",
     "the libfabric bundled by EFA installer 1.45.1 is not known, got libfabric unknown; allowed an installer whose "
     "libfabric is in the catalog (the libfabric rules and the node check skip it)"),
    ("R-ART-1", [sw(driver="570.158.01", fabric_manager="570.158.01")], "error", "software.overrides.driver",
     f"no pinned NVIDIA driver installer (URL + sha256) for x86_64, got driver 570.158.01; allowed {ALLOWED_DRIVERS}"),
    ("R-ART-1", [sw(gdrcopy="2.4.1")], "error", "software.overrides.gdrcopy",
     f"no pinned GDRCopy source archive (URL + sha256), got 2.4.1; allowed {', '.join(gdrcopy_artifacts())}"),
    ("R-ART-1", [sw(aws_ofi_nccl="1.16.0")], "error", "software.overrides.aws_ofi_nccl",
     f"no pinned aws-ofi-nccl source archive (URL + sha256), got 1.16.0; allowed {', '.join(aws_ofi_nccl_artifacts())}"),
    ("R-ART-1", [GB200, sw(driver="580.159.04", fabric_manager="580.159.04")], "error", "software.overrides.driver",
     "no pinned NVIDIA driver installer (URL + sha256) for arm64, got driver 580.159.04; allowed 580.173.02"),
    ("R-CUDA-1", [sw(cuda="13.0.2")], "error", "software.overrides.cuda",
     "driver too old for CUDA 13.0.2, got 570.172.08; allowed >= 580.95.05"),
    ("R-CUDA-1", [sw(cuda="12.7")], "error", "software.overrides.cuda",
     f"unknown CUDA toolkit version (no minimum driver on record), got 12.7; allowed {', '.join(known_cuda_versions())}"),
    ("R-DRV-1", [B200, sw(kernel_modules="proprietary")], "error", "software.overrides.kernel_modules",
     "Blackwell GPUs run only on the open NVIDIA kernel modules (compute[0] is p6-b200.48xlarge), got proprietary; allowed open"),
    ("R-DRV-2", [sw(kernel_modules="proprietary")], "error", "software.overrides.kernel_modules",
     "proprietary NVIDIA kernel modules break EFA GPUDirect RDMA on current kernels (compute[0] is p5.48xlarge with EFA), "
     "got proprietary; allowed open (software.allow_untested does not lift this)"),
    ("R-DRV-3", [B200, sw(cuda="12.4.1")], "error", "software.overrides.cuda",
     "Blackwell GPUs need CUDA 12.8 or newer (compute[0] is p6-b200.48xlarge), got 12.4.1; allowed >= 12.8"),
    ("R-DRV-4", [B300, sw(cuda="12.8.1")], "warning", "software.overrides.cuda",
     "native B300 (sm_103) code needs CUDA 12.9 or newer (compute[0] is p6-b300.48xlarge), got 12.8.1; allowed >= 12.9"),
    ("R-DRV-5", [sw(driver="530.30.02", fabric_manager="530.30.02", cuda="12.1.0")], "warning", "software.overrides.driver",
     "driver below the Hopper floor (compute[0] is p5.48xlarge), got 530.30.02; allowed >= 535"),
    # changed on purpose (issue 11): an error with EFA on (NVIDIA/aicr #2383), no longer a warning
    ("R-DRV-6", [GB200, sw(driver="595.58.03")], "error", "software.overrides.driver",
     "R595 breaks the EFA GPUDirect path on Grace-Blackwell (compute[0] is p6e-gb200.36xlarge, EFA on), got 595.58.03; "
     "allowed R580 (stack gb200-580-cuda13.0 in your own image, software.image.mode: custom: the official images ship "
     "R595, and a bake over them would downgrade the parent, R-IMG-11)"),
    ("R-DRV-7", [H100_580, sw(efa_installer="1.43.2")], "error", "software.overrides.efa_installer",
     "driver 580.173.02 needs the EFA kernel driver >= 2.17.3 for GPU P2P, got EFA installer 1.43.2; allowed >= 1.43.3"),
    ("R-FM-1", [sw(fabric_manager="570.158.01")], "error", "software.overrides.fabric_manager",
     "Fabric Manager must equal the driver version exactly, got 570.158.01 with driver 570.172.08; allowed 570.172.08"),
    ("R-FM-1", [H100_580, sw(driver="580.159.04")], "error", "software.overrides.driver",
     "Fabric Manager must equal the driver version exactly, got 580.173.02 with driver 580.159.04; allowed 580.159.04"),
    ("R-FM-3", [B200, sw(driver="560.35.03", fabric_manager="560.35.03", cuda="12.6.1")], "error", "software.overrides.driver",
     "NVLink5 systems need nvlsm with a Blackwell-capable Fabric Manager (compute[0] is p6-b200.48xlarge), got driver "
     "560.35.03; allowed >= 570"),
    ("R-NCCL-1", [B200, sw(nccl="2.23.4")], "error", "software.overrides.nccl",
     "Blackwell needs NCCL 2.25.1 or newer (compute[0] is p6-b200.48xlarge), got 2.23.4; allowed >= 2.25.1"),
    ("R-GDR-1", [H100_580, sw(gdrcopy="2.4.4")], "error", "software.overrides.gdrcopy",
     "CUDA 13 needs GDRCopy 2.5.1 or newer, got 2.4.4; allowed >= 2.5.1"),
    ("R-GDR-1", [B200, sw(cuda="12.8.1", gdrcopy="2.4.4")], "error", "software.overrides.gdrcopy",
     "Blackwell needs GDRCopy 2.5.1 or newer (compute[0] is p6-b200.48xlarge), got 2.4.4; allowed >= 2.5.1"),
    ("R-OFI-NCCL-1", [sw(nccl="2.16.5")], "error", "software.overrides.nccl",
     "aws-ofi-nccl 1.16.3 needs NCCL 2.17.1 or newer, got 2.16.5; allowed >= 2.17.1"),
    ("R-OFI-NCCL-2", [sw(efa_installer="1.42.0")], "warning", "software.overrides.efa_installer",
     "NCCL newer than aws-ofi-nccl 1.15.0 was tested with, got 2.27.7; allowed <= 2.26.6 or a newer plugin"),
    ("R-OFI-NCCL-3", [sw(nccl="2.28.9")], "error", "software.overrides.nccl",
     "NCCL 2.28.9 needs aws-ofi-nccl 1.17.2 or newer, got 1.16.3; allowed >= 1.17.2"),
    ("R-OFI-FAB-1", [sw(efa_installer="1.14.0", aws_ofi_nccl="1.11.0")], "error", "software.overrides.efa_installer",
     "aws-ofi-nccl 1.11.0 needs libfabric 1.18.0 or newer, got 1.13.2; allowed >= 1.18.0"),
    ("R-OFI-FAB-2", [sw(efa_installer="1.32.0", aws_ofi_nccl="1.13.0")], "error", "software.overrides.efa_installer",
     "aws-ofi-nccl 1.13.0 refuses the efa provider below libfabric 1.22.0, got libfabric 1.21.0 (EFA installer 1.32.0); "
     "allowed EFA installer >= 1.34.0"),
    ("R-OFI-FAB-4", [sw(efa_installer="1.36.0", aws_ofi_nccl="1.12.0")], "error", "software.overrides.aws_ofi_nccl",
     "known-bad aws-ofi-nccl with EFA installer 1.36.0 (vf-sorting regression), got 1.12.0; allowed 1.11.1, 1.12.1 or newer"),
    ("R-OFI-FAB-5", [sw(efa_installer="1.26.1", aws_ofi_nccl="1.16.3")], "error", "software.overrides.efa_installer",
     "NCCL 2.27.7 fails to register memory on EFA installers before 1.29.1, got 1.26.1; allowed >= 1.29.1"),
    ("R-OFI-FAB-6", [H100_580, sw(aws_ofi_nccl="1.16.3")], "error", "software.overrides.aws_ofi_nccl",
     "CUDA 13.0.2 needs aws-ofi-nccl 1.17.1 or newer, got 1.16.3; allowed >= 1.17.1"),
    ("R-OFI-FAB-7", [H100_580, sw(efa_installer="1.47.0")], "error", "software.overrides.efa_installer",
     "known-bad: inter-node broadcast hang, got aws-ofi-nccl 1.18.0 (EFA installer 1.47.0); allowed EFA installer >= 1.49.0 "
     "(aws-ofi-nccl >= 1.20.0)"),
    ("R-OFI-FAB-7", [H100_580, sw(aws_ofi_nccl="1.18.0")], "error", "software.overrides.aws_ofi_nccl",
     "known-bad: inter-node broadcast hang, got aws-ofi-nccl 1.18.0 (EFA installer 1.49.0); allowed EFA installer >= 1.49.0 "
     "(aws-ofi-nccl >= 1.20.0)"),
    # changed on purpose (issue 28): R-OFI-FAB-7 reads the catalog's known_bad table, so 1.18.x matches, not only 1.18.0
    ("R-OFI-FAB-7", [H100_580, sw(aws_ofi_nccl="1.18.1")], "error", "software.overrides.aws_ofi_nccl",
     "known-bad: inter-node broadcast hang, got aws-ofi-nccl 1.18.1 (EFA installer 1.49.0); allowed EFA installer >= 1.49.0 "
     "(aws-ofi-nccl >= 1.20.0)"),
    ("R-KB-2", [H100_580, sw(nccl="2.31.2")], "warning", "software.overrides.nccl",
     "known-bad for GPU-initiated networking: released aws-ofi-nccl up to 1.20 advertise the EFA-GDA GIN device as type "
     "4, while NCCL >= 2.31.2 expects 5, so NCCL's GPU-initiated networking (NCCL_GIN_TYPE, EFA-GDA) does not "
     "initialize, got NCCL 2.31.2 with aws-ofi-nccl 1.20.0; allowed aws-ofi-nccl >= 1.21.0 (EFA installer >= 1.50.0) "
     "with NCCL >= 2.31.2, or leave GIN off"),
    ("R-OFI-PLAT-1", [{"compute": [group(instance_type="p5.4xlarge")]}, sw(efa_installer="1.43.0")], "error",
     "software.overrides.efa_installer",
     "aws-ofi-nccl too old for p5.4xlarge (compute[0] is p5.4xlarge: 1.14.0-1.16.1 treat it as a GDR-required p-series "
     "type), got 1.16.1; allowed >= 1.16.2"),
    ("R-OFI-PLAT-2", [B300, sw(efa_installer="1.45.1")], "warning", "software.overrides.efa_installer",
     "aws-ofi-nccl lacks the tuned defaults for p6-b300.48xlarge (compute[0] is p6-b300.48xlarge: AWS tuner from 1.18.0, "
     "own platform block from 1.21.0), got 1.17.2; allowed >= 1.18.0"),
    ("R-NCCL-4", [sw(nccl="2.27.3"), {"software": {"environment": {"NCCL_NET_PLUGIN": "/opt/aws-ofi-nccl/lib/libnccl-net.so"}}}],
     "error", "software.environment.NCCL_NET_PLUGIN",
     "NCCL 2.27.3 silently ignores an absolute plugin path, got NCCL_NET_PLUGIN='/opt/aws-ofi-nccl/lib/libnccl-net.so'; "
     "allowed a short name such as 'ofi', or NCCL other than 2.27.3"),
    ("R-ENV-1", [{"software": {"environment": {"FI_EFA_USE_DEVICE_RDMA": "1"}}}], "error",
     "software.environment.FI_EFA_USE_DEVICE_RDMA",
     "obsolete or harmful on EFA: not needed with libfabric >= 1.18 and aws-ofi-nccl >= 1.7.0 (only plugin 1.6.x on p4/p5 "
     "needed it), got FI_EFA_USE_DEVICE_RDMA='1'; allowed removing it"),
    ("R-ENV-1", [{"software": {"environment": {"OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK": "1"}}}], "error",
     "software.environment.OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK",
     "obsolete or harmful on EFA: turns a loud GPUDirect RDMA failure into silent slow traffic, got "
     "OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK='1'; allowed removing it"),
    ("R-ENV-1", [{"software": {"environment": {"RDMAV_FORK_SAFE": "1"}}}], "error", "software.environment.RDMAV_FORK_SAFE",
     "obsolete or harmful on EFA: do not use RDMAV_* with EFA (fork safety is handled by FI_EFA_FORK_SAFE), got "
     "RDMAV_FORK_SAFE='1'; allowed removing it"),
    ("R-ENV-2", [{"software": {"environment": {"NCCL_P2P_NET_CHUNKSIZE": "524288"}}}], "warning",
     "software.environment.NCCL_P2P_NET_CHUNKSIZE",
     "aws-ofi-nccl sets the tuned value per platform when unset, got NCCL_P2P_NET_CHUNKSIZE='524288'; allowed leaving it unset"),
    ("R-ENV-2", [GB200, {"software": {"environment": {"NCCL_MNNVL_ENABLE": "0"}}}], "warning",
     "software.environment.NCCL_MNNVL_ENABLE",
     "disables multi-node NVLink; use it only to bypass a broken IMEX setup, got NCCL_MNNVL_ENABLE='0'; allowed leaving it unset"),
    ("R-ENV-3", [{"software": {"environment": {"LD_PRELOAD": "/opt/conda/lib/libnccl.so.2"}}}], "warning",
     "software.environment.LD_PRELOAD",
     "preloads libraries into every job and can shadow the pinned NCCL or the aws-ofi-nccl plugin, got "
     "LD_PRELOAD='/opt/conda/lib/libnccl.so.2'; allowed leaving it unset (set it per job if you must)"),
]

# (rule id, patches): the other side of each boundary, where the rule must stay silent
PASSING = [
    ("R-SW-1", [B200]),
    ("R-SW-1", [{"software": {"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0"}}]),  # arm64 stack on x86 p5: R-CAP-7's finding
    ("R-SW-4", [sw(nccl="2.27.7")]),  # an override equal to the stack's own value is still the known-good set
    ("R-SW-4", [sw(driver="570.172.08", fabric_manager="580.95.05")]),  # R-FM-1 reports it, precisely
    ("R-SW-5", [sw(driver="570.172.08", fabric_manager="580.95.05"), {"software": {"allow_untested": True}}]),
    ("R-SW-5", [sw(nccl="2.27.6")]),
    ("R-EFA-1", [sw(efa_installer="1.43.1")]),
    ("R-EFA-2", [sw(efa_installer="1.36.0", aws_ofi_nccl="1.16.3")]),
    ("R-EFA-3", [sw(efa_installer="1.43.1")]),
    ("R-ART-1", [GB200]),
    ("R-CUDA-1", [sw(cuda="12.8.0")]),
    ("R-DRV-1", [B200]),
    ("R-DRV-2", [{"compute": [group(instance_type="p5.4xlarge")]}, sw(kernel_modules="proprietary")]),
    ("R-DRV-3", [B200, sw(cuda="12.8.1")]),
    ("R-DRV-4", [B300]),
    ("R-DRV-5", [sw(driver="580.159.04", fabric_manager="580.159.04")]),
    ("R-DRV-6", [GB200]),
    ("R-DRV-7", [H100_580, sw(efa_installer="1.43.3")]),
    ("R-FM-1", [sw(driver="580.159.04", fabric_manager="580.159.04")]),
    ("R-FM-1", [GB200]),  # no Fabric Manager on GB200 compute trays
    ("R-FM-3", [B200]),
    ("R-NCCL-1", [B200, sw(nccl="2.25.1")]),
    ("R-GDR-1", [sw(gdrcopy="2.4.4")]),  # Hopper on CUDA 12 may run GDRCopy 2.4.4
    ("R-OFI-NCCL-1", [sw(nccl="2.17.1")]),
    ("R-OFI-NCCL-2", []),
    ("R-OFI-NCCL-3", [H100_580]),
    ("R-OFI-FAB-1", [sw(efa_installer="1.24.1", aws_ofi_nccl="1.11.1", nccl="2.18.6")]),
    ("R-OFI-FAB-2", [sw(efa_installer="1.34.0", aws_ofi_nccl="1.13.0")]),
    ("R-OFI-FAB-4", [sw(efa_installer="1.36.0", aws_ofi_nccl="1.12.1")]),
    ("R-OFI-FAB-5", [sw(efa_installer="1.29.1", aws_ofi_nccl="1.16.3")]),
    ("R-OFI-FAB-6", [H100_580, sw(aws_ofi_nccl="1.17.1")]),
    ("R-OFI-FAB-7", [H100_580]),
    ("R-OFI-FAB-7", [H100_580, sw(aws_ofi_nccl="1.19.0")]),
    ("R-KB-2", [H100_580, sw(nccl="2.30.4")]),   # NCCL before 2.31.2 with aws-ofi-nccl 1.20.0
    ("R-KB-2", [H100_580, sw(nccl="2.31.2", aws_ofi_nccl="1.21.0")]),
    ("R-OFI-PLAT-1", [{"compute": [group(instance_type="p5.4xlarge")]}, sw(efa_installer="1.43.1")]),
    ("R-OFI-PLAT-2", [B300]),
    ("R-NCCL-4", [sw(nccl="2.27.3"), {"software": {"environment": {"NCCL_NET_PLUGIN": "ofi"}}}]),
    ("R-NCCL-4", [{"software": {"environment": {"NCCL_NET_PLUGIN": "/opt/aws-ofi-nccl/lib/libnccl-net.so"}}}]),
    ("R-ENV-1", [{"software": {"environment": {"FI_EFA_USE_HUGE_PAGE": "0", "MY_VAR": "x"}}}]),
    ("R-ENV-1", [{"compute": [group(instance_type="p5.4xlarge")]}, {"software": {"environment": {"OFI_NCCL_NIC_DUP_CONNS": "2"}}}]),
    ("R-ENV-2", [GB200, {"software": {"environment": {"NCCL_MNNVL_ENABLE": "1"}}}]),
    ("R-ENV-3", [{"software": {"environment": {"LD_PRELOAD_EXTRA": "x", "PYTHONPATH": "/opt/code"}}}]),
]


@pytest.mark.parametrize(("rule_id", "patches", "level", "path", "message"), FAILING,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(FAILING)])
def test_rule_reports(rule_id: str, patches: list[dict[str, Any]], level: str, path: str, message: str) -> None:
    assert (level, path, message) in of(rule_id, problems(*patches))


@pytest.mark.parametrize(("rule_id", "patches"), PASSING, ids=[f"{r[0]}-{i}" for i, r in enumerate(PASSING)])
def test_rule_silent(rule_id: str, patches: list[dict[str, Any]]) -> None:
    assert of(rule_id, problems(*patches)) == []


def test_every_software_rule_has_a_failing_and_a_passing_row() -> None:
    from fmcluster.validation.rules import REGISTRY, _load_rule_modules

    _load_rule_modules()
    ours = {r.id for r in REGISTRY if r.fn.__module__ in (rules_software.__name__, env_rules.__name__)}
    assert ours - {"R-SW-2"} <= {r[0] for r in FAILING}  # R-SW-2: every stack supports every OS (test below)
    assert ours - {"R-SW-2"} <= {r[0] for r in PASSING}


@pytest.mark.parametrize("name", sorted(env_rules.OBSOLETE_OR_HARMFUL))
def test_every_obsolete_variable_is_rejected_with_its_reason(name: str) -> None:
    var = name + "X" if env_rules.OBSOLETE_OR_HARMFUL[name].prefix else name
    found = of("R-ENV-1", problems({"software": {"environment": {var: "1"}}}))
    reason = env_rules.OBSOLETE_OR_HARMFUL[name].reason
    assert found == [("error", f"software.environment.{var}",
                      f"obsolete or harmful on EFA: {reason}, got {var}='1'; allowed removing it")]


# R-ENV-3: loader path variables warn, ordinary job variables do not
@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "PATH"])
def test_loader_path_variables_warn(name: str) -> None:
    warnings = load_blueprint_text(blueprints.blueprint_text({"software": {"environment": {name: "/opt/conda/lib"}}})).warnings
    [w] = [w for w in warnings if w.rule_id == "R-ENV-3"]
    assert w.path == f"software.environment.{name}" and w.level == "warning"
    assert w.message.endswith(f", got {name}='/opt/conda/lib'; allowed leaving it unset (set it per job if you must)")


def test_ordinary_job_variables_do_not_warn() -> None:
    warnings = load_blueprint_text(blueprints.blueprint_text({"software": {"environment": {"WANDB_PROJECT": "llm"}}})).warnings
    assert [w for w in warnings if w.rule_id and w.rule_id.startswith("R-ENV")] == []


def test_os_rule_with_a_stack_that_lacks_the_os(monkeypatch: pytest.MonkeyPatch) -> None:
    """R-SW-2 cannot fail with the shipped catalog (every stack supports all three OSes); check it
    against a stack variant that supports only Ubuntu 22.04."""
    from dataclasses import replace

    from fmcluster.features.node import rules_software as rules

    narrow = replace(get_stack("h100-570-cuda12.8"), os=("ubuntu-22.04",))
    monkeypatch.setattr(rules, "get_stack", lambda name: narrow)
    bad = of("R-SW-2", problems({"software": {"os": "amazon-linux-2023"}}))
    assert bad == [("error", "software.os",
                    "not supported by stack 'h100-570-cuda12.8', got 'amazon-linux-2023'; allowed ubuntu-22.04")]
    assert of("R-SW-2", problems({"software": {"os": "ubuntu-22.04"}})) == []


def test_validate_cli_reports_rule_ids(tmp_path: Any) -> None:
    """The done criteria: Fabric Manager override != driver, and p6-b200 with CUDA 12.4, are rejected
    by `fmcluster validate` with the rule id on a path-qualified line."""
    from typer.testing import CliRunner

    from fmcluster.cli import app

    head = "name: rules-test\nregion: us-east-1\navailability_zone: us-east-1a\nsoftware:\n"
    fm = tmp_path / "fm.yaml"
    fm.write_text(head + "  stack: h100-570-cuda12.8\n  overrides:\n    fabric_manager: 570.158.01\n"
                  "compute:\n  - {name: gpu, instance_type: p5.48xlarge, count: 2}\n")
    b200 = tmp_path / "b200.yaml"
    b200.write_text(head + "  stack: blackwell-580-cuda13.0\n  overrides:\n    cuda: 12.4.1\n"
                    "compute:\n  - {name: gpu, instance_type: p6-b200.48xlarge, count: 2}\n")
    result = CliRunner().invoke(app, ["validate", str(fm), str(b200)])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert ("software.overrides.fabric_manager (line 7): Fabric Manager must equal the driver version exactly, "
            "got 570.158.01 with driver 570.172.08; allowed 570.172.08 [R-FM-1]") in text
    assert ("software.overrides.cuda (line 7): Blackwell GPUs need CUDA 12.8 or newer (compute[0] is "
            "p6-b200.48xlarge), got 12.4.1; allowed >= 12.8 [R-DRV-3]") in text


def test_fabric_manager_mismatch_is_reported_once_at_its_key() -> None:
    """The driver is right and Fabric Manager is not: only R-FM-1, at software.overrides.fabric_manager."""
    found = [(p.rule_id, p.path) for p in problems(sw(driver="570.172.08", fabric_manager="580.95.05")) if p.level == "error"]
    assert found == [("R-FM-1", "software.overrides.fabric_manager")]


def test_stacks_with_the_same_versions_share_their_families() -> None:
    """p5 + p6-b200 in one cluster (issue 11 item 7): h100-580-cuda13.0 and blackwell-580-cuda13.0 pin the same
    versions, so either runs both families and the two groups share one NCCL and plugin."""
    mixed = {"compute": [group(), group(name="blackwell", instance_type="p6-b200.48xlarge")]}
    for stack in ("h100-580-cuda13.0", "blackwell-580-cuda13.0"):
        found = problems(mixed, {"software": {"stack": stack}})
        assert of("R-SW-1", found) == [] and [p for p in found if p.level == "error"] == [], stack
