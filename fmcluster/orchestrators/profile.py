"""The orchestrator profile: the shape of everything fmcluster knows about one orchestrator.

A profile holds the facts that rules, constructs, templates, the plan and preflight would otherwise branch
on (``kind == "hyperpod"`` and friends): the EFA interface type nodes get and where a blueprint
chooses it, the management nodes, the node that runs Prometheus, reserved group names, the
capacity types the orchestrator accepts and how it spells each, how node and head-node scripts
travel, the metrics-discovery default and size limits. This module names no orchestrator: each one's
profile is built in its own slice (``fmcluster/orchestrators/<key>/profile.py``) and found through the
registry (:mod:`fmcluster.orchestrators.registry`, :func:`profile_for`).

Sources are given per field below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Delivery = Literal["s3_asset", "lifecycle"]
Discovery = Literal["ec2", "slurm"]
#: What writes a cluster's metrics (:attr:`OrchestratorProfile.metrics_collector`).
MetricsCollector = Literal["head_node", "eks_addon"]
#: How the per-job IMEX prolog reaches Slurm (:class:`ImexWiring`).
ImexMethod = Literal["prolog_dir", "cluster_prolog", "controller_slurm_conf"]
#: How the node check's fast mode runs as a Slurm health check: ``HealthCheckProgram`` in slurm.conf (ParallelCluster
#: ``CustomSlurmSettings``; HyperPod through the controller's lifecycle script) or a systemd timer on every compute
#: node (PCS, whose custom settings do not take ``HealthCheckProgram``).
HealthCheckMethod = Literal["slurm_conf", "node_timer"]

#: ParallelCluster ``SlurmQueues[].CapacityType`` and AWS PCS ``ComputeNodeGroup.PurchaseOption`` per
#: capacity type; ODCR is on-demand with a reservation target (aws/aws-parallelcluster cli/src/pcluster/config/common.py CapacityType;
#: botocore ``pcs`` ``PurchaseOption`` enum). The two orchestrators spell them the same.
EC2_PURCHASE_OPTIONS: Mapping[str, str] = MappingProxyType({
    "on_demand": "ONDEMAND",
    "spot": "SPOT",
    "odcr": "ONDEMAND",
    "capacity_block": "CAPACITY_BLOCK",
})


@dataclass(frozen=True)
class ImexWiring:
    """Whether and how an orchestrator sets the IMEX domain per job on NVLink-domain types (catalog ``imex: true``,
    p6e-gb200), resolved once per group into ``ResolvedGroup.imex``, which rule R-IMEX-1 and the orchestrator
    constructs read.

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


@dataclass(frozen=True)
class GateDrain:
    """How the acceptance gate takes a failed node out of service so that this orchestrator acts on it.

    Attributes:
        state: the ``scontrol update State=`` value (``DRAIN``, or ``FAIL`` on HyperPod).
        reason: the ``Reason=`` text; ``{reason}`` is replaced by the gate's reason (at most 180 characters).
        replaces: what the orchestrator then does with the node, for docs and the gate's log.
        source: the primary source of ``state``/``reason``/``replaces``.
    """

    state: str
    reason: str
    replaces: str
    source: str


#: The default: drain with the gate's reason; the node stays drained until someone resumes it.
GATE_DRAIN_DEFAULT = GateDrain("DRAIN", "fmcluster-acceptance: {reason}", "nothing: the node stays drained",
                               "SchedMD/slurm doc/man/man1/scontrol.1 (State=DRAIN, Reason)")


