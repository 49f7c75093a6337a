"""Bake mode: the ``<name>-image`` stack (EC2 Image Builder) and the cluster stack that boots its AMI, per
orchestrator; component documents against the AWSTOE document schema; the parent image lookup; custom mode's
one home (``software.image``); ``fmcluster diff`` reporting an image change as a node replacement."""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, blueprint_text, example, merge, to_yaml
from tests.conftest import ROOT, _synth_folder, assert_no_synthesis_errors, resources_of, synth_templates

PC_PARENT = "ami-0a1b2c3d4e5f60718"
HP_PARENT = "ami-0fedcba9876543210"
PC_FILTER = "aws-parallelcluster-3.16.3-ubuntu-2204-lts-hvm-x86_64*"  # p6-b200: ParallelCluster 3.16.3, Ubuntu 22.04

#: Bake examples per orchestrator: (blueprint text, CDK context). HyperPod has no bake example; it is the
#: hyperpod-p5 example in bake mode with a pinned HyperPod parent (R-BAKE-1).
CASES: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {
    "parallelcluster": ((ROOT / "blueprints" / "p6-b200.yaml").read_text(), ()),
    "pcs": ((ROOT / "blueprints" / "p6-b300.yaml").read_text(), ()),
    "hyperpod": (to_yaml(merge(example("hyperpod-p5"),
                               {"software": {"image": {"mode": "bake", "parent_ami_id": HP_PARENT}}})), ()),
}
ORCHESTRATORS = sorted(CASES)

# ---- the AWSTOE component document schema, written from the AWS documentation ------------------------------
#: "Document schema and definitions" (https://docs.aws.amazon.com/imagebuilder/latest/userguide/toe-use-documents.html;
#: awsdocs/ec2-image-builder-user-guide doc_source/image-builder-application-documents.md): name and description
#: optional; schemaVersion (string, currently 1.0) and phases (list) required; a phase has a unique name and steps;
#: Image Builder runs the phases build, validate and test; a step has name, action, timeoutSeconds (positive, or -1
#: for none), onFailure (Abort | Continue), maxAttempts (integer) and inputs; ExecuteBash's inputs are ``commands``
#: (a list of strings; doc_source/image-builder-action-modules.md). Stricter than the service where fmcluster is
#: (additionalProperties false, one ExecuteBash step per phase name fmcluster uses).
TOE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schemaVersion", "phases"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string", "maxLength": 1024},
        "schemaVersion": {"const": "1.0"},
        "phases": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object", "required": ["name", "steps"], "additionalProperties": False,
                "properties": {
                    "name": {"enum": ["build", "validate", "test"]},
                    "steps": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "required": ["name", "action", "inputs"], "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9]*$"},
                            "action": {"const": "ExecuteBash"},
                            "timeoutSeconds": {"anyOf": [{"type": "integer", "minimum": 1}, {"const": -1}]},
                            "onFailure": {"enum": ["Abort", "Continue"]},
                            "maxAttempts": {"type": "integer", "minimum": 1},
                            "inputs": {"type": "object", "required": ["commands"], "additionalProperties": False,
                                       "properties": {"commands": {"type": "array", "minItems": 1,
                                                                   "items": {"type": "string", "minLength": 1}}}},
                        },
                    }},
                },
            },
        },
    },
}


def _unique_phase_names(doc: dict[str, Any]) -> bool:
    names = [p["name"] for p in doc["phases"]]
    return len(names) == len(set(names))


@cache
def templates(orchestrator: str) -> dict[str, dict[str, Any]]:
    text, ctx = CASES[orchestrator]
    return synth_templates(text, ctx)


def image_template(orchestrator: str) -> tuple[str, dict[str, Any]]:
    (name, tpl), = [(n, t) for n, t in templates(orchestrator).items() if n.endswith("-image")]
    return name, tpl


def cluster_template(orchestrator: str) -> dict[str, Any]:
    (tpl,) = [t for n, t in templates(orchestrator).items() if n.endswith("-cluster")]
    return tpl


