"""The budget's fleet stop on ParallelCluster (fmcluster/orchestrators/parallelcluster/handler_fleet_stop.py) against
botocore's Stubber: the requests are checked against DynamoDB's service model, and the expected ones are what
``pcluster update-compute-fleet --status STOP_REQUESTED`` sends (aws/aws-parallelcluster
cli/src/pcluster/models/compute_fleet_status_manager.py: a consistent GetItem of ``COMPUTE_FLEET``, then an UpdateItem
of ``Data.status`` and ``Data.lastStatusUpdatedTime`` conditional on the status read)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmcluster.orchestrators.parallelcluster import handler_fleet_stop as h

TABLE = "parallelcluster-h200-cb"
KEY = {"Id": {"S": "COMPUTE_FLEET"}}


def _client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")


def _item(status: str) -> dict[str, Any]:
    return {"Item": {"Id": {"S": "COMPUTE_FLEET"}, "Data": {"M": {
        "status": {"S": status}, "lastStatusUpdatedTime": {"S": "2026-12-05 10:00:00.000000+00:00"}}}}}


@pytest.mark.parametrize(("status", "requested"), [
    ("RUNNING", True), ("PROTECTED", True), ("START_REQUESTED", True),
    ("STOP_REQUESTED", False), ("STOPPING", False), ("STOPPED", False),
])
def test_the_stop_asks_for_stop_requested_unless_a_stop_is_under_way(status: str, requested: bool) -> None:
    ddb = _client()
    with Stubber(ddb) as stub:
        stub.add_response("get_item", _item(status), {"TableName": TABLE, "Key": KEY, "ConsistentRead": True})
        if requested:
            stub.add_response("update_item", {}, {
                "TableName": TABLE, "Key": KEY, "UpdateExpression": "SET #dt.#st = :s, #dt.#lut = :t",
                "ConditionExpression": "#dt.#st = :current",
                "ExpressionAttributeNames": {"#dt": "Data", "#st": "status", "#lut": "lastStatusUpdatedTime"},
                "ExpressionAttributeValues": {":s": {"S": "STOP_REQUESTED"}, ":t": ANY, ":current": {"S": status}}})
        assert h.stop(ddb, TABLE) == {"table": TABLE, "status": status, "requested": requested}
        stub.assert_no_pending_responses()


def test_a_status_changed_meanwhile_fails_the_call_and_shows_in_the_log() -> None:
    """The conditional write fails as pcluster's does (ConditionalCheckFailedException); SNS invokes the function
    asynchronously, and Lambda retries a failed asynchronous invocation (twice by default: Lambda developer guide,
    "Asynchronous invocation"), which reads the new status."""
    ddb = _client()
    with Stubber(ddb) as stub:
        stub.add_response("get_item", _item("RUNNING"), {"TableName": TABLE, "Key": KEY, "ConsistentRead": True})
        stub.add_client_error("update_item", "ConditionalCheckFailedException")
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            h.stop(ddb, TABLE)


def test_a_cluster_without_the_item_is_refused() -> None:
    ddb = _client()
    with Stubber(ddb) as stub:
        stub.add_response("get_item", {}, {"TableName": TABLE, "Key": KEY, "ConsistentRead": True})
        with pytest.raises(RuntimeError, match="has no COMPUTE_FLEET item"):
            h.stop(ddb, TABLE)


def test_the_handler_reads_the_table_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    ddb = _client()
    monkeypatch.setenv("FLEET_STATUS_TABLE", TABLE)
    monkeypatch.setattr(h.boto3, "client", lambda service: ddb if service == "dynamodb" else None)
    with Stubber(ddb) as stub:
        stub.add_response("get_item", _item("STOPPED"), {"TableName": TABLE, "Key": KEY, "ConsistentRead": True})
        assert h.handler({"Records": [{"Sns": {"Message": "budget"}}]}, None)["requested"] is False


def test_the_table_is_the_one_pcluster_names() -> None:
    from fmcluster.orchestrators.parallelcluster.construct_fleet_stop import fleet_status_table

    assert fleet_status_table("h200-cb") == TABLE  # PCLUSTER_DYNAMODB_PREFIX + cluster name
