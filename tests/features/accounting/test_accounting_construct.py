"""The Slurm accounting stack and its wiring (docs/accounting.md): <name>-accounting is cdk-nag and cfn-lint clean,
retained, encrypted, reachable on 3306 only from the head node's client group; the ParallelCluster config gets
SlurmSettings.Database (and ParallelCluster's own validators accept it); PCS gets managed accounting. Two synths: one
ParallelCluster blueprint (with cdk-nag, shared by every test here), one PCS blueprint."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.accounting.plan import AURORA_MYSQL_VERSION, DATABASE_USER
from fmcluster.features.network.construct import NO_TRAFFIC_EGRESS
from tests.blueprints import blueprint_text, example
from tests.conftest import resources_of, synth_templates


def accounting(**kw: Any) -> dict[str, Any]:
    return {"orchestrator": {"slurm": {"accounting": {"enabled": True, **kw}}}}


ON = accounting(second_availability_zone="us-east-1b")


# ---- the ParallelCluster blueprint with accounting: one synth, with cdk-nag -------------------------------
PC_TEXT = blueprint_text(ON, accounting(backup_retention_days=14))


@cache
def pc_synth() -> tuple[Path, dict[str, dict[str, Any]]]:
    from tests.orchestrator_support import synth_with_nag

    out = synth_with_nag(PC_TEXT)  # raises on any unacknowledged cdk-nag finding
    return out, {p.name.removesuffix(".template.json"): json.loads(p.read_text()) for p in out.glob("*.template.json")}


@pytest.mark.synth
def test_accounting_stack_is_nag_and_cfn_lint_clean() -> None:
    from tests.features.storage.test_storage_construct import cfn_lint_errors

    out, templates = pc_synth()
    assert set(templates) == {f"t-cluster-{s}" for s in ("network", "storage", "accounting", "cluster")}
    report = json.loads((out / "validation-report.json").read_text())
    assert [(r["pluginName"], r["conclusion"], r["violations"]) for r in report["pluginReports"]
            if r["conclusion"] != "success" or r["violations"]] == []
    names = ("accounting", "cluster", "network")
    assert cfn_lint_errors([out / f"t-cluster-{n}.template.json" for n in names], "us-east-1") == []


@pytest.mark.synth
def test_database_is_retained_encrypted_and_backed_up() -> None:
    tpl = pc_synth()[1]["t-cluster-accounting"]
    [db] = resources_of(tpl, "AWS::RDS::DBCluster").values()
    p = db["Properties"]
    assert (db["DeletionPolicy"], db["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert (p["Engine"], p["EngineVersion"], p["StorageEncrypted"], p["DeletionProtection"], p["BackupRetentionPeriod"],
            p["MasterUsername"], p["Port"], p["ServerlessV2ScalingConfiguration"]) == (
        "aurora-mysql", AURORA_MYSQL_VERSION, True, True, 14, DATABASE_USER, 3306, {"MinCapacity": 0.5, "MaxCapacity": 4})
    [secret_id] = resources_of(tpl, "AWS::SecretsManager::Secret")
    # the master password is a dynamic reference to the secret, never a literal in the template
    assert p["MasterUserPassword"] == {"Fn::Join": ["", ["{{resolve:secretsmanager:", {"Ref": secret_id},
                                                        ":SecretString:::}}"]]}
    [writer] = resources_of(tpl, "AWS::RDS::DBInstance").values()
    assert (writer["Properties"]["DBInstanceClass"], writer["Properties"]["PubliclyAccessible"],
            writer["Properties"]["AvailabilityZone"]) == ("db.serverless", False, "us-east-1a")
    # everything a kept database needs stays with it: its secret, subnets, subnet group, parameter group and security groups
    kept = {"AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::SecretsManager::Secret", "AWS::EC2::Subnet",
            "AWS::RDS::DBSubnetGroup", "AWS::EC2::SecurityGroup", "AWS::RDS::DBClusterParameterGroup"}
    for lid, r in tpl["Resources"].items():
        if r["Type"] in kept:
            assert (r.get("DeletionPolicy"), r.get("UpdateReplacePolicy")) == ("Retain", "Retain"), lid
    params = next(iter(resources_of(tpl, "AWS::RDS::DBClusterParameterGroup").values()))["Properties"]["Parameters"]
    assert params == {"require_secure_transport": "ON", "innodb_lock_wait_timeout": "900"}


@pytest.mark.synth
def test_password_secret_is_a_plain_generated_string() -> None:
    tpl = pc_synth()[1]["t-cluster-accounting"]
    [secret] = resources_of(tpl, "AWS::SecretsManager::Secret").values()
    # ParallelCluster's PasswordSecretArn holds the plaintext password: no JSON template (SecretStringTemplate)
    assert secret["Properties"]["GenerateSecretString"] == {"ExcludePunctuation": True, "PasswordLength": 32}


@pytest.mark.synth
def test_database_is_reachable_only_from_the_head_node_client_group_on_3306() -> None:
    tpl = pc_synth()[1]["t-cluster-accounting"]
    groups = resources_of(tpl, "AWS::EC2::SecurityGroup")
    db_sg = next(k for k in groups if k.startswith("AccountingDatabaseSecurityGroup"))
    client_sg = next(k for k in groups if k.startswith("AccountingClientSecurityGroup"))
    for sg in (db_sg, client_sg):  # no inline ingress; inline egress pinned to CDK's no-traffic rule
        assert "SecurityGroupIngress" not in groups[sg]["Properties"]
        assert groups[sg]["Properties"]["SecurityGroupEgress"] == [NO_TRAFFIC_EGRESS]
    ingress = [r["Properties"] for r in resources_of(tpl, "AWS::EC2::SecurityGroupIngress").values()]
    assert ingress == [{"Description": "slurmdbd on the head node", "FromPort": 3306, "ToPort": 3306, "IpProtocol": "tcp",
                        "GroupId": {"Fn::GetAtt": [db_sg, "GroupId"]},
                        "SourceSecurityGroupId": {"Fn::GetAtt": [client_sg, "GroupId"]}}]
    egress = [r["Properties"] for r in resources_of(tpl, "AWS::EC2::SecurityGroupEgress").values()]
    assert egress == [{"Description": "Slurm accounting database", "FromPort": 3306, "ToPort": 3306, "IpProtocol": "tcp",
                       "GroupId": {"Fn::GetAtt": [client_sg, "GroupId"]},
                       "DestinationSecurityGroupId": {"Fn::GetAtt": [db_sg, "GroupId"]}}]
    [db] = resources_of(tpl, "AWS::RDS::DBCluster").values()
    assert db["Properties"]["VpcSecurityGroupIds"] == [{"Fn::GetAtt": [db_sg, "GroupId"]}]


def _export_of(templates: dict[str, dict[str, Any]], imported: dict[str, Any]) -> Any:
    """The value of the accounting stack's output whose export the cluster stack imports."""
    name = imported["Fn::ImportValue"]
    outs = templates["t-cluster-accounting"]["Outputs"]
    [value] = [o["Value"] for o in outs.values() if o.get("Export", {}).get("Name") == name]
    return value


