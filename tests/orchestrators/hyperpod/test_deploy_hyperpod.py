"""HyperPod deploy-time cases (issue 12 items 1 and 2) as tables.

- blueprint fragment -> expected fmcluster error or warning (YAML path, message, rule id);
- blueprint -> synthesized ``AWS::SageMaker::Cluster`` properties, and the CreateCluster request they imply
  checked against botocore's sagemaker service model (the shapes CloudFormation hands to SageMaker).

Sources: CloudFormation resource schema AWS::SageMaker::Cluster (cfn-lint 1.58.0 schemas), botocore sagemaker
service-2.json, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-migration.html.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog import cpu_architecture_of
from fmcluster.features.observability.endpoints import observability_endpoints
from fmcluster.orchestrators.hyperpod.construct import (
    MAX_BUCKET_NAME,
    lifecycle_bucket_name,
    lifecycle_bucket_name_length,
)
from fmcluster.orchestrators.hyperpod.rules import HELPER_TYPE_FOR_ARCH
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import resources_of, synth_templates
from tests.orchestrator_support import Resolver, cluster_template

EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/training"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-plan"
HP: dict[str, Any] = {"orchestrator": {"kind": "hyperpod"}}
IMPORTED_NETWORK = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}


def hp(**settings: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": "hyperpod", "hyperpod": settings}}


def eks(**settings: Any) -> dict[str, Any]:
    # an existing EKS cluster is in an existing VPC (R-EKS-2)
    return {**hp(orchestration="eks", eks_cluster_arn=EKS_ARN, **settings), "network": IMPORTED_NETWORK}


def gpu(**kw: Any) -> dict[str, Any]:
    return {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, **kw}]}


def merge(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def problems(patch: dict[str, Any]) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str, str | None]]]:
    """(errors, warnings) as (path, message, rule id)."""
    try:
        result = load_blueprint_text(blueprint_text(patch))
    except BlueprintError as exc:
        return [(p.path, p.message, p.rule_id) for p in exc.errors], []
    return [], [(p.path, p.message, p.rule_id) for p in result.warnings]


#: p6e-gb200 workers on a training plan with one custom image (R580: the only way to run gb200 on HyperPod, R-DRV-6).
GB200_CUSTOM = {"compute": [{"name": "gb", "instance_type": "p6e-gb200.36xlarge", "count": 18,
                             "capacity": {"type": "training_plan", "arn": PLAN}}],
                "software": {"os": "ubuntu-24.04", "stack": "gb200-580-cuda13.0",
                             "image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}}

# ---- blueprint -> expected error ---------------------------------------------------------------
ERRORS = [
    pytest.param(
        merge(gpu(instance_type="ml.p5.48xlarge"), HP),
        ("compute[0].instance_type", "SageMaker instance type name, got 'ml.p5.48xlarge'; allowed the EC2 name "
         "(fmcluster adds the ml. prefix for HyperPod itself) - did you mean 'p5.48xlarge'?", None),
        id="ml. prefix on a hyperpod compute group",
    ),
    pytest.param(
        gpu(instance_type="ml.p6-b200.48xlarge"),
        ("compute[0].instance_type", "SageMaker instance type name, got 'ml.p6-b200.48xlarge'; allowed the EC2 name "
         "(fmcluster adds the ml. prefix for HyperPod itself) - did you mean 'p6-b200.48xlarge'?", None),
        id="ml. prefix on any orchestrator (compute groups take EC2 names)",
    ),
    pytest.param(
        merge({"name": "a" * 32, "region": "ap-southeast-2", "availability_zone": "ap-southeast-2a"}, HP),
        ("name", "too long for the HyperPod lifecycle bucket sagemaker-" + "a" * 32 + "-<account>-ap-southeast-2 "
         "(70 characters with a 12-digit account id; S3 allows 63), got 32 characters; allowed at most 25 characters "
         "in ap-southeast-2 - did you mean '" + "a" * 25 + "'?", "R-HP-5"),
        id="lifecycle bucket name over 63 characters (long region)",
    ),
    pytest.param(
        merge({"name": "train-" + "b" * 25}, HP),
        ("name", "too long for the HyperPod lifecycle bucket sagemaker-train-" + "b" * 25 + "-<account>-us-east-1 "
         "(64 characters with a 12-digit account id; S3 allows 63), got 31 characters; allowed at most 30 characters "
         "in us-east-1 - did you mean 'train-" + "b" * 24 + "'?", "R-HP-5"),
        id="lifecycle bucket name one character over",
    ),
    pytest.param(
        eks(controller_instance_type="ml.m5.xlarge"),
        ("orchestrator.hyperpod.controller_instance_type", "HyperPod on EKS has no controller instance group, got "
         "'ml.m5.xlarge' with orchestration eks; allowed nothing (remove it) or orchestration: slurm", "R-HP-6"),
        id="controller type on eks",
    ),
    pytest.param(
        eks(login_instance_type="ml.m5.4xlarge"),
        ("orchestrator.hyperpod.login_instance_type", "HyperPod on EKS has no login instance group, got "
         "'ml.m5.4xlarge' with orchestration eks; allowed nothing (remove it) or orchestration: slurm", "R-HP-6"),
        id="login type on eks",
    ),
    pytest.param(
        merge(hp(), {"software": {"image": {"mode": "custom", "ami_id": "ami-12345"}}}),
        ("software.image.ami_id", "invalid format, got 'ami-12345'; allowed ami- followed by 8 or 17 hex digits",
         None),
        id="custom AMI id too short",
    ),
    pytest.param(
        hp(ami_updates={"schedule": "cron(0 4 * * SUN *)"}),
        ("orchestrator.hyperpod.ami_updates.schedule", "invalid format, got 'cron(0 4 * * SUN *)'; allowed a cron "
         "expression cron(minute hour day-of-month month day-of-week year) such as cron(0 4 ? * SUN *)", None),
        id="AMI update schedule not a CloudFormation cron",
    ),
    pytest.param(
        hp(ami_updates={"schedule": "cron(0 4 ? * SUN *)", "max_batch_percent": 0}),
        ("orchestrator.hyperpod.ami_updates.max_batch_percent", "out of range, got 0; allowed >= 1", None),
        id="AMI update batch 0 percent",
    ),
    pytest.param(
        hp(ami_updates={"schedule": "cron(0 4 ? * SUN *)", "wait_interval_seconds": 3601}),
        ("orchestrator.hyperpod.ami_updates.wait_interval_seconds", "out of range, got 3601; allowed <= 3600", None),
        id="AMI update wait over an hour",
    ),
    pytest.param(
        hp(auto_patch={"strategy": "DrainFirst"}),
        ("orchestrator.hyperpod.auto_patch.strategy", "invalid value, got 'DrainFirst'; allowed WhenIdle, WhenAllIdle", None),
        id="auto patch strategy CloudFormation does not take",
    ),
    pytest.param(
        merge(GB200_CUSTOM, hp()),
        ("orchestrator.hyperpod.controller_instance_type", "the controller group boots the one custom AMI of every "
         "group (software.image.ami_id ami-0123456789abcdef0), built for the compute groups' arm64 CPUs, got "
         "ml.m5.4xlarge (x86_64); allowed an arm64 type such as ml.m7g.4xlarge", "R-HP-9"),
        id="one custom AMI for arm64 workers and an x86 controller",
    ),
    pytest.param(
        merge(GB200_CUSTOM, hp(controller_instance_type="ml.m7g.4xlarge")),
        ("orchestrator.hyperpod.login_instance_type", "the login group boots the one custom AMI of every group "
         "(software.image.ami_id ami-0123456789abcdef0), built for the compute groups' arm64 CPUs, got ml.m5.4xlarge "
         "(x86_64); allowed an arm64 type such as ml.m7g.4xlarge or null (no login group)", "R-HP-9"),
        id="one custom AMI for arm64 workers and an x86 login",
    ),
    pytest.param(
        merge(gpu(capacity={"type": "odcr", "reservation_id": "cr-0123456789abcdef0"}), HP),
        ("compute[0].capacity.type", "HyperPod cannot launch into EC2 On-Demand Capacity Reservations; reserve "
         "HyperPod capacity with a SageMaker training plan, got 'odcr' with orchestrator.kind 'hyperpod'; allowed "
         "on_demand, spot or training_plan - did you mean training_plan?", "R-CAP-4"),
        id="odcr on hyperpod (spot now allowed)",
    ),
]


@pytest.mark.parametrize(("patch", "expected"), ERRORS)
def test_hyperpod_blueprint_errors(patch: dict[str, Any], expected: tuple[str, str, str | None]) -> None:
    errors, _ = problems(patch)
    path = expected[0]
    assert [e for e in errors if e[0] == path] == [expected]


WARNINGS = [
    pytest.param(
        merge(gpu(capacity={"type": "spot"}), HP),
        [("compute[0].capacity.type", "Spot on HyperPod is documented for EKS orchestration only; with Slurm it is "
          "unverified and the cluster request may be refused, got 'spot' with orchestration slurm; allowed spot (at "
          "your risk), on_demand or training_plan", "R-HP-7")],
        id="spot on hyperpod slurm: allowed, unverified",
    ),
    pytest.param(merge(gpu(capacity={"type": "spot"}), eks(), {"storage": {"lustre": None}}), [],
                 id="spot on hyperpod eks: allowed"),
    pytest.param(
        eks(),
        [("storage.lustre", "FSx for Lustre is not mounted at /fsx on HyperPod EKS nodes, got orchestration eks; "
          "allowed a file system that pods mount through the FSx for Lustre CSI driver (a PersistentVolume in your EKS "
          "cluster), or orchestration: slurm for a host mount", "R-HP-8")],
        id="lustre on hyperpod eks: created, not mounted on the nodes",
    ),
    pytest.param(merge(eks(login_instance_type=None), {"storage": {"lustre": None}}), [],
                 id="eks with login null: nothing to ignore"),
    pytest.param(merge({"name": "a" * 25, "region": "ap-southeast-2", "availability_zone": "ap-southeast-2a"}, HP), [],
                 id="longest name that fits in ap-southeast-2"),
    pytest.param(merge({"name": "train-" + "b" * 24}, HP), [], id="longest name that fits in us-east-1"),
    pytest.param(
        hp(ami_updates={"schedule": "cron(0 4 ? * SUN *)"}, auto_patch={"strategy": "WhenIdle"}),
        [], id="AMI update and auto patch settings"),
]


@pytest.mark.parametrize(("patch", "expected"), WARNINGS)
def test_hyperpod_blueprints_accepted(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    errors, warnings = problems(patch)
    assert errors == []
    assert [w for w in warnings if w[2] in ("R-HP-5", "R-HP-6", "R-HP-7", "R-HP-8", "R-CAP-4")] == expected


@pytest.mark.parametrize("login", [HELPER_TYPE_FOR_ARCH["arm64"], None], ids=["arm64-login", "no-login"])
def test_r_hp_9_advice_validates(login: str | None) -> None:
    """What R-HP-9 suggests for arm64 workers with one custom AMI (breaker item 10) is a blueprint with no error."""
    errors, _ = problems(merge(GB200_CUSTOM, hp(controller_instance_type=HELPER_TYPE_FOR_ARCH["arm64"],
                                                login_instance_type=login)))
    assert errors == []


@pytest.mark.parametrize(("arch", "instance_type"), sorted(HELPER_TYPE_FOR_ARCH.items()))
def test_r_hp_9_advice_is_a_hyperpod_type_of_its_architecture(arch: str, instance_type: str) -> None:
    """Each suggested helper type is in botocore's sagemaker ClusterInstanceType enum and has that architecture."""
    import botocore.session

    enum = botocore.session.get_session().get_service_model("sagemaker").shape_for("ClusterInstanceType").enum
    assert instance_type in enum
    assert cpu_architecture_of(instance_type) == arch


