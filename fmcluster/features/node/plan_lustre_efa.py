"""LNet over EFA to an EFA-enabled FSx for Lustre file system (issue 23 item 8): which compute groups configure it
at boot, with how many EFA interfaces, and why a group that cannot still mounts over TCP.

An EFA-enabled file system (``storage.lustre.efa_enabled``) is reached over EFA only by clients whose LNet has an
``efa`` network; without it they mount over TCP. The FSx for Lustre User Guide, "Configuring EFA clients"
(https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html), lists what a client needs:

- an OS it supports: Amazon Linux 2023, RHEL 9.5 or newer, Ubuntu 22.04 or newer with kernel 6.8+ (every OS a
  blueprint can name; the Ubuntu kernel is checked on the node, not here);
- an EFA-capable instance on Nitro v4 or newer (not trn2), and the Lustre client with its EFA modules (the Deep
  Learning AMI carries them; other images: not recorded in the catalog, so the boot step checks for the
  ``kefalnd`` module and fails closed without it);
- LNet configured with EFA interfaces (``lnetctl net add --net efa --if <device> --peer-credits 32``), a default
  number per instance type (the guide's Step 4 table, :data:`FSX_EFA_CLIENT_INTERFACES`);
- GPUDirect Storage (optional): P5, P5e, P5en and P6-B200 with NVIDIA's GDS driver (nvidia-fs) 2.24.2 or newer
  (:data:`FSX_GDS_TYPES`). fmcluster does not build nvidia-fs (the guide builds it from GitHub, which a node must
  not reach at boot); the boot step reports whether it is loaded.

The module-load order (``lnet``, ``kefalnd ipif_name=<primary interface>``, ``ksocklnd``, ``lnetctl lnet
configure``), ``lnetctl set discovery 1`` and ``lnetctl udsp add --src efa --priority 0`` follow the EKS User Guide's
EFA example, "Optimize Amazon FSx for Lustre performance on nodes (EFA)"
(https://docs.aws.amazon.com/eks/latest/userguide/fsx-csi-tuning-efa.html). The step template is
``node/templates/steps/lustre_efa.sh.j2``; decision: docs/decisions.md item 54.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fmcluster.blueprint.model import Blueprint
    from fmcluster.catalog import InstanceSpec

#: Where the facts below come from.
FSX_EFA_CLIENTS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html"
EKS_FSX_EFA = "https://docs.aws.amazon.com/eks/latest/userguide/fsx-csi-tuning-efa.html"

#: Instance type -> the default number of EFA interfaces a Lustre client configures (FSx for Lustre User Guide,
#: "Configuring EFA clients", Step 4 table). Each interface counts against the file system's limit of 1024 EFA
#: connections across all clients (same page). Types the table does not name are not configured (see
#: :func:`lustre_efa_gap`): whether they run on Nitro v4 or newer is not recorded here.
FSX_EFA_CLIENT_INTERFACES: dict[str, int] = {
    "p5.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p6-b200.48xlarge": 8,
    "p6-b300.48xlarge": 16,
    "p6e-gb200.36xlarge": 8,
}
#: OS -> the oldest kernel an EFA Lustre client runs on there (same page: "Ubuntu 22.04 or newer with kernel version
#: 6.8+"; Amazon Linux 2023 is listed without a kernel bound). Checked on the node by the boot step.
FSX_EFA_MIN_KERNEL: dict[str, str] = {"ubuntu-22.04": "6.8", "ubuntu-24.04": "6.8"}
#: Instance types on which FSx for Lustre supports GPUDirect Storage (same page, "Install the GDS driver").
FSX_GDS_TYPES: frozenset[str] = frozenset({"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"})
#: FSx for Lustre's limit of EFA connections to one file system, across all client instances (same page, Step 4).
FSX_EFA_CONNECTIONS_MAX = 1024


def lustre_efa_gap(bp: Blueprint, inst: InstanceSpec, *, efa_enabled: bool, lustre_on_nodes: bool) -> str | None:
    """Why a compute group of ``inst`` in ``bp`` reaches the blueprint's EFA-enabled file system over TCP only, or
    ``None`` when it configures LNet over EFA (or there is no EFA-enabled file system: nothing to configure).

    ``efa_enabled``: the group uses EFA; ``lustre_on_nodes``: the orchestrator mounts Lustre on the host before
    fmcluster's node script runs (``OrchestratorProfile.lustre_on_nodes``; HyperPod EKS mounts through the CSI
    driver, whose nodes fmcluster's script does not configure)."""
    fs = bp.storage.lustre
    if fs is None or not fs.efa_enabled:
        return None
    if not efa_enabled:
        return "the group has EFA off"
    if not lustre_on_nodes:
        return (f"{bp.orchestrator.profile_key} mounts FSx for Lustre through its CSI driver, and fmcluster does not configure "
                f"LNet over EFA on those nodes ({EKS_FSX_EFA} shows it in launch-template user data)")
    if inst.name not in FSX_EFA_CLIENT_INTERFACES:
        return (f"{inst.name} is not in FSx's EFA client table (EFA to the file system needs Nitro v4 or newer, "
                "not recorded for this type)")
    return None


def lustre_efa_interfaces(bp: Blueprint, inst: InstanceSpec, *, efa_enabled: bool, lustre_on_nodes: bool) -> int:
    """How many EFA interfaces a node of ``inst`` adds to LNet for the blueprint's file system: FSx's default for the
    type (:data:`FSX_EFA_CLIENT_INTERFACES`), or 0 when the group does not configure LNet over EFA (no EFA-enabled
    file system, or :func:`lustre_efa_gap` names why)."""
    fs = bp.storage.lustre
    if fs is None or not fs.efa_enabled:
        return 0
    if lustre_efa_gap(bp, inst, efa_enabled=efa_enabled, lustre_on_nodes=lustre_on_nodes) is not None:
        return 0
    return FSX_EFA_CLIENT_INTERFACES[inst.name]