@pytest.mark.synth
def test_parallelcluster_config_gets_the_database_and_the_head_node_the_client_group() -> None:
    templates = pc_synth()[1]
    [cluster] = resources_of(templates["t-cluster-cluster"], "Custom::PclusterCluster").values()
    config = cluster["Properties"]["ClusterConfiguration"]
    db = config["Scheduling"]["SlurmSettings"]["Database"]
    assert set(db) == {"Uri", "UserName", "PasswordSecretArn"} and db["UserName"] == DATABASE_USER
    [db_id] = resources_of(templates["t-cluster-accounting"], "AWS::RDS::DBCluster")
    [secret_id] = resources_of(templates["t-cluster-accounting"], "AWS::SecretsManager::Secret")
    host, port = db["Uri"]["Fn::Join"][1]
    assert _export_of(templates, host) == {"Fn::GetAtt": [db_id, "Endpoint.Address"]} and port == ":3306"
    assert _export_of(templates, db["PasswordSecretArn"]) == {"Ref": secret_id}
    head_sgs = config["HeadNode"]["Networking"]["AdditionalSecurityGroups"]
    client = [_export_of(templates, g) for g in head_sgs if "accounting" in g["Fn::ImportValue"]]
    assert [c["Fn::GetAtt"][0].startswith("AccountingClientSecurityGroup") for c in client] == [True]
    for q in config["Scheduling"]["SlurmQueues"]:  # compute nodes never get the client group
        assert all("accounting" not in g["Fn::ImportValue"] for g in q["Networking"]["AdditionalSecurityGroups"])
    # the VPC outlives the retained database's subnets
    net = templates["t-cluster-network"]["Resources"]
    assert {r["DeletionPolicy"] for r in net.values() if r["Type"] == "AWS::EC2::VPC"} == {"Retain"}


