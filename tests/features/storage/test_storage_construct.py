"""Storage construct and stack: FSx options, EFA security groups, data repositories, checkpoint bucket,
grants and two-key destroy, checked on synthesized templates (values, not hashes - except the pinned
stateful ids); the storage examples synthesize clean under cdk-nag and cfn-lint."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.review.diff import is_stateful
from tests import blueprints
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, cdk_context, resources_of, synth_templates

KMS = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
STATEFUL = ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation", "AWS::S3::Bucket")


def storage_of(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    [tpl] = [t for name, t in templates.items() if name.endswith("-storage")]
    return tpl


def one(template: dict[str, Any], type_: str) -> dict[str, Any]:
    [res] = resources_of(template, type_).values()
    return res


def example(name: str) -> dict[str, dict[str, Any]]:
    return synth_templates((ROOT / "blueprints" / f"{name}.yaml").read_text())


# ---- construct ids are API -------------------------------------------------------------------
#: Logical ids of the default blueprint's stateful resources. A change here replaces (or orphans)
#: the file system, its data repository association or a bucket on every deployed cluster: don't.
PINNED_DEFAULT_STATEFUL_IDS = {
    "StorageFileSystem61EA7B3D": "AWS::FSx::FileSystem",
    "StorageDataRepositoryAssociationsDatasetsE8F8AC61": "AWS::FSx::DataRepositoryAssociation",
    "StorageDataBucketB1B922FA": "AWS::S3::Bucket",
    "StorageCheckpointBucket217D3CE2": "AWS::S3::Bucket",
    "StorageAccessLogs96FB524C": "AWS::S3::Bucket",
}


def test_stateful_logical_ids_of_the_default_blueprint_are_pinned(default_templates: dict[str, Any]) -> None:
    assert set(default_templates) == {"llm-train-network", "llm-train-storage", "llm-train-cluster", "llm-train-observability"}
    stateful = {lid: r["Type"] for lid, r in default_templates["llm-train-storage"]["Resources"].items()
                if r["Type"] in STATEFUL}
    assert stateful == PINNED_DEFAULT_STATEFUL_IDS
    for name in ("llm-train-network", "llm-train-cluster", "llm-train-observability"):
        # the cluster stack's mirror bucket holds only copies a deploy makes again (metadata fmcluster:regenerated)
        assert not [r for r in default_templates[name]["Resources"].values() if is_stateful(r)]


def test_stateful_resources_are_retained_by_default(default_templates: dict[str, Any]) -> None:
    tpl = default_templates["llm-train-storage"]["Resources"]
    assert {lid: (tpl[lid]["DeletionPolicy"], tpl[lid]["UpdateReplacePolicy"]) for lid in PINNED_DEFAULT_STATEFUL_IDS} == {
        lid: ("Retain", "Retain") for lid in PINNED_DEFAULT_STATEFUL_IDS}
    assert not resources_of(default_templates["llm-train-storage"], "Custom::S3AutoDeleteObjects")


# ---- FSx for Lustre --------------------------------------------------------------------------
def test_default_file_system(default_templates: dict[str, Any]) -> None:
    fs = one(default_templates["llm-train-storage"], "AWS::FSx::FileSystem")["Properties"]
    assert fs["FileSystemType"] == "LUSTRE"
    assert fs["FileSystemTypeVersion"] == "2.15"
    assert fs["StorageCapacity"] == 4800
    assert fs["StorageType"] == "SSD"
    assert fs["LustreConfiguration"] == {
        "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250, "DataCompressionType": "LZ4",
        "AutomaticBackupRetentionDays": 0,
    }
    assert "KmsKeyId" not in fs
    assert fs["SubnetIds"] == [{"Fn::ImportValue": fs["SubnetIds"][0]["Fn::ImportValue"]}]
    assert "GpuSubnet" in fs["SubnetIds"][0]["Fn::ImportValue"]


def test_efa_file_system_and_security_groups() -> None:
    tpl = storage_of(example("efa-lustre"))
    fs = one(tpl, "AWS::FSx::FileSystem")["Properties"]
    assert fs["FileSystemTypeVersion"] == "2.15"
    assert fs["StorageCapacity"] == 12000
    assert fs["LustreConfiguration"] == {
        "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 1000, "DataCompressionType": "LZ4",
        "EfaEnabled": True, "MetadataConfiguration": {"Mode": "AUTOMATIC"},
        "AutomaticBackupRetentionDays": 7, "DailyAutomaticBackupStartTime": "03:00",
        "WeeklyMaintenanceStartTime": "7:04:00",
    }
    [fs_sg_id] = resources_of(tpl, "AWS::EC2::SecurityGroup")
    fs_sg = {"Fn::GetAtt": [fs_sg_id, "GroupId"]}
    ingress = [r["Properties"] for r in resources_of(tpl, "AWS::EC2::SecurityGroupIngress").values()]
    egress = [r["Properties"] for r in resources_of(tpl, "AWS::EC2::SecurityGroupEgress").values()]

    def all_traffic(rules: list[dict[str, Any]], group: Any, peer_key: str) -> list[Any]:
        return [r[peer_key] for r in rules if r["IpProtocol"] == "-1" and r["GroupId"] == group]

    clients = [p for p in all_traffic(ingress, fs_sg, "SourceSecurityGroupId") if p != fs_sg]
    assert all_traffic(ingress, fs_sg, "SourceSecurityGroupId") == [fs_sg, clients[0]]
    assert "EfaSecurityGroup" in clients[0]["Fn::ImportValue"]
    assert all_traffic(egress, fs_sg, "DestinationSecurityGroupId") == [fs_sg, clients[0]]
    # and the client side: all traffic from the file servers, the rule living in the storage stack
    assert all_traffic(ingress, clients[0], "SourceSecurityGroupId") == [fs_sg]
    # Lustre ports stay open for TCP clients
    assert sorted((r["FromPort"], r["ToPort"]) for r in ingress if r["IpProtocol"] == "tcp" and r["GroupId"] == fs_sg) == [
        (988, 988), (988, 988), (1018, 1023), (1018, 1023)]


def test_non_efa_file_system_opens_lustre_ports_only(default_templates: dict[str, Any]) -> None:
    tpl = default_templates["llm-train-storage"]
    rules = [r["Properties"] for t in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress")
             for r in resources_of(tpl, t).values()]
    assert {r["IpProtocol"] for r in rules} == {"tcp"}
    assert sorted({(r["FromPort"], r["ToPort"]) for r in rules}) == [(988, 988), (1018, 1023)]


def test_scratch_file_system_for_test_clusters() -> None:
    tpl = storage_of(example("p5en-capacity-block"))
    fs = one(tpl, "AWS::FSx::FileSystem")["Properties"]
    assert fs["LustreConfiguration"] == {"DeploymentType": "SCRATCH_2", "DataCompressionType": "LZ4"}
    assert fs["StorageCapacity"] == 2400
    dra = one(tpl, "AWS::FSx::DataRepositoryAssociation")["Properties"]
    assert dra["DataRepositoryPath"] == "s3://example-datasets/llm/"
    assert dra["S3"] == {"AutoImportPolicy": {"Events": ["NEW", "CHANGED"]}}
    # existing checkpoint bucket, external data: no bucket is created, so no access-log bucket either
    assert resources_of(tpl, "AWS::S3::Bucket") == {}


def test_kms_keys_for_file_system_and_checkpoints() -> None:
    tpl = storage_of(synth_templates(blueprint_text({"storage": {"lustre": {"kms_key_arn": KMS},
                                                                 "checkpoints": {"kms_key_arn": KMS}}})))
    assert one(tpl, "AWS::FSx::FileSystem")["Properties"]["KmsKeyId"] == KMS
    [bucket] = [r["Properties"] for lid, r in resources_of(tpl, "AWS::S3::Bucket").items() if "Checkpoint" in lid]
    assert bucket["BucketEncryption"] == {"ServerSideEncryptionConfiguration": [{
        "BucketKeyEnabled": True,
        "ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KMS}}]}


def test_legacy_import_path_on_scratch_1() -> None:
    tpl = storage_of(synth_templates(blueprint_text({"storage": {"lustre": {
        "deployment_type": "SCRATCH_1", "storage_capacity_gib": 3600, "import_path": "s3://legacy-bucket/in/"}}})))
    assert one(tpl, "AWS::FSx::FileSystem")["Properties"]["LustreConfiguration"] == {
        "DeploymentType": "SCRATCH_1", "DataCompressionType": "LZ4", "ImportPath": "s3://legacy-bucket/in/"}
    assert resources_of(tpl, "AWS::FSx::DataRepositoryAssociation") == {}


def test_data_repository_associations() -> None:
    tpl = storage_of(example("efa-lustre"))
    dras = sorted(({k: v for k, v in r["Properties"].items() if k != "Tags"}
                   for r in resources_of(tpl, "AWS::FSx::DataRepositoryAssociation").values()),
                  key=lambda p: p["FileSystemPath"])
    [data_bucket_id] = [lid for lid in resources_of(tpl, "AWS::S3::Bucket") if "DataBucket" in lid]
    fs_id = next(iter(resources_of(tpl, "AWS::FSx::FileSystem")))
    assert dras == [
        {"FileSystemId": {"Ref": fs_id}, "FileSystemPath": "/datasets",
         "DataRepositoryPath": {"Fn::Join": ["", ["s3://", {"Ref": data_bucket_id}, "/datasets/"]]},
         "BatchImportMetaDataOnCreate": True, "ImportedFileChunkSize": 1024,
         "S3": {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}},
        {"FileSystemId": {"Ref": fs_id}, "FileSystemPath": "/exports",
         "DataRepositoryPath": {"Fn::Join": ["", ["s3://", {"Ref": data_bucket_id}, "/exports/"]]},
         "BatchImportMetaDataOnCreate": False, "ImportedFileChunkSize": 1024,
         "S3": {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                "AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}},
    ]


# ---- checkpoint bucket -----------------------------------------------------------------------
def test_checkpoint_bucket() -> None:
    tpl = storage_of(example("efa-lustre"))
    buckets = resources_of(tpl, "AWS::S3::Bucket")
    [(cid, ckpt)] = [(lid, r["Properties"]) for lid, r in buckets.items() if "Checkpoint" in lid]
    [logs_id] = [lid for lid in buckets if "AccessLogs" in lid]
    assert ckpt["VersioningConfiguration"] == {"Status": "Enabled"}
    assert ckpt["LifecycleConfiguration"] == {"Rules": [
        {"Id": "ExpireNoncurrent", "NoncurrentVersionExpiration": {"NoncurrentDays": 14},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}, "Status": "Enabled"},
        {"Id": "Transition", "Prefix": "checkpoints/", "Status": "Enabled",
         "Transitions": [{"StorageClass": "GLACIER_IR", "TransitionInDays": 30}]},
    ]}
    assert ckpt["LoggingConfiguration"] == {"DestinationBucketName": {"Ref": logs_id}, "LogFilePrefix": "checkpoints/"}
    assert ckpt["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True)
    assert ckpt["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    [policy] = [r["Properties"] for r in resources_of(tpl, "AWS::S3::BucketPolicy").values()
                if r["Properties"]["Bucket"] == {"Ref": cid}]
    assert policy["PolicyDocument"]["Statement"] == [{
        "Action": "s3:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": [{"Fn::GetAtt": [cid, "Arn"]}, {"Fn::Join": ["", [{"Fn::GetAtt": [cid, "Arn"]}, "/*"]]}]}]
    # the log bucket takes deliveries through its policy (no legacy ACL) and has ACLs disabled
    logs = buckets[logs_id]["Properties"]
    assert "AccessControl" not in logs
    assert logs["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}


def test_unversioned_checkpoint_bucket_only_aborts_uploads() -> None:
    tpl = storage_of(synth_templates(blueprint_text({"storage": {"checkpoints": {"versioned": False}}})))
    [ckpt] = [r["Properties"] for lid, r in resources_of(tpl, "AWS::S3::Bucket").items() if "Checkpoint" in lid]
    assert "VersioningConfiguration" not in ckpt
    assert ckpt["LifecycleConfiguration"] == {"Rules": [
        {"Id": "AbortIncompleteUploads", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
         "Status": "Enabled"}]}


# ---- two-key destroy ---------------------------------------------------------------------------
DESTROY_BOTH = {"storage": {"lustre": {"removal_policy": "destroy", "data_repositories": [{"file_system_path": "/datasets"}]},
                            "checkpoints": {"removal_policy": "destroy"}}}
RETAIN_BOTH = {"storage": {"lustre": {"data_repositories": [{"file_system_path": "/datasets"}]}}}


@cache
def synth_with_warnings(text: str, allow: bool) -> tuple[dict[str, Any], list[str]]:
    """Storage template and the storage stack's warnings, for one blueprint and context flag."""
    import tempfile

    import aws_cdk as cdk
    from aws_cdk.assertions import Annotations, Match

    from fmcluster.stacks.build import ALLOW_DATA_DESTRUCTION, build_app
    from fmcluster.validation import load_blueprint_text

    app = cdk.App(outdir=tempfile.mkdtemp(prefix="fmcluster-test-"),
                  context={**cdk_context(), ALLOW_DATA_DESTRUCTION: allow})
    stacks = build_app(app, load_blueprint_text(text).blueprint)
    template = {"Resources": {}, **app.synth().get_stack_by_name(stacks.storage.stack_name).template}
    found = Annotations.from_stack(stacks.storage).find_warning("*", Match.any_value())
    ours = " [ack: fmcluster:dataRetained]"
    return template, sorted(str(w.entry.data).removesuffix(ours) for w in found if str(w.entry.data).endswith(ours))


