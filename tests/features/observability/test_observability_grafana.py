"""``fmcluster grafana``: the Amazon Managed Grafana workspace gets its data source and dashboards without
manual steps, idempotently. The grafana and cloudformation APIs are botocore Stubbers (request parameters
checked against the service model); the Grafana HTTP API is a recording fake that answers like Grafana
(200 / 404 / 500 with a JSON body)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmcluster.features.observability.provision_grafana import GrafanaTarget, ProvisionError, provision_grafana
from fmcluster.features.observability.render_context import observability_context
from fmcluster.features.observability.render_dashboards import build_dashboards
from fmcluster.provision import run
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

WS = "g-0123456789"
URL = f"https://{WS}.grafana-workspace.us-east-1.amazonaws.com"
PROM = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-abc/"
OUTPUTS = {"GrafanaUrl": URL, "QueryUrl": PROM + "api/v1/query"}


class FakeGrafana:
    """Grafana's HTTP API: folders and data sources by uid, dashboards saved with overwrite."""

    def __init__(self, *, folder: bool = False, datasource: bool = False, fail_on: str = "") -> None:
        self.folder, self.datasource, self.fail_on = folder, datasource, fail_on
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []
        self.dashboards: dict[str, dict[str, Any]] = {}

    def __call__(self, method: str, url: str, headers: dict[str, str], body: dict[str, Any] | None) -> tuple[int, Any]:
        assert url.startswith(URL + "/api/") and headers == {"Authorization": "Bearer glsa_token"}
        path = url.removeprefix(URL)
        self.calls.append((method, path, body))
        if self.fail_on and path == self.fail_on:
            return 500, {"message": "Internal Server Error"}
        if (method, path) == ("GET", "/api/folders/fmcluster"):
            return (200, {"uid": "fmcluster"}) if self.folder else (404, {"message": "folder not found"})
        if (method, path) == ("POST", "/api/folders"):
            self.folder = True
            return 200, {"uid": body["uid"] if body else ""}
        if (method, path) == ("GET", "/api/datasources/uid/fmcluster-prometheus"):
            return (200, {"uid": "fmcluster-prometheus"}) if self.datasource else (404, {"message": "Data source not found"})
        if (method, path) in {("POST", "/api/datasources"), ("PUT", "/api/datasources/uid/fmcluster-prometheus")}:
            self.datasource = True
            return 200, {"message": "Datasource added"}
        if (method, path) == ("POST", "/api/dashboards/db") and body:
            self.dashboards[body["dashboard"]["uid"]] = body["dashboard"]
            return 200, {"status": "success"}
        return 404, {"message": "Not found"}


def _ctx():
    rc = resolve(load_blueprint_text(blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})).blueprint)
    return observability_context(rc)


