"""The monitoring host's heartbeat (self-hosted metrics): the rendered ``fmcluster-heartbeat`` run under bash against
stub ``curl`` and ``aws``, and where it is installed and shown.

The stubs follow the tools' documented interfaces, not what the script expects:
- ``curl`` (curl(1)): a URL nobody answers exits 7 ("Failed to connect to host"); with ``-f``/``--fail`` an HTTP status
  of 400 or more exits 22 and writes no body; ``-o FILE`` writes the body there instead of standard output; ``-s``,
  ``-S`` and ``--max-time N`` change no outcome here. The "server" is a table URL -> (status, body).
- Prometheus' answers: ``/-/ready`` 200 when ready, 503 while starting (management API); ``/api/v1/alerts`` the
  envelope ``{"status": "success", "data": {"alerts": [{"labels", "annotations", "state", "activeAt", "value"}]}}``
  (https://prometheus.io/docs/prometheus/latest/querying/api/#alerts).
- ``aws``: records its arguments and exits 0 (or the exit code asked for); the test reads them as the CLI's
  put-metric-data customization does (aws/aws-cli ``awscli/customizations/putmetricdata.py``: ``--dimensions`` is
  ``Name=Value`` pairs separated by commas, ``--value`` a number, ``--unit`` a unit name).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.observability.endpoints import observability_endpoints
from fmcluster.features.observability.render_exporters import (
    exporter_context,
    render_exporter_script,
    render_heartbeat_script,
)
from fmcluster.features.observability.render_files import render_observability_files
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

PROM = "http://127.0.0.1:9090"
AM = "http://127.0.0.1:9093"

CURL_STUB = """#!{python}
import json, os, sys
args = sys.argv[1:]
out, fail, url = None, False, None
i = 0
while i < len(args):
    a = args[i]
    if a == "-o":
        out = args[i + 1]; i += 2; continue
    if a == "--max-time":
        i += 2; continue
    if a.startswith("-") and not a.startswith("--"):
        fail = fail or "f" in a[1:]
    elif a == "--fail":
        fail = True
    elif not a.startswith("-"):
        url = a
    i += 1
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(["curl", url]) + "\\n")
server = json.load(open(os.environ["STUB_SERVER"]))
if url not in server:
    sys.stderr.write("curl: (7) Failed to connect to 127.0.0.1: Connection refused\\n")
    sys.exit(7)
status, body = server[url]
if fail and status >= 400:
    sys.stderr.write(f"curl: (22) The requested URL returned error: {{status}}\\n")
    sys.exit(22)
if out is not None:
    open(out, "w").write(body)
else:
    sys.stdout.write(body)
