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

from fmcluster.blueprint.model import PCS_SLURM_VERSIONS, OrchestratorSpec

ProfileKey = Literal["parallelcluster", "hyperpod-slurm", "hyperpod-eks", "pcs"]
#: The profiles whose jobs run under Slurm (:attr:`OrchestratorProfile.runs_slurm`).
SLURM_PROFILES: tuple[ProfileKey, ...] = ("parallelcluster", "hyperpod-slurm", "pcs")
Delivery = Literal["s3_asset", "lifecycle"]
Discovery = Literal["ec2", "slurm"]
#: How the per-job IMEX prolog reaches Slurm (:class:`ImexWiring`).
ImexMethod = Literal["prolog_dir", "cluster_prolog", "controller_slurm_conf"]
#: How the node check's fast mode runs as a Slurm health check: ``HealthCheckProgram`` in slurm.conf (ParallelCluster
#: ``CustomSlurmSettings``; HyperPod through the controller's lifecycle script) or a systemd timer on every compute
#: node (PCS, whose custom settings do not take ``HealthCheckProgram``).
HealthCheckMethod = Literal["slurm_conf", "node_timer"]

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
class ImexWiring:
    """Whether and how an orchestrator sets the IMEX domain per job on NVLink-domain types (catalog ``imex: true``,
    p6e-gb200): the one place rule R-IMEX-1 and the orchestrator constructs read.

    Attributes:
        method: ``prolog_dir`` (a script in ParallelCluster's shared prolog directory plus ``PrologFlags``),
            ``cluster_prolog`` (the PCS cluster's ``Prolog`` custom setting), ``controller_slurm_conf`` (the HyperPod
            controller's lifecycle script adds ``Prolog`` and ``PrologFlags`` to slurm.conf), or ``None`` when this
            orchestrator, as configured, cannot wire it.
        capacity_types: capacity types with which it can be wired; empty: every type the profile accepts.
        blocked_by: YAML path of the setting that stops it (``method`` ``None``), e.g. ``orchestrator.pcs.slurm_version``.
        reason: why it cannot be wired (``method`` ``None``), or the condition on ``capacity_types``.
        allowed: the values of ``blocked_by`` with which it can be wired, as a message's "allowed" part.
        source: the primary source of the method or of the reason.
    """

    method: ImexMethod | None
    source: str
    capacity_types: tuple[str, ...] = ()
    blocked_by: str = ""
    reason: str = ""
    allowed: str = ""

    def wires(self, capacity_type: str) -> bool:
        """True when a group of ``capacity_type`` gets IMEX per job."""
        return self.method is not None and (not self.capacity_types or capacity_type in self.capacity_types)


