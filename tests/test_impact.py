"""Job impact (issue 25 item 2): what a change does to each queue / instance group / node group and its running jobs.

Blueprint variants per orchestrator (queue instance type, count, head node or its equivalent, tags) go through
``diff_assemblies`` and must give the group verdict each orchestrator's documented update behaviour gives; the hooks
are also tabled on small property sets (QueueUpdateStrategy DRAIN and TERMINATE, PCS AMI / launch template /
scaling, HyperPod lifecycle and scaling); CloudFormation's own verdicts (replacement, a failing stack) win over the
hooks; the three output formats and the CLI's boot estimate show the real values.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from fmcluster.orchestrators.hyperpod import review_update as hyperpod
from fmcluster.orchestrators.parallelcluster import review_update as pcluster
from fmcluster.orchestrators.pcs import review_update as pcs
from fmcluster.review.assembly import Assembly
from fmcluster.review.diff import DiffReport, ResourceChange, diff_assemblies, render_markdown, render_text
from fmcluster.review.impact import GroupImpact, blueprint_boot_s, job_impacts, with_boot
from fmcluster.validation import load_blueprint_text
from tests.blueprints import example, merge, to_yaml
from tests.conftest import synth_templates

PATH_METADATA = (("aws:cdk:enable-path-metadata", True),)


def _assembly(data: dict[str, Any]) -> Assembly:
    text = to_yaml(data)
    bp = load_blueprint_text(text).blueprint
    return Assembly.from_templates(synth_templates(text, PATH_METADATA), bp.region, source=bp.name)


def _group(name: str, instance_type: str, count: int, capacity: dict[str, str]) -> dict[str, Any]:
    return {"compute": [{"name": name, "instance_type": instance_type, "count": count, "capacity": capacity}]}


ON_DEMAND = {"type": "on_demand"}
BLOCK = {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}

#: (example, patch, expected {group: kind}, expected exit code). Expected kinds come from each orchestrator's
#: documented behaviour: ParallelCluster's update policies (a queue instance type renames its compute resource:
#: COMPUTE_FLEET_STOP; HeadNode/InstanceType UNSUPPORTED; Tags SUPPORTED_UNLESS_ADC), HyperPod's UpdateCluster
#: (InstanceCount adds nodes; an instance-type change on running nodes is not documented), PCS's create-only
#: InstanceConfigs (replacement) and its "replaces existing instances" after a launch template update (the blueprint
#: tags reach the launch templates' TagSpecifications, a new version).
VARIANTS = [
    ("default", _group("gpu", "p5en.48xlarge", 4, ON_DEMAND), {"gpu": "fleet_stop"}, 0),
    ("default", _group("gpu", "p5.48xlarge", 8, ON_DEMAND), {"gpu": "grows"}, 0),
    ("default", {"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.8xlarge"}}},
     {"gpu": "update_fails"}, 1),
    ("default", {"tags": {"team": "x"}}, {"gpu": "untouched"}, 0),
    ("hyperpod-p5", _group("gpu", "p5en.48xlarge", 4, ON_DEMAND),
     {"controller": "untouched", "gpu": "unknown", "login": "untouched"}, 0),
    ("hyperpod-p5", _group("gpu", "p5.48xlarge", 8, ON_DEMAND),
     {"controller": "untouched", "gpu": "grows", "login": "untouched"}, 0),
    ("hyperpod-p5", {"orchestrator": {"hyperpod": {"controller_instance_type": "ml.m5.8xlarge"}}},
     {"controller": "unknown", "gpu": "untouched", "login": "untouched"}, 0),
    ("hyperpod-p5", {"tags": {"team": "x"}}, {"controller": "untouched", "gpu": "untouched", "login": "untouched"}, 0),
    # the gate watcher's installer (each group's gate job, decision 49) reaches the login node through an SSM parameter
    # its admin-steps launcher reads, not through its user data: a compute type change leaves the login node alone
    ("pcs-p5en", _group("h200", "p5.48xlarge", 2, BLOCK), {"h200": "replaced", "login": "untouched"}, 0),
    ("pcs-p5en", _group("h200", "p5en.48xlarge", 4, BLOCK), {"h200": "grows", "login": "untouched"}, 0),
    ("pcs-p5en", {"orchestrator": {"pcs": {"login_instance_type": "m7i.4xlarge"}}},
     {"h200": "untouched", "login": "replaced"}, 0),
    ("pcs-p5en", {"tags": {"team": "x"}}, {"h200": "drained_replaced", "login": "drained_replaced"}, 0),
]


def _diff(name: str, patch: dict[str, Any]) -> DiffReport:
    base = example(name)
    return diff_assemblies(_assembly(base), _assembly(merge(base, patch)))


@pytest.mark.parametrize(("name", "patch", "expected", "exit_code"), VARIANTS,
                         ids=[f"{v[0]}-{'-'.join(v[1])}-{i}" for i, v in enumerate(VARIANTS)])
def test_each_group_gets_its_orchestrators_verdict(name: str, patch: dict[str, Any], expected: dict[str, str],
                                                   exit_code: int) -> None:
    report = _diff(name, patch)
    assert {g.group: g.kind for g in report.impact} == expected
    assert report.exit_code == exit_code


def test_a_group_whose_work_is_hit_makes_its_resource_a_warning() -> None:
    """The HyperPod instance-type change is an in-place update for CloudFormation (info), but nobody documents what it
    does to the running nodes: the resource is a warning naming the group."""
    report = _diff("hyperpod-p5", _group("gpu", "p5en.48xlarge", 4, ON_DEMAND))
    cluster = report.of_type("AWS::SageMaker::Cluster")[0]
    assert cluster.level == "warning"
    assert "gpu: not documented by the service" in cluster.note


# ---- the hooks on small property sets --------------------------------------------------------------------------
def _pc(strategy: str, count: int, efa: bool = True, queues: tuple[str, ...] = ("gpu",)) -> dict[str, Any]:
    return {"ClusterConfiguration": {
        "HeadNode": {"InstanceType": "m7i.4xlarge"},
        "Scheduling": {"SlurmSettings": {"QueueUpdateStrategy": strategy}, "SlurmQueues": [
            {"Name": q, "ComputeResources": [{"Name": "p5", "InstanceType": "p5.48xlarge", "MinCount": count,
                                             "MaxCount": count, "Efa": {"Enabled": efa}}]} for q in queues]}}}


@pytest.mark.parametrize(("old", "new", "expected"), [
    (_pc("DRAIN", 4), _pc("DRAIN", 4, efa=False), {"gpu": ("drained_replaced", "Enabled")}),
    (_pc("TERMINATE", 4), _pc("TERMINATE", 4, efa=False), {"gpu": ("requeued", "Enabled")}),
    (_pc("TERMINATE", 4), _pc("TERMINATE", 2), {"gpu": ("shrinks", "MaxCount")}),
    (_pc("DRAIN", 4), _pc("DRAIN", 2), {"gpu": ("fleet_stop", "MaxCount")}),
    (_pc("DRAIN", 4), _pc("DRAIN", 6), {"gpu": ("grows", "")}),
    (_pc("DRAIN", 4), _pc("DRAIN", 4, queues=("gpu", "cpu")), {"cpu": ("added", ""), "gpu": ("untouched", "")}),
    (_pc("TERMINATE", 4, queues=("gpu", "cpu")), _pc("TERMINATE", 4), {"cpu": ("removed", ""), "gpu": ("untouched", "")}),
    (_pc("DRAIN", 4, queues=("gpu", "cpu")),
     merge(_pc("DRAIN", 4, queues=("gpu", "cpu")), {"ClusterConfiguration": {"HeadNode": {"InstanceType": "m7i.8xlarge"}}}),
     {"cpu": ("update_fails", "InstanceType"), "gpu": ("update_fails", "InstanceType")}),
], ids=["drain", "terminate", "terminate-shrink", "drain-shrink", "grow", "queue-added", "queue-removed", "head-node"])
def test_parallelcluster_queue_impact(old: dict[str, Any], new: dict[str, Any], expected: dict[str, tuple[str, str]]) -> None:
    found = pcluster.group_impacts(old, new, "us-east-1", "c/Cluster")
    assert {g.group: (g.kind, ",".join(c.rsplit(".", 1)[-1] for c in g.causes)) for g in found} == expected


def _cng(**props: Any) -> dict[str, Any]:
    return {"Name": "gpu", "AmiId": "ami-1", "SubnetIds": ["subnet-1"],
            "ScalingConfiguration": {"MinInstanceCount": 4, "MaxInstanceCount": 4},
            "CustomLaunchTemplate": {"TemplateId": "<ref c/Lt>", "Version": "<ref c/Lt>.LatestVersionNumber"}, **props}


@pytest.mark.parametrize(("new", "updated", "expected"), [
    (_cng(AmiId="ami-2"), {}, ("drained_replaced", ("AmiId",))),
    (_cng(NodeLifecycleActions={"Stages": {"NodeBootstrapped": [{"ScriptSource": {"ScriptLocation": "s3://b/new.sh"}}]}}),
     {}, ("drained_replaced", ("NodeLifecycleActions",))),
    (_cng(), {"c/Lt": ("LaunchTemplateData/TagSpecifications",)}, ("drained_replaced", ("CustomLaunchTemplate",))),
    (_cng(), {"c/Lt": ("TagSpecifications",)}, ("untouched", ())),
    (_cng(), {"c/Other": ("LaunchTemplateData/ImageId",)}, ("untouched", ())),
    (_cng(ScalingConfiguration={"MinInstanceCount": 2, "MaxInstanceCount": 2}), {},
     ("shrinks", ("ScalingConfiguration",))),
    (_cng(ScalingConfiguration={"MinInstanceCount": 2, "MaxInstanceCount": 4}), {},
     ("unknown", ("ScalingConfiguration",))),
    (_cng(ScalingConfiguration={"MinInstanceCount": 8, "MaxInstanceCount": 8}), {},
     ("grows", ("ScalingConfiguration",))),
    (_cng(SubnetIds=["subnet-1", "subnet-2"]), {}, ("untouched", ())),
    (_cng(IamInstanceProfileArn="arn:aws:iam::1:instance-profile/x"), {},
     ("unknown", ("IamInstanceProfileArn",))),
], ids=["ami", "lifecycle-script", "launch-template-data-updated", "launch-template-tags-only", "other-resource-updated", "max-down",
        "min-down", "up", "subnet", "profile"])
def test_pcs_node_group_impact(new: dict[str, Any], updated: dict[str, tuple[str, ...]], expected: tuple[str, tuple[str, ...]]) -> None:
    (found,) = pcs.group_impacts(_cng(), new, "us-east-1", "c/Gpu", updated)
    assert (found.kind, found.causes) == expected
    assert found.group == "gpu"
    assert found.source.startswith("not documented") is (found.kind == "unknown")


def _ig(name: str, count: int = 4, **kw: Any) -> dict[str, Any]:
    return {"InstanceGroupName": name, "InstanceType": "ml.p5.48xlarge", "InstanceCount": count,
            "LifeCycleConfig": {"SourceS3Uri": "s3://b/lifecycle/", "OnInitComplete": "on_init.sh"}, **kw}


@pytest.mark.parametrize(("new_groups", "expected"), [
    ([_ig("gpu", 2)], {"gpu": "shrinks"}),
    ([_ig("gpu", LifeCycleConfig={"SourceS3Uri": "s3://b/other/", "OnInitComplete": "on_init.sh"})],
     {"gpu": "not_applied"}),
    ([_ig("gpu", ThreadsPerCore=1)], {"gpu": "unknown"}),
    ([_ig("gpu"), _ig("cpu")], {"cpu": "added", "gpu": "untouched"}),
    ([], {"gpu": "removed"}),
], ids=["count-down", "lifecycle", "threads", "group-added", "group-removed"])
def test_hyperpod_instance_group_impact(new_groups: list[dict[str, Any]], expected: dict[str, str]) -> None:
    found = hyperpod.group_impacts({"InstanceGroups": [_ig("gpu")]}, {"InstanceGroups": new_groups}, "us-east-1", "c/Hp")
    assert {g.group: g.kind for g in found} == expected


# ---- CloudFormation's verdict on the whole resource wins ---------------------------------------------------------
def _res(groups: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {("c", "Hp"): {"Type": "AWS::SageMaker::Cluster", "Properties": {"InstanceGroups": groups}}}


@pytest.mark.parametrize(("change", "expected"), [
    (ResourceChange("c", "Hp", "AWS::SageMaker::Cluster", "replace", "info", causes=["VpcConfig"]),
     ("replaced", ("VpcConfig",))),
    (ResourceChange("c", "Other", "AWS::EC2::Subnet", "fail", "error"),
     ("update_fails", ("another resource of the stack",))),
    (ResourceChange("d", "Other", "AWS::EC2::Subnet", "fail", "error"), ("grows", ("InstanceGroups[gpu].InstanceCount",))),
], ids=["cluster-replaced", "stack-fails", "other-stack-fails"])
def test_cloudformation_verdict_wins(change: ResourceChange, expected: tuple[str, tuple[str, ...]]) -> None:
    (found,) = job_impacts(_res([_ig("gpu")]), _res([_ig("gpu", 8)]), [change], "us-east-1")
    assert (found.kind, found.causes) == expected


# ---- output -------------------------------------------------------------------------------------------------------
def test_text_markdown_and_json_show_each_group_with_its_boot_estimate() -> None:
    impact = with_boot([GroupImpact("c/Pc", "gpu", "drained_replaced", ("SlurmQueues[gpu].CapacityType",), "doc"),
                        GroupImpact("c/Pc", "cpu", "untouched")], {"gpu": 412, "cpu": 99})
    report = DiffReport("old", "new", [], impact=impact)
    text = render_text(report)
    assert ("  gpu (c/Pc): drained, then replaced once their running jobs end; jobs: running jobs finish; new jobs "
            "wait for the new nodes; time: after its running jobs end, ~412 s per node (plan estimate)") in text
    assert "cpu (c/Pc)" not in text  # untouched groups only with --verbose
    assert "cpu (c/Pc): untouched; jobs: keep running; time: -" in render_text(report, verbose=True)
    md = render_markdown(report)
    assert ("| `gpu` | c/Pc | drained, then replaced once their running jobs end | running jobs finish; new jobs wait "
            "for the new nodes | after its running jobs end, ~412 s per node (plan estimate) | "
            "`SlurmQueues[gpu].CapacityType` |") in md
    data = json.loads(json.dumps(report.as_dict()))["impact"]  # what diff --json prints as the envelope's result
    assert [(g["group"], g["kind"], g["boot_s"]) for g in data] == [("gpu", "drained_replaced", 412), ("cpu", "untouched", None)]


def test_the_cli_adds_the_new_blueprints_boot_estimate(tmp_path: Any) -> None:
    from fmcluster.cli import app

    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    base = example("default")
    old.write_text(to_yaml(base))
    new.write_text(to_yaml(merge(base, _group("gpu", "p5.48xlarge", 8, ON_DEMAND))))
    result = CliRunner().invoke(app, ["diff", str(old), str(new), "--format", "json"])
    assert result.exit_code == 0, result.output
    (gpu,) = json.loads(result.stdout)["result"]["impact"]
    assert (gpu["group"], gpu["kind"]) == ("gpu", "grows")
    assert gpu["boot_s"] == blueprint_boot_s(str(new))["gpu"] > 0


def test_two_cdk_out_folders_take_the_boot_estimate_from_boot_from(tmp_path: Any) -> None:
    """The review workflow diffs two synthesized folders, which carry no plan: ``--boot-from`` names the pull
    request's blueprint; without it the time says the boot is not estimated."""
    from fmcluster.cli import app
    from fmcluster.review.diff import CLI_CONTEXT
    from fmcluster.review.synth import synthesize

    base = example("default")
    blueprints = {"old": base, "new": merge(base, _group("gpu", "p5.48xlarge", 8, ON_DEMAND))}
    for side, data in blueprints.items():
        (tmp_path / f"{side}.yaml").write_text(to_yaml(data))
        synthesize(load_blueprint_text(to_yaml(data)).blueprint, str(tmp_path / side), CLI_CONTEXT, side)
    folders = [str(tmp_path / "old"), str(tmp_path / "new")]
    plain = CliRunner().invoke(app, ["diff", *folders, "--format", "json"])
    with_plan = CliRunner().invoke(app, ["diff", *folders, "--format", "json", "--boot-from", str(tmp_path / "new.yaml")])
    assert (plain.exit_code, with_plan.exit_code) == (0, 0), plain.output + with_plan.output
    (gpu,) = json.loads(plain.stdout)["result"]["impact"]
    assert (gpu["kind"], gpu["boot_s"], gpu["time"]) == ("grows", None, "boot time not estimated")
    (gpu,) = json.loads(with_plan.stdout)["result"]["impact"]
    assert gpu["boot_s"] == blueprint_boot_s(str(tmp_path / "new.yaml"))["gpu"]
    assert gpu["time"] == f"~{gpu['boot_s']} s per node (plan estimate)"
