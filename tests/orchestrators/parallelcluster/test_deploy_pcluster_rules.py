"""Deploy-time refusals as tables: what ParallelCluster's own validators refuse, and the same kinds on every
orchestrator (reserved names, directories and tag keys; ARNs of another Region or partition; managed
services a Region does not offer; integers given as booleans or text).

Each row: blueprint fragment -> (YAML path, exact message, rule id). ``tests/orchestrators/parallelcluster/test_pcluster_validators.py``
runs ParallelCluster's validators themselves on the bad ParallelCluster rows and asserts they fail there too.
"""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules.reserved_and_regional import PCLUSTER_RESERVED_MOUNT_DIRS
from tests.blueprints import blueprint_text

KEY = "1234abcd-12ab-34cd-56ef-1234567890ab"


def errors(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    return [(p.path, p.message, p.rule_id) for p in exc.value.errors]


def warnings(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    # R-PCS-2: the custom AMI of the PCS fragment below must carry the PCS agent (tests/test_orchestrator_rules.py)
    """Warnings of ``patch`` except the image rules' (R-IMG-*: HyperPod's and PCS's official images float and are
    unverified; tests/features/node/test_image.py) and R-CTR-11 (their official images have no pyxis for the first
    FSDP job; tests/features/containers/test_first_job_everywhere.py)."""
    return [(p.path, p.message, p.rule_id) for p in load_blueprint_text(blueprint_text(patch)).warnings
            if not (p.rule_id or "").startswith(("R-IMG-", "R-BAKE-", "R-PCS-2", "R-CTR-11"))]


def group(**kw: Any) -> dict[str, Any]:
    return {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, **kw}]}


HP = {"orchestrator": {"kind": "hyperpod"}}
PCS = {"orchestrator": {"kind": "pcs", "pcs": {"efa_interface_type": "efa"}},
       "software": {"os": "ubuntu-24.04", "image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}}
HEAD_400 = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 400}]}

#: Bad ParallelCluster blueprints: ParallelCluster's validators refuse each (tests/orchestrators/parallelcluster/test_pcluster_validators.py).
PCLUSTER_ERRORS: list[tuple[str, dict[str, Any], str, str, str]] = [
    ("queue-default", group(name="default"), "compute[0].name",
     "name reserved by ParallelCluster (its NameValidator refuses a queue named 'default'), got 'default'; allowed any "
     "other name, e.g. 'gpu'", "R-PC-3"),
    ("lustre-on-opt", {"storage": {"lustre": {"mount_point": "/opt"}}}, "storage.lustre.mount_point",
     "mounting FSx for Lustre there would hide a system directory (ParallelCluster reserves it too), got '/opt'; "
     "allowed a directory of its own such as /fsx or /opt/fsx", "R-PATH-1"),
    ("lustre-on-opt-slurm", {"storage": {"lustre": {"mount_point": "/opt/slurm"}}}, "storage.lustre.mount_point",
     "mounting FSx for Lustre there would hide a system directory (ParallelCluster reserves it too), got '/opt/slurm'; "
     "allowed a directory of its own such as /fsx or /opt/fsx", "R-PATH-1"),
    ("parallelcluster-tag", {"tags": {"parallelcluster:team": "ml"}}, "tags.parallelcluster:team",
     "tag key prefix 'parallelcluster:' is reserved by ParallelCluster, got 'parallelcluster:team'; allowed a key not "
     "starting with parallelcluster:", "R-PC-4"),
    ("head-node-memory", {**HEAD_400, "orchestrator": {"parallelcluster": {"head_node_instance_type": "c7i.xlarge"}}},
     "orchestrator.parallelcluster.head_node_instance_type",
     "head node too small for 400 compute nodes, got c7i.xlarge (8 GiB); allowed a type with at least 16 GiB of memory",
     "R-PC-1"),
    ("head-node-memory-2000", {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 1000},
                                           {"name": "gpu2", "instance_type": "p5.48xlarge", "count": 1000}],
                               "orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.large"}}},
     "orchestrator.parallelcluster.head_node_instance_type",
     "head node too small for 2000 compute nodes, got m7i.large (8 GiB); allowed a type with at least 16 GiB of memory",
     "R-PC-1"),
]

