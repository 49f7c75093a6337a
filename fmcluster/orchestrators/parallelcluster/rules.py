"""AWS ParallelCluster rules: what its own create-time validation refuses (each rule cites the validator,
aws/aws-parallelcluster 3.16.1 ``cli/src/pcluster/validators/*.py``; ``tools/pcluster_validate.py`` runs the validators
themselves on every generated config, and ``tests/orchestrators/parallelcluster/test_deploy_pcluster_rules.py`` asserts that fmcluster refuses each
case first)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, tag_count_parts
from fmcluster.catalog import cpu_architecture_of, get_instance, memory_gib_of
from fmcluster.catalog.software import known_bad
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule
from fmcluster.validation.rules.reserved_and_regional import PCLUSTER_VALIDATORS

#: ParallelCluster's reserved tag key prefix (``PCLUSTER_PREFIX`` in ``pcluster/constants.py``).
PCLUSTER_TAG_PREFIX = "parallelcluster:"


PCLUSTER_HEAD_MEMORY = ("aws/aws-parallelcluster 3.16.1 cli/src/pcluster/validators/cluster_validators.py "
                        "HeadNodeMemorySizeValidator (required GiB = min(nodes/25 + 0.6, 16), FailureLevel.ERROR)")


def _head_node_memory_needed(bp: Blueprint) -> tuple[str, float | None, int, float]:
    head = bp.orchestrator.parallelcluster.head_node_instance_type
    nodes = sum(g.count for g in bp.compute)
    return head, memory_gib_of(head), nodes, min(nodes / 25 + 0.6, 16.0)


@rule("R-PC-1", source=f"{PCLUSTER_HEAD_MEMORY}; memory of m/c/r types from their documented GiB per vCPU, of "
      "t2/t3/t3a/t4g types from EC2's table (fmcluster.catalog.memory_gib_of)", orchestrators=("parallelcluster",))
def head_node_memory(bp: Blueprint) -> Iterator[Violation]:
    """ParallelCluster refuses (an error) a head node with less than nodes/25 + 0.6 GiB (capped at 16 GiB),
    nodes being the sum of every queue's MaxCount; the memory is EC2's MemoryInfo.SizeInMiB / 1024 (t3.nano: 0.5 GiB,
    refused from 1 node). An error where ParallelCluster errors, wherever the head node's memory is known (m, c and r
    types of generation 5 and later, and t2, t3, t3a and t4g); R-PC-5 warns when it is not."""
    head, memory, nodes, required = _head_node_memory_needed(bp)
    if memory is not None and memory < required:
        yield "orchestrator.parallelcluster.head_node_instance_type", (
            f"head node too small for {nodes} compute nodes, got {head} ({memory:g} GiB); "
            f"allowed a type with at least {round(required, 2):g} GiB of memory"
        )


@rule("R-PC-5", level="warning", source=f"{PCLUSTER_HEAD_MEMORY}; fmcluster knows the memory of m/c/r (generation 5+) "
      "and t2/t3/t3a/t4g types only",
      orchestrators=("parallelcluster",))
def head_node_memory_unknown(bp: Blueprint) -> Iterator[Violation]:
    """A warning where R-PC-1 cannot decide: ParallelCluster would error below its minimum, and fmcluster does not know
    this type's memory (an unknown name is also R-TYPE-1's)."""
    head, memory, nodes, required = _head_node_memory_needed(bp)
    if memory is None:
        yield "orchestrator.parallelcluster.head_node_instance_type", (
            f"memory of {head} unknown to fmcluster, "
            f"so ParallelCluster's head-node memory check (an error) was not run, got {head}; "
            f"allowed a type with at least {round(required, 2):g} GiB of memory for {nodes} compute nodes "
            "- m, c and r types (generation 5+) and t2, t3, t3a and t4g types are checked"
        )


@rule("R-PC-6", level="warning", source="https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html "
      "(DeletionPolicy Retain: the cluster is kept when the custom resource is deleted; its network and storage must "
      "then be retained too)", orchestrators=("parallelcluster",))
def cluster_kept_on_destroy(bp: Blueprint) -> Iterator[Violation]:
    """A kept cluster (``deletion_policy: Retain``) outlives ``cdk destroy``: its instances keep billing and keep the
    network stack's EFA security group in use, so ``cdk destroy --all`` fails there until the cluster is deleted."""
    if bp.orchestrator.parallelcluster.deletion_policy == "Retain":
        yield "orchestrator.parallelcluster.deletion_policy", (
            "cdk destroy keeps this cluster: its head node and compute nodes keep running and billing, and the network "
            "stack cannot be deleted while they use its EFA security group, got 'Retain'; allowed 'Delete' (the "
            "default), or delete the cluster with pcluster delete-cluster --cluster-name <ClusterName> before cdk "
            "destroy of the network stack (docs/operations.md, Teardown)"
        )


@rule("R-PC-2", source="https://docs.aws.amazon.com/parallelcluster/latest/ug/HeadNode-v3.html (InstanceType: the "
      "head node architecture must be the same as the Slurm InstanceType architecture)", orchestrators=("parallelcluster",),
      suppressed_by=("R-CAP-9",))
def head_node_architecture(bp: Blueprint) -> Iterator[Violation]:
    """Suppressed when the compute groups mix architectures: no head node can fit, R-CAP-9 reports the mix."""
    head = bp.orchestrator.parallelcluster.head_node_instance_type
    head_arch = cpu_architecture_of(head)
    for i, g in enumerate(bp.compute):
        arch = get_instance(g.instance_type).cpu_architecture
        if head_arch is not None and arch != head_arch:
            yield "orchestrator.parallelcluster.head_node_instance_type", (
                f"head node architecture differs from compute[{i}] ({g.instance_type} is {arch}), got {head} "
                f"({head_arch}); allowed an {arch} head node type, e.g. {'m7g.4xlarge' if arch == 'arm64' else 'm7i.4xlarge'}"
            )
            return