def parameter_names(tpl: dict[str, Any]) -> dict[str, str]:
    """SSM parameter name -> the logical id of the AWS::ImageBuilder::Image whose ImageId it holds."""
    out = {}
    for p in resources_of(tpl, "AWS::SSM::Parameter").values():
        value = p["Properties"]["Value"]
        assert value["Fn::GetAtt"][1] == "ImageId"
        out[p["Properties"]["Name"]] = value["Fn::GetAtt"][0]
    return out


# ---- the image stack and the cluster stack that boots its AMI -------------------------------------------------
@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_cluster_stack_boots_the_baked_ami_on_every_compute_group(orchestrator: str) -> None:
    _, img = image_template(orchestrator)
    params = parameter_names(img)
    assert len(params) == 1
    (name, image_id), = params.items()
    assert img["Resources"][image_id]["Type"] == "AWS::ImageBuilder::Image"
    ref = "{{resolve:ssm:" + name + "}}"
    cl = cluster_template(orchestrator)
    if orchestrator == "pcs":
        groups = {r["Properties"]["Name"]: r["Properties"]["AmiId"]
                  for r in resources_of(cl, "AWS::PCS::ComputeNodeGroup").values()}
        assert groups == {"login": "{{resolve:ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/x86_64/latest/ami-id}}",
                          "b300": ref}
    elif orchestrator == "parallelcluster":
        (cfg,) = [r["Properties"]["ClusterConfiguration"] for r in resources_of(cl, "Custom::PclusterCluster").values()]
        assert cfg["Image"] == {"Os": "ubuntu2204"}  # the head node keeps the official AMI
        assert {q["Name"]: q["Image"] for q in cfg["Scheduling"]["SlurmQueues"]} == {"b200": {"CustomAmi": ref}}
    else:
        (cluster,) = resources_of(cl, "AWS::SageMaker::Cluster").values()
        groups = {g["InstanceGroupName"]: g.get("ImageId") for g in cluster["Properties"]["InstanceGroups"]}
        assert groups == {"controller": None, "login": None, "gpu": ref}


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_image_stack_resources_and_parent(orchestrator: str) -> None:
    _, img = image_template(orchestrator)
    (recipe,) = resources_of(img, "AWS::ImageBuilder::ImageRecipe").values()
    parent = recipe["Properties"]["ParentImage"]
    expected = {
        "pcs": lambda: "ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/x86_64/latest/ami-id",
        "parallelcluster": lambda: {"Fn::GetAtt": [_parent_lookup_id(img), "ImageId"]},  # found at deploy time
        "hyperpod": lambda: HP_PARENT,
    }[orchestrator]
    assert parent == expected()
    components = resources_of(img, "AWS::ImageBuilder::Component")
    # botocore imagebuilder ResourceName (component, recipe and infrastructure names)
    resource_name = re.compile(r"^[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]$")
    for res in [*components.values(), recipe, *resources_of(img, "AWS::ImageBuilder::InfrastructureConfiguration").values()]:
        assert resource_name.match(res["Properties"]["Name"]), res["Properties"]["Name"]
    names = [c["Properties"]["Name"].rsplit("-", 1)[-1] for c in components.values()]
    # the parent's own stack is baked: only what it lacks (NCCL, nccl-tests), the lock, then the holds
    full = [c["Properties"]["Name"] for c in components.values()]
    assert names[-3:] == ["lock", "measure", "holds"] and any(n.endswith("nccl-tests") for n in full)
    assert not any(n.endswith("driver") for n in full)
    # the recipe runs every component, in the stack's order
    arns = [c["ComponentArn"]["Fn::GetAtt"][0] for c in recipe["Properties"]["Components"]]
    assert arns == list(components)
    (bdm,) = recipe["Properties"]["BlockDeviceMappings"]
    assert bdm["DeviceName"] == "/dev/sda1" and bdm["Ebs"]["VolumeSize"] == 100 and bdm["Ebs"]["Encrypted"] is False
    (infra,) = resources_of(img, "AWS::ImageBuilder::InfrastructureConfiguration").values()
    props = infra["Properties"]
    assert props["InstanceTypes"] == ["c6i.4xlarge"]  # GPU-less, x86_64 like the compute groups
    assert props["TerminateInstanceOnFailure"] is True
    assert props["InstanceMetadataOptions"]["HttpTokens"] == "required"
    assert "Fn::ImportValue" in json.dumps(props["SubnetId"])  # the cluster's GPU subnet, from the network stack
    (image,) = resources_of(img, "AWS::ImageBuilder::Image").values()
    assert image["Properties"]["ImageTestsConfiguration"] == {"ImageTestsEnabled": True, "TimeoutMinutes": 120}