# ---- R-HP-5 and the construct agree for every name length and Region -------------------------------
def _regions() -> list[str]:
    import botocore.session

    partitions = botocore.session.get_session().get_data("endpoints")["partitions"]
    return sorted({r for p in partitions for r in p["regions"]})


@pytest.mark.parametrize("region", _regions())
def test_bucket_rule_matches_construct_in_every_region(region: str) -> None:
    """Whole kind: every Region botocore knows and every allowed name length (3-32). The rule accepts exactly
    the names whose bucket fits 63 characters, and the construct builds those without shortening."""
    from fmcluster.orchestrators.hyperpod.rules import hyperpod_lifecycle_bucket_fits

    class _Bp:
        def __init__(self, name: str) -> None:
            self.name, self.region = name, region

    for n in range(3, 33):
        name = "c" * n
        refused = list(hyperpod_lifecycle_bucket_fits(_Bp(name)))  # type: ignore[arg-type]
        fits = lifecycle_bucket_name_length(name, region) <= MAX_BUCKET_NAME
        assert bool(refused) == (not fits), (name, region)
        if fits:
            assert lifecycle_bucket_name(name, region).startswith(f"sagemaker-{name}-")
        else:
            with pytest.raises(ValueError, match="R-HP-5"):
                lifecycle_bucket_name(name, region)