KEPT = ("{what}: removal_policy is 'destroy' in the blueprint but the context flag fmcluster:allowDataDestruction is not "
        "true, so it is RETAINED (set both to delete data).")
FLAG_ONLY = ("{what}: the context flag fmcluster:allowDataDestruction is true but the blueprint's removal_policy is "
             "'retain', so it is RETAINED (set both to delete data).")
WHAT = ("FSx for Lustre file system", "data bucket", "data repository associations", "checkpoint bucket")


def rule_policies(tpl: dict[str, Any]) -> dict[tuple[str, str, str], set[str]]:
    """(rule type, peer, ports) -> the DeletionPolicy of every rule on the file system's group; peer is
    ``self`` for the group itself, ``cluster`` for the imported cluster group."""
    [sg_id] = resources_of(tpl, "AWS::EC2::SecurityGroup")
    found: dict[tuple[str, str, str], set[str]] = {}
    for type_, peer_key in (("AWS::EC2::SecurityGroupIngress", "SourceSecurityGroupId"),
                            ("AWS::EC2::SecurityGroupEgress", "DestinationSecurityGroupId")):
        for r in resources_of(tpl, type_).values():
            p = r["Properties"]
            if p["GroupId"] != {"Fn::GetAtt": [sg_id, "GroupId"]}:
                continue
            peer = "self" if p[peer_key] == {"Fn::GetAtt": [sg_id, "GroupId"]} else "cluster"
            ports = "all" if p["IpProtocol"] == "-1" else f"{p['FromPort']}-{p['ToPort']}"
            found.setdefault((type_.rsplit("Group", 1)[1], peer, ports), set()).add(r.get("DeletionPolicy", "Delete"))
    return found


