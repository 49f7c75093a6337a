"""The SageMaker HyperPod Slurm profile (:class:`fmcluster.orchestrators.profile.OrchestratorProfile`). Sources per fact."""

from __future__ import annotations

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.orchestrators.hyperpod.profile import (
    HYPERPOD_BOOT_PARTS,
    HYPERPOD_CAPACITY,
    HYPERPOD_CONTROLLER_GROUP,
    HYPERPOD_LOGIN_GROUP,
)
from fmcluster.orchestrators.profile import GateDrain, ImexWiring, OrchestratorProfile, SlurmGpus

KEY = "hyperpod-slurm"

#: Where HyperPod's Slurm lives on its nodes: ``/opt/slurm`` (AWS's HyperPod lifecycle samples,
#: aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/
#: utils/slurm_fix_plugstackconf.sh ``slurm_dir="/opt/slurm"`` and utils/install_slurm_exporter.sh, whose service sets
#: ``Environment=PATH=/opt/slurm/bin:$PATH`` because the commands are not on a service's PATH). The HyperPod
#: developer guide names no Slurm directory (unverified against an AWS document; the samples are AWS's own).
HYPERPOD_SLURM = "/opt/slurm"


#: HyperPod replaces a Slurm node set to FAIL with the reason "Action:Replace" (AWS's form exactly; the gate's own reason
#: goes to its verdict and log, not into the Slurm reason, since another text is not documented to be detected).
HYPERPOD_GATE_DRAIN = GateDrain(
    "FAIL", "Action:Replace", "HyperPod replaces the instance behind the node and returns it to service",
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-replace-faulty-instance.html "
    "(scontrol update node=<node> state=fail reason=\"Action:Replace\")")


#: GPU gres: none by default. AWS's own HyperPod material: the nccl-tests job keeps ``--gpus-per-node=8`` commented out,
#: "Uncomment for AWS ParallelCluster" (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/
#: nccl-tests-container.sbatch, commit d029bfab "Change gres for nccl tests"), the HyperPod pre-check flags ``--gpus`` and
#: ``--gres=gpu`` in a job as "an unsupported option on Hyperpod currently. Unless you've enabled gres/pmix explicitly"
#: (1.architectures/5.sagemaker-hyperpod/hyperpod-precheck.py), and a HyperPod job asking for GPUs was refused with
#: "Invalid generic resource (gres) specification" (awslabs/awsome-distributed-ai issue #196). Devices: AWS's optional
#: lifecycle scripts add ConstrainDevices=yes (LifecycleScripts/base-config/utils/install_enroot_pyxis.sh,
#: utils/pam_adopt_cgroup_wheel.sh); fmcluster runs neither, and without gres/gpu no GPU would be confined anyway
#: (:class:`SlurmGpus`). Unverified: no AWS page states HyperPod's slurm.conf or gres.conf, and AWS's newer HyperPod
#: observability sample submits ``sbatch --gres=gpu:1`` (Extensions/observability/README.md, 2026), so a newer HyperPod
#: image may declare gres; the scripts keep the request out (a refused job is worse than an unconfined one). The samples
#: above are of the lifecycle-script mode (provisioning_parameters.json); fmcluster uses the API-driven mode
#: (``SlurmConfigStrategy: Managed``, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-migration.html),
#: in which HyperPod writes slurm.conf itself and whose gres configuration no page states; AWS's own job example there
#: asks for no GPU either ("srun -N 8 --exclusive train.sh",
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-schedule-slurm-job.html).
HYPERPOD_SLURM_GPUS = SlurmGpus(
    gres=False, devices_confined=False,
    source="aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch, "
           "1.architectures/5.sagemaker-hyperpod/hyperpod-precheck.py; awslabs/awsome-distributed-ai issue #196",
    unverified="no AWS page states HyperPod's gres.conf in the API-driven (Managed) mode fmcluster uses; a newer "
               "HyperPod image may declare gres/gpu")


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
        health_check="slurm_conf", task_prolog=True, encrypted_custom_ami=False,
        slurm_bin_dir=f"{HYPERPOD_SLURM}/bin",
        fleet_stop="UpdateCluster: every compute instance group to 0 instances (CloudFormation drift until restored)",
        gate_drain=HYPERPOD_GATE_DRAIN,
        slurm_gpus=HYPERPOD_SLURM_GPUS,
        # HyperPod SSM targets: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html
        # ("sagemaker-cluster:[cluster-id]_[instance-group-name]-[instance-id]"; cluster id: the last part of the ARN)
        # the controller runs Prometheus and Grafana (head_node_label), also when users log in to a login group
        ssm_target=f"sagemaker-cluster:<cluster-id>_{HYPERPOD_CONTROLLER_GROUP}-<instance-id>",
        boot_parts=HYPERPOD_BOOT_PARTS,
    )