# ---- EKS: no controller node anywhere ---------------------------------------------------------------
def test_eks_profile_has_no_controller_or_login() -> None:
    rc = resolve(load_blueprint_text(blueprint_text(merge(eks(), {"observability": {
        "metrics": "managed", "alert_email": "oncall@example.com"}}))).blueprint)
    assert rc.profile.management == () and rc.profile.head_node_label is None
    assert [label for label, _ in rc.subnet.management] == []
    endpoints = observability_endpoints(rc)
    text = json.dumps([e.as_dict() for e in endpoints])
    assert "controller" not in text and "head node" not in text and "login node" not in text
    assert "your own collector" in text  # the SSM parameter: no node of fmcluster's reads it on EKS
    # the alerts reach the receiver through the workspace's alert manager, as on Slurm
    (alerts,) = [e.as_dict() for e in endpoints if e.name == "Alerts"]
    assert "email oncall@example.com" in json.dumps(alerts) and "AMP workspace's alert manager" in json.dumps(alerts)


@pytest.mark.parametrize(("patch", "mount"), [(HP, "/fsx"), (eks(), None)])
def test_node_scripts_wait_for_lustre_only_where_it_is_mounted(patch: dict[str, Any], mount: str | None) -> None:
    """HyperPod Slurm mounts FSx before OnInitComplete (FsxLustreConfig); on EKS nothing mounts it on the host, so a
    wait would fail every node's creation."""
    from fmcluster.features.node.render_context import node_context

    rc = resolve(load_blueprint_text(blueprint_text(patch)).blueprint)
    assert rc.blueprint.storage.lustre is not None
    assert node_context(rc, rc.groups[0]).fsx_mount_point == mount


