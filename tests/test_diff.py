"""``fmcluster diff``: blueprint change pairs with their verdict, the replacement engine on small templates,
two cdk.out folders, the three output formats, damaged or foreign inputs (a clear one-line error, exit 1,
never a traceback) and updates CloudFormation cannot apply (an FSx capacity decrease).

Blueprint pairs synthesize in-process; every blueprint text is synthesized once (conftest cache).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fmcluster.orchestrators.parallelcluster.review_update import PCLUSTER_UPDATE_DOC
from fmcluster.review.assembly import Assembly, AssemblyError
from fmcluster.review.diff import (
    SUPPLEMENT,
    DiffReport,
    _values_at,
    create_only,
    diff_assemblies,
    is_stateful,
    render_markdown,
    render_text,
)
from fmcluster.validation import load_blueprint_text
from tests.blueprints import example, merge, to_yaml
from tests.conftest import ROOT, synth_templates

FIXTURES = Path(__file__).parent / "fixtures" / "diff"
DEFAULT = example("default")
PATH_METADATA = (("aws:cdk:enable-path-metadata", True),)
KMS = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"

FS = "StorageFileSystem61EA7B3D"
DRA = "StorageDataRepositoryAssociationsDatasetsE8F8AC61"
CKPT = "StorageCheckpointBucket217D3CE2"
DATA = "StorageDataBucketB1B922FA"
LOGS = "StorageAccessLogs96FB524C"
STORAGE = "llm-train-storage"


def assembly(data: dict[str, Any]) -> Assembly:
    text = to_yaml(data)
    bp = load_blueprint_text(text).blueprint
    return Assembly.from_templates(synth_templates(text, PATH_METADATA), bp.region, source=bp.name)


def diff_to(*patches: dict[str, Any]) -> DiffReport:
    """The diff from blueprints/default.yaml to the default with ``patches`` merged in."""
    return diff_assemblies(assembly(DEFAULT), assembly(merge(DEFAULT, *patches)))


def lustre(**kw: Any) -> dict[str, Any]:
    return {"storage": {"lustre": kw}}


def checkpoints(**kw: Any) -> dict[str, Any]:
    return {"storage": {"checkpoints": kw}}


#: The default's one compute group scaled from 4 to 8 nodes.
SCALED = {"compute": [{**DEFAULT["compute"][0], "count": 8}]}


def storage_changes(report: DiffReport, stack: str = STORAGE) -> dict[str, tuple[str, str]]:
    """logical id -> (action, level) for every change in the storage stack."""
    return {c.logical_id: (c.action, c.level) for c in report.changes if c.stack == stack}


# ---- blueprint change pairs -----------------------------------------------------------------
def test_scale_a_compute_group_replaces_nothing() -> None:
    r = diff_to(SCALED)
    assert r.exit_code == 0
    # Changed on purpose (issue 25): the first topology file lists every node (fmcluster-topology-placeholder.sh), a
    # new head-node step; it reaches the head node through its SSM parameter and OnNodeUpdated's revision, never
    # through OnNodeStart, which ParallelCluster refuses to update (tests/orchestrators/parallelcluster/test_head_node_actions.py).
    assert [(c.stack, c.type, c.action, [p.path for p in c.properties]) for c in r.changes] == [
        ("llm-train-cluster", "Custom::PclusterCluster", "update", [
            "ClusterConfiguration/HeadNode/CustomActions/OnNodeUpdated/Args",
            "ClusterConfiguration/HeadNode/Iam/S3Access", "ClusterConfiguration/Scheduling/SlurmQueues"]),
        ("llm-train-cluster", "AWS::SSM::Parameter", "update", ["Value/Fn::Join"])]


def test_software_change_changes_no_storage() -> None:
    # changed on purpose (issue 11): official mode pins no NCCL override; a job-environment change is the software
    # change that reaches only the node scripts
    r = diff_to({"software": {"environment": {"NCCL_DEBUG": "WARN"}}})
    assert r.exit_code == 0
    assert storage_changes(r) == {}
    assert {c.stack for c in r.changes} == {"llm-train-cluster"}
    assert {c.action for c in r.changes} == {"update"}


def test_raise_fsx_capacity_updates_in_place() -> None:
    r = diff_to(lustre(storage_capacity_gib=9600))
    assert r.exit_code == 0
    assert storage_changes(r) == {FS: ("update", "info")}
    [prop] = r.by_id(FS).properties
    assert (prop.path, prop.old, prop.new, prop.replaces) == ("StorageCapacity", "4800", "9600", False)


def test_change_deployment_type_replaces_the_file_system() -> None:
    r = diff_to(lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=None))
    assert r.exit_code == 1
    fs = r.by_id(FS)
    assert (fs.action, fs.level, fs.stateful) == ("replace", "error", True)
    assert fs.causes == ["LustreConfiguration/DeploymentType", "LustreConfiguration/PerUnitStorageThroughput"]
    [dt] = [p for p in fs.properties if p.path == "LustreConfiguration/DeploymentType"]
    assert (dt.old, dt.new) == ("PERSISTENT_2", "PERSISTENT_1")
    assert dt.source == f"supplement: {SUPPLEMENT['AWS::FSx::FileSystem']['LustreConfiguration/DeploymentType']}"
    # the association follows its file system (FileSystemId is create-only), the cluster re-points in place
    dra = r.by_id(DRA)
    assert (dra.action, dra.level, dra.causes) == ("replace", "error", ["FileSystemId"])
    assert [p.new for p in dra.properties] == [f"<ref {STORAGE}/{FS} (new)>"]
    # issue 12 item 5 (changed on purpose): the cluster stack imports the file system id, so its export fails too
    assert storage_changes(r) == {FS: ("replace", "error"), DRA: ("replace", "error"),
                                  "ExportsOutputRefStorageFileSystem61EA7B3D1FE8B479": ("fail", "error")}
    assert "the old one is kept but orphaned (UpdateReplacePolicy Retain)" in fs.note


def test_toggle_efa_replaces_the_file_system() -> None:
    r = diff_to(lustre(efa_enabled=True))
    assert r.exit_code == 1
    fs = r.by_id(FS)
    assert (fs.action, fs.level) == ("replace", "error")
    assert fs.causes == ["LustreConfiguration/EfaEnabled"]
    [efa] = [p for p in fs.properties if p.path == "LustreConfiguration/EfaEnabled"]
    assert (efa.old, efa.new) == ("(absent)", "true")
    assert "EfaEnabled must be set at creation" in efa.source
    # the metadata configuration that comes with EFA is an in-place property
    assert "LustreConfiguration/MetadataConfiguration" in [p.path for p in fs.properties if not p.replaces]


@pytest.mark.parametrize(
    ("patch", "causes"),
    [
        ({"network": {"vpc_cidr": "10.1.0.0/16"}}, ["SecurityGroupIds", "SubnetIds"]),
        ({"network": {"gpu_subnet_prefix_length": 22}}, ["SubnetIds"]),
    ],
    ids=["vpc-cidr", "gpu-subnet-prefix"],
)
def test_network_change_replaces_the_file_system_through_its_subnet(patch: dict[str, Any], causes: list[str]) -> None:
    r = diff_to(patch)
    assert r.exit_code == 1
    fs = r.by_id(FS)
    assert (fs.action, fs.level, fs.causes) == ("replace", "error", causes)
    [subnets] = [p for p in fs.properties if p.path == "SubnetIds"]
    assert subnets.new.endswith(" (new)>\"]")
    subnet = next(c for c in r.changes if c.type == "AWS::EC2::Subnet" and "Gpu" in c.construct_path)
    assert (subnet.action, subnet.level) == ("replace", "info")
    assert "CidrBlock" in subnet.causes


def test_rename_the_blueprint_moves_every_stateful_resource() -> None:
    r = diff_to({"name": "llm-train-2"})
    assert r.exit_code == 1
    moves = {(c.moved_from, f"{c.stack}/{c.logical_id}") for c in r.changes if c.action == "move"}
    assert moves == {(f"{STORAGE}/{lid}", f"llm-train-2-storage/{lid}") for lid in (FS, DRA, CKPT, DATA, LOGS)}
    fs = r.by_id(FS, "llm-train-2-storage")
    assert fs.level == "error"
    assert fs.causes[0] == f"stack: {STORAGE}/{FS} -> llm-train-2-storage/{FS}"
    assert "SubnetIds" in fs.causes  # the new stack's file system also sits in a new subnet
    # changed on purpose (issue S4 item 2): the old stacks leave the app, so cdk deploy leaves the old file system running
    assert fs.note == f"a new, empty file system is created; the old one is left running in stack {STORAGE}, which leaves the app"
    assert {c.stack for c in r.changes if c.action == "leave"} == {STORAGE, "llm-train-network", "llm-train-cluster",
                                                                  "llm-train-observability"}
    assert [c for c in r.changes if c.action == "remove"] == []
    # stateless resources of the old stacks are removed, the new ones added, without errors
    assert {c.level for c in r.changes if c.action in ("add", "remove")} == {"info"}


def test_add_a_tag_updates_in_place_and_replaces_nothing() -> None:
    # Changed on purpose (issue 12 item 5): blueprint tags no longer go on placement groups (their Tags are
    # create-only), so a tag no longer replaces them (tests/test_diff_exports.py).
    r = diff_to({"tags": {"owner": "ml-infra"}})
    assert r.exit_code == 0
    assert storage_changes(r)[FS] == ("update", "info")
    assert [p.path for p in r.by_id(FS).properties] == ["Tags"]
    assert {c.action for c in r.changes if c.action in ("replace", "may-replace")} == set()
    assert r.of_type("AWS::EC2::PlacementGroup") == []


def test_add_a_data_repository() -> None:
    r = diff_to(lustre(data_repositories=[*DEFAULT["storage"]["lustre"]["data_repositories"],
                                          {"file_system_path": "/models", "export_policy": ["NEW", "CHANGED"]}]))
    assert r.exit_code == 0
    [added] = [c for c in r.changes if c.action == "add" and c.stateful]
    assert (added.type, added.construct_path, added.level) == (
        "AWS::FSx::DataRepositoryAssociation", "Storage/DataRepositoryAssociations/Models", "info")
    assert DRA not in storage_changes(r)  # the existing association is untouched


def test_change_a_data_repository_path_replaces_the_association() -> None:
    r = diff_to(lustre(data_repositories=[{"file_system_path": "/data", "import_policy": ["NEW", "CHANGED", "DELETED"]}]))
    assert r.exit_code == 1
    [dra] = [c for c in r.changes if c.type == "AWS::FSx::DataRepositoryAssociation"]
    assert (dra.action, dra.level, dra.moved_from) == ("move", "error", f"{STORAGE}/{DRA}")
    assert dra.causes[1:] == ["DataRepositoryPath", "FileSystemPath"]
    [path] = [p for p in dra.properties if p.path == "FileSystemPath"]
    assert (path.old, path.new, path.source) == ("/datasets", "/data", "registry schema createOnlyProperties (cfn-lint)")


@pytest.mark.parametrize(
    ("patch", "lid", "paths"),
    [
        (checkpoints(noncurrent_version_expiration_days=60), CKPT, ["LifecycleConfiguration/Rules"]),
        (checkpoints(transition={"storage_class": "GLACIER_IR", "after_days": 30}), CKPT, ["LifecycleConfiguration/Rules"]),
        (lustre(automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"), FS,
         ["LustreConfiguration/AutomaticBackupRetentionDays", "LustreConfiguration/DailyAutomaticBackupStartTime"]),
        (lustre(weekly_maintenance_start_time="7:04:00", data_compression="NONE"), FS,
         ["LustreConfiguration/DataCompressionType", "LustreConfiguration/WeeklyMaintenanceStartTime"]),
    ],
    ids=["checkpoint-lifecycle", "checkpoint-transition", "fsx-backups", "fsx-maintenance-compression"],
)
def test_in_place_storage_changes(patch: dict[str, Any], lid: str, paths: list[str]) -> None:
    r = diff_to(patch)
    assert r.exit_code == 0
    assert storage_changes(r) == {lid: ("update", "info")}
    assert [p.path for p in r.by_id(lid).properties] == paths


@pytest.mark.parametrize(
    ("patch", "cause", "source"),
    [
        (lustre(kms_key_arn=KMS), "KmsKeyId", "registry schema createOnlyProperties (cfn-lint)"),
        (lustre(per_unit_storage_throughput=500), "LustreConfiguration/PerUnitStorageThroughput",
         f"supplement: {SUPPLEMENT['AWS::FSx::FileSystem']['LustreConfiguration/PerUnitStorageThroughput']}"),
    ],
    ids=["fsx-kms-key", "fsx-throughput-tier"],
)
def test_other_file_system_replacements(patch: dict[str, Any], cause: str, source: str) -> None:
    r = diff_to(patch)
    assert r.exit_code == 1
    fs = r.by_id(FS)
    assert (fs.action, fs.causes) == ("replace", [cause])
    assert fs.properties[0].source == source


def test_destroy_flag_without_context_flag_changes_nothing() -> None:
    r = diff_to(lustre(removal_policy="destroy"), checkpoints(removal_policy="destroy"))
    assert (r.exit_code, r.changes) == (0, [])


def test_same_blueprint_has_no_changes() -> None:
    r = diff_assemblies(assembly(DEFAULT), assembly(DEFAULT))
    assert (r.exit_code, r.changes) == (0, [])
    assert render_text(r).endswith(": safe: no stateful resource is replaced or moved; no changes")


# ---- the engine on small templates ------------------------------------------------------------
def tpl(resources: dict[str, Any], outputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"Resources": resources, **({"Outputs": outputs} if outputs else {})}


def res(type_: str, props: dict[str, Any], path: str = "", **attrs: Any) -> dict[str, Any]:
    return {"Type": type_, "Properties": props, **attrs, **({"Metadata": {"aws:cdk:path": path}} if path else {})}


def test_schema_create_only_comes_from_cfn_lint_and_the_supplement_only_where_silent() -> None:
    fs = create_only("us-east-1", "AWS::FSx::FileSystem").sources()
    assert {p for p, s in fs.items() if s.startswith("registry")} == {
        "KmsKeyId", "SecurityGroupIds", "FileSystemType", "SubnetIds", "BackupId"}
    assert {p for p, s in fs.items() if s.startswith("supplement")} == set(SUPPLEMENT["AWS::FSx::FileSystem"])
    assert create_only("us-east-1", "AWS::FSx::DataRepositoryAssociation").sources() == dict.fromkeys(
        ["FileSystemId", "FileSystemPath", "DataRepositoryPath", "BatchImportMetaDataOnCreate"],
        "registry schema createOnlyProperties (cfn-lint)")
    assert set(create_only("us-east-1", "AWS::S3::Bucket").sources()) == {"BucketName", "BucketNamePrefix", "BucketNamespace"}
    assert create_only("us-east-1", "AWS::Made::Up").known is False


def test_values_at_expands_list_wildcards() -> None:
    obj = {"A": [{"B": 1}, {"B": 2}, {"C": 3}]}
    got = [(p, v) for p, v in _values_at(obj, ["A", "*", "B"])]
    assert got[:2] == [("A/0/B", 1), ("A/1/B", 2)]
    assert got[2][0] == "A/2/B"


def test_type_change_under_the_same_id_is_a_replacement() -> None:
    old = Assembly.from_templates({"s": tpl({"X": res("AWS::S3::Bucket", {})})})
    new = Assembly.from_templates({"s": tpl({"X": res("AWS::SSM::Parameter", {"Type": "String", "Value": "v"})})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level, c.causes) == ("replace", "error", ["Type"])


def test_deletion_policy_change_on_a_stateful_resource_warns() -> None:
    old = Assembly.from_templates({"s": tpl({"B": res("AWS::S3::Bucket", {}, DeletionPolicy="Retain", UpdateReplacePolicy="Retain")})})
    new = Assembly.from_templates({"s": tpl({"B": res("AWS::S3::Bucket", {}, DeletionPolicy="Delete", UpdateReplacePolicy="Delete")})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level) == ("update", "warning")
    assert c.note == ("DeletionPolicy Retain -> Delete, UpdateReplacePolicy Retain -> Delete: a later stack deletion "
                      "deletes the data")


@pytest.mark.parametrize(("old_status", "new_versioning", "warns"), [
    ("Enabled", {"Status": "Suspended"}, True),
    ("Enabled", None, True),  # the versioned setting removed from the blueprint
    ("Suspended", {"Status": "Enabled"}, False),  # turning it on protects more
], ids=["suspended", "removed", "enabled"])
def test_turning_bucket_versioning_off_warns(old_status: str, new_versioning: dict | None, warns: bool) -> None:
    """Suspending the checkpoint bucket's versioning is an in-place update CloudFormation applies silently; the diff
    says what is lost (the new-user trial saw it called safe)."""
    old = Assembly.from_templates({"s": tpl({"B": res("AWS::S3::Bucket", {"VersioningConfiguration": {"Status": old_status}})})})
    props = {} if new_versioning is None else {"VersioningConfiguration": new_versioning}
    new = Assembly.from_templates({"s": tpl({"B": res("AWS::S3::Bucket", props)})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level == "warning", "versioning suspended" in c.note) == ("update", warns, warns)


def test_conditional_create_only_may_replace() -> None:
    subnet = {"VpcId": "vpc-1", "CidrBlock": "10.0.0.0/24"}
    old = Assembly.from_templates({"s": tpl({"S": res("AWS::EC2::Subnet", subnet)})})
    new = Assembly.from_templates({"s": tpl({"S": res("AWS::EC2::Subnet", {**subnet, "Ipv6CidrBlock": "2600::/64"})})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level, c.causes) == ("may-replace", "warning", ["Ipv6CidrBlock"])
    assert c.properties[0].source == "registry schema conditionalCreateOnlyProperties (cfn-lint): may replace"


def test_stateful_resource_renamed_in_the_same_stack_is_a_move() -> None:
    bucket = {"VersioningConfiguration": {"Status": "Enabled"}}
    old = Assembly.from_templates({"s": tpl({"Old1": res("AWS::S3::Bucket", bucket, "s/Checkpoints/Resource",
                                                          DeletionPolicy="Delete")})})
    new = Assembly.from_templates({"s": tpl({"New2": res("AWS::S3::Bucket", bucket, "s/Ckpt/Resource")})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level, c.moved_from, c.causes) == ("move", "error", "s/Old1", ["logical id: s/Old1 -> s/New2"])
    assert c.note == "a new, empty bucket is created; the old one is DELETED (DeletionPolicy Delete)"


def test_retained_stateful_removal_warns_and_stateless_changes_are_info() -> None:
    old = Assembly.from_templates({"s": tpl({
        "B": res("AWS::S3::Bucket", {}, DeletionPolicy="Retain"),
        "P": res("AWS::SSM::Parameter", {"Type": "String", "Value": "a"})})})
    new = Assembly.from_templates({"s": tpl({"P": res("AWS::SSM::Parameter", {"Type": "String", "Value": "b"})})})
    r = diff_assemblies(old, new)
    assert [(c.logical_id, c.action, c.level, c.note) for c in r.changes] == [
        ("B", "remove", "warning", "removed from the stack; kept in the account (orphaned)"),
        ("P", "update", "info", ""),
    ]
    assert r.exit_code == 0


def test_two_cdk_out_folders() -> None:
    r = diff_assemblies(Assembly.from_dir(FIXTURES / "old"), Assembly.from_dir(FIXTURES / "new"))
    assert Assembly.from_dir(FIXTURES / "new").region == "us-west-2"
    assert [(c.stack, c.logical_id, c.action, c.level, c.causes) for c in r.changes] == [
        ("demo-storage", "FileSystem", "replace", "error", ["SubnetIds"]),
        ("demo-storage", "Scratch", "remove", "error", []),
        # issue 12 item 5 (added on purpose): the replaced subnet's export is imported by demo-storage
        ("demo-network", "ExportGpuSubnet", "fail", "error", ["Value"]),
        ("demo-storage", "Widget", "may-replace", "warning", ["Size"]),
        ("demo-storage", "Checkpoints", "update", "info", []),
        ("demo-network", "GpuSubnet", "replace", "info", ["CidrBlock"]),
        ("demo-storage", "MountParameter", "update", "info", []),
    ]
    assert r.exit_code == 1


def test_not_an_assembly(tmp_path: Path) -> None:
    from fmcluster.review.assembly import AssemblyError

    with pytest.raises(AssemblyError, match="not a cloud assembly"):
        Assembly.from_dir(tmp_path)


# ---- command line and formats -------------------------------------------------------------------
def run(*args: str) -> Any:
    from fmcluster.cli import app

    return CliRunner().invoke(app, ["diff", *args])


def test_cli_on_folders_text_markdown_json() -> None:
    old, new = str(FIXTURES / "old"), str(FIXTURES / "new")
    text = run(old, new)
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    # issue 12 item 5 (changed on purpose): the imported subnet export is a third error
    assert lines[0] == (f"fmcluster diff {old} -> {new}: 3 errors; changes: 1 fail, 1 may-replace, 1 remove, 2 replace, 2 update")
    assert lines[1].split() == ["ERROR", "REPLACE", "demo-storage/FileSystem", "(AWS::FSx::FileSystem,", "FileSystem)"]
    assert lines[2].strip() == ('SubnetIds: ["<ref demo-network/GpuSubnet>"] -> ["<ref demo-network/GpuSubnet (new)>"] '
                                "[registry schema createOnlyProperties (cfn-lint)]")
    assert lines[-1] == "(1 in-place update(s) or addition(s) of stateless resources not shown; --verbose lists them)"

    md = run(old, new, "--format", "markdown")
    assert md.exit_code == 1
    assert md.stdout.startswith("### :x: fmcluster diff ")
    assert "| error | REPLACE | demo-storage | `FileSystem` | AWS::FSx::FileSystem | SubnetIds: " in md.stdout

    js = run(old, new, "--json")
    envelope = json.loads(js.stdout)
    doc = envelope["result"]
    assert (envelope["command"], envelope["ok"]) == ("diff", False)
    assert (js.exit_code, doc["errors"], doc["summary"]) == (1, 3, {"replace": 2, "remove": 1, "may-replace": 1, "update": 2,
                                                                   "fail": 1})
    # the unsafe changes (and the warning) are the envelope's problems, at the resource the text output names;
    # the info changes are only in the result
    assert [(p["file"], p["path"], p["severity"], p["rule_id"], p["value"], p["line"]) for p in envelope["problems"]] == [
        (new, "demo-storage/FileSystem", "error", "diff-replace",
         {"SubnetIds": {"old": ["<ref demo-network/GpuSubnet>"], "new": ["<ref demo-network/GpuSubnet (new)>"]}}, None),
        (new, "demo-storage/Scratch", "error", "diff-remove", None, None),
        (new, "demo-network/ExportGpuSubnet", "error", "diff-fail",
         {"Value": {"old": "<ref demo-network/GpuSubnet>", "new": "<ref demo-network/GpuSubnet (new)>"}}, None),
        (new, "demo-storage/Widget", "warning", "diff-may-replace", {"Size": {"old": 1, "new": 2}}, None),
    ]
    fsx = envelope["problems"][0]
    assert fsx["message"] == (
        'REPLACE (AWS::FSx::FileSystem, FileSystem); SubnetIds: ["<ref demo-network/GpuSubnet>"] -> '
        '["<ref demo-network/GpuSubnet (new)>"] [registry schema createOnlyProperties (cfn-lint)]; CloudFormation '
        "creates a new, empty file system; the old one is kept but orphaned (UpdateReplacePolicy Retain): the cluster "
        "loses its data")
    assert fsx["source"] == "registry schema createOnlyProperties (cfn-lint)"
    assert envelope["problems"][1]["message"] == "REMOVE (AWS::S3::Bucket, Scratch); removed from the stack; DELETED with its data"


@pytest.mark.parametrize(("same", "syntheses"), [(True, 1), (False, 2)], ids=["one-file-twice", "two-files"])
def test_a_blueprint_against_itself_is_synthesized_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        same: bool, syntheses: int) -> None:
    """load_sides: the same file on both sides is one synthesis (deterministic), a copy of it is its own input (its
    ``extends`` bases resolve from its own folder); either way nothing differs."""
    from fmcluster.review import diff as diff_module

    calls: list[Path] = []
    real = diff_module.synth_blueprint

    def counting(path: Path, context: Any = None) -> Any:
        calls.append(path)
        return real(path, context)

    monkeypatch.setattr(diff_module, "synth_blueprint", counting)
    old = tmp_path / "bp.yaml"
    old.write_text((ROOT / "blueprints" / "default.yaml").read_text())
    new = old
    if not same:
        new = tmp_path / "copy" / "bp.yaml"
        new.parent.mkdir()
        new.write_text(old.read_text())
    result = run(str(old), str(new), "--json")
    assert result.exit_code == 0, result.stdout
    assert len(calls) == syntheses
    envelope = json.loads(result.stdout)
    assert (envelope["ok"], envelope["problems"], envelope["result"]["summary"]) == (True, [], {})


def test_cli_on_blueprints_scale_out_passes_and_deployment_type_fails(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(to_yaml(DEFAULT))
    scaled = tmp_path / "scaled.yaml"
    scaled.write_text(to_yaml(merge(DEFAULT, SCALED)))
    p1 = tmp_path / "p1.yaml"
    p1.write_text(to_yaml(merge(DEFAULT, lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=None))))
    ok = run(str(old), str(scaled))
    assert ok.exit_code == 0, ok.stdout
    # the cluster resource and the SSM parameter of the head node's steps (tests/orchestrators/parallelcluster/test_head_node_actions.py)
    assert ": safe: no stateful resource is replaced or moved; changes: 2 update" in ok.stdout.splitlines()[0]
    # the cost delta of two blueprints (issue 17): the FSx tier has no price, unchanged on both sides
    assert ok.stdout.splitlines()[1].startswith("cost +$") and "unchanged and unpriced: FSx for Lustre" in ok.stdout
    bad = run(str(old), str(p1), "-f", "markdown")
    assert bad.exit_code == 1
    assert "| error | REPLACE | llm-train-storage | `Storage/FileSystem` | AWS::FSx::FileSystem | " \
           "LustreConfiguration/DeploymentType: PERSISTENT_2 -> PERSISTENT_1" in bad.stdout


def test_cli_prints_each_blueprints_warnings_and_puts_them_in_json_problems(tmp_path: Path) -> None:
    """A warning of a diffed blueprint (here R-CAP-10: PCS does not automate a Capacity Block's end) is printed on
    standard error and is a problem of ``--json``, with its file, as every command shows a blueprint's problems; the
    same file on both sides is one input, so its warnings come once."""
    pcs = tmp_path / "pcs.yaml"
    pcs.write_text((ROOT / "blueprints" / "pcs-p5en.yaml").read_text())
    text = run(str(pcs), str(pcs))
    assert text.exit_code == 0, text.stdout
    assert text.stderr.count("[R-CAP-10]") == 1
    js = run(str(pcs), str(pcs), "--json")
    [cap] = [p for p in json.loads(js.stdout)["problems"] if p["rule_id"] == "R-CAP-10"]
    assert (cap["file"], cap["severity"], cap["path"]) == (str(pcs), "warning", "compute[0].capacity")
    folders = run(str(FIXTURES / "old"), str(FIXTURES / "new"), "--json")  # cdk.out folders carry no blueprint warnings
    assert [p["rule_id"] for p in json.loads(folders.stdout)["problems"] if p["rule_id"].startswith("R-")] == []


def test_cli_bad_inputs(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\n")
    r = run(str(broken), str(FIXTURES / "new"))
    assert r.exit_code == 2
    assert "required key 'region' is missing, got nothing; allowed the key with a value (docs/blueprint.md)" in r.stderr
    missing = run(str(tmp_path / "nope.yaml"), str(FIXTURES / "new"))
    assert missing.exit_code == 2
    assert "no such file or folder" in missing.stderr
    ctx = run(str(FIXTURES / "old"), str(FIXTURES / "new"), "-c", "novalue")
    assert ctx.exit_code == 2 and "--context needs KEY=VALUE" in ctx.stderr


def test_markdown_and_json_of_a_clean_diff() -> None:
    r = diff_to(SCALED)
    assert render_markdown(r).splitlines()[0].startswith("### :white_check_mark: fmcluster diff llm-train -> llm-train: safe")
    assert r.as_dict()["exit_code"] == 0


# ---- damaged or foreign inputs: one-line error naming the folder or file, exit 2, no traceback -------
def copy_old(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "old", tmp_path / "cdk.out"))


def assert_clean_error(result: Any, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    text = " ".join(result.stderr.split())
    for f in fragments:
        assert f in text, text


@pytest.mark.parametrize(
    ("manifest", "fragment"),
    [
        ("not json", "is not valid JSON"),
        ("{}", "no \"artifacts\" object"),
        ("[1, 2]", "no \"artifacts\" object"),
        ('{"artifacts": {}}', "has no CloudFormation stacks"),
        ('{"artifacts": {"Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}}}}', "has no CloudFormation stacks"),
    ],
)
def test_corrupt_or_empty_manifest_is_a_clear_error(tmp_path: Path, manifest: str, fragment: str) -> None:
    out = copy_old(tmp_path)
    (out / "manifest.json").write_text(manifest)
    with pytest.raises(AssemblyError, match=fragment.replace("\"", ".")):
        Assembly.from_dir(out)
    assert_clean_error(run(str(out), str(FIXTURES / "new")), str(out), fragment)
    assert_clean_error(run(str(FIXTURES / "new"), str(out)), fragment)


def test_missing_template_after_an_interrupted_synth(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    (out / "demo-storage.template.json").unlink()
    assert_clean_error(run(str(out), str(FIXTURES / "new")),
                       f"{out / 'demo-storage.template.json'}: template of stack demo-storage is missing")


def test_corrupt_template(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    (out / "demo-network.template.json").write_text('{"Resources": ')
    assert_clean_error(run(str(out), str(FIXTURES / "new")),
                       f"{out / 'demo-network.template.json'}: the template of stack demo-network is not valid JSON")


def test_stack_without_template_file(tmp_path: Path) -> None:
    out = copy_old(tmp_path)
    doc = json.loads((out / "manifest.json").read_text())
    del doc["artifacts"]["demo-network"]["properties"]["templateFile"]
    (out / "manifest.json").write_text(json.dumps(doc))
    assert_clean_error(run(str(out), str(FIXTURES / "new")), "stack demo-network names no templateFile")


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(AssemblyError, match="not a folder"):
        Assembly.from_dir(tmp_path / "nope")


# ---- updates CloudFormation cannot apply ------------------------------------------------------------
def _fs(capacity: Any, **extra: Any) -> dict[str, Any]:
    props = {"FileSystemType": "LUSTRE", "StorageCapacity": capacity, "SubnetIds": ["subnet-1"],
             "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250}}
    props["LustreConfiguration"].update(extra)
    return {"Resources": {"Fs": {"Type": "AWS::FSx::FileSystem", "Properties": props}}}


def _diff(old: dict[str, Any], new: dict[str, Any]) -> Any:
    from fmcluster.review.diff import diff_assemblies

    return diff_assemblies(Assembly.from_templates({"s": old}), Assembly.from_templates({"s": new}))


def test_fsx_capacity_decrease_is_an_update_that_fails() -> None:
    from fmcluster.review.diff import render_markdown, render_text

    r = _diff(_fs(4800), _fs(2400))
    [c] = r.changes
    assert (c.action, c.level, c.causes, r.exit_code) == ("fail", "error", ["StorageCapacity"], 1)
    [p] = c.properties
    assert (p.path, p.old, p.new, p.fails, p.replaces) == ("StorageCapacity", "4800", "2400", True, False)
    assert "managing-storage-capacity.html" in p.source
    text = render_text(r)
    assert "1 error" in text.splitlines()[0]
    assert text.splitlines()[1].split()[:3] == ["ERROR", "UPDATE", "FAILS"]
    assert "StorageCapacity: 4800 -> 2400 [cannot decrease: FSx storage capacity can only be increased" in text
    assert "the stack update fails and rolls back" in text
    assert "| error | UPDATE FAILS | s | `Fs` |" in render_markdown(r)


def test_fsx_capacity_increase_and_decrease_with_replacement_are_fine() -> None:
    up = _diff(_fs(2400), _fs(4800))
    assert (up.changes[0].action, up.exit_code) == ("update", 0)
    # A replacement starts from the new value: the replacement itself is the finding, not the decrease.
    down = _diff(_fs(4800), _fs(2400, DeploymentType="PERSISTENT_1"))
    assert (down.changes[0].action, down.changes[0].causes) == ("replace", ["LustreConfiguration/DeploymentType"])
    # A non-numeric value (a parameter reference) is not judged.
    ref = _diff(_fs(4800), _fs({"Ref": "Capacity"}))
    assert ref.changes[0].action == "update"


def test_non_decreasing_table_is_sourced() -> None:
    from fmcluster.review.diff import NON_DECREASING

    assert "StorageCapacity" in NON_DECREASING["AWS::FSx::FileSystem"]
    assert all("https://docs.aws.amazon.com/" in src for props in NON_DECREASING.values() for src in props.values())


def test_cli_fsx_capacity_decrease_on_blueprints(tmp_path: Path) -> None:
    assert DEFAULT["storage"]["lustre"]["storage_capacity_gib"] == 4800
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(to_yaml(DEFAULT))
    new.write_text(to_yaml(merge(DEFAULT, lustre(storage_capacity_gib=2400))))
    r = run(str(old), str(new))
    assert r.exit_code == 1, r.stdout
    assert "1 error" in r.stdout.splitlines()[0]
    assert "StorageCapacity: 4800 -> 2400 [cannot decrease" in r.stdout


# ---- the Slurm accounting database (docs/accounting.md) ---------------------------------------------
def _db(props: dict[str, Any]) -> dict[str, Any]:
    return res("AWS::RDS::DBCluster", props, DeletionPolicy="Retain", UpdateReplacePolicy="Retain")


def test_replacing_the_accounting_database_cluster_is_an_error() -> None:
    base = {"Engine": "aurora-mysql", "MasterUsername": "clusteradmin", "StorageEncrypted": True}
    old = Assembly.from_templates({"a": tpl({"Db": _db(base)})})
    new = Assembly.from_templates({"a": tpl({"Db": _db({**base, "MasterUsername": "slurm"})})})
    report = diff_assemblies(old, new)
    [c] = report.changes
    # the registry schema lists MasterUsername as conditionally create-only ("may replace"): an error on a database
    assert (c.action, c.level, c.stateful, c.causes) == ("may-replace", "error", True, ["MasterUsername"])
    assert c.note == ("CloudFormation creates a new, empty database cluster; the old one is kept but orphaned "
                      "(UpdateReplacePolicy Retain): the cluster loses its data")
    assert report.exit_code == 1


def test_scaling_the_accounting_database_updates_in_place() -> None:
    base = {"Engine": "aurora-mysql", "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 4}}
    old = Assembly.from_templates({"a": tpl({"Db": _db(base)})})
    new = Assembly.from_templates({"a": tpl({"Db": _db(
        {**base, "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 8}})})})
    [c] = diff_assemblies(old, new).changes
    assert (c.action, c.level, c.stateful) == ("update", "info", True)


def test_aurora_members_are_not_stateful_but_standalone_db_instances_are() -> None:
    assert is_stateful({"Type": "AWS::RDS::DBCluster", "Properties": {}})
    assert not is_stateful({"Type": "AWS::RDS::DBInstance", "Properties": {"DBClusterIdentifier": {"Ref": "Db"}}})
    assert is_stateful({"Type": "AWS::RDS::DBInstance", "Properties": {"Engine": "mysql"}})
    member = res("AWS::RDS::DBInstance", {"DBClusterIdentifier": "db", "AvailabilityZone": "us-east-1a"})
    moved = res("AWS::RDS::DBInstance", {"DBClusterIdentifier": "db", "AvailabilityZone": "us-east-1b"})
    [c] = diff_assemblies(Assembly.from_templates({"s": tpl({"W": member})}),
                          Assembly.from_templates({"s": tpl({"W": moved})})).changes
    assert (c.action, c.level, c.stateful) == ("may-replace", "warning", False)


# ---- replacements that must reuse an identity the old resource still holds (issue S4 item 1) -----------------------
def _subnet(az: str, cidr: str = "10.0.1.0/24", vpc: Any = None) -> dict[str, Any]:
    return res("AWS::EC2::Subnet", {"VpcId": vpc or {"Ref": "Vpc"}, "AvailabilityZone": az, "CidrBlock": cidr},
               "s/Subnet2", DeletionPolicy="Retain", UpdateReplacePolicy="Retain")


def _vpc(cidr: str = "10.0.0.0/16") -> dict[str, Any]:
    return res("AWS::EC2::VPC", {"CidrBlock": cidr})


@pytest.mark.parametrize(("old", "new", "expected"), [
    # the AZ moves, the CIDR stays in the same VPC: CreateSubnet of the replacement conflicts with the old subnet
    ({"Vpc": _vpc(), "Subnet2": _subnet("us-east-1b")}, {"Vpc": _vpc(), "Subnet2": _subnet("us-east-1c")},
     ("fail", "error", ["AvailabilityZone", "CidrBlock"])),
    # a new CIDR too: the replacement takes a free range
    ({"Vpc": _vpc(), "Subnet2": _subnet("us-east-1b")}, {"Vpc": _vpc(), "Subnet2": _subnet("us-east-1c", "10.0.2.0/24")},
     ("replace", "info", ["AvailabilityZone", "CidrBlock"])),
    # the VPC is replaced as well: the new subnet lands in the new VPC, where the CIDR is free
    ({"Vpc": _vpc(), "Subnet2": _subnet("us-east-1b")}, {"Vpc": _vpc("10.1.0.0/16"), "Subnet2": _subnet("us-east-1b", "10.0.1.0/24")},
     ("replace", "info", ["VpcId"])),
])
def test_subnet_replacement_that_keeps_its_cidr_fails(old: dict[str, Any], new: dict[str, Any],
                                                      expected: tuple[str, str, list[str]]) -> None:
    report = diff_assemblies(Assembly.from_templates({"s": tpl(old)}), Assembly.from_templates({"s": tpl(new)}))
    c = report.by_id("Subnet2")
    assert (c.action, c.level, c.causes) == expected
    assert report.exit_code == (1 if expected[1] == "error" else 0)
    if c.action == "fail":
        held = next(p for p in c.properties if p.path == "CidrBlock")
        assert (held.old, held.new, held.fails) == ("10.0.1.0/24", "10.0.1.0/24", True)
        assert "API_CreateSubnet.html" in held.source
        assert "UPDATE FAILS" in render_text(report) and "needs the CidrBlock the old one still holds" in c.note


def test_custom_named_replacement_fails_and_a_new_name_is_fine() -> None:
    from fmcluster.review.diff import custom_names

    assert custom_names("us-east-1", "AWS::IAM::Role") == ("RoleName",)  # writable primaryIdentifier in the schema
    assert custom_names("us-east-1", "AWS::EC2::Subnet") == ()  # SubnetId is read-only: no custom name
    assert custom_names("us-east-1", "AWS::EC2::SecurityGroup") == ("GroupName",)  # supplement

    def role(name: str | None, path: str) -> dict[str, Any]:
        return res("AWS::IAM::Role", {"AssumeRolePolicyDocument": {}, "Path": path, **({"RoleName": name} if name else {})})

    def verdict(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, str, list[str]]:
        c = diff_assemblies(Assembly.from_templates({"s": tpl({"R": old})}),
                            Assembly.from_templates({"s": tpl({"R": new})})).by_id("R")
        return c.action, c.level, c.causes

    assert verdict(role("ops", "/a/"), role("ops", "/b/")) == ("fail", "error", ["Path", "RoleName"])
    assert verdict(role("ops", "/a/"), role("ops2", "/b/")) == ("replace", "info", ["Path", "RoleName"])
    assert verdict(role(None, "/a/"), role(None, "/b/")) == ("replace", "info", ["Path"])
    sg = {"GroupName": "head", "VpcId": "vpc-1"}
    c = diff_assemblies(
        Assembly.from_templates({"s": tpl({"G": res("AWS::EC2::SecurityGroup", {**sg, "GroupDescription": "a"})})}),
        Assembly.from_templates({"s": tpl({"G": res("AWS::EC2::SecurityGroup", {**sg, "GroupDescription": "b"})})})).by_id("G")
    assert (c.action, c.causes) == ("fail", ["GroupDescription", "GroupName"])
    assert "aws-properties-name.html" in next(p.source for p in c.properties if p.path == "GroupName")
    # a type CloudFormation replaces delete-first (schema replacementStrategy delete_then_create) holds nothing
    assert custom_names("us-east-1", "AWS::Logs::Integration") == ("IntegrationName",)
    integration = {"IntegrationName": "ops", "ResourceConfig": {}}
    c = diff_assemblies(
        Assembly.from_templates({"s": tpl({"T": res("AWS::Logs::Integration", {**integration, "IntegrationType": "A"})})}),
        Assembly.from_templates({"s": tpl({"T": res("AWS::Logs::Integration", {**integration, "IntegrationType": "B"})})})).by_id("T")
    assert (c.action, c.level, c.causes) == ("replace", "info", ["IntegrationType"])


# ---- a stack that leaves the app (issue S4 item 2) ---------------------------------------------------------------
def test_a_stack_that_leaves_the_app_is_one_warning_without_removals_or_export_errors() -> None:
    export = {"Db": {"Value": {"Ref": "Db"}, "Export": {"Name": "acct:Db"}}}
    old = Assembly.from_templates({
        "c-accounting": tpl({"Db": _db({"Engine": "aurora-mysql"}), "Sg": res("AWS::EC2::SecurityGroup", {"GroupDescription": "x"})},
                            export),
        "c-cluster": tpl({"Head": res("AWS::SSM::Parameter", {"Type": "String", "Value": {"Fn::ImportValue": "acct:Db"}})}),
    }, source="old.yaml")
    new = Assembly.from_templates({"c-cluster": tpl({"Head": res("AWS::SSM::Parameter", {"Type": "String", "Value": "none"})})})
    report = diff_assemblies(old, new)
    assert [(c.stack, c.action, c.level) for c in report.changes] == [
        ("c-accounting", "leave", "warning"), ("c-cluster", "update", "info")]
    assert report.exit_code == 0
    leave = report.changes[0]
    assert leave.note == ("stack c-accounting leaves the app: cdk deploy leaves it running (2 resources, still billed); "
                          "delete it with `npx cdk destroy c-accounting -c blueprint=old.yaml` once nothing needs it; "
                          "its retained resources stay")
    assert render_text(report).splitlines()[1] == "WARNING LEAVES THE APP     " + leave.note
    # in the JSON envelope: one warning at the stack, the info update left out
    assert [(p.path, p.level, p.rule_id, p.message, p.value) for p in report.problems()] == [
        ("c-accounting", "warning", "diff-leave", "LEAVES THE APP: " + leave.note, None)]


ACCOUNTING_B = {"orchestrator": {"slurm": {"accounting": {"enabled": True, "second_availability_zone": "us-east-1b"}}}}
ACCOUNTING_C = {"orchestrator": {"slurm": {"accounting": {"enabled": True, "second_availability_zone": "us-east-1c"}}}}


@pytest.mark.synth
def test_blueprint_accounting_second_az_change_fails_and_turning_accounting_off_leaves_the_stack() -> None:
    from tests.blueprints import MINIMAL, blueprint

    with_b = assembly(blueprint(ACCOUNTING_B))
    moved = diff_assemblies(with_b, assembly(blueprint(ACCOUNTING_C)))
    [fails] = [c for c in moved.changes if c.action == "fail"]
    assert (fails.stack, fails.type, fails.level) == ("t-cluster-accounting", "AWS::EC2::Subnet", "error")
    assert fails.name.endswith("Subnet2") and fails.causes == ["AvailabilityZone", "CidrBlock"]
    assert moved.exit_code == 1

    off = diff_assemblies(with_b, assembly(MINIMAL))
    accounting = [c for c in off.changes if c.stack == "t-cluster-accounting"]
    assert [(c.action, c.level) for c in accounting] == [("leave", "warning")]
    assert [c for c in off.changes if c.action in ("remove", "fail")] == []
    assert off.exit_code == 0


@pytest.mark.synth
def test_cli_diff_and_plan_refuse_a_blueprint_with_synthesis_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fmcluster.features.node.stack_image as stack_image
    from fmcluster.cli import app
    from fmcluster.features.node.plan_bake import ParentImage

    # a synthesis error (an error annotation, as an image without a known parent gets): the examples have none
    monkeypatch.setattr(stack_image, "parent_image", lambda *a: ParentImage("unknown", None, problem="test: no parent known"))
    bake = tmp_path / "p6-b200.yaml"
    bake.write_text((Path(__file__).parent.parent / "blueprints" / "p6-b200.yaml").read_text())
    monkeypatch.chdir(tmp_path)  # no cdk.json / cdk.context.json above the blueprint or the working directory
    r = run(str(bake), str(bake))
    assert r.exit_code == 2, r.stdout
    assert f"{bake}: synthesis failed with 1 error(s)" in r.stderr
    assert "image for compute group(s) b200: test: no parent known" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    plan = CliRunner().invoke(app, ["plan", str(bake)])
    assert plan.exit_code == 1 and "test: no parent known" in plan.stderr


# ---- the orchestrator's own update policies on its cluster resource (issue 25) ------------------------------
def _pcluster_updates(r: DiffReport) -> dict[str, str]:
    [cluster] = r.of_type("Custom::PclusterCluster")
    return {u["setting"]: u["kind"] for u in cluster.orchestrator_updates}


PCLUSTER_CHANGES = [
    # ParallelCluster refuses a head-node type or OS change (UNSUPPORTED): the stack update fails -> exit 1.
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.8xlarge"}}},
     {"HeadNode.InstanceType": "fails"}, "fail", "error"),
    ({"software": {"os": "amazon-linux-2023"}}, {"Image.Os": "fails"}, "fail", "error"),
    # Another instance type is another compute resource (named after the type): removing one needs the compute fleet
    # stopped (RESIZE_UPDATE_STRATEGY_ON_REMOVE with QueueUpdateStrategy DRAIN); the head-node scripts that change
    # with it (topology) do not fail the update (they are routed through SSM, so OnNodeStart/OnNodeConfigured stay).
    ({"compute": [{**DEFAULT["compute"][0], "instance_type": "p5e.48xlarge"}]},
     {"Scheduling.SlurmQueues[gpu].ComputeResources": "needs_stop"}, "update", "warning"),
    # A tag is applied in place outside the ADC Regions (SUPPORTED_UNLESS_ADC): nothing to show, exit 0.
    ({"tags": {"owner": "ml-infra"}}, {}, "update", "info"),
]


@pytest.mark.parametrize(("patch", "updates", "action", "level"), PCLUSTER_CHANGES,
                         ids=["head-node-type", "os", "queue-instance-type", "tag"])
def test_parallelcluster_update_policies_judge_its_cluster(patch: dict[str, Any], updates: dict[str, str], action: str,
                                                           level: str) -> None:
    r = diff_to(patch)
    [cluster] = r.of_type("Custom::PclusterCluster")
    found = _pcluster_updates(r)
    assert {k: v for k, v in found.items() if k in updates} == updates
    assert (cluster.action, cluster.level) == (action, level)
    assert r.exit_code == (1 if level == "error" else 0)
    if updates:
        assert next(iter(updates)) in render_text(r)
        # --json: the cluster's problem carries each verdict as its value and ParallelCluster's update doc as source
        [problem] = [p for p in r.problems() if p.path == f"{cluster.stack}/{cluster.name}"]
        assert {k: v["verdict"] for k, v in problem.value.items() if k in updates} == updates
        assert all(v["old"] != v["new"] for k, v in problem.value.items() if k in updates)
        assert problem.source is not None and PCLUSTER_UPDATE_DOC in problem.source


# ---- expressions that name the same value, and values fmcluster cannot resolve (issue 25) -----------------------------
def _pcluster(subnet: Any) -> dict[str, Any]:
    """A ParallelCluster cluster resource whose head node's subnet (UNSUPPORTED: any change fails) is ``subnet``."""
    return res("Custom::PclusterCluster", {"ServiceToken": "arn:aws:lambda:us-east-1:1:function:p", "ClusterName": "c",
                                           "ClusterConfiguration": {"HeadNode": {"InstanceType": "m7i.4xlarge",
                                                                                 "Networking": {"SubnetId": subnet}}}})


_SUBNETS = {n: res("AWS::EC2::Subnet", {"VpcId": "vpc-1", "CidrBlock": c}) for n, c in
            (("Gpu", "10.0.0.0/24"), ("Other", "10.0.1.0/24"))}


@pytest.mark.parametrize(("old_subnet", "new_subnet", "expected"), [
    # The same subnet written as Ref and as GetAtt SubnetId (what Ref returns): no change. Before, the two
    # expressions compared unequal and ParallelCluster's UNSUPPORTED policy made it a false UPDATE FAILS (exit 1).
    ({"Ref": "Gpu"}, {"Fn::GetAtt": ["Gpu", "SubnetId"]}, None),
    # An export no stack of the app makes, renamed: its value cannot be known offline -> cannot tell, a warning.
    ({"Fn::ImportValue": "corp-network:GpuSubnet"}, {"Fn::ImportValue": "corp-network:GpuSubnetV2"},
     ("update", "warning", "cannot_tell", 0)),
    # Another subnet of the app: a real change, still refused.
    ({"Ref": "Gpu"}, {"Ref": "Other"}, ("fail", "error", "fails", 1)),
], ids=["ref-vs-getatt", "external-export-renamed", "another-subnet"])
def test_the_orchestrator_judges_resolved_values(old_subnet: Any, new_subnet: Any,
                                                 expected: tuple[str, str, str, int] | None) -> None:
    old = Assembly.from_templates({"s": tpl({**_SUBNETS, "Cluster": _pcluster(old_subnet)})}, "us-east-1")
    new = Assembly.from_templates({"s": tpl({**_SUBNETS, "Cluster": _pcluster(new_subnet)})}, "us-east-1")
    r = diff_assemblies(old, new)
    clusters = r.of_type("Custom::PclusterCluster")
    if expected is None:
        assert (clusters, r.exit_code) == ([], 0)
        return
    [cluster] = clusters
    assert (cluster.action, cluster.level, _pcluster_updates(r)["HeadNode.Networking.SubnetId"], r.exit_code) == expected
    if expected[2] == "cannot_tell":
        assert "Fn::ImportValue corp-network:GpuSubnet" in cluster.orchestrator_updates[0]["text"]


def test_cli_json_input_error_names_the_side_it_is_about(tmp_path: Path) -> None:
    """A folder that is not a cloud assembly: the JSON problem's file is that folder (README: ``file`` the refused path)."""
    folder = tmp_path / "not-an-assembly"
    folder.mkdir()
    for old, new in ((folder, ROOT / "blueprints" / "default.yaml"), (FIXTURES / "old", folder)):
        r = run(str(old), str(new), "--json")
        assert r.exit_code == 2
        [p] = json.loads(r.stdout)["problems"]
        assert (p["file"], p["rule_id"]) == (str(folder), "input") and p["message"].startswith(f"{folder}: not a cloud assembly")