"""

AWS_STUB = """#!{python}
import json, os, sys
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(["aws", *sys.argv[1:]]) + "\\n")
sys.exit(int(os.environ.get("STUB_AWS_EXIT", "0")))
"""


def _alerts(*alerts: tuple[str, str]) -> str:
    """A Prometheus ``/api/v1/alerts`` answer with one active alert per ``(alertname, state)``."""
    return json.dumps({"status": "success", "data": {"alerts": [
        {"labels": {"alertname": name, "severity": "none"}, "annotations": {"summary": "s"}, "state": state,
         "activeAt": "2026-12-05T12:00:00Z", "value": "1e+00"} for name, state in alerts]}})


HEALTHY = {f"{PROM}/-/ready": (200, "Prometheus Server is Ready.\n"),
           f"{AM}/-/ready": (200, "OK"),
           f"{PROM}/api/v1/alerts": (200, _alerts(("Watchdog", "firing"), ("GpuXidError", "pending")))}


def _without(url: str) -> dict[str, tuple[int, str]]:
    return {k: v for k, v in HEALTHY.items() if k != url}


CASES: dict[str, tuple[dict[str, tuple[int, str]], int, int]] = {
    # name: (server, exit code of aws, calls of put-metric-data expected)
    "healthy": (HEALTHY, 0, 1),
    "prometheus down": ({k: v for k, v in HEALTHY.items() if not k.startswith(PROM)}, 0, 0),
    "prometheus starting": ({**HEALTHY, f"{PROM}/-/ready": (503, "Service Unavailable")}, 0, 0),
    "alertmanager down": (_without(f"{AM}/-/ready"), 0, 0),
    "alertmanager not ready": ({**HEALTHY, f"{AM}/-/ready": (503, "Service Unavailable")}, 0, 0),
    "watchdog pending": ({**HEALTHY, f"{PROM}/api/v1/alerts": (200, _alerts(("Watchdog", "pending")))}, 0, 0),
    "no watchdog": ({**HEALTHY, f"{PROM}/api/v1/alerts": (200, _alerts(("GpuXidError", "firing")))}, 0, 0),
    "alerts api error": ({**HEALTHY, f"{PROM}/api/v1/alerts": (200, json.dumps(
        {"status": "error", "errorType": "internal", "error": "x", "data": {"alerts": [
            {"labels": {"alertname": "Watchdog"}, "state": "firing"}]}}))}, 0, 0),
    "put-metric-data fails": (HEALTHY, 255, 1),
}


def _blueprint(kind: str, metrics: str = "self_hosted") -> Any:
    return load_blueprint_text(blueprint_text(
        {"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}, "orchestrator": {"kind": kind}}
    )).blueprint


def _run(tmp_path: Path, server: dict[str, tuple[int, str]], aws_exit: int) -> tuple[int, list[list[str]], str]:
    rc = resolve(_blueprint("pcs"))
    script = tmp_path / "fmcluster-heartbeat"
    script.write_text(render_heartbeat_script(exporter_context(rc, role="head")))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("curl", CURL_STUB), ("aws", AWS_STUB)):
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    (tmp_path / "server.json").write_text(json.dumps(server))
    log = tmp_path / "calls.jsonl"
    log.touch()
    proc = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
             "STUB_SERVER": str(tmp_path / "server.json"), "STUB_AWS_EXIT": str(aws_exit)},
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return proc.returncode, calls, proc.stdout + proc.stderr


def _put_metric_data(argv: list[str]) -> dict[str, Any]:
    """``aws cloudwatch put-metric-data`` arguments as the CLI turns them into the API call (putmetricdata.py)."""
    assert argv[:3] == ["aws", "cloudwatch", "put-metric-data"], argv
    opts = dict(zip(argv[3::2], argv[4::2], strict=True))
    return {"Region": opts["--region"], "Namespace": opts["--namespace"], "MetricData": [{
        "MetricName": opts["--metric-name"], "Value": float(opts["--value"]), "Unit": opts["--unit"],
        "Dimensions": [dict(zip(("Name", "Value"), pair.split("="), strict=True))
                       for pair in opts["--dimensions"].split(",")]}]}


@pytest.mark.parametrize("case", list(CASES))
def test_heartbeat_publishes_only_when_prometheus_alertmanager_and_watchdog_work(tmp_path: Path, case: str) -> None:
    server, aws_exit, expected_puts = CASES[case]
    code, calls, output = _run(tmp_path, server, aws_exit)
    puts = [c for c in calls if c[0] == "aws"]
    assert len(puts) == expected_puts, output
    assert code == (0 if expected_puts and aws_exit == 0 else 1), output
    if expected_puts:
        assert _put_metric_data(puts[0]) == {
            "Region": "us-east-1", "Namespace": "fmcluster", "MetricData": [{
                "MetricName": "MonitoringHeartbeat", "Value": 1.0, "Unit": "Count",
                "Dimensions": [{"Name": "ClusterName", "Value": "t-cluster"}]}]}
    if code:
        assert "no heartbeat sent" in output
    else:
        assert "heartbeat sent" in output


@pytest.mark.parametrize("kind", ["parallelcluster", "hyperpod", "pcs"])
def test_self_hosted_head_script_installs_the_heartbeat_timer_on_every_orchestrator(kind: str) -> None:
    rc = resolve(_blueprint(kind))
    head = render_exporter_script(exporter_context(rc, role="head"))
    assert "run_step alertmanager install_alertmanager\nrun_step heartbeat install_heartbeat\n" in head
    assert render_heartbeat_script(exporter_context(rc, role="head")) in head  # the same text as `fmcluster render`
    assert "OnUnitActiveSec=60s" in head and "systemctl enable --now fmcluster-heartbeat.timer" in head
    files = render_observability_files(rc)
    assert files["observability/heartbeat.sh"] == render_heartbeat_script(exporter_context(rc, role="head"))
    (watch,) = [e for e in observability_endpoints(rc) if e.name == "Monitoring host watch"]
    assert "fmcluster-t-cluster-monitoring-heartbeat" in watch.address and "ClusterName=t-cluster" in watch.address


def test_managed_metrics_have_no_heartbeat() -> None:
    rc = resolve(_blueprint("parallelcluster", "managed"))
    assert "install_heartbeat" not in render_exporter_script(exporter_context(rc, role="head"))
    assert "observability/heartbeat.sh" not in render_observability_files(rc)
    assert [e for e in observability_endpoints(rc) if e.name == "Monitoring host watch"] == []
