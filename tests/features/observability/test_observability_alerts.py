"""Alerts reach a person: the Alertmanager configuration (amtool check-config), the managed path (SNS topic
with the policy AMP needs, the workspace's alert manager definition routing to it, the blueprint's email),
the self-hosted path (Alertmanager on the head node, Prometheus pointing at it), the dead-man's switch, and
HyperPod EKS (the same workspace, topic and receiver; only the rules the observability add-on's series can satisfy)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.features.observability.render_alert_rules import alert_groups
from fmcluster.features.observability.render_alertmanager import (
    TOPIC_PLACEHOLDER,
    render_alertmanager_yml,
    render_amp_alertmanager_definition,
)
from fmcluster.features.observability.render_context import observability_context
from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
from fmcluster.features.observability.render_files import render_observability_files
from fmcluster.features.observability.render_prometheus import scrape_jobs
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import assert_no_synthesis_errors, resources_of, synth_templates

EMAIL = "oncall@example.com"
TOPIC = "arn:aws:sns:us-east-1:123456789012:team-alerts"
EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/training"


@pytest.fixture(scope="module")
def amtool() -> str:
    """amtool from Alertmanager (Debian package prometheus-alertmanager); a failure in CI when missing."""
    path = shutil.which("amtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("amtool is not installed but CI is set; .ci/run installs prometheus-alertmanager")
        pytest.skip("amtool not installed (apt-get install prometheus-alertmanager); set CI=1 to make this a failure")
    return path


def _text(**obs: Any) -> str:
    """A blueprint with ``obs`` as its observability section; a receiver unless ``obs`` names one (R-OBS-7)."""
    receiver = {} if {"alert_email", "alert_topic_arn", "no_alert_receiver"} & obs.keys() else {"no_alert_receiver": True}
    return blueprint_text({"observability": {**receiver, **obs}})


def _check(amtool: str, text: str, tmp_path: Path) -> str:
    f = tmp_path / "alertmanager.yml"
    f.write_text(text)
    res = subprocess.run([amtool, "check-config", str(f)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_self_hosted_alertmanager_config_passes_amtool(amtool: str, tmp_path: Path) -> None:
    out = _check(amtool, render_alertmanager_yml(TOPIC_PLACEHOLDER, "us-east-1"), tmp_path)
    assert "SUCCESS" in out and "1 receivers" in out


def test_amp_definition_is_the_same_config_under_alertmanager_config(amtool: str, tmp_path: Path) -> None:
    definition = render_amp_alertmanager_definition(TOPIC, "us-west-2")
    inner = yaml.safe_load(definition)["alertmanager_config"]
    _check(amtool, inner, tmp_path)
    cfg = yaml.safe_load(inner)
    (sns,) = cfg["receivers"][0]["sns_configs"]
    # AMP requires sigv4.region and forbids api_url / http_config (AMP-alertmanager-receiver-config.html)
    assert sns["sigv4"] == {"region": "us-west-2"} and sns["topic_arn"] == TOPIC
    assert "api_url" not in sns and "http_config" not in sns
    (watchdog,) = cfg["route"]["routes"]
    assert watchdog["matchers"] == ['alertname="Watchdog"'] and watchdog["repeat_interval"] == "24h"


@pytest.mark.parametrize("discovery", ["ec2", "slurm"])
def test_dead_mans_switch_watches_every_scrape_job(discovery: str) -> None:
    rc = resolve(load_blueprint_text(_text(metrics="managed", node_discovery=discovery)).blueprint)
    ctx = observability_context(rc)
    (pipeline,) = [rules for name, rules in alert_groups(ctx).items() if name.endswith("-pipeline")]
    exprs = {r.alert: r.expr for r in pipeline}
    assert exprs.pop("Watchdog") == "vector(1)"
    jobs = scrape_jobs(ctx)
    assert set(jobs) >= {"prometheus", "node", "dcgm", "slurm"}
    assert sorted(exprs.values()) == sorted(f'absent(up{{job="{j}"}})' for j in jobs)


def test_dcgm_exporter_down_only_on_gpu_nodes() -> None:
    rc = resolve(load_blueprint_text(_text(metrics="managed", node_discovery="slurm")).blueprint)
    rules = {r.alert: r for g in alert_groups(observability_context(rc)).values() for r in g}
    assert rules["DcgmExporterDown"].expr == (
        '(up{job="dcgm"} == 0) and on (instance) (max by (instance) (fmcluster_gpus_expected) > 0)'
    )
    assert "ExporterDown" not in rules  # no catch-all that pages for CPU nodes


@pytest.mark.synth
def test_managed_alerts_go_to_an_sns_topic_amp_may_publish_to() -> None:
    tpl = synth_templates(_text(metrics="managed", alert_email=EMAIL))["t-cluster-observability"]
    ((topic_id, topic),) = resources_of(tpl, "AWS::SNS::Topic").items()
    ((key_id, key),) = resources_of(tpl, "AWS::KMS::Key").items()
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    ((ws_id, ws),) = resources_of(tpl, "AWS::APS::Workspace").items()
    definition = json.dumps(ws["Properties"]["AlertManagerDefinition"])
    assert "alertmanager_config: |" in definition and {"Ref": topic_id} == _refs(ws, topic_id)
    (sub,) = resources_of(tpl, "AWS::SNS::Subscription").values()
    assert sub["Properties"]["Protocol"] == "email" and sub["Properties"]["Endpoint"] == EMAIL
    statements = [s for p in resources_of(tpl, "AWS::SNS::TopicPolicy").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    (aps,) = [s for s in statements if s.get("Principal") == {"Service": "aps.amazonaws.com"}]
    assert sorted(aps["Action"]) == ["sns:GetTopicAttributes", "sns:Publish"]
    assert aps["Condition"]["ArnEquals"] == {"aws:SourceArn": {"Fn::GetAtt": [ws_id, "Arn"]}}
    assert aps["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    key_statements = key["Properties"]["KeyPolicy"]["Statement"]
    (kms,) = [s for s in key_statements if s.get("Principal") == {"Service": "aps.amazonaws.com"}]
    assert sorted(kms["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert tpl["Outputs"]["AlertTopicArn"]["Value"] == {"Ref": topic_id}


def _refs(node: Any, logical_id: str) -> dict[str, str]:
    """The {"Ref": logical_id} inside ``node`` (raises when absent)."""
    if node == {"Ref": logical_id}:
        return node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in children:
        try:
            return _refs(child, logical_id)
        except LookupError:
            continue
    raise LookupError(logical_id)


@pytest.mark.synth
def test_existing_topic_is_used_as_is() -> None:
    tpl = synth_templates(_text(metrics="managed", alert_topic_arn=TOPIC))["t-cluster-observability"]
    assert resources_of(tpl, "AWS::SNS::Topic") == {}
    (ws,) = resources_of(tpl, "AWS::APS::Workspace").values()
    assert f"topic_arn: {TOPIC}" in ws["Properties"]["AlertManagerDefinition"]
    assert tpl["Outputs"]["AlertTopicArn"]["Value"] == TOPIC


def test_self_hosted_head_node_runs_alertmanager_behind_prometheus() -> None:
    rc = resolve(load_blueprint_text(_text(metrics="self_hosted")).blueprint)
    files = render_observability_files(rc)
    cfg = yaml.safe_load(files["observability/prometheus.yml"])
    assert cfg["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]}
    head = render_exporter_script(exporter_context(rc, role="head"))
    assert "cat > \"/etc/alertmanager/alertmanager.yml\"" in head
    assert "--web.listen-address=127.0.0.1:9093" in head and 'topic="$(setting alert_topic_arn)"' in head
    assert "run_step prometheus install_prometheus\nrun_step alertmanager install_alertmanager\n" in head


def _eks_text(**observability: Any) -> str:
    return blueprint_text(
        {"observability": {"metrics": "managed", "alert_email": EMAIL, **observability},
         "orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks_cluster_arn": EKS_ARN}},
         # an existing EKS cluster lives in an existing VPC (R-EKS-2)
         "network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}
    )


@pytest.mark.synth
def test_hyperpod_eks_gets_the_same_workspace_topic_and_receiver() -> None:
    tpl = synth_templates(_eks_text())["t-cluster-observability"]
    types = sorted({r["Type"] for r in tpl["Resources"].values()})
    assert {"AWS::APS::Workspace", "AWS::APS::RuleGroupsNamespace", "AWS::Grafana::Workspace", "AWS::SNS::Topic",
            "AWS::SNS::Subscription"} <= set(types), types
    (sub,) = resources_of(tpl, "AWS::SNS::Subscription").values()
    assert sub["Properties"]["Endpoint"] == EMAIL and sub["Properties"]["Protocol"] == "email"
    ((topic_id, _),) = resources_of(tpl, "AWS::SNS::Topic").items()
    (ws,) = resources_of(tpl, "AWS::APS::Workspace").values()
    assert "alertmanager_config: |" in json.dumps(ws["Properties"]["AlertManagerDefinition"])
    assert _refs(ws, topic_id) == {"Ref": topic_id}


def test_hyperpod_eks_rules_read_only_what_the_addon_writes() -> None:
    """On HyperPod EKS the rules are the DCGM-only GPU rules, the add-on's GPU, EFA and node-count rules
    (render_addon_rules.py) and the Watchdog: none reads fmcluster's textfile gauges, Slurm or its scrape jobs (they
    would never fire, or, for absent(), always); the one absent() is of the add-on's EFA exporter series."""
    rc = resolve(load_blueprint_text(_eks_text()).blueprint)
    groups = alert_groups(observability_context(rc))
    got = {g: [r.alert for r in rules] for g, rules in groups.items()}
    assert got == {
        "t-cluster-gpu": ["GpuXidHardwareError", "GpuXidApplicationError", "GpuFallenOffBus", "GpuEccDoubleBitErrors",
                          "GpuRowRemapFailure", "GpuMissing", "GpusBelowPlan"],
        "t-cluster-efa": ["EfaDeviceMissing", "EfaWorkRequestErrors", "EfaMetricsAbsent"],
        "t-cluster-nodes": ["NodesBelowPlan"],
        "t-cluster-pipeline": ["Watchdog"],
    }
    exprs = " ".join(r.expr for rules in groups.values() for r in rules)
    assert "fmcluster_" not in exprs and "slurm_" not in exprs and "up{" not in exprs
    assert [r.expr for rules in groups.values() for r in rules if "absent(" in r.expr] == ["absent(node_amazonefa_info)"]
    descriptions = " ".join(r.description for rules in groups.values() for r in rules)
    assert "Slurm" not in descriptions and "Cordon the node (kubectl cordon)" in descriptions