@dataclass(frozen=True)
class SlurmGpus:
    """How this orchestrator's Slurm presents a GPU node's GPUs to a job: whether fmcluster's batch scripts (the first
    jobs' ``nccl-tests.sbatch`` and ``fsdp-train.sbatch``, the acceptance gate) ask for them.

    Attributes:
        gres: the GPU nodes declare ``gres/gpu`` (``GresTypes=gpu`` and ``Gres=gpu:...`` in slurm.conf, gres.conf or
            autodetection), so ``--gpus-per-node`` is accepted. Without it Slurm refuses such a job at submission
            ("Invalid generic resource (gres) specification", ``ESLURM_INVALID_GRES``): "By default, no GRES are
            enabled in the cluster's configuration" (https://slurm.schedmd.com/gres.html).
        devices_confined: ``ConstrainDevices=yes`` in cgroup.conf, or ``None`` when it could not be verified. Confined,
            a job sees only the GRES devices allocated to it, so a job that asks for no GPU sees none; devices of no
            configured GRES are never confined (https://slurm.schedmd.com/cgroup.conf.html ``ConstrainDevices``, default
            "no"; SchedMD/slurm ``src/plugins/task/cgroup/task_cgroup_devices.c`` allows or denies only the devices
            ``gres_g_get_devices`` lists).
        source: the primary sources of both facts.
        unverified: what is assumed without a primary source, for the scripts' comments ("" when nothing is).
    """

    gres: bool
    devices_confined: bool | None
    source: str
    unverified: str = ""

    def gpus_per_node(self, gpus: int) -> int | None:
        """The ``--gpus-per-node`` a whole-node job on an instance with ``gpus`` GPUs asks for: all of them where the
        nodes declare GPU gres (needed where devices are confined, or might be; harmless where they are not), ``None``
        (no request) where they do not, since Slurm would refuse the job."""
        return gpus if self.gres and gpus > 0 else None

    def note(self) -> tuple[str, ...]:
        """Comment lines for a batch script: why it asks for GPUs or does not, and what is not verified."""
        if self.gres:
            request = "GPU nodes declare gres/gpu, so the job asks for every GPU (--gpus-per-node)"
        else:
            request = "GPU nodes declare no gres/gpu, so the job asks for none (Slurm refuses --gpus-per-node)"
        confined = {True: "devices confined (ConstrainDevices=yes): a job that asks for no GPU sees none",
                    False: "devices not confined (no ConstrainDevices): an --exclusive job sees every GPU",
                    None: "device confinement (ConstrainDevices) not verified"}[self.devices_confined]
        return (request, confined, *((f"unverified: {self.unverified}",) if self.unverified else ()))


@dataclass(frozen=True)
class ClusterFee:
    """A per-cluster service fee for the cost estimate: ``item`` and ``quantity`` as the plan shows them,
    ``usd_per_hour`` (``None``: not priced, ``basis`` says why), ``basis`` (how the price is made, or why it is
    unknown) and ``source`` (the price's page)."""

    item: str
    quantity: str
    usd_per_hour: float | None
    basis: str
    source: str = ""


@dataclass(frozen=True)
class BootPart:
    """A part of a node's boot-to-ready that the orchestrator does before or around fmcluster's script.

    Attributes: ``name``; ``seconds`` (estimated); ``source``: where the figure comes from, starting with
    ``model:`` when no published duration exists (then it is fmcluster's estimate and says what it assumes)."""

    name: str
    seconds: int
    source: str

    @property
    def modelled(self) -> bool:
        return self.source.startswith("model:")