#: The same kinds on every orchestrator.
DEPLOY_ERRORS: list[tuple[dict[str, Any], str, str, str]] = [
    (group(scratch_path="/tmp"), "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide a system directory (ParallelCluster reserves it too), got '/tmp'; "
     "allowed a directory of its own such as /scratch or /opt/scratch", "R-PATH-1"),
    ({**group(scratch_path="/var/"), **HP}, "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide a system directory (ParallelCluster reserves it too), got '/var/'; "
     "allowed a directory of its own such as /scratch or /opt/scratch", "R-PATH-1"),
    ({**group(scratch_path="/."), **PCS, "storage": {"lustre": None}}, "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide the root file system, got '/.'; allowed a directory of its own "
     "such as /scratch or /opt/scratch", "R-PATH-1"),
    (group(scratch_path="/home"), "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide the users' home directories (shared from the head node on "
     "ParallelCluster), got '/home'; allowed a directory of its own such as /scratch or /opt/scratch", "R-PATH-1"),
    (group(scratch_path="/proc/nvme"), "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide inside the kernel file system /proc, got '/proc/nvme'; allowed a "
     "directory of its own such as /scratch or /opt/scratch", "R-PATH-1"),
    (group(scratch_path="/opt/fmcluster/scratch"), "compute[0].scratch_path",
     "mounting the local NVMe scratch there would hide fmcluster's node directory /opt/fmcluster (or a directory holding "
     "it), got '/opt/fmcluster/scratch'; allowed a directory of its own such as /scratch or /opt/scratch", "R-PATH-1"),
    ({"storage": {"lustre": {"mount_point": "/usr"}}, **HP}, "storage.lustre.mount_point",
     "mounting FSx for Lustre there would hide a system directory (ParallelCluster reserves it too), got '/usr'; allowed "
     "a directory of its own such as /fsx or /opt/fsx", "R-PATH-1"),
    ({"tags": {"fmcluster:blueprint": "other"}}, "tags.fmcluster:blueprint",
     "tag key prefix 'fmcluster:' is reserved for fmcluster's own tags, got 'fmcluster:blueprint'; allowed a key not "
     "starting with fmcluster:", "R-TAG-1"),
    ({"tags": {"fmcluster:stack": "x"}, **PCS}, "tags.fmcluster:stack",
     "tag key prefix 'fmcluster:' is reserved for fmcluster's own tags, got 'fmcluster:stack'; allowed a key not "
     "starting with fmcluster:", "R-TAG-1"),
    ({"storage": {"checkpoints": {"kms_key_arn": f"arn:aws:kms:us-west-2:123456789012:key/{KEY}"}}},
     "storage.checkpoints.kms_key_arn",
     f"KMS key in another Region (us-west-2), got 'arn:aws:kms:us-west-2:123456789012:key/{KEY}'; allowed a key in "
     "us-east-1, the blueprint's Region (a multi-Region key's replica in us-east-1 has an ARN with us-east-1)", "R-ARN-1"),
    ({"storage": {"lustre": {"kms_key_arn": f"arn:aws:kms:eu-west-1:123456789012:key/{KEY}"}}}, "storage.lustre.kms_key_arn",
     f"KMS key in another Region (eu-west-1), got 'arn:aws:kms:eu-west-1:123456789012:key/{KEY}'; allowed a key in "
     "us-east-1, the blueprint's Region (a multi-Region key's replica in us-east-1 has an ARN with us-east-1)", "R-ARN-1"),
    ({"storage": {"lustre": {"kms_key_arn": f"arn:aws-cn:kms:us-east-1:123456789012:key/{KEY}"}}},
     "storage.lustre.kms_key_arn",
     f"KMS key ARN of partition 'aws-cn', got 'arn:aws-cn:kms:us-east-1:123456789012:key/{KEY}'; allowed an ARN of "
     "partition 'aws' (region us-east-1 is in aws)", "R-ARN-1"),
    ({**HP, "network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"},
      "orchestrator": {"kind": "hyperpod", "hyperpod": {
        "orchestration": "eks", "eks_cluster_arn": "arn:aws-us-gov:eks:us-east-1:123456789012:cluster/k8s"}}},
     "orchestrator.hyperpod.eks_cluster_arn",
     "EKS cluster ARN of partition 'aws-us-gov', got 'arn:aws-us-gov:eks:us-east-1:123456789012:cluster/k8s'; allowed an "
     "ARN of partition 'aws' (region us-east-1 is in aws)", "R-ARN-1"),
    ({"region": "eu-north-1", "availability_zone": "eu-north-1a", "observability": {"metrics": "managed", "alert_email": "oncall@example.com"}},
     "observability.metrics",
     "Amazon Managed Grafana is not offered in eu-north-1, got 'managed'; allowed self_hosted or none here, or a Region "
     "offering it: ap-northeast-1, ap-northeast-2, ap-southeast-1, ap-southeast-2, eu-central-1, eu-west-1, eu-west-2, "
     "us-east-1, us-east-2, us-gov-east-1, us-gov-west-1, us-west-2", "R-REGION-2"),
]