def test_slurm_profile_keeps_controller_and_login() -> None:
    rc = resolve(load_blueprint_text(blueprint_text(HP)).blueprint)
    assert rc.profile.management == ("controller node", "login node")
    assert rc.profile.head_node_label == "controller node"


# ---- synthesized template properties ----------------------------------------------------------------
SLURM_ALL = merge(
    {"compute": [
        {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
        {"name": "spot", "instance_type": "p5.48xlarge", "count": 2, "capacity": {"type": "spot"}},
    ]},
    {"software": {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}},
    hp(node_recovery="None", deep_health_checks=["InstanceStress"],
       ami_updates={"schedule": "cron(0 4 ? * SUN *)", "max_batch_percent": 25, "wait_interval_seconds": 300},
       auto_patch={"strategy": "WhenAllIdle"}),
    {"name": "a" * 30, "observability": {"metrics": "managed", "alert_email": "oncall@example.com"}},
)
EKS_SPOT = merge(gpu(capacity={"type": "spot"}), eks())


def _groups(templates: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    (res,) = resources_of(cluster_template(templates), "AWS::SageMaker::Cluster").values()
    props = res["Properties"]
    return props, {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}


@pytest.fixture(scope="module")
def slurm_all() -> dict[str, Any]:
    return synth_templates(blueprint_text(SLURM_ALL))


@pytest.fixture(scope="module")
def eks_spot() -> dict[str, Any]:
    return synth_templates(blueprint_text(EKS_SPOT))


def test_every_group_uses_on_init_complete(slurm_all: dict[str, Any], eks_spot: dict[str, Any]) -> None:
    for templates, names in ((slurm_all, ["controller", "login", "gpu", "spot"]), (eks_spot, ["gpu"])):
        _, groups = _groups(templates)
        assert list(groups) == names
        for g in groups.values():
            assert set(g["LifeCycleConfig"]) == {"SourceS3Uri", "OnInitComplete"}
            assert g["LifeCycleConfig"]["OnInitComplete"] == "on_init_complete.sh"
        assert "provisioning_parameters" not in json.dumps(cluster_template(templates))


SYNTH_PROPERTIES = [
    ("spot", "CapacityRequirements", {"Spot": {}}),
    ("gpu", "CapacityRequirements", None),
    ("controller", "CapacityRequirements", None),
    ("controller", "ImageId", "ami-0123456789abcdef0"),
    ("login", "ImageId", "ami-0123456789abcdef0"),
    ("gpu", "ImageId", "ami-0123456789abcdef0"),
    ("gpu", "ScheduledUpdateConfig", {"ScheduleExpression": "cron(0 4 ? * SUN *)", "DeploymentConfig": {
        "RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25}},
        "WaitIntervalInSeconds": 300}}),
    ("controller", "AutoPatchConfig", {"PatchingStrategy": "WhenAllIdle"}),
    ("spot", "AutoPatchConfig", {"PatchingStrategy": "WhenAllIdle"}),
    ("gpu", "OnStartDeepHealthChecks", ["InstanceStress"]),
    ("controller", "OnStartDeepHealthChecks", None),
]


@pytest.mark.parametrize(("group", "prop", "expected"), SYNTH_PROPERTIES)
def test_synthesized_instance_group_property(slurm_all: dict[str, Any], group: str, prop: str, expected: Any) -> None:
    _, groups = _groups(slurm_all)
    assert groups[group].get(prop) == expected


def test_cluster_properties(slurm_all: dict[str, Any], eks_spot: dict[str, Any]) -> None:
    props, _ = _groups(slurm_all)
    assert props["NodeRecovery"] == "None"
    _, groups = _groups(eks_spot)
    assert groups["gpu"]["CapacityRequirements"] == {"Spot": {}}
    assert "ImageId" not in groups["gpu"] and "ScheduledUpdateConfig" not in groups["gpu"]


def test_lifecycle_bucket_is_not_shortened(slurm_all: dict[str, Any]) -> None:
    tpl = cluster_template(slurm_all)
    (bucket,) = [b for k, b in resources_of(tpl, "AWS::S3::Bucket").items() if not k.startswith("Mirror")]
    name = Resolver(tpl, "us-east-1")(bucket["Properties"]["BucketName"])
    assert name == f"sagemaker-{'a' * 30}-123456789012-us-east-1" and len(name) == 63


@pytest.mark.parametrize("which", ["slurm_all", "eks_spot"])
def test_create_cluster_request_matches_the_sagemaker_model(which: str, request: pytest.FixtureRequest) -> None:
    """The CreateCluster request the template implies passes botocore's parameter validation (shapes, enums,
    patterns of ImageId, ScheduledUpdateConfig, AutoPatchConfig, CapacityRequirements, OnInitComplete)."""
    import botocore.session
    from botocore.validate import ParamValidator

    templates = request.getfixturevalue(which)
    props, _ = _groups(templates)
    req = Resolver(cluster_template(templates), "us-east-1")(props)
    req["Tags"] = [{"Key": t["Key"], "Value": t["Value"]} for t in req.get("Tags", [])]
    model = botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateCluster")
    report = ParamValidator().validate(req, model.input_shape)
    assert not report.has_errors(), report.generate_report()


@pytest.mark.parametrize("which", ["slurm_all", "eks_spot"])
def test_cluster_template_passes_the_cloudformation_schema(which: str, request: pytest.FixtureRequest,
                                                           tmp_path: Any) -> None:
    """cfn-lint checks AWS::SageMaker::Cluster against its CloudFormation resource schema (OnInitComplete,
    CapacityRequirements, ImageId, ScheduledUpdateConfig, AutoPatchConfig): no error-level finding."""
    import subprocess

    from tests.conftest import ROOT

    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster_template(request.getfixturevalue(which))))
    lint = subprocess.run([str(ROOT / ".venv/bin/cfn-lint"), "--regions", "us-east-1", "--format", "parseable", "--",
                           str(path)], capture_output=True, text=True)
    errors = [line for line in lint.stdout.splitlines() if ":E" in line]
    assert errors == [], lint.stdout