def expected_rules(kept: str, efa: bool) -> dict[tuple[str, str, str], set[str]]:
    ports = ["988-988", "1018-1023", *(["all"] if efa else [])]
    return {(kind, peer, p): {kept if peer == "self" else "Delete"}
            for kind in ("Ingress", "Egress") for peer in ("self", "cluster") for p in ports}


CLIENT_RULES = ("FSx for Lustre file system is RETAINED with its security group and its rules between file servers, "
                "but its {n} rule(s) to and from the cluster's security group are deleted with this stack")


@pytest.mark.parametrize(
    ("patch", "allow", "efa", "kept", "warned"),
    [
        (RETAIN_BOTH, False, False, "Retain", 4),
        ({"storage": {"lustre": {"efa_enabled": True, "deployment_type": "PERSISTENT_2",
                                 "storage_capacity_gib": 12000, "per_unit_storage_throughput": 1000}}},
         False, True, "Retain", 7),
        (DESTROY_BOTH, True, False, "Delete", None),
    ],
    ids=["retained", "retained-efa", "both-destroy-keys"],
)
def test_a_kept_file_system_keeps_its_self_rules(patch: dict[str, Any], allow: bool, efa: bool, kept: str,
                                                 warned: int | None) -> None:
    """The rules between file servers follow the file system (a kept file system stays reachable from
    itself); rules to the cluster's group are deleted (they would keep that group in use) and a warning
    says how many."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Annotations, Match

    from fmcluster.stacks.build import ALLOW_DATA_DESTRUCTION, build_app
    from fmcluster.validation import load_blueprint_text

    app = cdk.App(outdir=tempfile.mkdtemp(prefix="fmcluster-test-"), context={**cdk_context(), ALLOW_DATA_DESTRUCTION: allow})
    stacks = build_app(app, load_blueprint_text(blueprint_text(patch)).blueprint)
    tpl = app.synth().get_stack_by_name(stacks.storage.stack_name).template
    assert rule_policies(tpl) == expected_rules(kept, efa)
    warnings = [str(w.entry.data) for w in Annotations.from_stack(stacks.storage).find_warning("*", Match.any_value())
                if "lustreClientRulesDeleted" in str(w.entry.data)]
    assert [w.startswith(CLIENT_RULES.format(n=warned)) for w in warnings] == ([True] if warned else [])


@pytest.mark.parametrize(
    ("patch", "allow", "policy", "auto_delete", "warnings"),
    [
        (RETAIN_BOTH, False, "Retain", 0, []),
        (DESTROY_BOTH, False, "Retain", 0, sorted(KEPT.format(what=w) for w in WHAT)),
        (RETAIN_BOTH, True, "Retain", 0, sorted(FLAG_ONLY.format(what=w) for w in WHAT)),
        (DESTROY_BOTH, True, "Delete", 2, []),
    ],
    ids=["no-key", "blueprint-key-only", "context-key-only", "both-keys"],
)
def test_two_key_destroy(patch: dict[str, Any], allow: bool, policy: str, auto_delete: int, warnings: list[str]) -> None:
    tpl, found = synth_with_warnings(blueprint_text(patch), allow)
    res = tpl["Resources"]
    stateful = {lid: r for lid, r in res.items() if r["Type"] in STATEFUL and "AccessLogs" not in lid}
    assert len(stateful) == 4
    assert {(r["DeletionPolicy"], r["UpdateReplacePolicy"]) for r in stateful.values()} == {(policy, policy)}
    # buckets CloudFormation would otherwise fail to delete are emptied first; the access-log bucket is always kept
    auto = [r["Properties"]["BucketName"] for r in resources_of(tpl, "Custom::S3AutoDeleteObjects").values()]
    assert len(auto) == auto_delete
    assert sorted(b["Ref"] for b in auto) == sorted(lid for lid, r in stateful.items()
                                                    if r["Type"] == "AWS::S3::Bucket" and policy == "Delete")
    [logs] = [r for lid, r in resources_of(tpl, "AWS::S3::Bucket").items() if "AccessLogs" in lid]
    assert logs["DeletionPolicy"] == "Retain"
    assert found == warnings


def test_existing_checkpoint_bucket_is_never_deleted() -> None:
    tpl, found = synth_with_warnings(blueprint_text({"storage": {"lustre": None, "checkpoints": {
        "bucket": "existing-ckpt", "removal_policy": "destroy"}}}), True)
    assert resources_of(tpl, "AWS::S3::Bucket") == {}
    assert found == ["checkpoint bucket 'existing-ckpt' is an existing bucket: fmcluster never deletes it, whatever "
                     "removal_policy says."]


# ---- grants ------------------------------------------------------------------------------------
@cache
def granted(checkpoints: str) -> dict[str, Any]:
    """A stack with the storage construct and a role granted checkpoint read/write and data read."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_iam as iam

    from fmcluster.blueprint.model import StorageSpec
    from fmcluster.features.storage.construct import TrainingStorage

    spec = StorageSpec.model_validate(yaml.safe_load(checkpoints))
    app = cdk.App(context=cdk_context())
    stack = cdk.Stack(app, "GrantTest", env=cdk.Environment(region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", nat_gateways=0, availability_zones=["us-east-1a"],
                  subnet_configuration=[ec2.SubnetConfiguration(name="Gpu", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)])
    sg = ec2.SecurityGroup(stack, "Clients", vpc=vpc)
    storage = TrainingStorage(stack, "Storage", lustre=spec.lustre, checkpoints=spec.checkpoints, vpc=vpc,
                              subnet=vpc.isolated_subnets[0], client_security_group=sg, allow_destruction=False)
    role = iam.Role(stack, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    storage.grant_checkpoint_read_write(role)
    storage.grant_data_read(role)
    return json.loads(json.dumps(app.synth().get_stack_by_name("GrantTest").template))


def node_statements(tpl: dict[str, Any]) -> list[dict[str, Any]]:
    [policy] = [r["Properties"] for r in resources_of(tpl, "AWS::IAM::Policy").values()
                if r["Properties"]["Roles"] == [{"Ref": next(lid for lid in tpl["Resources"] if lid.startswith("NodeRole"))}]]
    return policy["PolicyDocument"]["Statement"]


def test_checkpoint_grant_is_scoped_to_the_prefix() -> None:
    tpl = granted("{lustre: null, checkpoints: {prefix: team-a/}}")
    [bucket_id] = [lid for lid in resources_of(tpl, "AWS::S3::Bucket") if "Checkpoint" in lid]
    arn = {"Fn::GetAtt": [bucket_id, "Arn"]}
    assert node_statements(tpl) == [
        {"Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject",
                    "s3:GetObjectVersion", "s3:ListMultipartUploadParts", "s3:PutObject"],
         "Effect": "Allow", "Resource": {"Fn::Join": ["", [arn, "/team-a/*"]]}},
        {"Action": ["s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:ListBucketVersions"],
         "Condition": {"StringLike": {"s3:prefix": ["team-a/*"]}}, "Effect": "Allow", "Resource": arn},
    ]


def test_checkpoint_grant_on_an_existing_kms_bucket_includes_the_key() -> None:
    tpl = granted(f"{{lustre: null, checkpoints: {{bucket: existing-ckpt, kms_key_arn: '{KMS}'}}}}")
    statements = node_statements(tpl)
    assert [s["Resource"] for s in statements] == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::existing-ckpt/checkpoints/*"]]},
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::existing-ckpt"]]},
        KMS,
    ]
    assert statements[2]["Action"] == ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"]


def test_data_read_grant_covers_each_repository_prefix() -> None:
    tpl = granted("{lustre: {data_repositories: [{file_system_path: /datasets/llm}, "
                  "{file_system_path: /ext, s3_uri: 's3://example-datasets/llm/'}]}, checkpoints: null}")
    [statement] = node_statements(tpl)  # both grants, merged by @aws-cdk/aws-iam:minimizePolicies
    [data_id] = [lid for lid in resources_of(tpl, "AWS::S3::Bucket") if "DataBucket" in lid]
    assert statement["Action"] == ["s3:GetBucket*", "s3:GetObject*", "s3:List*"]
    assert statement["Resource"] == [
        {"Fn::GetAtt": [data_id, "Arn"]},
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::example-datasets"]]},
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::example-datasets/llm/*"]]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [data_id, "Arn"]}, "/datasets/llm/*"]]},
    ]


# ---- the storage stack of a blueprint with two data repositories (one external) ------------------
LUSTRE = {"storage": {"lustre": {"storage_capacity_gib": 4800, "per_unit_storage_throughput": 250, "data_repositories": [
    {"file_system_path": "/datasets"},
    {"file_system_path": "/models", "s3_uri": "s3://example-models/base/", "export_policy": ["NEW"]},
]}}}


def storage(patch: dict[str, Any] | None = None, **context: Any) -> dict[str, Any]:
    return synth_templates(blueprint_text(patch), tuple(sorted(context.items())))["t-cluster-storage"]


def test_file_system_properties() -> None:
    [fs] = resources_of(storage(LUSTRE), "AWS::FSx::FileSystem").values()
    p = fs["Properties"]
    assert (p["FileSystemType"], p["FileSystemTypeVersion"], p["StorageCapacity"]) == ("LUSTRE", "2.15", 4800)
    lc = p["LustreConfiguration"]
    assert (lc["DeploymentType"], lc["PerUnitStorageThroughput"], lc["DataCompressionType"]) == ("PERSISTENT_2", 250, "LZ4")
    assert len(p["SubnetIds"]) == 1


def test_lustre_security_group_opens_988_and_1018_1023_from_the_cluster() -> None:
    t = storage(LUSTRE)
    rules = [r["Properties"] for r in resources_of(t, "AWS::EC2::SecurityGroupIngress").values()]
    from_cluster = {(r["FromPort"], r["ToPort"]) for r in rules if "Fn::ImportValue" in r["SourceSecurityGroupId"]}
    assert from_cluster == {(988, 988), (1018, 1023)}


def test_data_repository_associations_paths_and_policies() -> None:
    dras = sorted((d["Properties"] for d in resources_of(storage(LUSTRE), "AWS::FSx::DataRepositoryAssociation").values()),
                  key=lambda p: p["FileSystemPath"])
    assert [d["FileSystemPath"] for d in dras] == ["/datasets", "/models"]
    assert dras[1]["DataRepositoryPath"] == "s3://example-models/base/"
    assert dras[0]["DataRepositoryPath"]["Fn::Join"][1][-1] == "/datasets/"  # prefix in the created data bucket
    assert dras[0]["S3"]["AutoImportPolicy"]["Events"] == ["NEW", "CHANGED", "DELETED"]
    assert dras[1]["S3"]["AutoExportPolicy"]["Events"] == ["NEW"]
    assert all(d["ImportedFileChunkSize"] == 1024 and d["BatchImportMetaDataOnCreate"] for d in dras)


def test_stateful_resources_of_two_repositories_are_retained_by_default() -> None:
    t = storage(LUSTRE)
    found = {lid: r for lid, r in t["Resources"].items() if r["Type"] in STATEFUL}
    assert len(found) == 1 + 2 + 3  # FSx, 2 DRAs, data + checkpoint + access-log buckets
    assert {(r["DeletionPolicy"], r["UpdateReplacePolicy"]) for r in found.values()} == {("Retain", "Retain")}


@pytest.mark.parametrize(("flag", "expected"), [(False, "Retain"), (True, "Delete")])
def test_two_key_destroy_through_the_app_context(flag: bool, expected: str) -> None:
    patch = {"storage": {"lustre": {"removal_policy": "destroy"}, "checkpoints": {"removal_policy": "destroy"}}}
    t = storage(patch, **{"fmcluster:allowDataDestruction": flag})
    [fs] = resources_of(t, "AWS::FSx::FileSystem").values()
    assert fs["DeletionPolicy"] == expected


def test_checkpoint_bucket_is_versioned_encrypted_ssl_only_and_private() -> None:
    t = storage()
    buckets = resources_of(t, "AWS::S3::Bucket")
    [(lid, cp)] = [(k, v) for k, v in buckets.items() if "Checkpoint" in k]
    p = cp["Properties"]
    assert p["VersioningConfiguration"] == {"Status": "Enabled"}
    assert p["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert p["PublicAccessBlockConfiguration"] == {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                                  "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    assert p["LifecycleConfiguration"]["Rules"][0]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
    policies = [r["Properties"] for r in resources_of(t, "AWS::S3::BucketPolicy").values()
                if r["Properties"]["Bucket"] == {"Ref": lid}]
    [deny] = [s for s in policies[0]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_no_lustre_means_no_file_system() -> None:
    assert resources_of(storage({"storage": {"lustre": None}}), "AWS::FSx::FileSystem") == {}


# ---- storage blueprints synthesize clean: cdk-nag (AwsSolutions, as app.py runs it) and cfn-lint ----
# The EFA-enabled example, and its two-key destroy variant (whose auto-delete provider adds a Lambda function).
@cache
def nag_synth(text: str, allow_destruction: bool) -> Path:
    """In-process synth with the AwsSolutions pack attached the way app.py does; returns the cdk.out."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import ALLOW_DATA_DESTRUCTION, build_app
    from fmcluster.validation import load_blueprint_text

    out = Path(tempfile.mkdtemp(prefix="fmcluster-nag-"))
    app = cdk.App(outdir=str(out), context={**cdk_context(), ALLOW_DATA_DESTRUCTION: allow_destruction})
    build_app(app, load_blueprint_text(text).blueprint)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return out


def cfn_lint_errors(templates: list[Path], region: str) -> list[dict[str, Any]]:
    """cfn-lint's errors on ``templates``. Runs the venv's ``cfn-lint`` script: cfn-lint 1.x has no ``__main__``, so
    ``python -m cfnlint`` printed nothing and every template looked clean. Exit code 1 (cfn-lint failed to run) or
    output that is not a JSON list fails the caller's test instead of passing it."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--regions", region, "--format", "json", "--",
         *map(str, templates)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 1 and proc.stdout.lstrip().startswith("["), proc.stderr[-2000:]
    return [m for m in json.loads(proc.stdout) if m["Level"] == "Error"]


EFA = (ROOT / "blueprints" / "efa-lustre.yaml").read_text()
DESTROY = blueprint_text({"storage": {"lustre": {"removal_policy": "destroy"}, "checkpoints": {"removal_policy": "destroy"}}},
                         base=blueprints.example("efa-lustre"))


@pytest.mark.synth
@pytest.mark.parametrize(("text", "allow"), [(EFA, False), (DESTROY, True)], ids=["efa-lustre", "efa-lustre-destroy"])
def test_synthesizes_clean(text: str, allow: bool) -> None:
    out = nag_synth(text, allow)
    report = json.loads((out / "validation-report.json").read_text())
    # nag raises in app.synth() on any unacknowledged finding; in-process synth also adds aws-cdk-lib's own
    # "CloudFormation Validate" plugin, which must succeed too
    assert [(r["pluginName"], r["conclusion"], r["violations"]) for r in report["pluginReports"]
            if r["conclusion"] != "success" or r["violations"]] == []
    templates = sorted(out.glob("*-storage.template.json")) + sorted(out.glob("*-cluster.template.json"))
    assert len(templates) == 2
    assert cfn_lint_errors(templates, "us-east-1") == []
    storage = json.loads(templates[0].read_text())["Resources"]
    auto_delete = [r for r in storage.values() if r["Type"] == "Custom::S3AutoDeleteObjects"]
    assert len(auto_delete) == (2 if allow else 0)


def test_cfn_lint_helper_reports_errors(tmp_path: Path) -> None:
    """cfn_lint_errors really runs cfn-lint (``python -m cfnlint`` printed nothing on cfn-lint 1.x)."""
    bad = tmp_path / "bad.template.json"
    bad.write_text(json.dumps({"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"NoSuchProperty": 1}}}}))
    assert [m["Rule"]["Id"] for m in cfn_lint_errors([bad], "us-east-1")] == ["E3002"]
