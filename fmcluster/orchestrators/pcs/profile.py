"""The AWS PCS profile (:class:`fmcluster.orchestrators.profile.OrchestratorProfile`). Sources per fact."""

from __future__ import annotations

from fmcluster.blueprint.model import PCS_SLURM_VERSIONS, Blueprint, OrchestratorSpec
from fmcluster.catalog.support import PinnedRelease
from fmcluster.orchestrators.profile import (
    EC2_PURCHASE_OPTIONS,
    GATE_DRAIN_DEFAULT,
    BootPart,
    ClusterFee,
    GateDrain,
    ImexWiring,
    OrchestratorProfile,
    SlurmGpus,
)

KEY = "pcs"
#: Name fmcluster gives the PCS login node group.
PCS_LOGIN_GROUP = "login"

#: The PCS guide "Configure UltraServer instances": a Slurm prolog at the cluster's Prolog setting; prerequisites
#: "A AWS PCS cluster with Slurm 25.05 or later" and "A compute node group using UltraServer instances with a Capacity
#: Block".
PCS_IMEX_DOC = "https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-nvidia-imex.html"
PCS_IMEX_MIN_SLURM = "25.05"

#: EC2 user data is limited to 16 KB raw (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html);
#: scripts up to this size are embedded, larger ones downloaded (headroom for the MIME wrapper and tokens).
PCS_USER_DATA_EMBED_LIMIT_BYTES = 12 * 1024
#: Where AWS PCS installs each Slurm version on its nodes: "Slurm must be installed in the same location as
#: AWS PCS Slurm installer packages: /opt/aws/pcs/scheduler/slurm-version"
#: (https://docs.aws.amazon.com/pcs/latest/userguide/multi-cluster-login-script-prerequisites.html).
PCS_SLURM_DIR = "/opt/aws/pcs/scheduler/slurm-{version}"


#: AWS PCS documents no replacement of a node drained by the user (unverified whether it replaces one): the node stays
#: drained, an operator replaces or resumes it.
PCS_GATE_DRAIN = GateDrain(GATE_DRAIN_DEFAULT.state, GATE_DRAIN_DEFAULT.reason,
                           "not documented (unverified): the node stays drained until an operator acts",
                           "https://docs.aws.amazon.com/pcs/latest/userguide/ (no drained-node replacement documented)")


#: GPU gres: PCS writes a gres.conf GPU record for a compute node group from its instance type: its
#: ``gresCustomSettings`` records are merged "with the GPU record it derives from the instance type" (PCS API Reference,
#: https://docs.aws.amazon.com/pcs/latest/APIReference/API_ComputeNodeGroupSlurmConfiguration.html, gresCustomSettings;
#: the records get the group's ``NodeName=`` prefix: https://docs.aws.amazon.com/pcs/latest/userguide/gres-custom-settings.html),
#: and "AWS PCS enables Slurm GRES autodetection by default on compute node groups that have GPUs ... only when the
#: socket layout of the node is known" (https://docs.aws.amazon.com/pcs/latest/userguide/slurm-versions_release-notes.html).
#: So ``--gpus-per-node`` is accepted on the P-instance groups fmcluster creates. Devices: PCS generates cgroup.conf
#: (https://docs.aws.amazon.com/pcs/latest/userguide/slurm-configuration.html) and its defaults are not stated in what
#: could be read, so ConstrainDevices is unknown: asking for the GPUs is right either way where gres is declared.
PCS_SLURM_GPUS = SlurmGpus(
    gres=True, devices_confined=None,
    source="https://docs.aws.amazon.com/pcs/latest/APIReference/API_ComputeNodeGroupSlurmConfiguration.html (the GPU "
           "record PCS derives from the instance type); https://docs.aws.amazon.com/pcs/latest/userguide/"
           "slurm-versions_release-notes.html (GRES autodetection on GPU compute node groups)",
    unverified="PCS's cgroup.conf defaults (ConstrainDevices)")


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


def profile(orch: OrchestratorSpec) -> OrchestratorProfile:
    """The profile of a PCS blueprint (Slurm directory and IMEX wiring follow ``pcs.slurm_version``)."""
    return OrchestratorProfile(
        key=KEY, kind="pcs", settings_path="orchestrator.pcs",
        # efa-only is refused on PCS (R-PCS-3), so there is no choice to advise: the subnet rules never
        # suggest it (efa_interface_type_setting None); the subnet counts one address per EFA card.
        efa_interface_type=orch.pcs.efa_interface_type,
        efa_interface_type_setting=None, head_node_label="login node",
        management=("login node",), reserved_group_names=(PCS_LOGIN_GROUP,), capacity_types=EC2_PURCHASE_OPTIONS,
        node_bootstrap_delivery="s3_asset", head_node_script_delivery="s3_asset", default_node_discovery="ec2",
        needs_vpc=True,
        user_data_embed_limit_bytes=PCS_USER_DATA_EMBED_LIMIT_BYTES,
        slurm_bin_dir=PCS_SLURM_DIR.format(version=orch.pcs.slurm_version) + "/bin",
        fleet_stop="UpdateComputeNodeGroup: every compute node group scaled to 0 (CloudFormation drift until restored)",
        imex=_pcs_imex(orch.pcs.slurm_version), health_check="node_timer", task_prolog=False,
        slurm_accounting="managed",
        management_instance_types=(("login node", orch.pcs.login_instance_type),),
        ssm_target="<login-node-instance-id>",
        gate_drain=PCS_GATE_DRAIN,
        slurm_gpus=PCS_SLURM_GPUS,
        cluster_fee=ClusterFee("PCS cluster fee", f"size {orch.pcs.size}", None,
                               "unknown: AWS PCS charges per cluster-hour by size (https://aws.amazon.com/pcs/pricing/); "
                               "not in the table"),
        boot_parts=(
            BootPart("pcs-node-registration", 30,
                     "model: the node joins Slurm when cloud-init (which runs fmcluster's user data) finishes "
                     "(https://docs.aws.amazon.com/pcs/latest/userguide/working-with_launch-templates_user-data.html); "
                     "AWS publishes no duration for the PCS agent's configuration and slurmd's registration"),
        ),
    )


def pinned_releases(bp: Blueprint, cluster_plan: object = None) -> list[PinnedRelease]:
    """The registry row's ``releases`` hook: the Slurm release of the PCS cluster (``orchestrator.pcs.slurm_version``)."""
    return [PinnedRelease("slurm", bp.orchestrator.pcs.slurm_version, "orchestrator.pcs.slurm_version")]