def test_blueprint_receiver_fields_are_validated() -> None:
    from fmcluster.validation.loader import BlueprintError

    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(_text(alert_email="not-an-email", alert_topic_arn="arn:aws:sqs:us-east-1:1:q"))
    text = textwrap.dedent(str(e.value))
    assert "observability.alert_email" in text and "observability.alert_topic_arn" in text


@pytest.mark.synth
def test_endpoint_and_email_synthesize_clean_with_nag_and_cfn_lint(tmp_path: Path) -> None:
    """amp_vpc_endpoint + alert_email: cdk-nag (AwsSolutions) raises on an unacknowledged finding at synth,
    cfn-lint reports no error, and the endpoint is the aps-workspaces interface endpoint with private DNS."""
    import sys

    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import build_app
    from tests.conftest import cdk_context

    bp = load_blueprint_text(_text(metrics="managed", alert_email=EMAIL, amp_vpc_endpoint=True)).blueprint
    app = cdk.App(outdir=str(tmp_path), context=cdk_context())
    stacks = build_app(app, bp)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assert_no_synthesis_errors(app.synth())
    tpl = json.loads((tmp_path / "t-cluster-observability.template.json").read_text())
    (ep,) = resources_of(tpl, "AWS::EC2::VPCEndpoint").values()
    assert ep["Properties"]["ServiceName"] == "com.amazonaws.us-east-1.aps-workspaces"
    assert ep["Properties"]["PrivateDnsEnabled"] is True and ep["Properties"]["VpcEndpointType"] == "Interface"
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--regions", "us-east-1", "--format", "parseable", "--",
         *(str(tmp_path / f"{s.stack_name}.template.json") for s in stacks.all())],
        capture_output=True, text=True,
    )
    assert [line for line in lint.stdout.splitlines() if ":E" in line] == [], lint.stdout
