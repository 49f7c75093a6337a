"""Orchestrator profiles: everything fmcluster knows about one orchestrator, in one place.

A profile holds the facts that rules, constructs, templates, the plan and preflight used to branch
on (``kind == "hyperpod"`` and friends): the EFA interface type nodes get and where a blueprint
chooses it, the management nodes, the node that runs Prometheus, reserved group names, the
capacity types the orchestrator accepts and how it spells each, how node and head-node scripts
travel, the metrics-discovery default and size limits. Adding an orchestrator means adding a
profile here and its construct in ``fmcluster.constructs.orchestrators``.

Sources are given per field below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from fmcluster.blueprint.model import OrchestratorSpec

ProfileKey = Literal["parallelcluster", "hyperpod-slurm", "hyperpod-eks", "pcs"]
Delivery = Literal["s3_asset", "lifecycle"]
Discovery = Literal["ec2", "slurm"]

#: EFA interface type ParallelCluster puts on compute nodes, per supported version. 3.16.1: ENA primary
#: plus ``efa-only`` on every EFA card (aws-parallelcluster 3.16.1 ``pcluster/templates/queues_stack.py``,
#: read from the installed package; aws/aws-parallelcluster PR #7262). 3.15.0 shipped after that change
#: was merged (2026-03-03) and is assumed to match (unverified); 3.16.3 is a patch release of 3.16 and is
#: assumed to keep 3.16.1's launch templates (its package is not on PyPI here to read; unverified).
PCLUSTER_EFA_INTERFACE_TYPE = {"3.15.0": "efa-only", "3.16.1": "efa-only", "3.16.3": "efa-only"}

#: ParallelCluster ``SlurmQueues[].CapacityType`` and AWS PCS ``ComputeNodeGroup.PurchaseOption`` per
#: capacity type; ODCR is on-demand with a reservation target (aws/aws-parallelcluster cli/src/pcluster/config/common.py CapacityType;
#: botocore ``pcs`` ``PurchaseOption`` enum). The two orchestrators spell them the same.
EC2_PURCHASE_OPTIONS: Mapping[str, str] = MappingProxyType({
    "on_demand": "ONDEMAND",
    "spot": "SPOT",
    "odcr": "ONDEMAND",
    "capacity_block": "CAPACITY_BLOCK",
})
#: HyperPod instance groups: on-demand, Spot (``InstanceGroups[].CapacityRequirements.Spot``, an empty object) or a
#: SageMaker training plan (``InstanceGroups[].TrainingPlanArn``); no EC2 reservation target. Sources: botocore
#: sagemaker service-2.json ClusterInstanceGroupSpecification (CapacityRequirements, TrainingPlanArn) and
#: ClusterCapacityRequirements (Spot, OnDemand: empty structures); CloudFormation resource schema
#: AWS::SageMaker::Cluster ClusterCapacityRequirements (cfn-lint 1.58.0 schemas, schema_date 2026-10-20);
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-spot.html.
HYPERPOD_CAPACITY: Mapping[str, str] = MappingProxyType({
    "on_demand": "ON_DEMAND",
    "spot": "CapacityRequirements.Spot",
    "training_plan": "TrainingPlanArn",
})

#: Names fmcluster gives the HyperPod Slurm controller and login instance groups and the PCS login node group.
HYPERPOD_CONTROLLER_GROUP = "controller"
HYPERPOD_LOGIN_GROUP = "login"
PCS_LOGIN_GROUP = "login"


@dataclass(frozen=True)
class OrchestratorProfile:
    """What one orchestrator is and does, as fmcluster uses it.

    Attributes:
        key: profile key (``parallelcluster``, ``hyperpod-slurm``, ``hyperpod-eks``, ``pcs``).
        kind: the blueprint's ``orchestrator.kind`` value.
        settings_path: YAML path of the orchestrator's settings section, e.g. ``orchestrator.pcs``.
        efa_interface_type: interface type of the nodes' EFA interfaces (``efa`` or ``efa-only``):
            ParallelCluster chooses it itself per version (:data:`PCLUSTER_EFA_INTERFACE_TYPE`), HyperPod
            and PCS take the blueprint's setting.
        efa_interface_type_setting: YAML path where a blueprint chooses the EFA interface type, or
            ``None`` when it has no choice to advise (ParallelCluster renders its own launch templates; PCS
            accepts only ``efa``, R-PCS-3).
        efa_only_caveat: appended to ``efa-only`` advice. Default: nothing.
        head_node_label: the node that runs the controller side and Prometheus, as users call it; ``None`` where
            fmcluster runs no such node (HyperPod EKS: the EKS control plane is AWS's, R-OBS-3).
        management: management node labels, one subnet address each (ParallelCluster head node; PCS login
            node; HyperPod Slurm controller and, when configured, login; none on HyperPod EKS).
        reserved_group_names: compute group names the orchestrator construct uses itself.
        capacity_types: accepted ``capacity.type`` values, in preference order, mapped to the orchestrator's
            own term; a type that is absent is refused by the capacity rules.
        node_bootstrap_delivery: how node scripts reach nodes: an S3 asset (ParallelCluster, PCS) or the
            HyperPod lifecycle-script folder.
        head_node_script_delivery: how the head-node (observability) script travels, or ``None`` where
            there is no node of fmcluster's to run it (HyperPod EKS).
        default_node_discovery: what ``observability.node_discovery: auto`` means (HyperPod nodes are not
            EC2 instances of the account, so EC2 discovery cannot find them).
        places_nodes_itself: True when the orchestrator has no placement-group setting (HyperPod).
        ec2_capacity: True when nodes are EC2 instances of the account, so EC2 instance-type offerings and
            EC2 vCPU quotas apply (preflight checks them); False for HyperPod, whose instances SageMaker
            runs (its "ml.<type> for cluster usage" quotas apply; botocore sagemaker service-2.json
            ClusterInstanceGroupSpecification). Default True.
        needs_vpc: the construct creates resources in the VPC itself (HyperPod, PCS).
        lustre_on_nodes: FSx for Lustre is mounted on the nodes by the time the node scripts run, so they wait
            for it (ParallelCluster SharedStorage, HyperPod Slurm FsxLustreConfig, PCS user data). False for
            HyperPod EKS: fmcluster asks HyperPod for no host mount there (pods use the FSx CSI driver), and a
            wait would fail every node. Default True.
        slurm_bin_dir: directory of the cluster's Slurm client commands on its nodes, or ``None`` when
            fmcluster does not know it (node scripts then look on PATH and in the usual places). PCS:
            ``/opt/aws/pcs/scheduler/slurm-<orchestrator.pcs.slurm_version>/bin`` (:data:`PCS_SLURM_DIR`),
            so a node whose image carries several Slurm versions uses the cluster's. Default ``None``.
        user_data_embed_limit_bytes: node scripts up to this size are embedded in user data, larger ones
            are downloaded (PCS: EC2's 16 KB raw limit minus headroom for the MIME wrapper); ``None`` when
            fmcluster writes no user data.
        slurm_accounting: how ``orchestrator.slurm.accounting`` is wired (:mod:`fmcluster.resolved.accounting`):
            ``database`` (ParallelCluster ``SlurmSettings.Database`` against a database fmcluster creates),
            ``managed`` (AWS PCS runs it) or ``None`` (not wired: HyperPod, R-ACCT-1). Default ``None``.
    """

    key: ProfileKey
    kind: str
    settings_path: str
    efa_interface_type: str
    efa_interface_type_setting: str | None
    head_node_label: str | None
    management: tuple[str, ...]
    reserved_group_names: tuple[str, ...]
    capacity_types: Mapping[str, str]
    node_bootstrap_delivery: Delivery
    head_node_script_delivery: Delivery | None
    default_node_discovery: Discovery
    places_nodes_itself: bool = False
    ec2_capacity: bool = True
    needs_vpc: bool = False
    lustre_on_nodes: bool = True
    efa_only_caveat: str = ""
    user_data_embed_limit_bytes: int | None = None
    slurm_bin_dir: str | None = None
    notes: tuple[str, ...] = field(default=())
    slurm_accounting: Literal["database", "managed"] | None = None

    def accepts(self, capacity_type: str) -> bool:
        return capacity_type in self.capacity_types

    def capacity_term(self, capacity_type: str) -> str | None:
        """The orchestrator's name for a capacity type (``None``: not accepted)."""
        return self.capacity_types.get(capacity_type)

    def management_nodes(self) -> tuple[tuple[str, int], ...]:
        """(label, subnet addresses) per management node: one address each."""
        return tuple((label, 1) for label in self.management)


def _parallelcluster(orch: OrchestratorSpec) -> OrchestratorProfile:
    return OrchestratorProfile(
        key="parallelcluster", kind="parallelcluster", settings_path="orchestrator.parallelcluster",
        efa_interface_type=PCLUSTER_EFA_INTERFACE_TYPE[orch.parallelcluster.version], efa_interface_type_setting=None,
        head_node_label="head node", management=("head node",),
        # ParallelCluster's NameValidator refuses the queue name "default" (rule R-PC-3).
        reserved_group_names=("default",), capacity_types=EC2_PURCHASE_OPTIONS,
        node_bootstrap_delivery="s3_asset", head_node_script_delivery="s3_asset", default_node_discovery="ec2",
        slurm_accounting="database",
    )


def _hyperpod(orch: OrchestratorSpec) -> OrchestratorProfile:
    hp = orch.hyperpod
    if hp.orchestration == "eks":
        # No controller or login instance group on EKS (the construct creates only worker groups, the
        # control plane is the EKS cluster's): no management node in the subnet and no head node.
        return OrchestratorProfile(
            key="hyperpod-eks", kind="hyperpod", settings_path="orchestrator.hyperpod",
            efa_interface_type=hp.efa_interface_type,
            efa_interface_type_setting="orchestrator.hyperpod.efa_interface_type", head_node_label=None,
            management=(), reserved_group_names=(), capacity_types=HYPERPOD_CAPACITY,
            node_bootstrap_delivery="lifecycle", head_node_script_delivery=None, default_node_discovery="slurm",
            places_nodes_itself=True, ec2_capacity=False, needs_vpc=True, lustre_on_nodes=False,
            notes=("HyperPod on EKS: pods take VPC CNI addresses from this subnet; they are not counted",),
        )
    management = ("controller node", *(("login node",) if hp.login_instance_type else ()))
    return OrchestratorProfile(
        key="hyperpod-slurm", kind="hyperpod", settings_path="orchestrator.hyperpod",
        efa_interface_type=hp.efa_interface_type,
        efa_interface_type_setting="orchestrator.hyperpod.efa_interface_type", head_node_label="controller node",
        management=management, reserved_group_names=(HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP),
        capacity_types=HYPERPOD_CAPACITY, node_bootstrap_delivery="lifecycle", head_node_script_delivery="lifecycle",
        default_node_discovery="slurm", places_nodes_itself=True, ec2_capacity=False, needs_vpc=True,
    )


#: EC2 user data is limited to 16 KB raw (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html);
#: scripts up to this size are embedded, larger ones downloaded (headroom for the MIME wrapper and tokens).
PCS_USER_DATA_EMBED_LIMIT_BYTES = 12 * 1024
#: Where AWS PCS installs each Slurm version on its nodes: "Slurm must be installed in the same location as
#: AWS PCS Slurm installer packages: /opt/aws/pcs/scheduler/slurm-version"
#: (https://docs.aws.amazon.com/pcs/latest/userguide/multi-cluster-login-script-prerequisites.html).
PCS_SLURM_DIR = "/opt/aws/pcs/scheduler/slurm-{version}"


def _pcs(orch: OrchestratorSpec) -> OrchestratorProfile:
    return OrchestratorProfile(
        key="pcs", kind="pcs", settings_path="orchestrator.pcs",
        # efa-only is refused on PCS (R-PCS-3), so there is no choice to advise: the subnet rules never
        # suggest it (efa_interface_type_setting None); the subnet counts one address per EFA card.
        efa_interface_type=orch.pcs.efa_interface_type,
        efa_interface_type_setting=None, head_node_label="login node",
        management=("login node",), reserved_group_names=(PCS_LOGIN_GROUP,), capacity_types=EC2_PURCHASE_OPTIONS,
        node_bootstrap_delivery="s3_asset", head_node_script_delivery="s3_asset", default_node_discovery="ec2",
        needs_vpc=True,
        user_data_embed_limit_bytes=PCS_USER_DATA_EMBED_LIMIT_BYTES,
        slurm_bin_dir=PCS_SLURM_DIR.format(version=orch.pcs.slurm_version) + "/bin",
        slurm_accounting="managed",
    )


_BUILDERS = {"parallelcluster": _parallelcluster, "hyperpod": _hyperpod, "pcs": _pcs}
#: Every ``orchestrator.kind`` fmcluster knows.
KINDS = tuple(_BUILDERS)


def profile_for(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of ``orch.kind`` (HyperPod: Slurm or EKS by ``orchestration``)."""
    return _BUILDERS[orch.kind](orch)