def test_build_instance_role_is_least_privilege() -> None:
    _, img = image_template("pcs")
    (role,) = resources_of(img, "AWS::IAM::Role").values()
    policies = sorted(p["Fn::Join"][1][-1] for p in role["Properties"]["ManagedPolicyArns"])
    assert policies == [":iam::aws:policy/AmazonSSMManagedInstanceCore",
                        ":iam::aws:policy/EC2InstanceProfileForImageBuilder"]
    assert "Policies" not in role["Properties"] and resources_of(img, "AWS::IAM::Policy") == {}
    (sg,) = resources_of(img, "AWS::EC2::SecurityGroup").values()
    assert "SecurityGroupIngress" not in sg["Properties"]


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_teardown_keeps_amis_and_their_parameters(orchestrator: str) -> None:
    """AMIs are not data, but a node group (or a rollback) may still launch one: CloudFormation never deregisters
    them, on stack deletion or image replacement (no DeletionSettings: deleting the Image Builder image resource
    leaves the AMI), and the parameters naming them are retained; the image resource, recipe and components are
    deleted with the stack (nothing retained points at them)."""
    _, img = image_template(orchestrator)
    for res in resources_of(img, "AWS::SSM::Parameter").values():
        assert (res.get("DeletionPolicy"), res.get("UpdateReplacePolicy")) == ("Retain", "Retain")
    for typ in ("AWS::ImageBuilder::Image", "AWS::ImageBuilder::ImageRecipe", "AWS::ImageBuilder::Component"):
        for res in resources_of(img, typ).values():
            assert res.get("DeletionPolicy", "Delete") == "Delete"
    for res in resources_of(img, "AWS::ImageBuilder::Image").values():
        assert "DeletionSettings" not in res["Properties"]


def test_official_and_custom_blueprints_have_no_image_stack() -> None:
    official = synth_templates(blueprint_text())
    custom = synth_templates(blueprint_text({"software": {"image": {"mode": "custom", "ami_id": PC_PARENT}}}))
    assert not any(n.endswith("-image") for n in [*official, *custom])
    (cfg,) = [r["Properties"]["ClusterConfiguration"]
              for r in resources_of(custom["t-cluster-cluster"], "Custom::PclusterCluster").values()]
    assert [q["Image"] for q in cfg["Scheduling"]["SlurmQueues"]] == [{"CustomAmi": PC_PARENT}]
    (cfg,) = [r["Properties"]["ClusterConfiguration"]
              for r in resources_of(official["t-cluster-cluster"], "Custom::PclusterCluster").values()]
    assert all("Image" not in q for q in cfg["Scheduling"]["SlurmQueues"])


def test_custom_mode_on_pcs_and_hyperpod_uses_the_ami_everywhere() -> None:
    ami = {"software": {"image": {"mode": "custom", "ami_id": PC_PARENT}}}
    pcs = synth_templates(blueprint_text(ami, {"software": {"os": "ubuntu-24.04"},
                                               "orchestrator": {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}}}))
    assert {r["Properties"]["Name"]: r["Properties"]["AmiId"]
            for r in resources_of(pcs["t-cluster-cluster"], "AWS::PCS::ComputeNodeGroup").values()} == {
        "login": PC_PARENT, "gpu": PC_PARENT}
    hp = synth_templates(to_yaml(merge(example("hyperpod-p5"), ami)))
    (cluster,) = resources_of(hp["hp-train-cluster"], "AWS::SageMaker::Cluster").values()
    assert {g["InstanceGroupName"]: g.get("ImageId") for g in cluster["Properties"]["InstanceGroups"]} == {
        "controller": PC_PARENT, "login": PC_PARENT, "gpu": PC_PARENT}


def test_cluster_stack_depends_on_the_image_stack() -> None:
    import tempfile

    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint

    app = cdk.App(outdir=tempfile.mkdtemp())
    stacks = build_app(app, load_blueprint(ROOT / "blueprints" / "p6-b200.yaml"))
    assert stacks.image is not None and stacks.image in stacks.cluster.dependencies
    assert stacks.image.stack_name == "b200-train-image"


