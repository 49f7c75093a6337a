"""Storage at deploy, update and teardown time (issue 12 items 4, 6 and 7), read from synthesized templates.

- Item 4: the file system DependsOn every ingress and egress rule of its security group (FSx refuses to
  create a file system whose groups do not yet allow Lustre on port 988:
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html), and every security group's
  effective egress is its explicit rules (a group synthesized without ``SecurityGroupEgress`` gets EC2's
  default allow-all rule: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-ec2-securitygroup.html).
- Item 6: ``cdk destroy --all`` with retained data: no retained resource references (Ref, GetAtt or an
  imported export) a resource that stack deletion deletes, so the file system keeps its security group,
  subnet and VPC and no stack ends in DELETE_FAILED.
- Item 7: ParallelCluster queues can list the checkpoint prefix (S3Access grants objects only).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint.model import CheckpointSpec
from fmcluster.features.network.construct import NO_TRAFFIC_EGRESS
from fmcluster.stacks.build import ALLOW_DATA_DESTRUCTION
from fmcluster.validation import load_blueprint
from tests.blueprints import blueprint_text
from tests.conftest import EXAMPLES, resources_of, synth_templates

RETAINED = ("Retain", "RetainExceptOnCreate")
Templates = dict[str, dict[str, Any]]
Key = tuple[str, str]  # (stack, logical id)

# examples with a file system (hyperpod-eks.yaml says `lustre: null`)
LUSTRE_EXAMPLES = [p for p in EXAMPLES if load_blueprint(p).storage.lustre is not None]
DESTROY = {"storage": {"lustre": {"removal_policy": "destroy"}, "checkpoints": {"removal_policy": "destroy"}}}
EXISTING_VPC = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}


def example(path: Path) -> Templates:
    return synth_templates(path.read_text())


def refs(value: Any, stack: str, exports: dict[str, Key]) -> Iterator[Key]:
    """Every resource a template fragment points at: Ref, GetAtt, Fn::Sub variables and imported exports."""
    if isinstance(value, dict):
        if len(value) == 1:
            (k, v), = value.items()
            if k == "Ref" and isinstance(v, str):
                yield stack, v
                return
            if k == "Fn::GetAtt":
                yield stack, (v.split(".")[0] if isinstance(v, str) else v[0])
                return
            if k == "Fn::ImportValue" and isinstance(v, str) and v in exports:
                yield exports[v]
                return
            if k == "Fn::Sub":
                text = v if isinstance(v, str) else v[0]
                for m in re.findall(r"\$\{([^}!][^}]*)\}", text):
                    yield stack, m.split(".")[0]
        for v in value.values():
            yield from refs(v, stack, exports)
    elif isinstance(value, list):
        for v in value:
            yield from refs(v, stack, exports)


def exports_of(templates: Templates) -> dict[str, Key]:
    """Export name -> the resource its value points at (CDK exports are one Ref or GetAtt)."""
    out = {}
    for stack, tpl in templates.items():
        for o in tpl.get("Outputs", {}).values():
            name = (o.get("Export") or {}).get("Name")
            targets = list(refs(o.get("Value"), stack, {}))
            if isinstance(name, str) and len(targets) == 1:
                out[name] = targets[0]
    return out


def retained(templates: Templates) -> set[Key]:
    return {(s, lid) for s, t in templates.items() for lid, r in t["Resources"].items() if r.get("DeletionPolicy") in RETAINED}


def teardown_violations(templates: Templates) -> list[str]:
    """Retained resources that point at a resource ``cdk destroy --all`` deletes.

    CloudFormation deletes the importing stacks first (an export in use blocks the exporter's deletion),
    skips resources with DeletionPolicy Retain, and deletes everything else. A retained resource keeps
    using what it points at (a file system its ENIs' subnet and security group; a security group its VPC),
    so each of those must be retained too or its deletion fails and leaves the stack DELETE_FAILED.
    """
    exports = exports_of(templates)
    kept = retained(templates)
    out = []
    for stack, lid in sorted(kept):
        res = templates[stack]["Resources"][lid]
        props = dict(res.get("Properties", {}))
        if res["Type"] == "AWS::SSM::Parameter":
            # a parameter stores a copy of its value (the image stack's AMI id): nothing stays in use
            props.pop("Value", None)
        for target in refs(props, stack, exports):
            if target[1] in templates[target[0]]["Resources"] and target not in kept:
                out.append(f"{stack}/{lid} ({res['Type']}) -> {target[0]}/{target[1]} "
                           f"({templates[target[0]]['Resources'][target[1]]['Type']}) is deleted")
    return out


def file_system(templates: Templates) -> tuple[str, str, dict[str, Any]]:
    for stack, tpl in templates.items():
        for lid, res in resources_of(tpl, "AWS::FSx::FileSystem").items():
            return stack, lid, res
    raise AssertionError("no file system")


# ---- item 4: creation order and effective egress ------------------------------------------------
@pytest.mark.parametrize("path", LUSTRE_EXAMPLES, ids=[p.stem for p in LUSTRE_EXAMPLES])
def test_file_system_depends_on_every_rule_of_its_security_groups(path: Path) -> None:
    templates = example(path)
    stack, _, fs = file_system(templates)
    tpl = templates[stack]
    groups = {r[1] for r in refs(fs["Properties"]["SecurityGroupIds"], stack, {})}
    assert groups, "the file system's security group lives in the storage stack"
    rules = {lid for lid, r in tpl["Resources"].items()
             if r["Type"] in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress")
             and {t[1] for t in refs(r["Properties"], stack, {})} & groups}
    assert rules
    assert rules <= set(fs.get("DependsOn", [])), sorted(rules - set(fs.get("DependsOn", [])))


@pytest.mark.parametrize("efa", [False, True], ids=["tcp", "efa"])
def test_file_system_depends_on_its_rules_also_with_efa(efa: bool) -> None:
    templates = synth_templates(blueprint_text({"storage": {"lustre": {"efa_enabled": efa}}} if efa else None))
    stack, _, fs = file_system(templates)
    rules = [lid for lid, r in templates[stack]["Resources"].items()
             if r["Type"] in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress")]
    assert len(rules) == (13 if efa else 8)  # + Lustre ports out to the cluster nodes (ExistingFsxNetworkingValidator)
    assert set(rules) <= set(fs["DependsOn"])


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_no_security_group_falls_back_to_the_default_allow_all_egress(path: Path) -> None:
    for stack, tpl in example(path).items():
        for lid, sg in resources_of(tpl, "AWS::EC2::SecurityGroup").items():
            assert sg["Properties"].get("SecurityGroupEgress"), f"{stack}/{lid}: EC2 would add allow-all egress"


def test_lustre_group_egress_is_exactly_the_lustre_rules() -> None:
    templates = synth_templates(blueprint_text())
    stack, _, fs = file_system(templates)
    tpl = templates[stack]
    [sg_id] = [r[1] for r in refs(fs["Properties"]["SecurityGroupIds"], stack, {})]
    assert tpl["Resources"][sg_id]["Properties"]["SecurityGroupEgress"] == [NO_TRAFFIC_EGRESS]
    egress = sorted((r["Properties"]["IpProtocol"], r["Properties"].get("FromPort"), r["Properties"].get("ToPort"),
                     "self" if r["Properties"].get("DestinationSecurityGroupId") == {"Fn::GetAtt": [sg_id, "GroupId"]}
                     else "clients" if "DestinationSecurityGroupId" in r["Properties"]
                     else r["Properties"].get("CidrIp", "other"))
                    for r in resources_of(tpl, "AWS::EC2::SecurityGroupEgress").values()
                    if r["Properties"]["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]})
    # outbound to itself and to the cluster nodes (ParallelCluster's ExistingFsxNetworkingValidator needs both ways)
    assert egress == [("tcp", 988, 988, "clients"), ("tcp", 988, 988, "self"),
                      ("tcp", 1018, 1023, "clients"), ("tcp", 1018, 1023, "self")]


def test_efa_security_group_keeps_all_outbound_and_self() -> None:
    tpl = synth_templates(blueprint_text())["t-cluster-network"]
    [(sg_id, sg)] = resources_of(tpl, "AWS::EC2::SecurityGroup").items()
    assert sg["Properties"]["SecurityGroupEgress"] == [NO_TRAFFIC_EGRESS]
    egress = {(r["Properties"]["IpProtocol"], r["Properties"].get("CidrIp"), "DestinationSecurityGroupId" in r["Properties"])
              for r in resources_of(tpl, "AWS::EC2::SecurityGroupEgress").values()}
    assert egress == {("-1", "0.0.0.0/0", False), ("-1", None, True)}


# ---- item 6: teardown with retained data ----------------------------------------------------------
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_destroy_all_completes_with_retained_data(path: Path) -> None:
    templates = example(path)
    assert teardown_violations(templates) == []


@pytest.mark.parametrize(
    "patch", [None, EXISTING_VPC, {"storage": {"lustre": {"efa_enabled": True}}}], ids=["new-vpc", "existing-vpc", "efa"])
def test_retained_file_system_keeps_its_group_subnet_and_vpc(patch: dict[str, Any] | None) -> None:
    templates = synth_templates(blueprint_text(patch))
    assert teardown_violations(templates) == []
    stack, lid, fs = file_system(templates)
    kept = retained(templates)
    assert (stack, lid) in kept
    exports = exports_of(templates)
    used = set(refs({k: fs["Properties"][k] for k in ("SubnetIds", "SecurityGroupIds")}, stack, exports))
    assert used <= kept
    assert len(used) == (1 if patch == EXISTING_VPC else 2)  # an existing subnet is not fmcluster's to delete
    vpcs = [(s, v) for s, t in templates.items() for v in resources_of(t, "AWS::EC2::VPC")]
    assert set(vpcs) <= kept
    # everything else in the network stack is still deleted (the flow-log group is retained by CDK's default)
    network = templates["t-cluster-network"]["Resources"]
    kept_types = {r["Type"] for r in network.values() if r.get("DeletionPolicy") in RETAINED}
    assert kept_types <= {"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::Logs::LogGroup"}
    assert sum(r["Type"] == "AWS::EC2::Subnet" and r.get("DeletionPolicy") in RETAINED for r in network.values()) == len(vpcs)


def test_destroy_with_both_keys_retains_no_network() -> None:
    templates = synth_templates(blueprint_text(DESTROY), ((ALLOW_DATA_DESTRUCTION, True),))
    assert teardown_violations(templates) == []
    stack, lid, _ = file_system(templates)
    kept = retained(templates)
    assert (stack, lid) not in kept
    assert not [k for k in kept if k[0] == "t-cluster-network" and "FlowLogGroup" not in k[1]]


def test_no_file_system_retains_no_network() -> None:
    templates = synth_templates(blueprint_text({"storage": {"lustre": None}}))
    assert teardown_violations(templates) == []
    assert not [k for k in retained(templates) if k[0] == "t-cluster-network" and "FlowLogGroup" not in k[1]]


# ---- item 7: ParallelCluster checkpoint listing ---------------------------------------------------
def test_parallelcluster_queues_can_list_the_checkpoint_prefix() -> None:
    tpl = synth_templates(blueprint_text())["t-cluster-cluster"]
    [res] = resources_of(tpl, "Custom::PclusterCluster").values()
    queues = res["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    prefix = CheckpointSpec().prefix
    for q in queues:
        # S3Access still grants the objects under the prefix ...
        assert any(a.get("KeyName") == f"{prefix}*" and a.get("EnableWriteAccess") for a in q["Iam"]["S3Access"])
        # ... and the queue's additional policy lists the bucket, limited to the prefix.
        [ref] = q["Iam"]["AdditionalIamPolicies"]
        policy = tpl["Resources"][ref["Policy"]["Ref"]]["Properties"]["PolicyDocument"]
        [st] = [s for s in policy["Statement"] if s["Sid"] == "CheckpointPrefixList"]
        assert "s3:ListBucket" in st["Action"]
        assert st["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}*"]}}
        resource = st["Resource"]
        assert "Fn::ImportValue" in str(resource) and "/" not in str(resource).split("arn:")[-1]  # the bucket ARN
