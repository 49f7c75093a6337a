"""AWS PCS rules."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint, OrchestratorSpec
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule


@rule("R-PCS-1", source="botocore data/pcs/2023-02-10/service-2.json CreateComputeNodeGroupRequest.computeNodeGroupName "
      "(3-25 characters); fmcluster names the login node group 'login'", scope="cluster", orchestrators=("pcs",))
def pcs_group_names(rc: ResolvedCluster) -> Iterator[Violation]:
    for g in rc.groups:
        if len(g.name) < 3:
            yield f"{g.path}.name", f"too short for a PCS compute node group, got {g.name!r}; allowed 3-25 characters"
        elif g.name in rc.profile.reserved_group_names:
            yield f"{g.path}.name", f"name reserved for the PCS login node group, got {g.name!r}; allowed any other name"


@rule("R-PCS-2", level="warning", orchestrators=("pcs",),
      source="https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ami_pcs-ready-dlami.html (PCS-ready "
      "images carry the PCS agent and Slurm); https://docs.aws.amazon.com/pcs/latest/userguide/cng-node-lifecycle-actions.html (node "
      "lifecycle actions need PCS agent 1.5.0-1 or later); the OS of official and bake modes is R-IMG-3's")
def pcs_custom_ami_agent(bp: Blueprint) -> Iterator[Violation]:
    """A custom AMI on PCS must be PCS-ready: fmcluster cannot check its agent offline, so this only warns."""
    image = bp.software.image
    if image.mode == "custom":
        yield "software.image.ami_id", (
            "a custom AMI on AWS PCS must carry the PCS agent 1.5.0-1 or later and Slurm (node lifecycle actions need it), "
            f"got {image.ami_id!r}, which fmcluster cannot inspect offline; "
            "allowed an AMI built from the PCS-ready DLAMI (or use mode bake, which builds from it)"
        )


PCS_SIZE_DOC = "https://docs.aws.amazon.com/pcs/latest/userguide/working-with_clusters_size.html"
#: Compute nodes each AWS PCS cluster size manages (the AWS::PCS::Cluster resource schema, Size).
PCS_SIZE_MAX_NODES = {"SMALL": 32, "MEDIUM": 512, "LARGE": 2048}


@rule("R-PCS-5", source=f"{PCS_SIZE_DOC} (SMALL up to 32 nodes, MEDIUM 512, LARGE 2048); the AWS::PCS::Cluster "
      "resource schema (Size)", orchestrators=("pcs",))
def pcs_size_fits_node_count(bp: Blueprint) -> Iterator[Violation]:
    """The PCS cluster size bounds the compute nodes its Slurm controller manages: the sum of every
    group's ``count`` (its maximum) must fit."""
    size = bp.orchestrator.pcs.size
    nodes = sum(g.count for g in bp.compute)
    limit = PCS_SIZE_MAX_NODES[size]
    if nodes <= limit:
        return
    bigger = [(s, n) for s, n in PCS_SIZE_MAX_NODES.items() if n >= nodes]
    allowed = " or ".join(f"{s} (up to {n})" for s, n in bigger)
    if bigger:
        yield "orchestrator.pcs.size", (
            f"PCS size {size} manages up to {limit} compute nodes, got {nodes} nodes (sum of compute counts); "
            f"allowed {allowed} - did you mean {bigger[0][0]}?"
        )
    else:
        largest = max(PCS_SIZE_MAX_NODES.values())
        yield "orchestrator.pcs.size", (
            f"PCS size {size} manages up to {limit} compute nodes, got {nodes} nodes (sum of compute counts); "
            f"allowed at most {largest} nodes with LARGE - lower the counts or split the cluster"
        )


PCS_EFA_SAMPLE = "awslabs/awsome-distributed-ai architectures/aws-pcs/assets/add-cng-p6-b300.yaml"
PCS_EFA_LT_DOC = "https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html"


@rule("R-PCS-3",
      source=f"{PCS_EFA_SAMPLE} (AWS's PCS sample: 'PCS requires InterfaceType: efa (not efa-only) to propagate the "
      f"interface configuration to the launch instances request'); {PCS_EFA_LT_DOC} (the PCS user guide shows only "
      "efa); no primary source shows efa-only working on PCS", scope="orchestrator", orchestrators=("pcs",))
def pcs_efa_only_refused(orch: OrchestratorSpec) -> Iterator[Violation]:
    """PCS launch templates use ``efa`` on every EFA card: ``efa-only`` is refused until a primary source
    shows that PCS passes it on (the subnet then needs one more address per EFA card, R-SUBNET-1)."""
    if orch.pcs.efa_interface_type == "efa-only":
        yield "orchestrator.pcs.efa_interface_type", (
            "PCS does not pass efa-only interfaces on to the instance launch (AWS's PCS sample requires efa), "
            "got efa-only; allowed efa (one subnet IPv4 address per EFA card) - did you mean efa?"
        )