# ---- component documents -----------------------------------------------------------------------------------
@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_component_documents_are_valid_awstoe_documents(orchestrator: str) -> None:
    _, img = image_template(orchestrator)
    components = resources_of(img, "AWS::ImageBuilder::Component")
    assert components
    for c in components.values():
        props = c["Properties"]
        doc = yaml.safe_load(props["Data"])
        jsonschema.validate(doc, TOE_SCHEMA)
        assert _unique_phase_names(doc)
        assert [p["name"] for p in doc["phases"]] == ["build", "validate", "test"]
        assert len(props["Data"]) <= 16_000
        assert props["Platform"] == "Linux"
        assert all(0 <= int(n) < 2**30 for n in props["Version"].split("."))
        for phase in doc["phases"]:
            (step,) = phase["steps"]
            assert step["onFailure"] == "Abort" and step["inputs"]["commands"][0].startswith("#!/bin/bash\n")


def test_the_schema_rejects_what_the_service_rejects() -> None:
    """The schema is not vacuous: documents the AWS docs rule out fail it."""
    good = {"schemaVersion": "1.0", "phases": [{"name": "build", "steps": [
        {"name": "A", "action": "ExecuteBash", "timeoutSeconds": 60, "onFailure": "Abort", "maxAttempts": 1,
         "inputs": {"commands": ["true"]}}]}]}
    jsonschema.validate(good, TOE_SCHEMA)
    bad = [
        {"phases": good["phases"]},  # schemaVersion missing
        {**good, "phases": []},
        {**good, "phases": [{"name": "build", "steps": [{**good["phases"][0]["steps"][0], "onFailure": "Retry"}]}]},
        {**good, "phases": [{"name": "build", "steps": [{**good["phases"][0]["steps"][0], "timeoutSeconds": 0}]}]},
        {**good, "phases": [{"name": "build", "steps": [{**good["phases"][0]["steps"][0], "inputs": {}}]}]},
    ]
    for doc in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, TOE_SCHEMA)
    assert not _unique_phase_names({"phases": [{"name": "build"}, {"name": "build"}]})


def test_build_steps_keep_their_script_and_validate_by_running_it_again() -> None:
    """Integrated with the boot path's install templates (issue 11): the build phase writes the component's install
    script into the image and runs it; validate runs it again; the lock step's test checks the lock file. The lock
    component itself is run for real in tests/features/node/test_image_build.py."""
    from fmcluster.features.node.render_image_build import BUILD_SCRIPT_DIR, LOCK_PATH, image_build_steps, placeholder_steps
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint

    rc = resolve(load_blueprint(ROOT / "blueprints" / "p6-b300.yaml"))
    steps = image_build_steps(rc, rc.groups[0])
    assert placeholder_steps(steps) == []
    # first the shared library every install script sources (in parts under Image Builder's inline limit: the first
    # writes, the next append), then the components
    library = [st for st in steps if st.component == "library" or st.component.startswith("library-part")]
    assert steps[:len(library)] == library and f"cat > {BUILD_SCRIPT_DIR}/lib.sh <<" in library[0].build
    assert all(f"cat >> {BUILD_SCRIPT_DIR}/lib.sh <<" in st.build for st in library[1:])
    for st in steps[len(library):]:
        path = f"{BUILD_SCRIPT_DIR}/{st.component}.sh"
        assert f"cat > {path} <<" in st.build and st.build.rstrip().endswith(f"exec {path}")
        assert f'source "{BUILD_SCRIPT_DIR}/lib.sh"' in st.build
        assert st.validate.rstrip().endswith(f"exec {path}")
    for st in steps:
        assert len(st.build) + len(st.validate) + len(st.test) <= 16000, st.component
    (lock,) = [st for st in steps if st.component == "lock"]
    assert LOCK_PATH in lock.test and "exec" not in lock.test
    assert subprocess.run(["bash", "-n", "-c", lock.build], capture_output=True).returncode == 0


