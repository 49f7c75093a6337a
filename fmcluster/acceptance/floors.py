"""The judge's :class:`~fmcluster.acceptance.judge.Floor` from the catalog's acceptance figures.

Not shipped to the cluster (it imports the catalog); the gate bundle carries the same data as
``floors.json`` (:func:`floor_json`).
"""

from __future__ import annotations

import json
from dataclasses import asdict

from fmcluster.acceptance.judge import Floor
from fmcluster.catalog.acceptance import acceptance_figures


def floor_for(instance_type: str) -> Floor:
    """The floor of ``instance_type`` (a HyperPod ``ml.`` name is accepted).

    Raises:
        UnknownInstanceType: not in the catalog (message with the known types and a did-you-mean).
    """
    name = instance_type[3:] if instance_type.startswith("ml.") else instance_type
    fig = acceptance_figures(name)
    source = fig.floor.source if fig.floor.busbw_gbps is not None else ""
    note = fig.floor.note or ("; ".join(fig.notes))
    return Floor(
        instance_type=name,
        reference_size_bytes=fig.reference_size_bytes,
        floor_busbw_gbps=fig.floor.busbw_gbps,
        enforced=fig.enforced,
        expected_busbw_gbps=fig.expected_at(fig.reference_size_bytes),
        efa_devices=fig.efa_devices,
        gpus=fig.gpus,
        source=source,
        note=note,
    )


def floor_json(instance_type: str) -> str:
    """``floors.json`` of the gate bundle: the fields of :class:`Floor`."""
    return json.dumps(asdict(floor_for(instance_type)), indent=2) + "\n"