#: Integers given as booleans or text (YAML): refused by the model, with the value YAML read.
WHOLE_NUMBERS: list[tuple[dict[str, Any], str, str]] = [
    (group(count=True), "compute[0].count",
     "must be a whole number, got true (YAML reads true, false, yes, no, on and off as booleans); allowed an integer "
     "such as 4"),
    (group(count="4"), "compute[0].count", "must be a whole number, got the text '4'; allowed an integer without quotes, "
     "such as 4"),
    (group(min_count=False), "compute[0].min_count",
     "must be a whole number, got false (YAML reads true, false, yes, no, on and off as booleans); allowed an integer "
     "such as 4"),
    (group(threads_per_core=True), "compute[0].threads_per_core",
     "must be a whole number, got true (YAML reads true, false, yes, no, on and off as booleans); allowed an integer "
     "such as 4"),
    ({"storage": {"lustre": {"storage_capacity_gib": "1200"}}}, "storage.lustre.storage_capacity_gib",
     "must be a whole number, got the text '1200'; allowed an integer without quotes, such as 4"),
    ({"network": {"gpu_subnet_prefix_length": "20"}}, "network.gpu_subnet_prefix_length",
     "must be a whole number, got the text '20'; allowed an integer without quotes, such as 4"),
    ({"orchestrator": {"parallelcluster": {"scaledown_idletime_minutes": True}}},
     "orchestrator.parallelcluster.scaledown_idletime_minutes",
     "must be a whole number, got true (YAML reads true, false, yes, no, on and off as booleans); allowed an integer "
     "such as 4"),
]

P5E_REGIONS = "ap-southeast-2, ap-southeast-3, eu-north-1, eu-west-2, sa-east-1, us-east-2, us-west-2"

WARNINGS: list[tuple[dict[str, Any], list[tuple[str, str, str]]]] = [
    (group(instance_type="p5e.48xlarge"), [
        ("compute[0].instance_type",
         "p5e.48xlarge was not offered in us-east-1 when EC2's offerings were recorded, got 'p5e.48xlarge'; allowed a type "
         f"offered there, or a Region offering it: {P5E_REGIONS} - check with: aws ec2 describe-instance-type-offerings "
         "--location-type region", "R-REGION-3")]),
    ({**group(instance_type="p5e.48xlarge"), **PCS}, [
        ("compute[0].instance_type",
         "p5e.48xlarge was not offered in us-east-1 when EC2's offerings were recorded, got 'p5e.48xlarge'; allowed a type "
         f"offered there, or a Region offering it: {P5E_REGIONS} - check with: aws ec2 describe-instance-type-offerings "
         "--location-type region", "R-REGION-3")]),
    ({**HEAD_400, "orchestrator": {"parallelcluster": {"head_node_instance_type": "i4i.xlarge"}}}, [
        ("orchestrator.parallelcluster.head_node_instance_type",
         "memory of i4i.xlarge unknown to fmcluster, so ParallelCluster's head-node memory check (an error) was not run, "
         "got i4i.xlarge; allowed a type with at least 16 GiB of memory for 400 compute nodes - m, c and r types "
         "(generation 5+) and t2, t3, t3a and t4g types are checked", "R-PC-5")]),
    ({"orchestrator": {"parallelcluster": {"deletion_policy": "Retain"}}}, [
        ("orchestrator.parallelcluster.deletion_policy",
         "cdk destroy keeps this cluster: its head node and compute nodes keep running and billing, and the network "
         "stack cannot be deleted while they use its EFA security group, got 'Retain'; allowed 'Delete' (the "
         "default), or delete the cluster with pcluster delete-cluster --cluster-name <ClusterName> before cdk "
         "destroy of the network stack (docs/operations.md, Teardown)", "R-PC-6")]),
    ({**group(capacity={"type": "training_plan", "arn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p"}), **HP}, [
        ("compute[0].capacity.arn",
         "training plan in another Region (us-west-2), got 'arn:aws:sagemaker:us-west-2:123456789012:training-plan/p'; "
         "allowed one in us-east-1, the blueprint's Region", "R-ARN-2")]),
    ({"observability": {"alert_topic_arn": "arn:aws:sns:eu-west-1:123456789012:alerts"}}, [
        ("observability.alert_topic_arn",
         "SNS topic in another Region (eu-west-1), got 'arn:aws:sns:eu-west-1:123456789012:alerts'; allowed one in "
         "us-east-1, the blueprint's Region", "R-ARN-2")]),
    ({**group(capacity={"type": "odcr", "resource_group_arn": "arn:aws:resource-groups:us-east-2:123456789012:group/g"})}, [
        ("compute[0].capacity.resource_group_arn",
         "capacity reservation resource group in another Region (us-east-2), got "
         "'arn:aws:resource-groups:us-east-2:123456789012:group/g'; allowed one in us-east-1, the blueprint's Region",
         "R-ARN-2")]),
]