def test_content_version_follows_content() -> None:
    from fmcluster.features.node.construct_image import content_version

    assert content_version("a") == content_version("a") != content_version("b")
    assert content_version("a", "b") != content_version("ab")
    major, minor, patch = (int(x) for x in content_version("x").split("."))
    assert major == 1 and 0 <= minor < 2**30 and 0 <= patch < 2**30


# ---- the parent image: never a live call at synth, found at deploy time ----------------------------------------
def _parent_lookup_id(img: dict[str, Any]) -> str:
    (logical,) = resources_of(img, "Custom::FmclusterParentAmi")
    return logical


def test_parallelcluster_parent_is_a_deploy_time_lookup() -> None:
    """p6-b200 synthesizes with no context at all; its parent is one Custom::FmclusterParentAmi with pcluster's
    name filter, backed by a Lambda function whose only permission beyond its logs is ec2:DescribeImages."""
    _, img = image_template("parallelcluster")
    (lookup,) = resources_of(img, "Custom::FmclusterParentAmi").values()
    props = {k: v for k, v in lookup["Properties"].items() if k != "ServiceToken"}
    # ServiceTimeout (seconds) over the function's 120 s: an unanswered request fails in minutes, not CloudFormation's hour
    assert props == {"NameFilter": PC_FILTER, "Architecture": "x86_64", "Owner": "amazon", "ServiceTimeout": "240"}
    (fn,) = resources_of(img, "AWS::Lambda::Function").values()
    assert fn["Properties"]["Handler"] == "index.handler" and fn["Properties"]["Runtime"] == "python3.14"
    assert "def pick_official_image" in fn["Properties"]["Code"]["ZipFile"]
    (policy,) = resources_of(img, "AWS::IAM::Policy").values()
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "ec2:DescribeImages", "Effect": "Allow", "Resource": "*"}]


def test_synth_makes_no_aws_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    import botocore.client

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("AWS API call during synth")

    monkeypatch.setattr(boto3, "client", refuse)
    monkeypatch.setattr(boto3.Session, "client", refuse)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", refuse)
    for o in ORCHESTRATORS:
        text, ctx = CASES[o]
        _synth_folder(text, ctx)  # uncached: really synthesize


def _stubbed_ec2(images: list[dict[str, Any]], name: str, arch: str = "x86_64") -> Any:
    import boto3
    from botocore.stub import Stubber

    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_response("describe_images", {"Images": images}, {
        "Owners": ["amazon"], "IncludeDeprecated": True,
        "Filters": [{"Name": "name", "Values": [name]}, {"Name": "state", "Values": ["available"]},
                    {"Name": "architecture", "Values": [arch]}]})
    stub.activate()
    return ec2


def test_lookup_picks_pclusters_image() -> None:
    """Newest non-deprecated wins, as pcluster's _find_valid_official_image."""
    from fmcluster.preflight.image_lookup import lookups, newest_official_image
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint

    (lk,) = lookups(resolve(load_blueprint(ROOT / "blueprints" / "p6-b200.yaml")))
    assert (lk.key, lk.name_filter) == ("b200", PC_FILTER)
    images = [
        {"ImageId": "ami-000000000000000a1", "CreationDate": "2026-10-01T00:00:00.000Z"},
        {"ImageId": "ami-000000000000000a2", "CreationDate": "2026-11-01T00:00:00.000Z",
         "DeprecationTime": "2026-11-15T00:00:00.000Z"},
        {"ImageId": "ami-000000000000000a3", "CreationDate": "2026-09-01T00:00:00.000Z",
         "DeprecationTime": "2099-01-01T00:00:00.000Z"},
    ]
    assert newest_official_image(_stubbed_ec2(images, lk.name_filter), lk) == "ami-000000000000000a1"


def test_lookup_without_images_is_an_error_naming_the_filter() -> None:
    from fmcluster.preflight.image_lookup import Lookup, LookupError_, newest_official_image

    lk = Lookup("b200", PC_FILTER, "x86_64", "node")
    with pytest.raises(LookupError_, match=r"no available AMI named aws-parallelcluster-3\.16\.3-ubuntu-2204"):
        newest_official_image(_stubbed_ec2([], lk.name_filter), lk)