@pytest.mark.synth
def test_parallelcluster_validators_accept_the_database() -> None:
    from tests.orchestrators.parallelcluster.test_pcluster_validators import EXPECTED_WARNINGS, PCLUSTER_PY, _run

    if not PCLUSTER_PY.exists():
        pytest.skip("make setup creates .venv-pcluster")
    out, _ = pc_synth()
    [r] = _run("pcluster_validate.py", str(out))
    assert r["unanswered"] == []
    assert {"DatabaseUriValidator", "PasswordSecretArnValidator", "ClusterNameValidator"} <= set(r["validators"])
    assert "secretsmanager.DescribeSecret" in r["calls"]
    assert [(f["level"], f["validator"]) for f in r["failures"]] == [("WARNING", v) for v in sorted(EXPECTED_WARNINGS)]


def test_default_blueprint_has_no_accounting(default_templates: dict[str, Any]) -> None:
    assert not any(name.endswith("-accounting") for name in default_templates)
    [cluster] = [r for t in default_templates.values() for r in resources_of(t, "Custom::PclusterCluster").values()]
    assert "Database" not in cluster["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmSettings"]


# ---- PCS ---------------------------------------------------------------------------------------------
@pytest.mark.synth
def test_pcs_managed_accounting_and_no_database() -> None:
    from tests.features.storage.test_storage_construct import cfn_lint_errors

    text = blueprint_text(accounting(purge_after_days=365), base=example("pcs-p5en"))
    templates = synth_templates(text)
    assert not any(name.endswith("-accounting") for name in templates)
    cluster_stack = next(n for n in templates if n.endswith("-cluster"))
    [cluster] = resources_of(templates[cluster_stack], "AWS::PCS::Cluster").values()
    assert cluster["Properties"]["SlurmConfiguration"]["Accounting"] == {"Mode": "STANDARD", "DefaultPurgeTimeInDays": 365}
    folder = Path(__import__("tempfile").mkdtemp(prefix="fmcluster-pcs-acct-"))
    (folder / "cluster.template.json").write_text(json.dumps(templates[cluster_stack]))
    assert cfn_lint_errors([folder / "cluster.template.json"], "us-east-1") == []


def test_pcs_accounting_property_is_left_out_when_off() -> None:
    from fmcluster.blueprint.model import SlurmAccountingSpec
    from fmcluster.orchestrators.pcs.construct import pcs_accounting

    assert pcs_accounting(None) is None and pcs_accounting(SlurmAccountingSpec()) is None
    on = pcs_accounting(SlurmAccountingSpec(enabled=True))
    assert on is not None and (on.mode, on.default_purge_time_in_days) == ("STANDARD", -1)


def test_imported_vpc_uses_the_named_subnets_and_creates_none() -> None:
    """The stack alone (no cluster): an imported VPC's two subnets form the subnet group; placement by AZ ID leaves
    the writer's AZ to RDS (RDS takes AZ names only)."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk.assertions import Template

    from fmcluster.blueprint.model import SlurmAccountingSpec
    from fmcluster.features.accounting.stack import AccountingStack
    from fmcluster.features.network.construct import Placement
    from tests.conftest import cdk_context

    app = cdk.App(context=cdk_context())
    net = cdk.Stack(app, "net", env=cdk.Environment(region="us-east-1"))
    # as fmcluster.features.network.construct imports a VPC: its one GPU subnet as the private subnet
    vpc = ec2.Vpc.from_vpc_attributes(net, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["use1-az6"],
                                      private_subnet_ids=["subnet-0123456789abcdef0"])
    ids = ["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"]
    stack = AccountingStack(app, "acct", env=cdk.Environment(region="us-east-1"),
                            spec=SlurmAccountingSpec(enabled=True, subnet_ids=ids), vpc=vpc,
                            placement=Placement(az="use1-az6", az_is_id=True), subnet_cidrs=None, cluster_name="c")
    tpl = Template.from_stack(stack).to_json()
    assert resources_of(tpl, "AWS::EC2::Subnet") == {}
    [group] = resources_of(tpl, "AWS::RDS::DBSubnetGroup").values()
    assert group["Properties"]["SubnetIds"] == ids
    [writer] = resources_of(tpl, "AWS::RDS::DBInstance").values()
    assert "AvailabilityZone" not in writer["Properties"]
