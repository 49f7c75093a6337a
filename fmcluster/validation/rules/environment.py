"""Rules on ``software.environment``: obsolete or harmful EFA / NCCL settings.

The tables below come from aws/aws-ofi-nccl doc/efa-env-var.md and src/platform-aws.cpp ("Obsolete or harmful" and
"Plugin-managed values"), each entry with its reason and source. One rule covers each kind:
R-ENV-1 rejects every obsolete/harmful name, R-ENV-2 warns about values aws-ofi-nccl already sets
per platform, R-NCCL-4 rejects absolute plugin paths on NCCL 2.27.3.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fmcluster.blueprint.model import Blueprint, SoftwareSpec
from fmcluster.catalog import get_instance
from fmcluster.catalog.software import same_version
from fmcluster.resolved.cluster import software_stack
from fmcluster.validation.rules import Violation, rule

OFI_ENV = "https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md"
OFI_RN = "https://github.com/aws/aws-ofi-nccl/blob/v1.21.1/RELEASENOTES.md"
OFI_PLAT = "https://github.com/aws/aws-ofi-nccl/blob/master/src/platform-aws.cpp"
ADT_CHEAT = "https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/efa-cheatsheet.md"
NCCL_PLUGIN_OPEN = "https://github.com/NVIDIA/nccl/blob/v2.27.3-1/src/plugin/plugin_open.cc"
NCCL_MNNVL = "https://github.com/NVIDIA/nccl/blob/master/src/mnnvl.cc"


@dataclass(frozen=True)
class EnvFact:
    reason: str
    source: str
    prefix: bool = False
    gdr_only: bool = False


#: Obsolete or harmful settings (aws/aws-ofi-nccl doc/efa-env-var.md): rejected (R-ENV-1).
OBSOLETE_OR_HARMFUL: dict[str, EnvFact] = {
    "FI_EFA_USE_DEVICE_RDMA": EnvFact(
        "not needed with libfabric >= 1.18 and aws-ofi-nccl >= 1.7.0 (only plugin 1.6.x on p4/p5 needed it)", OFI_ENV),
    "FI_PROVIDER": EnvFact(
        "only for aws-ofi-nccl <= 1.5.0; the plugin filters libfabric to the efa provider itself", f"{OFI_ENV}; {OFI_PLAT}"),
    "NCCL_PROTO": EnvFact(
        "only for aws-ofi-nccl <= 1.5.0; "
        "it now disables LL/LL128, makes the AWS tuner defer, and crashed the tuner before 1.20.0", f"{OFI_ENV}; {OFI_RN}"),
    "NCCL_ALGO": EnvFact("makes the AWS tuner defer (>= 1.17.0) and crashed it before 1.20.0", OFI_RN),
    "FI_EFA_ENABLE_SHM_TRANSFER": EnvFact(
        "not needed: the plugin disables SHM itself via FI_OPT_CUDA_API_PERMITTED", OFI_ENV),
    "RDMAV_": EnvFact("do not use RDMAV_* with EFA (fork safety is handled by FI_EFA_FORK_SAFE)", OFI_ENV, prefix=True),
    "FI_EFA_FORK_SAFE": EnvFact("set by aws-ofi-nccl itself; a manual setting is unnecessary", OFI_ENV),
    "NCCL_SOCKET_NTHREADS": EnvFact("no effect on EFA (socket transport only)", OFI_ENV),
    "NCCL_NSOCKS_PERTHREAD": EnvFact("no effect on EFA (socket transport only)", OFI_ENV),
    "NCCL_MIN_CHANNELS": EnvFact("leave at the default on EFA", OFI_ENV),
    "NCCL_BUFFSIZE": EnvFact("leave at the default; aws-ofi-nccl sets the tuned value per platform", f"{OFI_ENV}; {OFI_PLAT}"),
    "FI_EFA_SET_CUDA_SYNC_MEMOPS": EnvFact(
        "only a workaround for EFA installer < 1.29.1 with NCCL >= 2.19; every pinnable installer is newer", ADT_CHEAT),
    "OFI_NCCL_RDMA_MIN_POSTED_BOUNCE_BUFFERS": EnvFact("deprecated in aws-ofi-nccl 1.15.0", OFI_RN),
    "OFI_NCCL_RDMA_MAX_POSTED_BOUNCE_BUFFERS": EnvFact("deprecated in aws-ofi-nccl 1.15.0", OFI_RN),
    "NCCL_OFI_EAGER_MAX_SIZE": EnvFact("no longer needed for multi-recv since aws-ofi-nccl 1.20.0", OFI_RN),
    "OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK": EnvFact(
        "turns a loud GPUDirect RDMA failure into silent slow traffic", f"{OFI_RN} (1.7.4); {OFI_PLAT}"),
    "OFI_NCCL_NIC_DUP_CONNS": EnvFact(
        "unsupported on GPUDirect RDMA platforms (the plugin warns)", "https://github.com/aws/aws-ofi-nccl/blob/master/src/nccl_ofi_net.cpp",
        gdr_only=True),
}

#: Plugin-managed values (aws/aws-ofi-nccl src/platform-aws.cpp): aws-ofi-nccl sets these per platform when
#: unset; a manual value overrides the tuned default (R-ENV-2, warning).
PLUGIN_MANAGED: dict[str, EnvFact] = {
    "NCCL_P2P_NET_CHUNKSIZE": EnvFact("aws-ofi-nccl sets the tuned value per platform when unset", OFI_PLAT),
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": EnvFact("aws-ofi-nccl sets the tuned value per platform when unset", OFI_PLAT),
    "NCCL_NVLS_CHUNKSIZE": EnvFact("aws-ofi-nccl sets the tuned value per platform when unset", OFI_PLAT),
    "NCCL_NET_FORCE_FLUSH": EnvFact("aws-ofi-nccl sets it per platform when unset", OFI_PLAT),
    "NCCL_NETDEVS_POLICY": EnvFact("aws-ofi-nccl sets max:1 on p5en and p6-b200 when unset", OFI_PLAT),
    "NCCL_TOPO_FILE": EnvFact("aws-ofi-nccl ships the static topology for p4d/p4de and sets it when unset", OFI_PLAT),
    "NCCL_TUNER_PLUGIN": EnvFact("aws-ofi-nccl sets it to its own tuner when unset", OFI_PLAT),
    "FI_EFA_USE_HUGE_PAGE": EnvFact("set FI_EFA_USE_HUGE_PAGE=0 only when fork() fails with huge pages", OFI_ENV),
}


#: Loader variables that decide which libraries a job loads: a value here can shadow the pinned NCCL
#: or the aws-ofi-nccl plugin (NVIDIA/nccl src/init.cc: a pip/conda NCCL shadows the pinned one; aws/aws-ofi-nccl issue #241:
#: "foreign libfabric"), or hide the pinned CUDA/EFA tools (PATH) (R-ENV-3, warning).
LOADER_PATHS = {
    "LD_PRELOAD": "preloads libraries into every job and can shadow the pinned NCCL or the aws-ofi-nccl plugin",
    "LD_LIBRARY_PATH": "replaces the library search path the job environment file sets for CUDA, NCCL and the EFA libraries; "
                       "a foreign libfabric or NCCL here makes NCCL fall back to sockets",
    "PATH": "replaces the PATH the job environment file sets for the pinned CUDA and EFA tools",
}


def _lookup(table: dict[str, EnvFact], name: str) -> EnvFact | None:
    if name in table:
        return table[name]
    return next((f for key, f in table.items() if f.prefix and name.startswith(key)), None)


@rule("R-ENV-1", source=f"{OFI_ENV} (obsolete or harmful)")
def obsolete_or_harmful_environment(bp: Blueprint) -> Iterator[Violation]:
    gdr = any(get_instance(g.instance_type).gdr_required and g.efa_enabled for g in bp.compute)
    for name, value in bp.software.environment.items():
        fact = _lookup(OBSOLETE_OR_HARMFUL, name)
        if fact is None or (fact.gdr_only and not gdr):
            continue
        yield f"software.environment.{name}", (
            f"obsolete or harmful on EFA: {fact.reason}, got {name}={value!r}; allowed removing it"
        )


@rule("R-ENV-2", level="warning", source=f"{OFI_PLAT}; {NCCL_MNNVL}",
      scope="software")
def plugin_managed_environment(software: SoftwareSpec) -> Iterator[Violation]:
    for name, value in software.environment.items():
        fact = _lookup(PLUGIN_MANAGED, name)
        if fact is not None:
            yield f"software.environment.{name}", f"{fact.reason}, got {name}={value!r}; allowed leaving it unset"
        elif name == "NCCL_MNNVL_ENABLE" and value.strip() == "0":
            yield f"software.environment.{name}", (
                f"disables multi-node NVLink; use it only to bypass a broken IMEX setup, got {name}={value!r}; "
                "allowed leaving it unset"
            )


@rule("R-ENV-3", level="warning", source="NVIDIA/nccl src/init.cc (the version line shows which libnccl loaded); "
      "aws/aws-ofi-nccl issue #241", scope="software")
def loader_path_environment(software: SoftwareSpec) -> Iterator[Violation]:
    for name, value in software.environment.items():
        if name in LOADER_PATHS:
            yield f"software.environment.{name}", (
                f"{LOADER_PATHS[name]}, got {name}={value!r}; allowed leaving it unset (set it per job if you must)"
            )


@rule("R-NCCL-4", source=f"{NCCL_PLUGIN_OPEN} (absolute plugin path mangled; fixed in 2.27.5)", scope="software")
def nccl_2_27_3_absolute_plugin_path(software: SoftwareSpec) -> Iterator[Violation]:
    stack = software_stack(software)
    if not same_version(stack.nccl, "2.27.3"):
        return
    for name in ("NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN"):
        value = software.environment.get(name, "")
        if value.startswith("/"):
            yield f"software.environment.{name}", (
                f"NCCL 2.27.3 silently ignores an absolute plugin path, got {name}={value!r}; "
                "allowed a short name such as 'ofi', or NCCL other than 2.27.3"
            )