#: Accepted: the neighbours of every refused value.
ACCEPTED: list[dict[str, Any]] = [
    group(name="defaults"),
    {**group(name="default"), **HP},  # only ParallelCluster reserves the queue name
    {"storage": {"lustre": {"mount_point": "/opt/fsx"}}},
    {"storage": {"lustre": {"mount_point": "/home"}}, **PCS},  # a shared /home on FSx, as HyperPod's and PCS's samples do
    group(scratch_path="/home/scratch"),
    group(scratch_path="/opt/scratch"),
    group(scratch_path="/local/nvme"),
    {"tags": {"team": "ml", "project:fmcluster": "x"}},
    {**PCS, "tags": {"parallelcluster:x": "y"}},  # reserved by ParallelCluster only
    {"storage": {"checkpoints": {"kms_key_arn": f"arn:aws:kms:us-east-1:123456789012:key/{KEY}"}}},
    {"region": "eu-north-1", "availability_zone": "eu-north-1a", "observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"}},
    {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 400}]},  # m7i.4xlarge: 64 GiB
    group(count=4, min_count=0, threads_per_core=1),
    {**group(instance_type="p5e.48xlarge"), "region": "us-east-2", "availability_zone": "us-east-2a"},
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), [row[1:] for row in PCLUSTER_ERRORS],
                         ids=[row[0] for row in PCLUSTER_ERRORS])