def _grafana_client(*, existing: bool) -> tuple[Any, Stubber]:
    client = boto3.client("grafana", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    accounts = [{"id": "7", "name": "fmcluster", "grafanaRole": "ADMIN", "isDisabled": "false"}] if existing else []
    stub.add_response("list_workspace_service_accounts", {"serviceAccounts": accounts, "workspaceId": WS},
                      {"workspaceId": WS})
    if not existing:
        stub.add_response("create_workspace_service_account",
                          {"id": "7", "name": "fmcluster", "grafanaRole": "ADMIN", "workspaceId": WS},
                          {"workspaceId": WS, "name": "fmcluster", "grafanaRole": "ADMIN"})
    stub.add_response(
        "create_workspace_service_account_token",
        {"serviceAccountId": "7", "workspaceId": WS,
         "serviceAccountToken": {"id": "tok-1", "name": "fmcluster-1", "key": "glsa_token"}},
        {"workspaceId": WS, "serviceAccountId": "7", "name": ANY, "secondsToLive": 900},
    )
    stub.add_response("delete_workspace_service_account_token",
                      {"serviceAccountId": "7", "tokenId": "tok-1", "workspaceId": WS},
                      {"workspaceId": WS, "serviceAccountId": "7", "tokenId": "tok-1"})
    return client, stub


def test_first_run_creates_service_account_data_source_and_every_dashboard() -> None:
    ctx = _ctx()
    client, stub = _grafana_client(existing=False)
    fake = FakeGrafana()
    with stub:
        report = provision_grafana(ctx, GrafanaTarget.from_outputs(OUTPUTS, "us-east-1"), grafana=client, http=fake)
        stub.assert_no_pending_responses()
    assert report.actions[:4] == ["service account created", "folder created", "data source created",
                                  f"dashboard {next(iter(build_dashboards(ctx)))} saved"]
    (ds,) = [b for m, p, b in fake.calls if (m, p) == ("POST", "/api/datasources")]
    assert ds is not None and ds["url"] == PROM and ds["type"] == "prometheus"
    assert ds["jsonData"] == {"timeInterval": "30s", "httpMethod": "POST", "sigV4Auth": True,
                              "sigV4AuthType": "ec2_iam_role", "sigV4Region": "us-east-1"}
    assert set(fake.dashboards) == {d["uid"] for d in build_dashboards(ctx).values()}


def test_second_run_updates_in_place() -> None:
    ctx = _ctx()
    client, stub = _grafana_client(existing=True)
    fake = FakeGrafana(folder=True, datasource=True)
    with stub:
        report = provision_grafana(ctx, GrafanaTarget.from_outputs(OUTPUTS, "us-east-1"), grafana=client, http=fake)
        stub.assert_no_pending_responses()
    assert report.actions[:2] == ["service account reused", "data source updated"]
    methods = [(m, p) for m, p, _ in fake.calls]
    assert ("POST", "/api/datasources") not in methods and ("POST", "/api/folders") not in methods
    saves = [b for m, p, b in fake.calls if p == "/api/dashboards/db"]
    assert saves and all(b is not None and b["overwrite"] is True and b["folderUid"] == "fmcluster" for b in saves)


def test_failure_names_the_call_and_still_deletes_the_token() -> None:
    client, stub = _grafana_client(existing=True)
    fake = FakeGrafana(folder=True, fail_on="/api/dashboards/db")
    with stub, pytest.raises(ProvisionError, match=r"POST .*/api/dashboards/db answered 500: \{'message': 'Internal"):
        provision_grafana(_ctx(), GrafanaTarget.from_outputs(OUTPUTS, "us-east-1"), grafana=client, http=fake)
    stub.assert_no_pending_responses()  # the token deletion ran


def test_outputs_that_are_not_amg_are_rejected() -> None:
    with pytest.raises(ProvisionError, match="GrafanaUrl is not an Amazon Managed Grafana URL, got 'http://localhost:3000'"):
        GrafanaTarget.from_outputs({"GrafanaUrl": "http://localhost:3000", "QueryUrl": ""}, "us-east-1")


def test_cli_reads_the_stack_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}}))
    grafana, gstub = _grafana_client(existing=True)
    cfn = boto3.client("cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    cstub = Stubber(cfn)
    cstub.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "t-cluster-observability", "CreationTime": "2026-12-01T00:00:00Z",
                     "StackStatus": "CREATE_COMPLETE",
                     "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in OUTPUTS.items()]}]},
        {"StackName": "t-cluster-observability"},
    )
    fake = FakeGrafana(folder=True, datasource=True)

    class Session:
        def client(self, name: str) -> Any:
            return {"grafana": grafana, "cloudformation": cfn}[name]

    import fmcluster.features.observability.provision_grafana as mod

    real = mod.provision_grafana
    monkeypatch.setattr(mod, "provision_grafana", lambda ctx, target, *, grafana: real(ctx, target, grafana=grafana, http=fake))
    with gstub, cstub:
        assert run(blueprint, session_factory=lambda profile, region: Session()) == 0
    assert ("PUT", "/api/datasources/uid/fmcluster-prometheus") in [(m, p) for m, p, _ in fake.calls]


def test_cli_refuses_self_hosted(tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(blueprint_text({"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"}}))
    assert run(blueprint, session_factory=lambda p, r: pytest.fail("no AWS call for a self-hosted blueprint")) == 2


def test_cli_without_credentials_could_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No credentials is "could not run" (exit 2, as the command's help and the README say), not a failed call."""
    from botocore.exceptions import NoCredentialsError

    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}}))

    class Session:
        def client(self, name: str) -> Any:
            class Client:
                def describe_stacks(self, **_: Any) -> Any:
                    raise NoCredentialsError()
            return Client()

    assert run(blueprint, session_factory=lambda profile, region: Session()) == 2
    assert "no AWS credentials found" in capsys.readouterr().err
