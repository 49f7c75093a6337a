"""What the head node's monitoring install reads from the cluster's mirror bucket instead of the internet (issue 23
item 4; the mirror itself: :mod:`fmcluster.features.node.plan_mirror`): Prometheus, node_exporter, and when
self-hosted Alertmanager and Grafana (release archives with a pinned sha256, :mod:`.pins`), and the Slurm exporter's
prebuilt release archive (sha256 read at deploy time from the release's checksum list, :data:`.pins.SLURM_EXPORTER`).

The head node's CPU architecture is not in the resolved model (each orchestrator picks its head, controller or
login instance), so every archive is mirrored for both architectures (:data:`.pins.ARCHES`); the script picks its
own with ``uname -m``. Every object is optional: the monitoring install never fails the node.
"""

from __future__ import annotations

from fmcluster.features.observability import pins
from fmcluster.resolved import ResolvedCluster
from fmcluster.resolved.mirror import MirrorObject, mirror_key


def head_archives(metrics: str) -> tuple[pins.Archive, ...]:
    """The pinned archives the head node installs for ``metrics`` (``managed``: Prometheus agent and node_exporter;
    ``self_hosted``: also Alertmanager and Grafana)."""
    both = (pins.PROMETHEUS, pins.NODE_EXPORTER)
    return both + ((pins.ALERTMANAGER, pins.GRAFANA) if metrics == "self_hosted" else ())


def head_mirror_objects(rc: ResolvedCluster) -> tuple[MirrorObject, ...]:
    """The head node's mirror objects, or ``()`` when fmcluster runs no head-node collector (metrics off, or the
    HyperPod observability add-on collects)."""
    if not rc.blueprint.observability.enabled or rc.profile.metrics_collector != "head_node":
        return ()
    out = [MirrorObject(a.name, a.url_for(arch), mirror_key(a.name, a.url_for(arch)), a.sha256[arch], optional=True)
           for a in head_archives(rc.blueprint.observability.metrics) for arch in pins.ARCHES]
    se = pins.SLURM_EXPORTER
    out += [MirrorObject(se.name, se.url_for(arch), mirror_key(se.name, se.url_for(arch)), None, optional=True,
                         index="checksums", index_url=se.checksums_url) for arch in pins.ARCHES]
    return tuple(out)
