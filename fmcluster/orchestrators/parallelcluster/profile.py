"""The AWS ParallelCluster profile (:class:`fmcluster.orchestrators.profile.OrchestratorProfile`). Sources per fact."""

from __future__ import annotations

from functools import partial

from fmcluster.blueprint.model import Blueprint, OrchestratorSpec
from fmcluster.catalog.support import PinnedRelease, parallelcluster_slurm
from fmcluster.orchestrators.profile import (
    EC2_PURCHASE_OPTIONS,
    GATE_DRAIN_DEFAULT,
    BootPart,
    GateDrain,
    ImexWiring,
    OrchestratorProfile,
    SlurmGpus,
)

KEY = "parallelcluster"

#: EFA interface type ParallelCluster puts on compute nodes, per supported version. 3.16.1: ENA primary
#: plus ``efa-only`` on every EFA card (aws-parallelcluster 3.16.1 ``pcluster/templates/queues_stack.py``,
#: read from the installed package; aws/aws-parallelcluster PR #7262). 3.15.0 shipped after that change
#: was merged (2026-03-03) and is assumed to match (unverified); 3.16.3 is a patch release of 3.16 and is
#: assumed to keep 3.16.1's launch templates (its package is not on PyPI here to read; unverified).
PCLUSTER_EFA_INTERFACE_TYPE = {"3.15.0": "efa-only", "3.16.1": "efa-only", "3.16.3": "efa-only"}

#: The ParallelCluster guide: a prolog in /opt/slurm/etc/scripts/prolog.d with PrologFlags=Alloc,NoHold.
PCLUSTER_IMEX_DOC = "https://docs.aws.amazon.com/parallelcluster/latest/ug/support-nvidia-imex-p6e-gb200-instance.html"


#: Where ParallelCluster installs Slurm on its official images (aws/aws-parallelcluster-cookbook
#: cookbooks/aws-parallelcluster-environment/attributes/environment.rb ``default['cluster']['slurm']['install_dir'] =
#: '/opt/slurm'``). Its ``bin`` reaches PATH only through ``/etc/profile.d/slurm.sh`` (cookbooks/aws-parallelcluster-slurm
#: recipes/config.rb, templates/default/slurm/head_node/slurm.sh.erb ``PATH=$PATH:/opt/slurm/bin``): login shells have it,
#: ``sudo`` does not, because the cookbook sets sudo's ``secure_path`` to ``/usr/local/sbin:/usr/local/bin:/usr/sbin:
#: /usr/bin:/sbin:/bin:/snap/bin`` (cookbooks/aws-parallelcluster-platform/recipes/install/sudo_install.rb,
#: templates/sudo/99-parallelcluster-secure-path.erb), and neither do slurmd's prologs and health checks.
PARALLELCLUSTER_SLURM = "/opt/slurm"


#: ParallelCluster's ``Image.Os`` name of each ``software.os``.
OS_NAMES = {"ubuntu-22.04": "ubuntu2204", "ubuntu-24.04": "ubuntu2404", "amazon-linux-2023": "alinux2023"}


def parallelcluster_ami_tags(version: str, os: str) -> dict[str, str]:
    """The tags ParallelCluster's validators read on a custom AMI of ``software.os`` ``os``, as ``pcluster build-image``
    sets them: ``parallelcluster:version`` (CustomAmiTagValidator: missing is a warning, another version an error, and
    with it ``parallelcluster:build_status`` must be present), ``parallelcluster:os`` (AmiOsCompatibleValidator compares
    it with ``Image.Os``) and ``parallelcluster:build_status: available`` (the value ``pcluster`` filters its images on).
    Source: aws-parallelcluster 3.16.1 ``cli/src/pcluster/validators/cluster_validators.py`` ``CustomAmiTagValidator``,
    ``validators/ec2_validators.py`` ``AmiOsCompatibleValidator``, ``constants.py`` and ``aws/ec2.py``. True of a baked
    AMI: its parent is that version's official AMI (``Build.ParentImage`` rule) and the tags are applied only when
    the build succeeds."""
    return {"parallelcluster:version": version, "parallelcluster:os": OS_NAMES[os],
            "parallelcluster:build_status": "available"}


#: With HeadNode ``Imds.Secured`` (default true) only root and the cluster admin users reach IMDS (iptables chain
#: PARALLELCLUSTER_IMDS); this unit restores the rules at boot. Source: aws-parallelcluster-cookbook
#: cookbooks/aws-parallelcluster-environment/recipes/config/imds.rb, templates/imds/restore_tables.sh.erb.
PCLUSTER_IMDS_LOCKDOWN_SERVICE = "parallelcluster-iptables.service"


#: ParallelCluster's clustermgtd treats a drained static node as unhealthy and replaces it (``terminate_drain_nodes``,
#: default True; ``_handle_unhealthy_static_nodes`` sets it DOWN with "Static node maintenance: unhealthy node is being
#: replaced", terminates the instance and launches a new one: aws/aws-parallelcluster-node
#: src/slurm_plugin/clustermgtd.py). It never resumes the node, so the Slurm record keeps the DRAIN flag (issue 24;
#: that Slurm keeps DRAIN across DOWN is not verified here): the gate resumes a node it drained once it passes.
PCLUSTER_GATE_DRAIN = GateDrain(
    GATE_DRAIN_DEFAULT.state, GATE_DRAIN_DEFAULT.reason,
    "clustermgtd terminates and replaces a drained static node (terminate_drain_nodes); the replacement keeps DRAIN "
    "until a gate run passes it and resumes it",
    "aws/aws-parallelcluster-node src/slurm_plugin/clustermgtd.py (terminate_drain_nodes, _handle_unhealthy_static_nodes)")