def test_parallelcluster_refusals_are_fmcluster_errors(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    assert errors(patch) == [(path, message, rule_id)]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), DEPLOY_ERRORS)
def test_deploy_refusals_on_every_orchestrator(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    assert errors(patch) == [(path, message, rule_id)]


@pytest.mark.parametrize(("patch", "path", "message"), WHOLE_NUMBERS)
def test_integers_are_not_booleans_or_text(patch: dict[str, Any], path: str, message: str) -> None:
    assert [(p, m) for p, m, _ in errors(patch)] == [(path, message)]


@pytest.mark.parametrize(("patch", "expected"), WARNINGS)
def test_unverifiable_refusals_warn(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert warnings(patch) == expected


@pytest.mark.parametrize("patch", ACCEPTED)
def test_neighbours_are_accepted(patch: dict[str, Any]) -> None:
    assert warnings(patch) == []


@pytest.mark.parametrize("directory", PCLUSTER_RESERVED_MOUNT_DIRS)
def test_every_reserved_directory_is_refused_for_lustre_and_scratch(directory: str) -> None:
    assert [(p, r) for p, _, r in errors({"storage": {"lustre": {"mount_point": directory + "/"}}})] == [
        ("storage.lustre.mount_point", "R-PATH-1")]
    assert [(p, r) for p, _, r in errors({**group(scratch_path=directory), "storage": {"lustre": None}})] == [
        ("compute[0].scratch_path", "R-PATH-1")]


def test_reserved_directories_are_parallelclusters_list() -> None:
    """The list is ParallelCluster 3.16.1's SharedStorageMountDirValidator list (read from the installed package
    when the ParallelCluster venv exists)."""
    import re

    from tests.conftest import ROOT

    source = next((ROOT / ".venv-pcluster" / "lib").glob("python*/site-packages/pcluster/validators/cluster_validators.py"),
                  None)
    if source is None:
        pytest.skip("make setup creates .venv-pcluster")
    text = source.read_text()
    start = text.index("reserved_directories = [", text.index("class SharedStorageMountDirValidator"))
    listed = re.findall(r'^\s*"(/[^"]*)",', text[start:text.index("if not mount_dir", start)], re.MULTILINE)
    assert tuple(listed) == PCLUSTER_RESERVED_MOUNT_DIRS


def test_managed_metrics_regions_come_from_botocore() -> None:
    from fmcluster.catalog.regions import partition_of, service_regions

    assert "us-east-1" in service_regions("grafana") and "eu-north-1" not in service_regions("grafana")
    assert "eu-north-1" in service_regions("aps")
    assert (partition_of("us-east-1"), partition_of("cn-north-1"), partition_of("us-gov-west-1")) == (
        "aws", "aws-cn", "aws-us-gov")


def test_hyperpod_types_are_judged_by_their_own_rule_not_ec2_offerings() -> None:
    assert [r for _, _, r in warnings({**group(instance_type="p5e.48xlarge"), **HP})] == ["R-HP-4"]


def _tags(n: int) -> dict[str, Any]:
    return {"tags": {f"k{i}": "v" for i in range(n)}}


#: Tag counts at ParallelCluster's limit: fmcluster adds fmcluster:blueprint to the config's Tags (R-PC-7).
TAG_COUNTS: list[tuple[dict[str, Any], list[tuple[str, str, str | None]]]] = [
    (_tags(39), []),
    (_tags(40), [("tags", "too many tags for ParallelCluster: the cluster configuration gets 41 Tags (these 40 and the 1 "
                  "fmcluster adds: fmcluster:blueprint) and ParallelCluster refuses more than 40 per compute resource, "
                  "got 40 tags; allowed at most 39 tags (organisation default tags included)", "R-PC-7")]),
    ({**_tags(40), **HP}, []),  # SageMaker's CreateCluster takes 50 (test_tag_limits_of_the_other_apis)
    ({**_tags(40), **PCS}, []),
]


@pytest.mark.parametrize(("patch", "expected"), TAG_COUNTS)
def test_tag_count_against_parallelclusters_limit(patch: dict[str, Any], expected: list[Any]) -> None:
    got = errors(patch) if expected else []
    if not expected:
        load_blueprint_text(blueprint_text(patch))  # accepted
    assert got == expected


def test_tag_limit_is_parallelclusters_constant() -> None:
    """R-PC-7's limit is ``MAX_TAGS_COUNT`` of the installed ParallelCluster (when the ParallelCluster venv exists)."""
    import re

    from fmcluster.orchestrators.parallelcluster.rules import PCLUSTER_MAX_TAGS
    from tests.conftest import ROOT

    source = next((ROOT / ".venv-pcluster" / "lib").glob("python*/site-packages/pcluster/constants.py"), None)
    if source is None:
        pytest.skip("make setup creates .venv-pcluster")
    assert re.findall(r"^MAX_TAGS_COUNT = (\d+)", source.read_text(), re.MULTILINE) == [str(PCLUSTER_MAX_TAGS)]


M7I = ("m7i.large, m7i.xlarge, m7i.2xlarge, m7i.4xlarge, m7i.8xlarge, m7i.12xlarge, m7i.16xlarge, m7i.24xlarge, "
       "m7i.48xlarge, m7i.metal-24xl, m7i.metal-48xl")


def _unknown_ec2(got: str, hint: str) -> str:
    import botocore

    return (f"not an EC2 instance type botocore {botocore.__version__} lists, got {got!r}; allowed a listed type{hint} "
            "(EC2 refuses an unknown type at deploy; a type newer than the installed botocore is listed once botocore "
            "is updated)")


def _pc(**kw: Any) -> dict[str, Any]:
    return {"orchestrator": {"parallelcluster": kw}}


#: Head and login node types: EC2's list (R-TYPE-1, a warning: the list is not closed), the head node's memory
#: where ParallelCluster errors (R-PC-1: nodes/25 + 0.6 GiB; t3.nano has 0.5).
HELPER_TYPES: list[tuple[dict[str, Any], list[tuple[str, str, str | None]]]] = [
    (_pc(head_node_instance_type="m7i.5xlarge"), [
        ("orchestrator.parallelcluster.head_node_instance_type", _unknown_ec2("m7i.5xlarge", f", for m7i: {M7I}"),
         "R-TYPE-1")]),
    (_pc(head_node_instance_type="m7i.4xlarge"), []),
    (_pc(login_instance_type="m7i.3xlarge"), [
        ("orchestrator.parallelcluster.login_instance_type", _unknown_ec2("m7i.3xlarge", f", for m7i: {M7I}"),
         "R-TYPE-1")]),
    ({**PCS, "orchestrator": {**PCS["orchestrator"], "pcs": {**PCS["orchestrator"]["pcs"],  # type: ignore[dict-item]
                                                           "login_instance_type": "m7i.3xlarge"}}}, [
        ("orchestrator.pcs.login_instance_type", _unknown_ec2("m7i.3xlarge", f", for m7i: {M7I}"), "R-TYPE-1")]),
    (_pc(head_node_instance_type="qqqq.xlarge"), [  # no such family: no size list, no guess
        ("orchestrator.parallelcluster.head_node_instance_type", _unknown_ec2("qqqq.xlarge", ""), "R-TYPE-1"),
        ("orchestrator.parallelcluster.head_node_instance_type",
         "memory of qqqq.xlarge unknown to fmcluster, so ParallelCluster's head-node memory check (an error) was not "
         "run, got qqqq.xlarge; allowed a type with at least 0.68 GiB of memory for 2 compute nodes - m, c and r types "
         "(generation 5+) and t2, t3, t3a and t4g types are checked", "R-PC-5")]),
]

HEAD_MEMORY: list[tuple[str, int, list[tuple[str, str, str | None]]]] = [
    ("t3.nano", 1, [("orchestrator.parallelcluster.head_node_instance_type",
                     "head node too small for 1 compute nodes, got t3.nano (0.5 GiB); allowed a type with at least "
                     "0.64 GiB of memory", "R-PC-1")]),
    ("t3.nano", 4, [("orchestrator.parallelcluster.head_node_instance_type",
                     "head node too small for 4 compute nodes, got t3.nano (0.5 GiB); allowed a type with at least "
                     "0.76 GiB of memory", "R-PC-1")]),
    ("t3.micro", 10, []),     # 1 GiB >= 10/25 + 0.6
    ("t3.micro", 11, [("orchestrator.parallelcluster.head_node_instance_type",
                       "head node too small for 11 compute nodes, got t3.micro (1 GiB); allowed a type with at least "
                       "1.04 GiB of memory", "R-PC-1")]),
    ("t3.large", 185, []),    # 8 GiB >= 185/25 + 0.6
    ("t3.large", 186, [("orchestrator.parallelcluster.head_node_instance_type",
                        "head node too small for 186 compute nodes, got t3.large (8 GiB); allowed a type with at least "
                        "8.04 GiB of memory", "R-PC-1")]),
]


def _problems(patch: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    try:
        found = list(load_blueprint_text(blueprint_text(patch)).warnings)
    except BlueprintError as e:
        found = list(e.problems)
    return [(p.path, p.message, p.rule_id) for p in found if p.rule_id in ("R-TYPE-1", "R-PC-1", "R-PC-5")]


@pytest.mark.parametrize(("patch", "expected"), HELPER_TYPES)
def test_helper_node_types_are_ec2s(patch: dict[str, Any], expected: list[Any]) -> None:
    assert _problems(patch) == expected


@pytest.mark.parametrize(("head", "nodes", "expected"), HEAD_MEMORY)
def test_head_node_memory_errors_where_parallelcluster_does(head: str, nodes: int, expected: list[Any]) -> None:
    """ParallelCluster 3.16.1 HeadNodeMemorySizeValidator: memory < min(nodes/25 + 0.6, 16) GiB is an error."""
    patch = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": nodes}],
             **_pc(head_node_instance_type=head)}
    assert _problems(patch) == expected
