"""IMEX rules: NVLink-domain types (catalog ``imex: true``, p6e-gb200) need the IMEX domain set per job.

Whether an orchestrator can do it, and with which capacity, is one fact of its profile
(:class:`fmcluster.orchestrators.profile.ImexWiring`), resolved once per group (``ResolvedGroup.imex``), which the
orchestrator constructs read as well: this rule never decides it itself. A blueprint whose GB200 group would come up
without per-job IMEX is an error, not an ``ok``: multi-node NVLink (MNNVL) then fails or NCCL falls back silently (NVIDIA IMEX guide).
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.orchestrators.registry import IMEX_SOURCES
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule

IMEX_GUIDE = "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/deployment.html"


@rule("R-IMEX-1", scope="cluster", suppressed_by=("R-CAP-6",),
      source=f"{IMEX_GUIDE} (every node of the domain listed in nodes_config.cfg); {'; '.join(IMEX_SOURCES)} "
      "(PCS: Slurm 25.05 or later, UltraServers on a Capacity Block); "
      "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html (Kubernetes: DRA); "
      "per orchestrator: OrchestratorProfile.imex")
def imex_per_job(rc: ResolvedCluster) -> Iterator[Violation]:
    """Every group of an IMEX type must get the per-job IMEX prolog on this orchestrator (as configured).

    Reports at the setting that stops it (``ImexWiring.blocked_by``: HyperPod's orchestration eks, PCS Slurm before
    25.05), or at the group's capacity type when the wiring needs another one (PCS: a Capacity Block; suppressed
    while R-CAP-6 reports the capacity already)."""
    imex = rc.profile.imex
    for g in rc.groups:
        if not g.instance.imex or g.imex:
            continue
        t = g.spec.instance_type
        if imex.method is None:
            value: object = rc.blueprint.orchestrator
            for part in imex.blocked_by.split(".")[1:]:
                value = getattr(value, part)
            yield imex.blocked_by, (
                f"{t} in group {g.name!r} needs the IMEX domain set per job, and {imex.reason}, got {value!r}; "
                f"allowed {imex.allowed}"
            )
        else:
            yield f"{g.path}.capacity.type", (
                f"{t} gets the IMEX domain per job only on {' or '.join(imex.capacity_types)} capacity "
                f"({imex.reason}), got {g.spec.capacity.type!r}; allowed {', '.join(imex.capacity_types)}"
            )