@dataclass(frozen=True)
class OrchestratorProfile:
    """What one orchestrator is and does, as fmcluster uses it.

    Attributes:
        key: the registry key of the orchestrator (:data:`fmcluster.orchestrators.registry.ORCHESTRATORS`).
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
            fmcluster runs no such node (HyperPod EKS: the EKS control plane is AWS's; metrics_collector says who collects).
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
        slurm_bin_dir: directory of the cluster's Slurm client commands on its nodes (the one home of this fact: the gate, the
            node check, the health check, the prologs and the exporters put it on PATH, since ``sudo``, slurmd and
            systemd give none of them a login PATH), or ``None`` when fmcluster does not know it (HyperPod EKS: no
            Slurm). ParallelCluster and HyperPod Slurm: ``/opt/slurm/bin`` (sources in their profiles). PCS:
            ``/opt/aws/pcs/scheduler/slurm-<orchestrator.pcs.slurm_version>/bin`` (:data:`PCS_SLURM_DIR`),
            so a node whose image carries several Slurm versions uses the cluster's. Default ``None``.
        user_data_embed_limit_bytes: node scripts up to this size are embedded in user data, larger ones
            are downloaded (PCS: EC2's 16 KB raw limit minus headroom for the MIME wrapper); ``None`` when
            fmcluster writes no user data.
        imex: whether and how IMEX is set per job on NVLink-domain types (:class:`ImexWiring`). Default: cannot.
        window_automation: the orchestrator's stack wires the capacity window (docs/capacity.md "The capacity
            window": the EventBridge rule and the preload schedule reach the head node by SSM Run Command, which needs
            the head node's instance id in the stack). True for ParallelCluster only; elsewhere R-CAP-10 warns.
            Default False.
        fleet_stop: what the budget's stop (``budget.stop_compute_at_percent``) does on this orchestrator, one line
            for ``plan`` and the stop function's description; the slice's ``construct_fleet_stop.py`` does it
            (docs/capacity.md "Budget"). Empty: no stop (HyperPod EKS, which has no budget: R-BUDGET-1). Default "".
        health_check: how the node check's fast mode runs as a draining health check (:data:`HealthCheckMethod`),
            or ``None`` where there is no Slurm (HyperPod EKS). Default ``None``.
        task_prolog: the job environment is applied as a Slurm ``TaskProlog``. False on PCS (not a PCS custom
            setting) and HyperPod EKS (no Slurm). Default False.
        slurm_accounting: how ``orchestrator.slurm.accounting`` is wired (:mod:`fmcluster.features.accounting.plan`):
            ``database`` (ParallelCluster ``SlurmSettings.Database`` against a database fmcluster creates),
            ``managed`` (AWS PCS runs it) or ``None`` (not wired: HyperPod, R-ACCT-1). Default ``None``.
        runs_slurm: whether jobs run under Slurm (sbatch, pyxis containers, prologs). Default True (False: HyperPod EKS).
        metrics_collector: what writes the cluster's metrics to the workspace: ``head_node`` (fmcluster's Prometheus
            and exporters on the ``head_node_label`` node) or ``eks_addon`` (the HyperPod observability EKS add-on's
            collector, whose metrics the alert rules can read only in part). Default ``head_node``.
        dynamic_node_glob: a shell glob matching the Slurm names of nodes the orchestrator powers up for a job and down
            when idle (ParallelCluster: ``*-dy-*``, its ``<queue>-dy-<compute resource>-<n>`` names,
            https://docs.aws.amazon.com/parallelcluster/latest/ug/multiple-queue-mode-slurm-user-guide-v3.html); the
            gate's watcher gates them on request only. Default empty: none (HyperPod nodes are always on; PCS names no
            dynamic nodes apart: unverified).
        home_shared: the head/login node's home directories are shared with the compute nodes, so a job submitted from
            home finds its files and writes its output there. True on ParallelCluster (the head node exports /home
            over NFS: https://docs.aws.amazon.com/parallelcluster/latest/ug/HeadNode-v3.html ``SharedStorageType``,
            and aws/aws-parallelcluster issue #2344 ``nfs_export[/home]``); False on HyperPod (AWS's Slurm job guide
            puts job files on the FSx file system, "accessible to all nodes in the cluster",
            https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-schedule-slurm-job.html) and
            PCS (a shared home is an opt-in node lifecycle action, ``configure-efs-homes.sh``,
            https://docs.aws.amazon.com/pcs/latest/userguide/cng-node-lifecycle-actions-vetted-scripts.html), where
            the first jobs run from the Lustre mount. Default False.
        baked_ami_tags: the tags a baked AMI gets so the orchestrator accepts it, from the blueprint's ``software.os``
            name, or ``None`` when it needs none. Default ``None``.
        encrypted_custom_ami: whether the orchestrator accepts a custom AMI with an encrypted root snapshot. Default
            True.
        management_instance_types: (label, EC2 instance type) of each management node billed as an EC2 instance,
            for the cost estimate (ParallelCluster head node, PCS login node). Default: none.
        cluster_fee: a per-cluster service fee for the cost estimate (:class:`ClusterFee`: AWS PCS by cluster size,
            unpriced; the EKS control plane fmcluster creates for HyperPod EKS), or ``None``. Default ``None``.
        ssm_target: what ``aws ssm start-session --target`` takes to reach the ``head_node_label`` node, with
            placeholders for what is known only after deploy: an EC2 instance id on ParallelCluster and PCS (their
            ``<name>-cluster`` outputs give it), ``sagemaker-cluster:<cluster-id>_<group>-<instance-id>`` on HyperPod
            (its nodes are not EC2 instances of the account). Default ``<head-node-instance-id>``.
        gate_drain: how the acceptance gate takes a failed node out of service (:class:`GateDrain`). Default
            :data:`GATE_DRAIN_DEFAULT`.
        slurm_gpus: how the orchestrator's Slurm presents GPUs to jobs (:class:`SlurmGpus`), read by every batch script
            fmcluster renders; ``None`` where jobs do not run under Slurm (HyperPod EKS). Default ``None``.
        boot_parts: what the orchestrator does before or around fmcluster's node script (:class:`BootPart`), counted in
            the plan's boot estimate (issue 23 item 9). Default: none.
        imds_lockdown_service: the systemd unit that restores the orchestrator's IMDS lockdown of the head node at
            boot, or ``None`` when it locks nothing down. The head node's monitoring users are then allowed through it
            before each of their services starts, and those services start after it. Default ``None``.
    """

    key: str
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
    window_automation: bool = False
    fleet_stop: str = ""
    notes: tuple[str, ...] = field(default=())
    imex: ImexWiring = ImexWiring(None, source="fmcluster", blocked_by="orchestrator.kind",
                                  reason="fmcluster has no per-job IMEX wiring for this orchestrator",
                                  allowed="an orchestrator whose profile wires IMEX")
    health_check: HealthCheckMethod | None = None
    task_prolog: bool = False
    slurm_accounting: Literal["database", "managed"] | None = None
    runs_slurm: bool = True
    metrics_collector: MetricsCollector = "head_node"
    home_shared: bool = False
    dynamic_node_glob: str = ""
    baked_ami_tags: Callable[[str], Mapping[str, str]] | None = None
    encrypted_custom_ami: bool = True
    management_instance_types: tuple[tuple[str, str], ...] = ()
    cluster_fee: ClusterFee | None = None
    imds_lockdown_service: str | None = None
    ssm_target: str = "<head-node-instance-id>"
    gate_drain: GateDrain = GATE_DRAIN_DEFAULT
    slurm_gpus: SlurmGpus | None = None
    boot_parts: tuple[BootPart, ...] = ()

    def accepts(self, capacity_type: str) -> bool:
        return capacity_type in self.capacity_types

    def capacity_term(self, capacity_type: str) -> str | None:
        """The orchestrator's name for a capacity type (``None``: not accepted)."""
        return self.capacity_types.get(capacity_type)

    def management_nodes(self) -> tuple[tuple[str, int], ...]:
        """(label, subnet addresses) per management node: one address each."""
        return tuple((label, 1) for label in self.management)




def sbatch_gpus(profile: OrchestratorProfile, gpus: int) -> tuple[int | None, tuple[str, ...]]:
    """What a whole-node batch script on this orchestrator asks for on an instance with ``gpus`` GPUs: the
    ``--gpus-per-node`` value (``None``: no request) and the comment lines that say why (:class:`SlurmGpus`).

    Raises:
        ValueError: the orchestrator runs no Slurm (``profile.slurm_gpus`` is ``None``).
    """
    if profile.slurm_gpus is None:
        raise ValueError(f"{profile.key} runs no Slurm: no batch script to render")
    return profile.slurm_gpus.gpus_per_node(gpus), profile.slurm_gpus.note()