def test_image_lookup_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from fmcluster.cli import app
    from fmcluster.preflight import clients as clients_module
    from fmcluster.preflight.clients import Clients, PreflightCannotRun

    bp = ROOT / "blueprints" / "p6-b200.yaml"
    ec2 = _stubbed_ec2([{"ImageId": "ami-0123456789abcdef1", "CreationDate": "2026-11-01T00:00:00.000Z"}],
                       "aws-parallelcluster-3.16.3-ubuntu-2204-lts-hvm-x86_64*")
    monkeypatch.setattr(clients_module, "make_clients",
                        lambda region, profile=None: Clients(ec2, None, None, None, None, None))
    run = CliRunner().invoke(app, ["image", "lookup", str(bp)])
    assert run.exit_code == 0, run.output
    assert f"image b200: {PC_FILTER} -> ami-0123456789abcdef1" in run.output
    assert not (tmp_path / "cdk.context.json").exists()

    def no_credentials(region: str, profile: str | None = None) -> Clients:
        raise PreflightCannotRun("no AWS credentials found")

    monkeypatch.setattr(clients_module, "make_clients", no_credentials)
    run = CliRunner().invoke(app, ["image", "lookup", str(bp)])
    assert run.exit_code == 2 and "no AWS credentials found" in run.output and "Traceback" not in run.output
    run = CliRunner().invoke(app, ["image", "lookup", str(ROOT / "blueprints" / "p6-b300.yaml")])
    assert run.exit_code == 0 and "nothing to look up" in run.output


# ---- lint and nag ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_image_stack_passes_cfn_lint_and_cdk_nag(orchestrator: str) -> None:
    import tempfile

    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import build_app
    from tests.conftest import cdk_context
    from tests.orchestrator_support import nag_report

    text, ctx = CASES[orchestrator]
    bp = load_blueprint_text(text).blueprint
    out = Path(tempfile.mkdtemp(prefix="fmcluster-image-nag-"))
    app = cdk.App(outdir=str(out), context={**cdk_context(), **dict(ctx)})
    stacks = build_app(app, bp)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assert_no_synthesis_errors(app.synth())
    assert nag_report(out) == []
    assert stacks.image is not None
    lint = subprocess.run([str(ROOT / ".venv/bin/cfn-lint"), "--regions", bp.region, "--format", "parseable", "--",
                           str(out / f"{stacks.image.stack_name}.template.json"),
                           str(out / f"{stacks.cluster.stack_name}.template.json")],
                          capture_output=True, text=True)
    assert [line for line in lint.stdout.splitlines() if ":E" in line] == []


# ---- one home per fact: the old per-orchestrator AMI keys ----------------------------------------------------
@pytest.mark.parametrize(("patch", "path", "moved_to"), [
    ({"orchestrator": {"kind": "parallelcluster", "parallelcluster": {"custom_ami": PC_PARENT}}},
     "orchestrator.parallelcluster.custom_ami", "'custom_ami' has moved to software.image (software.image: {mode: "
     "custom, ami_id: <your AMI>})"),
    ({"software": {"os": "ubuntu-24.04"}, "orchestrator": {"kind": "pcs", "pcs": {"ami_id": PC_PARENT}}},
     "orchestrator.pcs.ami_id", "'ami_id' has moved to software.image (software.image: {mode: custom, ami_id: "
     "<your AMI>})"),
    ({"orchestrator": {"kind": "hyperpod", "hyperpod": {"image_id": "default"}}},
     "orchestrator.hyperpod.image_id", "'image_id' has moved to software.image (image_id: default is "
     "software.image.mode: official, the default; an AMI id is software.image: {mode: custom, ami_id: <your AMI>})"),
])
def test_old_ami_keys_say_where_they_moved(patch: dict[str, Any], path: str, moved_to: str) -> None:
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text(patch))
    assert [(p.path, p.message) for p in e.value.errors if p.path == path] == [(path, moved_to)]


