"""The budget's stop action (docs/capacity.md "Budget"): synthesized per Slurm orchestrator with cdk-nag, the budget's
notification at the stop threshold to its own topic that only AWS Budgets may publish to, the function subscribed to
it, and each orchestrator's IAM limited to its own cluster (the handlers run against botocore's Stubber in
tests/orchestrators/*/test_fleet_stop.py)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, example
from tests.orchestrator_support import synth_with_nag

#: example -> (blueprint name, the stop's IAM: sorted actions of each statement, in order)
CASES = {
    "p5en-capacity-block": ("h200-cb", [["dynamodb:GetItem", "dynamodb:UpdateItem"]]),
    "hyperpod-p5": ("hp-train", [["sagemaker:DescribeCluster", "sagemaker:UpdateCluster"], ["iam:PassRole"]]),
    "pcs-p5en": ("pcs-h200", [["pcs:UpdateComputeNodeGroup"],
                              ["ec2:CreateFleet", "ec2:CreateTags", "ec2:DescribeCapacityReservations",
                               "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                               "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeLaunchTemplates",
                               "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs",
                               "ec2:RunInstances"],
                              ["iam:PassRole"], ["iam:GetInstanceProfile"]]),
}


def _text(ex: str) -> str:
    return blueprint_text({"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"},
                           "budget": {"monthly_usd": 250000, "thresholds_percent": [50, 90],
                                      "stop_compute_at_percent": 110}}, base=example(ex))


@cache
def _templates(ex: str) -> dict[str, dict[str, Any]]:
    out = synth_with_nag(_text(ex))  # raises on any unacknowledged cdk-nag finding
    return {p.name.removesuffix(".template.json"): json.loads(p.read_text()) for p in out.glob("*.template.json")}


def _of_type(tpl: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in tpl["Resources"].items() if r["Type"] == type_}


@pytest.mark.synth
@pytest.mark.parametrize("ex", sorted(CASES))
def test_the_budget_notifies_the_stop_topic_at_the_stop_threshold(ex: str) -> None:
    name, _ = CASES[ex]
    obs = _templates(ex)[f"{name}-observability"]
    [budget] = _of_type(obs, "AWS::Budgets::Budget").values()
    topics = {r["Properties"]["TopicName"]: k for k, r in _of_type(obs, "AWS::SNS::Topic").items()
              if "TopicName" in r["Properties"]}
    stop_topic = topics[f"fmcluster-{name}-budget-stop"]
    notes = [(n["Notification"]["Threshold"], n["Subscribers"]) for n in budget["Properties"]["NotificationsWithSubscribers"]]
    assert [t for t, _ in notes] == [50, 90, 110]
    # the stop topic, and the alert receivers' address, so people hear the fleet was stopped
    assert notes[-1][1] == [{"SubscriptionType": "SNS", "Address": {"Ref": stop_topic}},
                            {"SubscriptionType": "EMAIL", "Address": "oncall@example.com"}]
    assert all({"Ref": stop_topic} not in [x["Address"] for x in s] for _, s in notes[:-1])
    # only AWS Budgets of this account publishes to it (and TLS only), under its own key
    [policy] = [r for r in _of_type(obs, "AWS::SNS::TopicPolicy").values() if {"Ref": stop_topic} in r["Properties"]["Topics"]]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    [publish] = [s for s in statements if s["Effect"] == "Allow"]
    assert (publish["Principal"], publish["Action"]) == ({"Service": "budgets.amazonaws.com"}, "sns:Publish")
    assert set(publish["Condition"]) == {"StringEquals", "ArnLike"}
    assert [s["Condition"] for s in statements if s["Effect"] == "Deny"] == [{"Bool": {"aws:SecureTransport": "false"}}]
    assert "KmsMasterKeyId" in obs["Resources"][stop_topic]["Properties"]


@pytest.mark.synth
@pytest.mark.parametrize("ex", sorted(CASES))
def test_the_cluster_stack_subscribes_the_orchestrators_stop_with_its_own_iam_only(ex: str) -> None:
    name, expected = CASES[ex]
    cluster = _templates(ex)[f"{name}-cluster"]
    functions = {k: r for k, r in _of_type(cluster, "AWS::Lambda::Function").items() if k.startswith("BudgetStop")}
    [(fn_id, fn)] = functions.items()
    [sub] = [r for k, r in _of_type(cluster, "AWS::SNS::Subscription").items() if k.startswith("BudgetStop")]
    assert sub["Properties"]["Protocol"] == "lambda"
    assert sub["Properties"]["Endpoint"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    assert "Fn::ImportValue" in json.dumps(sub["Properties"]["TopicArn"])  # the observability stack's stop topic
    [perm] = [r for k, r in _of_type(cluster, "AWS::Lambda::Permission").items() if k.startswith("BudgetStop")]
    assert perm["Properties"]["Principal"] == "sns.amazonaws.com"
    assert perm["Properties"]["SourceArn"] == sub["Properties"]["TopicArn"]
    [policy] = [r for k, r in _of_type(cluster, "AWS::IAM::Policy").items() if k.startswith("BudgetStop")]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert [sorted(s["Action"]) if isinstance(s["Action"], list) else [s["Action"]] for s in statements] == expected
    role_id = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]
    # no statement on "*" except PCS's EC2 permissions (the guide names no resources for them)
    assert all(ex == "pcs-p5en" and all(a.startswith("ec2:") for a in s["Action"])
               for s in statements if s["Resource"] == "*")


#: The PCS user guide's minimum permissions for UpdateComputeNodeGroup besides the action itself, and
#: DescribeCapacityReservations for Capacity Blocks (https://docs.aws.amazon.com/pcs/latest/userguide/
#: security-min-permissions.html), written out here from the guide, not from the construct.
PCS_GUIDE_EC2 = {"ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeLaunchTemplates",
                 "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeInstanceTypes",
                 "ec2:DescribeInstanceTypeOfferings", "ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateTags",
                 "ec2:DescribeCapacityReservations"}


@pytest.mark.synth
def test_pcs_gets_the_guides_ec2_permissions_without_a_called_via_condition() -> None:
    """No source says PCS sets aws:CalledVia, so the launches carry no condition that could refuse the scale-down."""
    pcs = _templates("pcs-p5en")["pcs-h200-cluster"]
    [policy] = [r for k, r in _of_type(pcs, "AWS::IAM::Policy").items() if k.startswith("BudgetStop")]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    [anywhere] = [s for s in statements if s["Resource"] == "*"]
    assert (anywhere["Effect"], set(anywhere["Action"])) == ("Allow", PCS_GUIDE_EC2)
    assert all("Condition" not in s for s in statements)


@pytest.mark.synth
@pytest.mark.parametrize("ex", sorted(CASES))
def test_a_failed_stop_alarms_the_alert_receivers(ex: str) -> None:
    """SNS invokes the function asynchronously: its Errors (AWS/Lambda, FunctionName) Sum >= 1 in one period alarms
    the alert topic, missing data not breaching; the created alert topic lets exactly that alarm publish."""
    name, _ = CASES[ex]
    templates = _templates(ex)
    cluster, obs = templates[f"{name}-cluster"], templates[f"{name}-observability"]
    [fn_id] = [k for k in _of_type(cluster, "AWS::Lambda::Function") if k.startswith("BudgetStop")]
    [alarm] = [r["Properties"] for k, r in _of_type(cluster, "AWS::CloudWatch::Alarm").items()
               if k.startswith("BudgetStop")]
    assert {k: alarm[k] for k in ("AlarmName", "Namespace", "MetricName", "Dimensions", "Statistic", "Period",
                                  "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator",
                                  "TreatMissingData")} == {
        "AlarmName": f"fmcluster-{name}-budget-stop-errors", "Namespace": "AWS/Lambda", "MetricName": "Errors",
        "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": fn_id}}], "Statistic": "Sum", "Period": 60,
        "EvaluationPeriods": 1, "DatapointsToAlarm": 1, "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching"}
    [action] = alarm["AlarmActions"]
    assert "Fn::ImportValue" in json.dumps(action)  # the observability stack's alert topic
    [alert_topic] = [k for k, r in _of_type(obs, "AWS::SNS::Topic").items() if "TopicName" not in r["Properties"]]
    [policy] = [r for r in _of_type(obs, "AWS::SNS::TopicPolicy").values()
                if {"Ref": alert_topic} in r["Properties"]["Topics"]]
    [allow] = [s for s in policy["Properties"]["PolicyDocument"]["Statement"]
               if s.get("Sid") == "AllowTheBudgetStopAlarmToPublish"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert json.dumps(allow["Condition"]["ArnLike"]["aws:SourceArn"]).endswith(
        f':alarm:fmcluster-{name}-budget-stop-errors"]]}}')


@pytest.mark.synth
def test_the_stop_touches_only_the_clusters_own_resources() -> None:
    """ParallelCluster: only the COMPUTE_FLEET item of parallelcluster-<name>; HyperPod: its cluster and the execution
    role passed to SageMaker only; PCS: its compute node groups (not the login group), its node role and profile."""
    [pc] = [r for k, r in _of_type(_templates("p5en-capacity-block")["h200-cb-cluster"], "AWS::IAM::Policy").items()
            if k.startswith("BudgetStop")]
    [stmt] = pc["Properties"]["PolicyDocument"]["Statement"]
    assert json.dumps(stmt["Resource"]).endswith(':table/parallelcluster-h200-cb"]]}')
    assert stmt["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["COMPUTE_FLEET"]}}

    hp = _templates("hyperpod-p5")["hp-train-cluster"]
    [hpp] = [r for k, r in _of_type(hp, "AWS::IAM::Policy").items() if k.startswith("BudgetStop")]
    [cluster_stmt, pass_stmt] = hpp["Properties"]["PolicyDocument"]["Statement"]
    [cluster_id] = _of_type(hp, "AWS::SageMaker::Cluster")
    assert cluster_stmt["Resource"] == {"Fn::GetAtt": [cluster_id, "ClusterArn"]}
    assert pass_stmt["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    [fn] = [r for k, r in _of_type(hp, "AWS::Lambda::Function").items() if k.startswith("BudgetStop")]
    compute = [g.name for g in load_blueprint_text(_text("hyperpod-p5")).blueprint.compute]
    assert json.loads(fn["Properties"]["Environment"]["Variables"]["COMPUTE_GROUPS"]) == compute

    pcs = _templates("pcs-p5en")["pcs-h200-cluster"]
    [pcsp] = [r for k, r in _of_type(pcs, "AWS::IAM::Policy").items() if k.startswith("BudgetStop")]
    [update] = [s for s in pcsp["Properties"]["PolicyDocument"]["Statement"] if s["Action"] == "pcs:UpdateComputeNodeGroup"]
    groups = {k: r["Properties"]["Name"] for k, r in _of_type(pcs, "AWS::PCS::ComputeNodeGroup").items()}
    named = {groups[r["Fn::GetAtt"][0]] for r in (update["Resource"] if isinstance(update["Resource"], list)
                                                  else [update["Resource"]])}
    compute = {g.name for g in load_blueprint_text(_text("pcs-p5en")).blueprint.compute}
    assert {n.removeprefix("pcs-h200-") for n in named} == compute, named


@pytest.mark.parametrize(("stop", "expected"), [
    (110, "250,000 USD/month, alerts at 50%, 90%; stops the compute fleet at 110% (compute fleet STOP_REQUESTED, as "
          "pcluster update-compute-fleet sets it (restart: START_REQUESTED); data kept)"),
    (None, "250,000 USD/month, alerts at 50%, 90%"),
], ids=["with-stop", "without"])
def test_the_plan_shows_the_stop_next_to_the_windows_cost(stop: int | None, expected: str) -> None:
    from fmcluster.resolved import resolve
    from fmcluster.review.plan import build_plan

    budget = {"monthly_usd": 250000, "thresholds_percent": [50, 90], "stop_compute_at_percent": stop}
    text = blueprint_text({"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"},
                           "budget": budget}, base=example("p5en-capacity-block"))
    [row] = build_plan(resolve(load_blueprint_text(text).blueprint)).windows
    assert (row["instance-hours"], row["budget"]) == ("48 h x 2 = 96 (price quoted at purchase)", expected)


@pytest.mark.parametrize(("ex", "stop"), [
    ("p5en-capacity-block", "compute fleet STOP_REQUESTED, as pcluster update-compute-fleet sets it (restart: "
                            "START_REQUESTED); data kept"),
    ("hyperpod-p5", "UpdateCluster: every compute instance group to 0 instances (CloudFormation drift until "
                    "restored); data kept"),
    ("pcs-p5en", "UpdateComputeNodeGroup: every compute node group scaled to 0 (CloudFormation drift until restored); "
                 "data kept"),
])
def test_the_plan_has_a_budget_table_with_the_orchestrators_stop(ex: str, stop: str) -> None:
    from fmcluster.resolved import resolve
    from fmcluster.review.plan import build_plan, render_markdown

    plan = build_plan(resolve(load_blueprint_text(_text(ex)).blueprint))
    assert plan.budget == [{"USD per month": "250,000", "alerts at": "50%, 90%", "stops compute at": "110%",
                            "stop": stop}]
    assert "## Budget (" in render_markdown(plan)
    without = build_plan(resolve(load_blueprint_text(blueprint_text({}, base=example(ex))).blueprint))
    assert "budget" not in without.as_dict()
