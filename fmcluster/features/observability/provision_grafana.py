"""Provision the Amazon Managed Grafana workspace after deploy: the AMP data source and every dashboard.

CloudFormation has no resource for what lives inside a Grafana workspace, so ``fmcluster grafana`` does it
through the workspace's HTTP API with a short-lived service-account token:

1. the service account ``fmcluster`` (Admin) of the workspace, created once and reused
   (``grafana:ListWorkspaceServiceAccounts`` / ``CreateWorkspaceServiceAccount``);
2. a token valid for :data:`TOKEN_TTL_S` (``CreateWorkspaceServiceAccountToken``), deleted at the end
   (``DeleteWorkspaceServiceAccountToken``) whatever happened;
3. the Prometheus data source with uid ``fmcluster-prometheus`` pointing at the AMP workspace, SigV4 with the
   workspace's IAM role and ``timeInterval`` = the scrape interval: ``PUT /api/datasources/uid/<uid>`` when
   it exists (``GET`` answers 200), ``POST /api/datasources`` when not (404);
4. every dashboard (``POST /api/dashboards/db`` with ``overwrite: true``, same uid each time) in the folder
   ``fmcluster`` (``GET /api/folders/fmcluster``, ``POST /api/folders`` when missing).

Running it again changes nothing but the dashboards' version numbers (idempotent on update).

Sources: Amazon Managed Grafana service accounts and the Grafana HTTP API in AMG
(https://docs.aws.amazon.com/grafana/latest/userguide/service-accounts.html,
https://docs.aws.amazon.com/grafana/latest/userguide/Using-Grafana-APIs.html); Grafana's data source,
folder and dashboard APIs (https://grafana.com/docs/grafana/latest/developers/http_api/data_source/,
.../folder/, .../dashboard/); the Prometheus data source's SigV4 settings ``sigV4Auth``, ``sigV4AuthType``,
``sigV4Region`` and ``timeInterval`` (https://grafana.com/docs/grafana/latest/datasources/prometheus/configure/).
NOT VERIFIED: that AMG names its workspace-role credential provider ``ec2_iam_role`` in ``sigV4AuthType``
(the console calls it "Workspace IAM role"); if the data source test fails, pick that provider in the console.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fmcluster.features.observability.render_context import ObservabilityContext
from fmcluster.features.observability.render_dashboards import build_dashboards
from fmcluster.features.observability.render_grafana import PROMETHEUS_DATASOURCE_UID, prometheus_json_data

SERVICE_ACCOUNT = "fmcluster"
FOLDER_UID = "fmcluster"
TOKEN_TTL_S = 900
#: AMG's provider for the workspace's own IAM role (see the module docstring: not verified).
SIGV4_AUTH_TYPE = "ec2_iam_role"

#: (method, url, headers, JSON body or None) -> (HTTP status, parsed JSON body or None)
Http = Callable[[str, str, dict[str, str], dict[str, Any] | None], tuple[int, Any]]


class ProvisionError(Exception):
    """Provisioning could not finish; the message says which call failed and what it answered."""


@dataclass(frozen=True)
class GrafanaTarget:
    """Where to provision: the AMG workspace (id and ``https://`` URL) and the AMP workspace's Prometheus
    endpoint (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/``)."""

    workspace_id: str
    grafana_url: str
    prometheus_endpoint: str
    region: str

    @classmethod
    def from_outputs(cls, outputs: dict[str, str], region: str) -> GrafanaTarget:
        """From the observability stack's outputs ``GrafanaUrl`` and ``QueryUrl`` (``<endpoint>api/v1/query``).
        Raises ProvisionError when they are missing or not what the stack writes."""
        grafana_url, query_url = outputs.get("GrafanaUrl", ""), outputs.get("QueryUrl", "")
        host = grafana_url.removeprefix("https://")
        if not grafana_url.startswith("https://") or ".grafana-workspace." not in host:
            raise ProvisionError(
                f"stack output GrafanaUrl is not an Amazon Managed Grafana URL, got {grafana_url!r}; "
                "allowed https://<workspace-id>.grafana-workspace.<region>.amazonaws.com (metrics: managed)"
            )
        if not query_url.endswith("api/v1/query"):
            raise ProvisionError(f"stack output QueryUrl must end in api/v1/query, got {query_url!r}")
        return cls(host.split(".", 1)[0], grafana_url, query_url.removesuffix("api/v1/query"), region)


@dataclass
class ProvisionReport:
    """What was done: ``actions`` in order, e.g. ``["service account reused", "data source updated", ...]``."""

    actions: list[str] = field(default_factory=list)


def urllib_http(method: str, url: str, headers: dict[str, str], body: dict[str, Any] | None) -> tuple[int, Any]:
    """The default :data:`Http`: urllib, 30 s timeout, JSON in and out."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={**headers, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (the workspace's https URL)
            text = resp.read().decode()
            return resp.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace")
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"message": text}