@rule("R-PC-3", source=f"{PCLUSTER_VALIDATORS} NameValidator (queue names: 'default' is forbidden, "
      "'It is forbidden to use 'default' as a name.', FailureLevel.ERROR)", scope="cluster",
      orchestrators=("parallelcluster",))
def pcluster_reserved_queue_names(rc: ResolvedCluster) -> Iterator[Violation]:
    """ParallelCluster's NameValidator refuses the queue name ``default`` (Slurm's default partition
    keyword). Every compute group is one queue named after it. The names come from the profile."""
    for g in rc.groups:
        if g.name in rc.profile.reserved_group_names:
            yield f"{g.path}.name", (
                f"name reserved by ParallelCluster (its NameValidator refuses a queue named {g.name!r}), got {g.name!r}; "
                "allowed any other name, e.g. 'gpu'"
            )


@rule("R-PC-4", source="aws/aws-parallelcluster 3.16.1 cli/src/pcluster/schemas/common_schema.py validate_no_reserved_tag "
      "(\"The tag key prefix 'parallelcluster:' is reserved and cannot be used.\"), applied to the cluster's Tags",
      orchestrators=("parallelcluster",))
def pcluster_reserved_tags(bp: Blueprint) -> Iterator[Violation]:
    for key in bp.tags:
        if key.startswith(PCLUSTER_TAG_PREFIX):
            yield f"tags.{key}", (
                f"tag key prefix {PCLUSTER_TAG_PREFIX!r} is reserved by ParallelCluster, got {key!r}; "
                f"allowed a key not starting with {PCLUSTER_TAG_PREFIX}"
            )


#: ParallelCluster's limit on the tag keys of one compute resource: the cluster's ``Tags``, its queue's and its own
#: together (aws/aws-parallelcluster 3.16.1 ``cli/src/pcluster/constants.py`` ``MAX_TAGS_COUNT = 40``, "reserve some
#: tags for parallelcluster specified tags" of EC2's 50).
PCLUSTER_MAX_TAGS = 40


@rule("R-PC-7", source="aws/aws-parallelcluster 3.16.1 cli/src/pcluster/validators/tags_validators.py "
      "ComputeResourceTagsValidator (the union of the cluster's, the queue's and the compute resource's tag keys above "
      "constants.py MAX_TAGS_COUNT = 40 is FailureLevel.ERROR); fmcluster writes the cluster Tags only "
      "(orchestrators/parallelcluster/construct.py: its resolved tags)", scope="cluster",
      orchestrators=("parallelcluster",))
def pcluster_tag_count(rc: ResolvedCluster) -> Iterator[Violation]:
    """ParallelCluster refuses a compute resource with more than 40 tag keys. fmcluster writes no queue or compute
    resource tags, so each compute resource has the cluster's ``Tags``: the resolved tags (``rc.tags``: the blueprint's,
    organisation defaults merged in, plus those fmcluster adds, ``fmcluster:blueprint``). An error on ``tags``."""
    added = sorted(k for k in rc.tags if k not in rc.blueprint.tags)
    if len(rc.tags) > PCLUSTER_MAX_TAGS:
        own = len(rc.blueprint.tags)
        parts = tag_count_parts(own, rc.blueprint.tags_from_organisation)
        yield "tags", (
            f"too many tags for ParallelCluster: the cluster configuration gets {len(rc.tags)} Tags (these {own} "
            f"and the {len(added)} fmcluster adds: {', '.join(added)}) and ParallelCluster refuses more than "
            f"{PCLUSTER_MAX_TAGS} per compute resource, got {own} tags{parts}; allowed at most "
            f"{PCLUSTER_MAX_TAGS - len(added)} tags (organisation default tags included)"
        )


#: Slurm 25.11 topology/block power-down regression (catalog/data/software.yaml ``known_bad``).
BLOCK_POWER_DOWN = known_bad("slurm-block-powerdown")


@rule("R-KB-3", level="warning", scope="cluster", orchestrators=("parallelcluster",),
      source=f"catalog/data/software.yaml known_bad.{BLOCK_POWER_DOWN.key}: {'; '.join(BLOCK_POWER_DOWN.sources)}")
def block_topology_power_down(rc: ResolvedCluster) -> Iterator[Violation]:
    """ParallelCluster writes ``topology/block`` itself for a queue of an UltraServer type (aws-parallelcluster-cookbook
    PR 3002), and replaces a node by powering it down (as at a Capacity Block's start and end). Whether its 3.16
    cookbook carries the workaround of PR 3123 (``Topology=default:<BlockName>`` on the NodeName lines) is not
    verified, hence a warning."""
    slurm = next((p for p in rc.support if p.component == "slurm"), None)
    if slurm is None or not BLOCK_POWER_DOWN.matches({"slurm": slurm.version}):
        return
    for g in rc.groups:
        if g.instance.ultraserver_sizes:
            yield f"compute[{g.index}].instance_type", (
                f"known-bad: {BLOCK_POWER_DOWN.what}; ParallelCluster uses topology/block for {g.instance.name} and "
                f"runs Slurm {slurm.version} (whether it carries the workaround is not verified), got {g.instance.name} "
                f"on ParallelCluster {rc.blueprint.orchestrator.parallelcluster.version}; allowed {BLOCK_POWER_DOWN.fix}, "
                "or 'scontrol reconfigure' after nodes of the queue power up")
