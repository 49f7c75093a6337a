"""Storage stack: FSx properties, data repository associations, retained data, secure buckets."""

from __future__ import annotations

from typing import Any

import pytest

from tests.blueprints import blueprint_text
from tests.conftest import resources_of, synth_templates

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


STATEFUL = ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation", "AWS::S3::Bucket")


def test_stateful_resources_are_retained_by_default() -> None:
    t = storage(LUSTRE)
    found = {lid: r for lid, r in t["Resources"].items() if r["Type"] in STATEFUL}
    assert len(found) == 1 + 2 + 3  # FSx, 2 DRAs, data + checkpoint + access-log buckets
    assert {(r["DeletionPolicy"], r["UpdateReplacePolicy"]) for r in found.values()} == {("Retain", "Retain")}


@pytest.mark.parametrize(("flag", "expected"), [(False, "Retain"), (True, "Delete")])
def test_two_key_destroy(flag: bool, expected: str) -> None:
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