def datasource_body(ctx: ObservabilityContext, target: GrafanaTarget) -> dict[str, Any]:
    """The Prometheus data source: AMP endpoint, SigV4 with the workspace role, ``timeInterval``."""
    return {
        "uid": PROMETHEUS_DATASOURCE_UID,
        "name": "Prometheus (fmcluster)",
        "type": "prometheus",
        "access": "proxy",
        "url": target.prometheus_endpoint,
        "isDefault": True,
        "jsonData": {
            **prometheus_json_data(ctx),
            "httpMethod": "POST",
            "sigV4Auth": True,
            "sigV4AuthType": SIGV4_AUTH_TYPE,
            "sigV4Region": target.region,
        },
    }


def _service_account(grafana: Any, workspace_id: str, report: ProvisionReport) -> str:
    accounts = grafana.list_workspace_service_accounts(workspaceId=workspace_id).get("serviceAccounts", [])
    for a in accounts:
        if a["name"] == SERVICE_ACCOUNT:
            report.actions.append("service account reused")
            return str(a["id"])
    created = grafana.create_workspace_service_account(
        workspaceId=workspace_id, name=SERVICE_ACCOUNT, grafanaRole="ADMIN"
    )
    report.actions.append("service account created")
    return str(created["id"])


def _call(http: Http, method: str, url: str, token: str, body: dict[str, Any] | None, ok: tuple[int, ...]) -> tuple[int, Any]:
    status, answer = http(method, url, {"Authorization": f"Bearer {token}"}, body)
    if status not in ok:
        raise ProvisionError(f"{method} {url} answered {status}: {answer}")
    return status, answer


def provision_grafana(
    ctx: ObservabilityContext, target: GrafanaTarget, *, grafana: Any, http: Http = urllib_http,
) -> ProvisionReport:
    """Create or update the data source and every dashboard of ``ctx`` in ``target`` (see the module doc).

    ``grafana`` is a boto3 ``grafana`` client for the workspace's Region. Raises ProvisionError (the token is
    deleted first) when an API call fails; botocore's ClientError passes through for the AWS calls.
    """
    report = ProvisionReport()
    ws = target.workspace_id
    sa = _service_account(grafana, ws, report)
    token = grafana.create_workspace_service_account_token(
        workspaceId=ws, serviceAccountId=sa, name=f"fmcluster-{int(time.time())}", secondsToLive=TOKEN_TTL_S
    )["serviceAccountToken"]
    try:
        base = target.grafana_url.rstrip("/")
        status, _ = _call(http, "GET", f"{base}/api/folders/{FOLDER_UID}", token["key"], None, (200, 404))
        if status == 404:
            _call(http, "POST", f"{base}/api/folders", token["key"], {"uid": FOLDER_UID, "title": "fmcluster"}, (200,))
            report.actions.append("folder created")
        body = datasource_body(ctx, target)
        uid_url = f"{base}/api/datasources/uid/{PROMETHEUS_DATASOURCE_UID}"
        status, _ = _call(http, "GET", uid_url, token["key"], None, (200, 404))
        if status == 200:
            _call(http, "PUT", uid_url, token["key"], body, (200,))
            report.actions.append("data source updated")
        else:
            _call(http, "POST", f"{base}/api/datasources", token["key"], body, (200,))
            report.actions.append("data source created")
        for name, dashboard in build_dashboards(ctx).items():
            _call(
                http, "POST", f"{base}/api/dashboards/db", token["key"],
                {"dashboard": {**dashboard, "id": None}, "folderUid": FOLDER_UID, "overwrite": True,
                 "message": "fmcluster grafana"},
                (200,),
            )
            report.actions.append(f"dashboard {name} saved")
    finally:
        grafana.delete_workspace_service_account_token(workspaceId=ws, serviceAccountId=sa, tokenId=token["id"])
    return report