# ---- rules ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "level", "expected"), [
    (to_yaml(merge(example("hyperpod-p5"), {"software": {"image": {"mode": "bake"}}})), "error",
     ("software.image.parent_ami_id", "bake mode on SageMaker HyperPod needs the parent AMI pinned, got none; allowed a "
      "HyperPod public AMI id (ami- followed by 8 or 17 hex digits) for the OS and CPU architecture of the compute "
      "groups", "R-BAKE-1")),
    (to_yaml(merge(example("p6-b200"), {"software": {"image": {"parent_ami_id": PC_PARENT}}})), "warning",
     ("software.image.parent_ami_id", f"the parent AMI must be ParallelCluster 3.16.3's official AMI for ubuntu-22.04, "
      f"got {PC_PARENT!r}, which fmcluster cannot inspect offline; allowed that AMI (leave parent_ami_id unset and "
      "the deployment finds it; 'fmcluster image lookup' shows which)", "R-BAKE-2")),
    (blueprint_text({"software": {"os": "ubuntu-24.04", "image": {"mode": "custom", "ami_id": PC_PARENT}},
                     "orchestrator": {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}}}), "warning",
     ("software.image.ami_id", f"a custom AMI on AWS PCS must carry the PCS agent 1.5.0-1 or later and Slurm (node "
      f"lifecycle actions need it), got {PC_PARENT!r}, which fmcluster cannot inspect offline; allowed an AMI built "
      "from the PCS-ready DLAMI (or use mode bake, which builds from it)", "R-PCS-2")),
    (to_yaml(merge(example("hyperpod-p5"), {"software": {"image": {"mode": "custom", "ami_id": PC_PARENT}},
                                            "orchestrator": {"hyperpod": {"login_instance_type": "ml.c7g.4xlarge"}}})),
     "error",
     ("orchestrator.hyperpod.login_instance_type", "the login group boots the one custom AMI of every group "
      f"(software.image.ami_id {PC_PARENT}), built for the compute groups' x86_64 CPUs, got ml.c7g.4xlarge (arm64); "
      "allowed an x86_64 type such as ml.m5.4xlarge or null (no login group)", "R-HP-9")),
])
def test_bake_and_custom_rules(text: str, level: str, expected: tuple[str, str, str]) -> None:
    if level == "error":
        with pytest.raises(BlueprintError) as e:
            load_blueprint_text(text)
        found = [(p.path, p.message, p.rule_id) for p in e.value.errors]
    else:
        found = [(p.path, p.message, p.rule_id) for p in load_blueprint_text(text).warnings]
    assert expected in found


# ---- diff: an image change is a node replacement -------------------------------------------------------------
def test_diff_reports_an_image_change_as_node_replacement(tmp_path: Path) -> None:
    from fmcluster.review.diff import NODE_REPLACEMENT, diff_assemblies, load_side

    official = tmp_path / "official.yaml"
    official.write_text(to_yaml(merge(example("p6-b300"), {"software": {"image": {"mode": "official"}, "stack": DROP}})))
    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    report = diff_assemblies(load_side(official), load_side(ROOT / "blueprints" / "p6-b300.yaml"))
    (ng,) = [c for c in report.of_type("AWS::PCS::ComputeNodeGroup") if c.construct_path.endswith("/b300")]
    assert ng.level == "warning" and NODE_REPLACEMENT in ng.note
    assert "b300 ({{resolve:ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/x86_64/latest/ami-id}} -> " \
           "{{resolve:ssm:/fmcluster/b300-train/image/b300/" in ng.note
    assert not [c for c in report.of_type("AWS::PCS::ComputeNodeGroup")
                if c.construct_path.endswith("/Login") and NODE_REPLACEMENT in c.note]
    assert {c.type for c in report.changes if c.action == "add"} >= {"AWS::ImageBuilder::Image",
                                                                      "AWS::ImageBuilder::ImageRecipe"}


def test_hyperpod_refuses_an_encrypted_image() -> None:
    """HyperPod takes only an unencrypted custom AMI (ClusterInstanceGroupSpecification.ImageId)."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from fmcluster.features.node.construct_image import ImageBuild

    stack = cdk.Stack(cdk.App(), "s", env=cdk.Environment(region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1)
    with pytest.raises(ValueError, match="needs an unencrypted custom AMI"):
        ImageBuild(stack, "Images", cluster_name="c", os="ubuntu-22.04", targets=[], steps={}, parents={}, vpc=vpc,
                   subnet=vpc.private_subnets[0], tags={}, encrypted=True, encryption_allowed=False)
