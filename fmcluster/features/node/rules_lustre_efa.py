"""Rules for LNet over EFA to an EFA-enabled FSx for Lustre file system (R-FSX-12..14; issue 23 item 8).

The facts (FSx's EFA client table, which groups configure it) live in :mod:`fmcluster.features.node.plan_lustre_efa`
and are resolved once per group (``ResolvedImage.lustre_efa_interfaces``). A group with EFA off is R-FSX-10's.
Messages follow ``<what is wrong>, got <value>; allowed <values>`` (README.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.features.node.plan_image import image_of
from fmcluster.features.node.plan_lustre_efa import (
    FSX_EFA_CLIENTS,
    FSX_EFA_CONNECTIONS_MAX,
    lustre_efa_gap,
)
from fmcluster.resolved.cluster import ResolvedCluster
from fmcluster.validation.rules import Violation, rule


@rule("R-FSX-12", level="warning", scope="cluster",
      source=f"{FSX_EFA_CLIENTS} (EFA clients: Nitro v4+ instances, the Step 4 table of interfaces per type); "
      "fmcluster configures LNet over EFA only where the orchestrator mounts Lustre on the host")
def efa_file_system_reached_over_tcp(rc: ResolvedCluster) -> Iterator[Violation]:
    """A group with EFA on that still reaches the EFA-enabled file system over TCP, and why."""
    for g in rc.groups:
        if not g.spec.efa_enabled:
            continue  # R-FSX-10
        gap = lustre_efa_gap(rc.blueprint, g.instance, efa_enabled=True, lustre_on_nodes=rc.profile.lustre_on_nodes)
        if gap is not None:
            yield f"{g.path}.instance_type", (
                f"compute group {g.name!r} reaches the EFA-enabled file system over TCP only: {gap}, "
                f"got {g.instance.name}; allowed as is (TCP throughput), or an instance type FSx lists for EFA "
                "clients on an orchestrator that mounts Lustre on the host"
            )


@rule("R-FSX-13", level="warning", scope="cluster",
      source=f"{FSX_EFA_CLIENTS} (Step 2: the Deep Learning AMI carries the Lustre client, EFA and GDS drivers; other "
      "images install them); unverified for every image in the catalog")
def lustre_efa_client_unrecorded(rc: ResolvedCluster) -> Iterator[Violation]:
    """Groups that configure LNet over EFA on an image whose Lustre EFA module is not recorded: a node without it
    fails its boot (fail closed), so the warning says so before deploy."""
    for g in rc.groups:
        image = image_of(g)
        if image.lustre_efa_interfaces == 0:
            continue
        yield f"{g.path}.instance_type", (
            f"compute group {g.name!r} configures LNet over EFA to the file system, and whether {image.source} "
            "carries the Lustre client's EFA driver (kefalnd) and, on Ubuntu, kernel 6.8+ is not recorded: a node "
            f"without them fails its boot naming the module, got {image.source}; allowed as is, an image that "
            "carries them (FSx: the Deep Learning AMI does), or storage.lustre.efa_enabled: false"
        )


@rule("R-FSX-14", scope="cluster", source=f"{FSX_EFA_CLIENTS} (Step 4: at most {FSX_EFA_CONNECTIONS_MAX} EFA "
      "connections per file system across all clients; each configured EFA interface counts as one)")
def efa_connections_within_limit(rc: ResolvedCluster) -> Iterator[Violation]:
    """Every node's EFA interfaces, at the groups' largest size, fit FSx's limit of EFA connections."""
    per_group = {g.name: g.spec.count * image_of(g).lustre_efa_interfaces for g in rc.groups}
    total = sum(per_group.values())
    if total > FSX_EFA_CONNECTIONS_MAX:
        parts = ", ".join(f"{name}: {n}" for name, n in per_group.items() if n)
        yield "storage.lustre.efa_enabled", (
            f"the compute nodes would open more EFA connections to the file system than FSx allows "
            f"({FSX_EFA_CONNECTIONS_MAX}), got {total} ({parts}; nodes x EFA interfaces per node); "
            "allowed fewer nodes on EFA-enabled groups, or storage.lustre.efa_enabled: false"
        )
