"""The budget's fleet stop on AWS PCS (fmcluster/orchestrators/pcs/handler_fleet_stop.py) against botocore's Stubber
(requests checked against the pcs service model): each compute node group scaled to minimum 0 and maximum 0."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmcluster.orchestrators.pcs import handler_fleet_stop as h

GROUPS = {"h200": "pcs_ng_h200", "gpu": "pcs_ng_gpu"}


def _client() -> Any:
    return boto3.client("pcs", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")


def _expect(stub: Stubber, group_id: str, error: str | None = None) -> None:
    params = {"clusterIdentifier": "pcs_cluster", "computeNodeGroupIdentifier": group_id,
              "scalingConfiguration": {"minInstanceCount": 0, "maxInstanceCount": 0}}
    if error:
        stub.add_client_error("update_compute_node_group", error, expected_params=params)
    else:
        stub.add_response("update_compute_node_group", {}, params)


@pytest.mark.parametrize(("failing", "stopped"), [
    (None, ["gpu", "h200"]),
    ("pcs_ng_gpu", ["h200"]),
], ids=["all", "one-fails-the-other-is-still-stopped"])
def test_every_compute_node_group_is_scaled_to_zero(failing: str | None, stopped: list[str]) -> None:
    pcs = _client()
    with Stubber(pcs) as stub:
        for group_id in ("pcs_ng_gpu", "pcs_ng_h200"):  # in group-name order
            _expect(stub, group_id, "ConflictException" if group_id == failing else None)
        if failing is None:
            assert h.stop(pcs, "pcs_cluster", GROUPS) == {"cluster": "pcs_cluster", "stopped": stopped}
        else:
            with pytest.raises(RuntimeError, match=r"stopped \['h200'\]; could not stop: gpu \(pcs_ng_gpu\)"):
                h.stop(pcs, "pcs_cluster", GROUPS)
        stub.assert_no_pending_responses()


def test_the_handler_reads_cluster_and_groups_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    pcs = _client()
    monkeypatch.setenv("CLUSTER_ID", "pcs_cluster")
    monkeypatch.setenv("NODE_GROUPS", '{"h200": "pcs_ng_h200"}')
    monkeypatch.setattr(h.boto3, "client", lambda service: pcs if service == "pcs" else None)
    with Stubber(pcs) as stub:
        _expect(stub, "pcs_ng_h200")
        assert h.handler({}, None) == {"cluster": "pcs_cluster", "stopped": ["h200"]}
