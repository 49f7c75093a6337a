"""Slurm accounting (orchestrator.slurm.accounting; docs/accounting.md): rules as tables, the resolved plan, the
<name>-accounting stack (cdk-nag and cfn-lint clean, retained, encrypted, MySQL only from the head node's client group),
its wiring into the ParallelCluster config (and ParallelCluster's own validators on it), PCS managed accounting and
the diff's view of the database. Two synths: one ParallelCluster blueprint (with cdk-nag), one PCS blueprint."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.constructs.network import NO_TRAFFIC_EGRESS
from fmcluster.resolved import resolve
from fmcluster.resolved.accounting import AURORA_MYSQL_VERSION, DATABASE_USER, database_subnet_cidrs
from fmcluster.resolved.eks import control_plane_cidrs
from fmcluster.review.assembly import Assembly
from fmcluster.review.diff import diff_assemblies, is_stateful
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, MINIMAL, blueprint_text, example, merge, to_yaml
from tests.conftest import resources_of, synth_templates

ACCT = "orchestrator.slurm.accounting"


def accounting(**kw: Any) -> dict[str, Any]:
    return {"orchestrator": {"slurm": {"accounting": {"enabled": True, **kw}}}}


ON = accounting(second_availability_zone="us-east-1b")


def errors(*patches: dict[str, Any], base: dict[str, Any] = MINIMAL) -> list[tuple[str, str, str | None]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(*patches, base=base))
    return [(p.path, p.message, p.rule_id) for p in exc.value.errors]


def warnings(*patches: dict[str, Any], base: dict[str, Any] = MINIMAL) -> list[tuple[str, str, str | None]]:
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(*patches, base=base)).warnings]


# ---- rules ------------------------------------------------------------------------------------------
IMPORTED_VPC = {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}}
HYPERPOD = {"orchestrator": {"kind": "hyperpod"}}

ERRORS: list[tuple[str, list[dict[str, Any]], list[tuple[str, str, str]]]] = [
    ("no-second-az", [accounting()], [(f"{ACCT}.second_availability_zone",
     "the accounting database's subnet group needs two Availability Zones, got none besides us-east-1a; allowed an AZ "
     "name of us-east-1 such as us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("same-az", [accounting(second_availability_zone="us-east-1a")], [(f"{ACCT}.second_availability_zone",
     "same AZ as the cluster, got 'us-east-1a'; allowed an AZ name of us-east-1 such as us-east-1b other than "
     "us-east-1a", "R-ACCT-2")]),
    ("other-region", [accounting(second_availability_zone="us-west-2b")], [(f"{ACCT}.second_availability_zone",
     "not an AZ name of us-east-1 such as us-east-1b, got 'us-west-2b'; allowed an AZ name of us-east-1 such as "
     "us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("id-for-name", [accounting(second_availability_zone="use1-az4")], [(f"{ACCT}.second_availability_zone",
     "not an AZ name of us-east-1 such as us-east-1b, got 'use1-az4'; allowed an AZ name of us-east-1 such as "
     "us-east-1b other than us-east-1a", "R-ACCT-2")]),
    ("subnets-in-new-vpc", [accounting(second_availability_zone="us-east-1b", subnet_ids=["subnet-0123456789abcdef1"])],
     [(f"{ACCT}.subnet_ids", "subnets of an imported VPC, got subnet-0123456789abcdef1 with a new VPC; allowed nothing "
       f"(fmcluster creates the database subnets; name their second AZ in {ACCT}.second_availability_zone)", "R-ACCT-2")]),
    ("vpc-full", [ON, {"network": {"vpc_cidr": "10.0.0.0/20", "gpu_subnet_prefix_length": 21}}],
     [("network.vpc_cidr", "no room for the two /28 accounting database subnets after the public /24 and the /21 GPU "
       "subnet, got 10.0.0.0/20; allowed a larger VPC or a smaller network.gpu_subnet_prefix_length", "R-ACCT-2")]),
    ("imported-one-subnet", [IMPORTED_VPC, accounting(subnet_ids=["subnet-0123456789abcdef1"] * 2,
                                                      second_availability_zone="us-east-1b")],
     [(f"{ACCT}.subnet_ids", "the accounting database needs subnets in two Availability Zones, got 1 subnet(s) with an "
       "imported VPC; allowed at least two subnet ids in different AZs of network.vpc_id", "R-ACCT-2"),
      (f"{ACCT}.second_availability_zone", "ignored with an imported VPC, got 'us-east-1b'; allowed nothing (name the "
       f"subnets in {ACCT}.subnet_ids)", "R-ACCT-2")]),
    ("acu-range", [accounting(second_availability_zone="us-east-1b", min_capacity_acu=8, max_capacity_acu=4)],
     [(f"{ACCT}.min_capacity_acu", "above max_capacity_acu (4), got 8; allowed 0.5-4 ACU", "R-ACCT-3")]),
    ("hyperpod-slurm", [HYPERPOD, ON],
     [(f"{ACCT}.enabled", "Slurm accounting is not wired on SageMaker HyperPod yet, got true; allowed false. HyperPod "
       "already runs slurmdbd with MariaDB on the controller; an external database (Orchestrator.Slurm."
       "AccountingDatabase) needs NodeProvisioningMode Continuous, which fmcluster does not set for HyperPod Slurm, "
       "and cannot be detached again. Use orchestrator.kind parallelcluster or pcs for accounting fmcluster manages",
       "R-ACCT-1")]),
]


@pytest.mark.parametrize(("patches", "expected"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_accounting_errors(patches: list[dict[str, Any]], expected: list[tuple[str, str, str]]) -> None:
    assert [e for e in errors(*patches) if (e[2] or "").startswith("R-ACCT")] == expected


def test_hyperpod_eks_has_no_slurm() -> None:
    found = errors(ON, base=example("hyperpod-eks"))
    assert (f"{ACCT}.enabled", "Slurm accounting on HyperPod EKS orchestration, got true; allowed false (the cluster "
            "runs Kubernetes, not Slurm)", "R-ACCT-1") in found


def test_imported_vpc_with_two_subnets_and_az_ids_are_valid() -> None:
    ok = accounting(subnet_ids=["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"])
    assert [w for w in warnings(IMPORTED_VPC, ok) if w[2] and w[2].startswith("R-ACCT")] == []
    by_id = {"availability_zone": DROP, "availability_zone_id": "use1-az6"}
    assert [w for w in warnings(by_id, accounting(second_availability_zone="use1-az4"))
            if w[2] and w[2].startswith("R-ACCT")] == []


def test_settings_the_route_does_not_read_are_warned_about() -> None:
    assert [w for w in warnings(ON, accounting(purge_after_days=90)) if w[2] == "R-ACCT-4"] == [
        (f"{ACCT}.purge_after_days", "not used by parallelcluster, got 90; allowed the default (only AWS PCS reads it)",
         "R-ACCT-4")]
    pcs = example("pcs-p5en")
    assert [w for w in warnings(accounting(backup_retention_days=14), base=pcs) if w[2] == "R-ACCT-4"] == [
        (f"{ACCT}.backup_retention_days", "not used by pcs, got 14; allowed the default (only AWS ParallelCluster (the "
         "database fmcluster creates) reads it)", "R-ACCT-4")]


@pytest.mark.parametrize(("value", "message"), [
    (0, "0 is not allowed (AWS PCS DefaultPurgeTimeInDays), got 0; allowed -1 (keep) or 1-10000"),
    (-2, "out of range, got -2; allowed >= -1"),
])
def test_purge_days_shape(value: int, message: str) -> None:
    found = errors(accounting(purge_after_days=value), base=example("pcs-p5en"))
    assert [(p, m) for p, m, _ in found] == [(f"{ACCT}.purge_after_days", message)]


# ---- resolved -----------------------------------------------------------------------------------------
def test_off_by_default_everywhere() -> None:
    for name in ("default", "pcs-p5en", "hyperpod-p5", "hyperpod-eks"):
        rc = resolve(load_blueprint_text(to_yaml(example(name))).blueprint)
        assert rc.accounting is not None and rc.accounting.route is None and rc.stacks.accounting is None, name


def test_routes_and_stack_name() -> None:
    pc = resolve(load_blueprint_text(blueprint_text(ON)).blueprint)
    assert (pc.accounting.route, pc.stacks.accounting, pc.accounting.subnet_cidrs) == (  # type: ignore[union-attr]
        "database", "t-cluster-accounting", ("10.0.255.192/28", "10.0.255.208/28"))
    assert pc.stacks.all()[:3] == ["t-cluster-network", "t-cluster-storage", "t-cluster-accounting"]
    pcs = resolve(load_blueprint_text(blueprint_text(accounting(), base=example("pcs-p5en"))).blueprint)
    assert (pcs.accounting.route, pcs.stacks.accounting) == ("managed", None)  # type: ignore[union-attr]


@pytest.mark.parametrize(("vpc", "gpu"), [("10.0.0.0/16", 20), ("10.0.0.0/16", 18), ("172.16.0.0/20", 22)])
def test_database_subnets_sit_before_the_eks_blocks_and_after_the_gpu_subnet(vpc: str, gpu: int) -> None:
    import ipaddress

    db = database_subnet_cidrs(vpc, gpu)
    eks = control_plane_cidrs(vpc, gpu)
    assert db is not None and eks is not None
    nets = [ipaddress.IPv4Network(c) for c in (*db, *eks)]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert nets[1].broadcast_address + 1 == nets[2].network_address  # contiguous: db1, db2, eks1, eks2 at the end
    assert nets[3].broadcast_address == ipaddress.IPv4Network(vpc).broadcast_address
    gpu_end = 2 * 2 ** (32 - gpu)  # the public /24 first, then the GPU subnet aligned to its own size
    assert int(nets[0].network_address) - int(ipaddress.IPv4Network(vpc).network_address) >= gpu_end


def test_no_room_for_database_subnets_next_to_the_largest_gpu_subnet() -> None:
    # a /17 GPU subnet after the public /24 is aligned to 10.0.128.0 and fills the VPC to its end
    assert database_subnet_cidrs("10.0.0.0/16", 17) is None


# ---- the ParallelCluster blueprint with accounting: one synth, with cdk-nag -------------------------------
PC_TEXT = blueprint_text(ON, accounting(backup_retention_days=14))


@cache
def pc_synth() -> tuple[Path, dict[str, dict[str, Any]]]:
    from tests.orchestrator_support import synth_with_nag

    out = synth_with_nag(PC_TEXT)  # raises on any unacknowledged cdk-nag finding
    return out, {p.name.removesuffix(".template.json"): json.loads(p.read_text()) for p in out.glob("*.template.json")}


@pytest.mark.synth
def test_accounting_stack_is_nag_and_cfn_lint_clean() -> None:
    from tests.test_storage_construct import cfn_lint_errors

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
    # everything a kept database needs stays with it: its secret, subnets, subnet group and security groups
    kept = {"AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::SecretsManager::Secret", "AWS::EC2::Subnet",
            "AWS::RDS::DBSubnetGroup", "AWS::EC2::SecurityGroup"}
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
    from tests.test_pcluster_validators import EXPECTED_WARNINGS, PCLUSTER_PY, _run

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
    from tests.test_storage_construct import cfn_lint_errors

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
    from fmcluster.constructs.orchestrators.pcs import pcs_accounting

    assert pcs_accounting(None) is None and pcs_accounting(SlurmAccountingSpec()) is None
    on = pcs_accounting(SlurmAccountingSpec(enabled=True))
    assert on is not None and (on.mode, on.default_purge_time_in_days) == ("STANDARD", -1)


# ---- diff: the database is stateful ------------------------------------------------------------------
def _tpl(resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


def _db(props: dict[str, Any]) -> dict[str, Any]:
    return {"Type": "AWS::RDS::DBCluster", "Properties": props, "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}


def test_replacing_the_database_cluster_is_an_error() -> None:
    base = {"Engine": "aurora-mysql", "MasterUsername": "clusteradmin", "StorageEncrypted": True}
    old = Assembly.from_templates({"a": _tpl({"Db": _db(base)})})
    new = Assembly.from_templates({"a": _tpl({"Db": _db({**base, "MasterUsername": "slurm"})})})
    report = diff_assemblies(old, new)
    [c] = report.changes
    # the registry schema lists MasterUsername as conditionally create-only ("may replace"): an error on a database
    assert (c.action, c.level, c.stateful, c.causes) == ("may-replace", "error", True, ["MasterUsername"])
    assert c.note == ("CloudFormation creates a new, empty database cluster; the old one is kept but orphaned "
                      "(UpdateReplacePolicy Retain): the cluster loses its data")
    assert report.exit_code == 1


def test_scaling_the_database_updates_in_place() -> None:
    base = {"Engine": "aurora-mysql", "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 4}}
    old = Assembly.from_templates({"a": _tpl({"Db": _db(base)})})
    new = Assembly.from_templates({"a": _tpl({"Db": _db({**base, "ServerlessV2ScalingConfiguration":
                                                          {"MinCapacity": 0.5, "MaxCapacity": 8}})})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level, c.stateful) == ("update", "info", True)


def test_aurora_members_are_not_stateful_but_standalone_instances_are() -> None:
    assert is_stateful({"Type": "AWS::RDS::DBCluster", "Properties": {}})
    assert not is_stateful({"Type": "AWS::RDS::DBInstance", "Properties": {"DBClusterIdentifier": {"Ref": "Db"}}})
    assert is_stateful({"Type": "AWS::RDS::DBInstance", "Properties": {"Engine": "mysql"}})
    member = {"Type": "AWS::RDS::DBInstance", "Properties": {"DBClusterIdentifier": "db", "AvailabilityZone": "us-east-1a"}}
    moved = merge(member, {"Properties": {"AvailabilityZone": "us-east-1b"}})
    [c] = diff_assemblies(Assembly.from_templates({"a": _tpl({"W": member})}),
                          Assembly.from_templates({"a": _tpl({"W": moved})})).changes
    assert (c.action, c.level, c.stateful) == ("may-replace", "warning", False)