#: GPU gres: the cookbook's slurm.conf has ``GresTypes=gpu`` (cookbooks/aws-parallelcluster-slurm/templates/default/slurm/
#: slurm.conf.erb), every GPU compute resource's node line ``Gres=gpu:<type>:<count>`` and its gres.conf line ``Name=gpu
#: Type=<type> File=/dev/nvidia[0-<count - 1>]`` (files/default/head_node_slurm/slurm/config_renderer.py,
#: ``ComputeResourceRenderer``); the generator skips GPUs only when the head node has no NVIDIA driver
#: (recipes/config/config_head_node.rb ``--no-gpu`` when ``nvidia_installed?``, i.e. ``/usr/bin/nvidia-smi``, is
#: false), and the official images carry one on both architectures, the arm64 head node of a GB200 cluster included
#: (cookbooks/aws-parallelcluster-platform/resources/nvidia_driver/partial/_nvidia_driver_common.rb installs the
#: ``NVIDIA-Linux-aarch64`` driver on arm; the head node always boots the official image: the blueprint's custom AMI is
#: set per queue). Devices: cgroup.conf is
#: ``ConstrainCores=yes`` plus an include that adds only ``ConstrainRAMSpace=yes`` with memory-based scheduling
#: (templates/default/slurm/cgroup.conf.erb, files/default/head_node_slurm/slurm/templates/slurm_parallelcluster_cgroup.conf),
#: and fmcluster adds no cgroup setting, so ConstrainDevices keeps Slurm's default "no". Read at aws-parallelcluster-cookbook
#: v3.11.1 (develop of 2024-10-21); the 3.15/3.16 cookbooks are not readable here and are assumed to keep both (unverified).
PCLUSTER_SLURM_GPUS = SlurmGpus(
    gres=True, devices_confined=False,
    source="aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm templates/default/slurm/slurm.conf.erb, "
           "cgroup.conf.erb, files/default/head_node_slurm/slurm/config_renderer.py (v3.11.1)",
    unverified="read in the 3.11 cookbook; ParallelCluster 3.15/3.16 assumed the same")


def profile(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of a ParallelCluster blueprint (the EFA interface type follows ``parallelcluster.version``)."""
    return OrchestratorProfile(
        key=KEY, kind="parallelcluster", settings_path="orchestrator.parallelcluster",
        efa_interface_type=PCLUSTER_EFA_INTERFACE_TYPE[orch.parallelcluster.version], efa_interface_type_setting=None,
        head_node_label="head node", management=("head node",),
        # ParallelCluster's NameValidator refuses the queue name "default" (rule R-PC-3).
        reserved_group_names=("default",), capacity_types=EC2_PURCHASE_OPTIONS,
        node_bootstrap_delivery="s3_asset", head_node_script_delivery="s3_asset", default_node_discovery="ec2",
        imex=ImexWiring("prolog_dir", source=PCLUSTER_IMEX_DOC), health_check="slurm_conf", task_prolog=True,
        slurm_accounting="database", home_shared=True, dynamic_node_glob="*-dy-*",
        baked_ami_tags=partial(parallelcluster_ami_tags, orch.parallelcluster.version),
        management_instance_types=(("head node", orch.parallelcluster.head_node_instance_type),),
        imds_lockdown_service=PCLUSTER_IMDS_LOCKDOWN_SERVICE,
        slurm_bin_dir=f"{PARALLELCLUSTER_SLURM}/bin",
        # the stack knows the head node's instance id (headNode.instanceId), so SSM Run Command reaches it
        window_automation=True,
        fleet_stop="compute fleet STOP_REQUESTED, as pcluster update-compute-fleet sets it (restart: START_REQUESTED)",
        gate_drain=PCLUSTER_GATE_DRAIN,
        slurm_gpus=PCLUSTER_SLURM_GPUS,
        boot_parts=(
            BootPart("parallelcluster-node-config", 120,
                     "model: ParallelCluster's own compute-node configuration (the cookbook run from "
                     "cli/src/pcluster/resources/compute_node/user_data.sh: Slurm, shared storage, EFA) before "
                     "OnNodeConfigured; no published duration; the whole bootstrap is bounded by NODE_BOOTSTRAP_TIMEOUT "
                     "2100 s (aws/aws-parallelcluster cli/src/pcluster/constants.py)"),
            BootPart("slurmd-registration", 10,
                     "model: slurmd starts after OnNodeConfigured and the node registers with slurmctld"),
        ),
    )


def pinned_releases(bp: Blueprint, cluster_plan: object = None) -> list[PinnedRelease]:
    """The registry row's ``releases`` hook: the ParallelCluster version and the Slurm release it ships (when the
    catalog records it), both chosen at ``orchestrator.parallelcluster.version``."""
    path, version = "orchestrator.parallelcluster.version", bp.orchestrator.parallelcluster.version
    slurm = parallelcluster_slurm(version)
    return [PinnedRelease("parallelcluster", version, path)] + ([PinnedRelease("slurm", slurm[0], path)] if slurm else [])