#: The ParallelCluster guide: a prolog in /opt/slurm/etc/scripts/prolog.d with PrologFlags=Alloc,NoHold.
PCLUSTER_IMEX_DOC = "https://docs.aws.amazon.com/parallelcluster/latest/ug/support-nvidia-imex-p6e-gb200-instance.html"
#: The PCS guide "Configure UltraServer instances": a Slurm prolog at the cluster's Prolog setting; prerequisites
#: "A AWS PCS cluster with Slurm 25.05 or later" and "A compute node group using UltraServer instances with a Capacity
#: Block".
PCS_IMEX_DOC = "https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-nvidia-imex.html"
PCS_IMEX_MIN_SLURM = "25.05"


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
        imex: whether and how IMEX is set per job on NVLink-domain types (:class:`ImexWiring`). Default: cannot.
        health_check: how the node check's fast mode runs as a draining health check (:data:`HealthCheckMethod`),
            or ``None`` where there is no Slurm (HyperPod EKS). Default ``None``.
        task_prolog: the job environment is applied as a Slurm ``TaskProlog``. False on PCS (not a PCS custom
            setting) and HyperPod EKS (no Slurm). Default False.
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
    imex: ImexWiring = ImexWiring(None, source="fmcluster", blocked_by="orchestrator.kind",
                                  reason="fmcluster has no per-job IMEX wiring for this orchestrator",
                                  allowed="parallelcluster, hyperpod (orchestration slurm) or pcs")
    health_check: HealthCheckMethod | None = None
    task_prolog: bool = False
    slurm_accounting: Literal["database", "managed"] | None = None

    def accepts(self, capacity_type: str) -> bool:
        return capacity_type in self.capacity_types

    @property
    def runs_slurm(self) -> bool:
        """Whether jobs run under Slurm (sbatch, pyxis containers, prologs): every profile but HyperPod EKS."""
        return self.key in SLURM_PROFILES

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
        imex=ImexWiring("prolog_dir", source=PCLUSTER_IMEX_DOC), health_check="slurm_conf", task_prolog=True,
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
            # No Slurm, so no prolog: on Kubernetes the IMEX domain comes from the NVIDIA DRA driver's ComputeDomain
            # (EKS >= 1.33 with DRA), which fmcluster does not install.
            imex=ImexWiring(
                None, blocked_by="orchestrator.hyperpod.orchestration", allowed="slurm",
                source="https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html (P6e-GB200 on "
                "EKS needs dynamic resource allocation, Kubernetes >= 1.33, and the NVIDIA DRA driver)",
                reason="HyperPod on EKS has no Slurm prolog to set the IMEX domain, and fmcluster does not install "
                "the NVIDIA DRA driver whose ComputeDomain sets it on Kubernetes"),
        )
    management = ("controller node", *(("login node",) if hp.login_instance_type else ()))
    return OrchestratorProfile(
        key="hyperpod-slurm", kind="hyperpod", settings_path="orchestrator.hyperpod",
        efa_interface_type=hp.efa_interface_type,
        efa_interface_type_setting="orchestrator.hyperpod.efa_interface_type", head_node_label="controller node",
        management=management, reserved_group_names=(HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP),
        capacity_types=HYPERPOD_CAPACITY, node_bootstrap_delivery="lifecycle", head_node_script_delivery="lifecycle",
        default_node_discovery="slurm", places_nodes_itself=True, ec2_capacity=False, needs_vpc=True,
        # HyperPod's SlurmConfig has no prolog key (NodeType, PartitionNames: botocore sagemaker ClusterSlurmConfig),
        # so the controller's OnInitComplete script adds Prolog and PrologFlags to slurm.conf and reconfigures.
        imex=ImexWiring("controller_slurm_conf", source="botocore sagemaker service-2.json ClusterSlurmConfig "
                        "(NodeType, PartitionNames only); SchedMD/slurm doc/man/man5/slurm.conf.5 (Prolog, PrologFlags)"),
        health_check="slurm_conf", task_prolog=True,
    )


#: EC2 user data is limited to 16 KB raw (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html);
#: scripts up to this size are embedded, larger ones downloaded (headroom for the MIME wrapper and tokens).
PCS_USER_DATA_EMBED_LIMIT_BYTES = 12 * 1024
#: Where AWS PCS installs each Slurm version on its nodes: "Slurm must be installed in the same location as
#: AWS PCS Slurm installer packages: /opt/aws/pcs/scheduler/slurm-version"
#: (https://docs.aws.amazon.com/pcs/latest/userguide/multi-cluster-login-script-prerequisites.html).
PCS_SLURM_DIR = "/opt/aws/pcs/scheduler/slurm-{version}"


def _pcs_imex(slurm_version: str) -> ImexWiring:
    """The PCS IMEX guide's prolog needs Slurm >= 25.05 and UltraServers from a Capacity Block (:data:`PCS_IMEX_DOC`)."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(map(int, v.split(".")))

    if key(slurm_version) < key(PCS_IMEX_MIN_SLURM):
        return ImexWiring(None, source=PCS_IMEX_DOC, blocked_by="orchestrator.pcs.slurm_version",
                          reason=f"the AWS PCS IMEX prolog needs Slurm {PCS_IMEX_MIN_SLURM} or later",
                          allowed=", ".join(v for v in PCS_SLURM_VERSIONS if key(v) >= key(PCS_IMEX_MIN_SLURM)))
    return ImexWiring("cluster_prolog", source=PCS_IMEX_DOC, capacity_types=("capacity_block",),
                      reason="the AWS PCS IMEX prolog is documented for UltraServer node groups on a Capacity Block")


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
        imex=_pcs_imex(orch.pcs.slurm_version), health_check="node_timer", task_prolog=False,
        slurm_accounting="managed",
    )


_BUILDERS = {"parallelcluster": _parallelcluster, "hyperpod": _hyperpod, "pcs": _pcs}
#: Every ``orchestrator.kind`` fmcluster knows.
KINDS = tuple(_BUILDERS)


def profile_for(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of ``orch.kind`` (HyperPod: Slurm or EKS by ``orchestration``)."""
    return _BUILDERS[orch.kind](orch)

