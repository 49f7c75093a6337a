"""The SageMaker HyperPod Slurm profile (:class:`fmcluster.orchestrators.profile.OrchestratorProfile`). Sources per fact."""

from __future__ import annotations

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.orchestrators.hyperpod.profile import (
    HYPERPOD_BOOT_PARTS,
    HYPERPOD_CAPACITY,
    HYPERPOD_CONTROLLER_GROUP,
    HYPERPOD_LOGIN_GROUP,
)
from fmcluster.orchestrators.profile import ImexWiring, OrchestratorProfile

KEY = "hyperpod-slurm"


def profile(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of a HyperPod Slurm blueprint (a login node when ``hyperpod.login_instance_type`` is set)."""
    hp = orch.hyperpod
    management = ("controller node", *(("login node",) if hp.login_instance_type else ()))
    return OrchestratorProfile(
        key=KEY, kind="hyperpod", settings_path="orchestrator.hyperpod",
        efa_interface_type=hp.efa_interface_type,
        efa_interface_type_setting="orchestrator.hyperpod.efa_interface_type", head_node_label="controller node",
        management=management, reserved_group_names=(HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP),
        capacity_types=HYPERPOD_CAPACITY, node_bootstrap_delivery="lifecycle", head_node_script_delivery="lifecycle",
        default_node_discovery="slurm", places_nodes_itself=True, ec2_capacity=False, needs_vpc=True,
        # HyperPod's SlurmConfig has no prolog key (NodeType, PartitionNames: botocore sagemaker ClusterSlurmConfig),
        # so the controller's OnInitComplete script adds Prolog and PrologFlags to slurm.conf and reconfigures.
        imex=ImexWiring("controller_slurm_conf", source="botocore sagemaker service-2.json ClusterSlurmConfig "
                        "(NodeType, PartitionNames only); SchedMD/slurm doc/man/man5/slurm.conf.5 (Prolog, PrologFlags)"),
        health_check="slurm_conf", task_prolog=True, encrypted_custom_ami=False, boot_parts=HYPERPOD_BOOT_PARTS,
    )
