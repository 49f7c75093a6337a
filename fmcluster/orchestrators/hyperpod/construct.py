"""Amazon SageMaker HyperPod (``AWS::SageMaker::Cluster``), Slurm or EKS orchestration.

Slurm uses HyperPod's API-driven configuration completely: a ``Controller`` group, an optional ``Login``
group and one ``Compute`` group per compute group (partition = group name), each with ``SlurmConfig``, and
FSx for Lustre mounted by HyperPod from ``InstanceStorageConfigs``. Every instance group's lifecycle
config names its script with ``OnInitComplete`` ("Extended mode": HyperPod configures its default
software, Slurm and the FSx mount first, writes its own configuration under ``/opt/ml/config/``, then runs
the script), never ``OnCreate`` ("Customer Managed mode", where the scripts must start Slurm and mount
FSx themselves). No ``provisioning_parameters.json`` is uploaded: AWS refuses a lifecycle config that has
both ``SlurmConfig`` and that file. The scripts (one prefix per instance group: ``on_init_complete.sh``
and, for GPU groups, our rendered node scripts) go to a ``sagemaker-``-prefixed bucket this construct
creates; worker groups run ``bootstrap.sh`` from ``on_init_complete.sh``.

With a metrics layer, the ``controller`` group's folder also holds the observability head-node script;
its ``on_init_complete.sh`` copies it to ``/opt/fmcluster`` and starts it once Slurm answers
(``common.start_after_slurm``; Slurm is up already in this mode, so it starts at once), and the execution
role gets the observability node policy. All instance groups share that one execution role, so the GPU
groups get the policy as well.

EKS joins worker groups (no controller/login) to an existing EKS cluster or to the one the ``<name>-eks`` stack
creates (:mod:`fmcluster.orchestrators.hyperpod_eks.addons`), also with ``OnInitComplete``.

Sources (botocore sagemaker CreateCluster, the AWS::SageMaker::Cluster resource schema):
- API-driven Slurm configuration (``SlurmConfig``, ``Orchestrator.Slurm.SlurmConfigStrategy``,
  ``FsxLustreConfig``): https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html; no
  ``provisioning_parameters.json`` with ``SlurmConfig`` ("The LifeCycleConfig cannot include both a SLURM
  Orchestrator Config and a provisioning_parameters.json file simultaneously"):
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-migration.html
- Lifecycle modes: CloudFormation resource schema AWS::SageMaker::Cluster ``ClusterLifeCycleConfig`` (SourceS3Uri +
  OnCreate = Customer Managed mode, SourceS3Uri + OnInitComplete = Extended mode, "runs after HyperPod configures
  the default software"; cfn-lint 1.58.0 schemas); botocore sagemaker service-2.json ``ClusterLifeCycleConfig.
  OnInitComplete`` ("runs on the node after the AMI-based initialization is complete"); awslabs/awsome-distributed-ai
  ``1.architectures/5.sagemaker-hyperpod/Extensions/observability/README.md`` (``SlurmConfig`` with
  ``OnInitComplete`` on every group; creation fails if the script exits non-zero).
- Spot: ``InstanceGroups[].CapacityRequirements.Spot`` (empty object), botocore sagemaker service-2.json
  ``ClusterCapacityRequirements``; CloudFormation schema ``ClusterCapacityRequirements``.
- ``ImageId``, ``ScheduledUpdateConfig``, ``AutoPatchConfig``: CloudFormation schema AWS::SageMaker::Cluster
  ``ClusterInstanceGroup`` (cfn-lint 1.58.0 schemas); botocore sagemaker service-2.json
  ``ClusterInstanceGroupSpecification``.
- Lifecycle bucket must start with ``sagemaker-`` for ``AmazonSageMakerClusterInstanceRolePolicy``:
  botocore ``sagemaker`` ``ClusterLifeCycleConfig.SourceS3Uri`` (R7.12).
- ``InstanceStorageConfigs`` EBS volumes mount at ``/opt/sagemaker``; ``NetworkInterface.InterfaceType``
  efa/efa-only; ``TrainingPlanArn``; ``ThreadsPerCore`` 1/2: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html
- Execution role VPC permissions (ENIs in the customer VPC):
  aws/sagemaker-hyperpod-cluster-setup ``slurm/cloudformation/slurm-iam-role-template.yaml``;
  EKS orchestration additions (CNI, ECR, pod identity):
  aws/sagemaker-hyperpod-cluster-setup ``eks/cloudformation/sagemaker-iam-role-template.yaml``.
- ``fsx:DescribeFileSystems`` for Lustre over EFA: see ``common.fsx_describe_statement``.

Slurm hooks (Slurm orchestration; :mod:`fmcluster.templates.slurm_hooks`): ``SlurmConfig`` takes only ``NodeType``
and ``PartitionNames`` (botocore sagemaker service-2.json ``ClusterSlurmConfig``), so the controller's
``OnInitComplete`` runs ``fmcluster-slurm-conf.sh``, which adds ``HealthCheckProgram`` (the node check's fast mode,
draining with the reason), ``HealthCheckInterval``, ``HealthCheckNodeState`` and ``TaskProlog`` (the job environment)
to ``/opt/slurm/etc/slurm.conf`` and, with p6e-gb200 groups (``OrchestratorProfile.imex``), ``Prolog`` (the per-job
IMEX prolog, as a glob over ``/opt/fmcluster/slurm/prolog.d/``, one more ``Prolog`` line beside the site's) with
``PrologFlags=Alloc,NoHold`` merged into the flags already there (no ``NoHold`` beside ``Contain``/``X11``/``RunInJob``,
which slurmctld refuses), then ``scontrol reconfigure``. HyperPod's Slurm lives in ``/opt/slurm`` and its controller's
slurm.conf is edited in place the same way by AWS's own HyperPod lifecycle samples
(aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/``
``setup_rds_accounting.sh``, ``utils/pam_adopt_cgroup_wheel.sh``: ``PrologFlags=Contain`` then a restart); compute
nodes read it configless. Each compute group's ``OnInitComplete`` first installs the TaskProlog and the IMEX prolog
on the node (``fmcluster-slurm-hooks-install.sh``). Not verified: whether HyperPod rewrites slurm.conf on a later
cluster update (``SlurmConfigStrategy: Managed`` is documented for partitions), which would drop these keys until the
controller's script runs again; and whether slurmd can start a task on a compute node before that node's
``OnInitComplete`` has installed the TaskProlog (HyperPod starts Slurm before the script runs).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, Aws, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from fmcluster.blueprint.model import HyperPodSettings
from fmcluster.constructs.capacity import hyperpod_training_plan
from fmcluster.constructs.image import NodeImages
from fmcluster.constructs.orchestrator import (
    HEAD_NODE_PATH,
    HEAD_NODE_SCRIPT,
    acknowledge,
    acknowledge_wildcards,
    checkpoint_acknowledgement,
    grant_node_storage,
    start_after_slurm,
)
from fmcluster.constructs.storage import CheckpointAccess, LustreMount
from fmcluster.orchestrators.hyperpod.profile import HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP
from fmcluster.resolved import NODE_DIR, OrchestratorProfile, ResolvedGroup
from fmcluster.templates.context import NodeContext
from fmcluster.templates.node_scripts import ENTRY_POINT, render_node_scripts
from fmcluster.templates.slurm_hooks import (
    render_hooks_installer,
    render_imex_prolog,
    render_slurm_conf_editor,
    slurm_conf_settings,
)

LIFECYCLE_PREFIX = "lifecycle"
#: The lifecycle script of every instance group, named by ``LifeCycleConfig.OnInitComplete``.
ON_INIT_COMPLETE = "on_init_complete.sh"
BUCKET_PREFIX = "sagemaker-"
#: S3 bucket names are 3-63 characters (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
MAX_BUCKET_NAME = 63
#: An AWS account id is 12 digits: the length the lifecycle bucket name rule (R-HP-5) assumes for the deploy-time
#: account.
ACCOUNT_ID_LENGTH = 12
#: Secondary EBS volume (mounted at /opt/sagemaker) for groups without local NVMe: controller and login
#: keep Slurm state, container images and logs there. GPU groups use their instance-store NVMe instead.
EBS_VOLUME_GIB = 500
SLURM_CONFIG_STRATEGY = "Managed"
#: HyperPod's Slurm (the AWS HyperPod lifecycle samples edit /opt/slurm/etc/slurm.conf and call /opt/slurm/sbin daemons).
HYPERPOD_SLURM = "/opt/slurm"
#: Slurm hooks on each HyperPod compute node's own disk (installed by its OnInitComplete; fmcluster does not rely on a
#: file system shared with the controller).
TASK_PROLOG = f"{NODE_DIR}/slurm/fmcluster-task-prolog.sh"
IMEX_PROLOG = f"{NODE_DIR}/slurm/prolog.d/91_fmcluster_imex_prolog.sh"
#: slurm.conf ``Prolog`` as a glob ("A glob pattern (See glob(7)) may also be used to specify more than one program",
#: SchedMD/slurm doc/man/man5/slurm.conf.5), over the directory compute nodes fill at OnInitComplete.
PROLOG_GLOB = f"{NODE_DIR}/slurm/prolog.d/*"
SLURM_CONF_SCRIPT = "fmcluster-slurm-conf.sh"
HOOKS_INSTALL_SCRIPT = "fmcluster-slurm-hooks-install.sh"


def lifecycle_bucket_name_length(cluster_name: str, region: str) -> int:
    """Length of ``sagemaker-<cluster>-<account>-<region>`` with a 12-digit account id (characters)."""
    return len(BUCKET_PREFIX) + len(cluster_name) + 1 + ACCOUNT_ID_LENGTH + 1 + len(region)


def lifecycle_bucket_name(cluster_name: str, region: str) -> str:
    """``sagemaker-<cluster>-<account>-<region>``, the account a deploy-time token. Never shortened (a
    shortened name could collide with another cluster's): rule R-HP-5 refuses names for which it would exceed
    S3's 63 characters (:func:`lifecycle_bucket_name_length`); a name that slips through fails synthesis.

    Raises ValueError when the name would not fit.
    """
    length = lifecycle_bucket_name_length(cluster_name, region)
    if length > MAX_BUCKET_NAME:
        raise ValueError(
            f"lifecycle bucket name sagemaker-{cluster_name}-<account>-{region} has {length} characters; "
            f"S3 allows {MAX_BUCKET_NAME} (rule R-HP-5)"
        )
    return f"{BUCKET_PREFIX}{cluster_name}-{Aws.ACCOUNT_ID}-{region}"


def on_init_complete_script(*, group: str, role: str, runs_bootstrap: bool, starts_head_node: bool = False,
                            hooks: Sequence[str] = ()) -> str:
    """The ``OnInitComplete`` script of one instance group (HyperPod runs it as root from the group's prefix,
    after it configured Slurm and mounted FSx for Lustre from the cluster request; HyperPod's own
    configuration is under ``/opt/ml/config/``). It neither starts Slurm nor mounts anything.

    ``runs_bootstrap``: run the group's ``bootstrap.sh`` (GPU groups). ``starts_head_node``: copy ``head-node.sh``
    from the group's folder to ``/opt/fmcluster`` and start it once Slurm answers. Default: off (no head-node
    script). ``hooks``: scripts of the group's folder run first (the Slurm hooks: on the controller the slurm.conf
    editor, on compute nodes the TaskProlog/IMEX prolog installer). Default: none. A non-zero exit fails the node's
    creation.
    """
    lines = [
        "#!/usr/bin/env bash",
        f"# fmcluster HyperPod OnInitComplete script for instance group {group} ({role}).",
        "# Rendered by fmcluster. HyperPod has configured Slurm and mounted FSx for Lustre from the cluster request",
        "# before this runs (its own configuration is under /opt/ml/config/); this script starts and mounts nothing.",
        "set -euo pipefail",
        *(['here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"'] if runs_bootstrap or starts_head_node or hooks
          else []),
        'log() { printf \'%s fmcluster-on-init-complete: %s\\n\' "$(date -u +%FT%TZ)" "$*"; }',
        f'log "instance group {group}, role {role}"',
        *(f'bash "${{here}}/{hook}"' for hook in hooks),
    ]
    if runs_bootstrap:
        lines += [f'bash "${{here}}/{ENTRY_POINT}"']
    if starts_head_node:
        lines += [
            f'install -D -m 0755 "${{here}}/{HEAD_NODE_SCRIPT}" {HEAD_NODE_PATH}',
            start_after_slurm(HEAD_NODE_PATH),
        ]
    lines.append('log "done"')
    return "\n".join(lines) + "\n"


class HyperPodCluster(Construct):
    """A HyperPod cluster, its lifecycle bucket and scripts, and its execution role.

    Attributes: ``cluster`` (CfnCluster), ``bucket`` (lifecycle bucket), ``deployment``
    (BucketDeployment of the scripts), ``role`` (execution role), ``instance_groups`` (the
    CloudFormation ``InstanceGroups`` list as plain dicts, with tokens), ``scripts`` (group -> file -> text).

    ``head_node_script`` (text) runs on the controller group once Slurm answers and ``head_node_policy`` is
    attached to the execution role (shared by all groups); both only with Slurm orchestration (EKS has no
    controller, rule R-OBS-3 warns). Default: no head-node script and no extra policy.

    ``groups`` are the resolved compute groups (one ``Compute`` instance group each, in order); ``profile``
    is the HyperPod profile (accepted capacity types, EFA interface type). ``eks_cluster_arn`` (EKS only): the ARN
    of the EKS cluster fmcluster creates; default: ``spec.eks_cluster_arn`` (an existing cluster).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: HyperPodSettings,
        profile: OrchestratorProfile,
        cluster_name: str,
        groups: Sequence[ResolvedGroup],
        node_contexts: Mapping[str, NodeContext],
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
        tags: Mapping[str, str],
        head_node_script: str | None = None,
        head_node_policy: iam.IManagedPolicy | None = None,
        eks_cluster_arn: str | None = None,
        images: NodeImages | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.images = images or NodeImages({})
        stack = Stack.of(self)
        slurm = spec.orchestration == "slurm"
        # EKS: the cluster the <name>-eks stack creates (a token), else the blueprint's existing cluster.
        self.eks_cluster_arn = eks_cluster_arn or spec.eks_cluster_arn
        self.bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            bucket_name=lifecycle_bucket_name(cluster_name, stack.region),
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            self.bucket,
            (
                "AwsSolutions-S1",
                "Holds only the lifecycle scripts this stack renders and redeploys; the checkpoint and data buckets "
                "carry access logs. A log bucket in another stack would make the storage stack depend on this one.",
            ),
        )

        # ---- instance-group topology ----------------------------------------------------------
        topology: list[tuple[str, str, ResolvedGroup | None]] = []
        if slurm:
            topology.append((HYPERPOD_CONTROLLER_GROUP, "Controller", None))
            if spec.login_instance_type:
                topology.append((HYPERPOD_LOGIN_GROUP, "Login", None))
        topology += [(g.name, "Compute", g) for g in groups]

        # IMEX per job on the groups the profile wires (R-IMEX-1 refuses the others): one fact, ResolvedGroup.imex
        self.imex_types = sorted({g.spec.instance_type for g in groups
                                  if slurm and g.imex})
        hooks = self._slurm_hooks() if slurm else {}
        self.scripts: dict[str, dict[str, str]] = {}
        for name, node_type, g in topology:
            files = dict(render_node_scripts(node_contexts[name])) if g is not None else {}
            head = head_node_script if slurm and name == HYPERPOD_CONTROLLER_GROUP else None
            if head is not None:
                files[HEAD_NODE_SCRIPT] = head
            hook = hooks.get(node_type)
            if hook is not None:
                files[hook[0]] = hook[1]
            files[ON_INIT_COMPLETE] = on_init_complete_script(
                group=name,
                role=node_type.lower(),
                runs_bootstrap=g is not None,
                starts_head_node=head is not None,
                hooks=(hook[0],) if hook is not None else (),
            )
            self.scripts[name] = files

        staging = Path(tempfile.mkdtemp(prefix="fmcluster-lifecycle-"))
        for name, files in self.scripts.items():
            for fname, text in files.items():
                path = staging / name / fname
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                if fname.endswith(".sh"):
                    path.chmod(0o755)
        # Only the rendered scripts: no provisioning_parameters.json next to SlurmConfig (AWS refuses both).
        sources = [s3deploy.Source.asset(str(staging))]
        self.deployment = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            destination_bucket=self.bucket,
            sources=sources,
            destination_key_prefix=f"{LIFECYCLE_PREFIX}/",
            retain_on_delete=False,
            prune=True,
        )
        self._acknowledge_deployment_handler(stack)

        # ---- execution role -------------------------------------------------------------------
        self.role = self._execution_role(
            spec,
            cluster_name,
            vpc,
            subnet,
            security_group,
            lustre,
            checkpoints,
        )
        if slurm and head_node_policy is not None:
            # The controller group runs Prometheus; HyperPod takes one execution role per group, and all
            # groups share this one.
            self.role.add_managed_policy(head_node_policy)

        # ---- instance groups ------------------------------------------------------------------
        self.instance_groups: list[dict[str, Any]] = []
        for name, node_type, g in topology:
            self.instance_groups.append(self._instance_group(spec, profile, name, node_type, g, slurm, lustre))

        orchestrator: dict[str, Any] = (
            {"Slurm": {"SlurmConfigStrategy": SLURM_CONFIG_STRATEGY}}
            if slurm
            else {"Eks": {"ClusterArn": self.eks_cluster_arn}}
        )
        self.cluster = sagemaker.CfnCluster(
            self,
            "Resource",
            cluster_name=cluster_name,
            node_recovery=spec.node_recovery,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=[security_group.security_group_id],
                subnets=[subnet.subnet_id],
            ),
            tags=[{"key": k, "value": v} for k, v in sorted(tags.items())],
        )
        # The groups are kept in CloudFormation's own shape (they are also what the CreateCluster request
        # looks like); the typed L1 structs would need camelCase copies of the same data.
        self.cluster.add_property_override("InstanceGroups", self.instance_groups)
        self.cluster.add_property_override("Orchestrator", orchestrator)
        # Scripts and permissions must be in place before HyperPod starts the first node.
        self.cluster.node.add_dependency(self.deployment)
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is not None:  # the role's ARN is referenced already; its inline policy is not
            self.cluster.node.add_dependency(policy)

    # -- pieces -------------------------------------------------------------------------------
    def _slurm_hooks(self) -> dict[str, tuple[str, str]]:
        """Instance-group node type -> (file name, script) of the Slurm hooks (see the module docstring): the
        controller's slurm.conf editor and every compute group's TaskProlog / IMEX prolog installer."""
        imex = bool(self.imex_types)
        editor = render_slurm_conf_editor(
            slurm_conf=f"{HYPERPOD_SLURM}/etc/slurm.conf", scontrol=f"{HYPERPOD_SLURM}/bin/scontrol",
            settings=slurm_conf_settings(NODE_DIR, TASK_PROLOG), orchestrator="SageMaker HyperPod",
            node_label="controller", prolog=PROLOG_GLOB if imex else None,
            why="HyperPod's SlurmConfig has no keys for these (NodeType and PartitionNames only), so its controller's "
                "OnInitComplete edits slurm.conf.")
        installer = render_hooks_installer(
            NODE_DIR, TASK_PROLOG, orchestrator="SageMaker HyperPod", node_label="compute node",
            share_note="Every compute node installs its own copy (OnInitComplete, before the node bootstrap).",
            imex_prolog=IMEX_PROLOG if imex else None,
            imex_script=render_imex_prolog(NODE_DIR, f"{HYPERPOD_SLURM}/bin/scontrol", self.imex_types) if imex else "")
        return {"Controller": (SLURM_CONF_SCRIPT, editor), "Compute": (HOOKS_INSTALL_SCRIPT, installer)}

    def _instance_group(
        self,
        spec: HyperPodSettings,
        profile: OrchestratorProfile,
        name: str,
        node_type: str,
        rg: ResolvedGroup | None,
        slurm: bool,
        lustre: LustreMount | None,
    ) -> dict[str, Any]:
        uri = f"s3://{self.bucket.bucket_name}/{LIFECYCLE_PREFIX}/{name}/"
        ig: dict[str, Any] = {
            "InstanceGroupName": name,
            "ExecutionRole": self.role.role_arn,
            # Extended mode: HyperPod sets up Slurm and FSx, then runs our script (see the module docstring).
            "LifeCycleConfig": {"SourceS3Uri": uri, "OnInitComplete": ON_INIT_COMPLETE},
        }
        # ImageId with a custom AMI (bake: the image stack's AMI; custom: software.image.ami_id); unset = HyperPod's
        # default image. A custom AMI must be unencrypted and owned by this account (ClusterInstanceGroupSpecification
        # ImageId: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html).
        ami = self.images.for_group(rg.name) if rg is not None else self.images.others
        if ami is not None:
            ig["ImageId"] = ami
        if spec.ami_updates is not None:
            ig["ScheduledUpdateConfig"] = {
                "ScheduleExpression": spec.ami_updates.schedule,
                "DeploymentConfig": {
                    "RollingUpdatePolicy": {
                        "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": spec.ami_updates.max_batch_percent},
                    },
                    "WaitIntervalInSeconds": spec.ami_updates.wait_interval_seconds,
                },
            }
        if spec.auto_patch is not None:
            ig["AutoPatchConfig"] = {"PatchingStrategy": spec.auto_patch.strategy}
        storage: list[dict[str, Any]] = []
        if rg is None:
            ig["InstanceType"] = (
                spec.controller_instance_type if node_type == "Controller" else spec.login_instance_type
            )
            ig["InstanceCount"] = 1
            ig["ThreadsPerCore"] = 2
            storage.append({"EbsVolumeConfig": {"VolumeSizeInGB": EBS_VOLUME_GIB}})
        else:
            g, inst = rg.spec, rg.instance
            ig["InstanceType"] = inst.hyperpod_name
            ig["InstanceCount"] = g.count
            # Grace (arm64) cores run one thread each; HyperPod wants 1 for types without SMT.
            ig["ThreadsPerCore"] = 1 if inst.cpu_architecture == "arm64" else g.threads_per_core
            if spec.deep_health_checks:
                ig["OnStartDeepHealthChecks"] = list(spec.deep_health_checks)
            if g.efa_enabled:
                ig["NetworkInterface"] = {"InterfaceType": profile.efa_interface_type}
            plan = hyperpod_training_plan(g)
            if plan:
                ig["TrainingPlanArn"] = plan
            if g.capacity.type == "spot":
                ig["CapacityRequirements"] = {"Spot": {}}
            if not profile.accepts(g.capacity.type):
                Annotations.of(self).add_error(
                    f"compute group {g.name}: HyperPod does not take capacity type {g.capacity.type!r}; "
                    f"allowed {', '.join(profile.capacity_types)}"
                )
            if inst.nvme.count == 0:
                storage.append({"EbsVolumeConfig": {"VolumeSizeInGB": EBS_VOLUME_GIB}})
        if slurm:
            ig["SlurmConfig"] = {"NodeType": node_type}
            if node_type == "Compute":
                ig["SlurmConfig"]["PartitionNames"] = [name]
            if lustre is not None:
                storage.append(
                    {
                        "FsxLustreConfig": {
                            "DnsName": lustre.dns_name,
                            "MountName": lustre.mount_name,
                            "MountPath": lustre.mount_point,
                        }
                    }
                )
        if storage:
            ig["InstanceStorageConfigs"] = storage
        return ig

    def _execution_role(
        self,
        spec: HyperPodSettings,
        cluster_name: str,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        sg: ec2.ISecurityGroup,
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
    ) -> iam.Role:
        role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"fmcluster {cluster_name}: HyperPod instance groups",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerClusterInstanceRolePolicy")
            ],
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="LifecycleScriptsRead",
                actions=["s3:GetObject"],
                resources=[self.bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}/*")],
            )
        )
        arn = f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}"
        eni_targets = [
            f"{arn}:network-interface/*",
            f"{arn}:subnet/{subnet.subnet_id}",
            f"{arn}:security-group/{sg.security_group_id}",
            f"{arn}:vpc/{vpc.vpc_id}",
        ]
        eni_actions = [
            "ec2:CreateNetworkInterface",
            "ec2:CreateNetworkInterfacePermission",
            "ec2:DeleteNetworkInterface",
            "ec2:DeleteNetworkInterfacePermission",
        ]
        describe = [
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeVpcs",
            "ec2:DescribeDhcpOptions",
            "ec2:DescribeSubnets",
            "ec2:DescribeSecurityGroups",
            "ec2:DetachNetworkInterface",
        ]
        if spec.orchestration == "eks":
            eni_actions += [
                "ec2:AssignPrivateIpAddresses",
                "ec2:ModifyNetworkInterfaceAttribute",
                "ec2:UnassignPrivateIpAddresses",
            ]
            eni_targets.append(f"{arn}:instance/*")
            describe += ["ec2:DescribeInstances", "ec2:DescribeTags", "ec2:DescribeInstanceTypes"]
        role.add_to_policy(iam.PolicyStatement(sid="VpcEnis", actions=eni_actions, resources=eni_targets))
        role.add_to_policy(iam.PolicyStatement(sid="VpcDescribe", actions=describe, resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="VpcEniTags",
                actions=["ec2:CreateTags"],
                resources=[f"{arn}:network-interface/*"],
            )
        )
        if spec.orchestration == "eks" and self.eks_cluster_arn:
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EksAttach",
                    actions=["ec2:AttachNetworkInterface"],
                    resources=[f"{arn}:instance/*", f"{arn}:network-interface/*"],
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EcrPull",
                    actions=[
                        "ecr:BatchCheckLayerAvailability",
                        "ecr:BatchGetImage",
                        "ecr:GetAuthorizationToken",
                        "ecr:GetDownloadUrlForLayer",
                    ],
                    resources=["*"],
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EksPodIdentity",
                    actions=["eks-auth:AssumeRoleForPodIdentity"],
                    resources=[self.eks_cluster_arn],
                )
            )
        grant_node_storage(role, lustre, checkpoints)
        acknowledge(
            role,
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy]",
                "HyperPod's documented instance policy (CloudWatch logs/metrics of /aws/sagemaker/Clusters, read of "
                "sagemaker-* buckets); AWS maintains it as the agent changes. Everything else is granted below, scoped.",
            ),
        )
        acknowledge_wildcards(
            role,
            {
                r"^Resource::\*$": "Describe*/Detach, ECR pull and fsx:DescribeFileSystems take no resource-level scope "
                "(aws/sagemaker-hyperpod-cluster-setup IAM templates grant them on *).",
                r"network-interface/\*$|instance/\*$": "HyperPod creates and tags the ENIs and instances at run time, so "
                "their ids are unknown; subnet, security group and VPC are the exact ones.",
                rf"/{LIFECYCLE_PREFIX}/\*$": "Object-level read of the lifecycle prefix only (not the bucket).",
                **checkpoint_acknowledgement(checkpoints),
            },
        )
        return role

    def _acknowledge_deployment_handler(self, stack: Stack) -> None:
        """cdk-nag findings of the BucketDeployment's singleton Lambda (CDK-owned code)."""
        for child in stack.node.children:
            if not child.node.id.startswith("Custom::CDKBucketDeployment"):
                continue
            acknowledge(
                child,
                (
                    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                    "CDK's BucketDeployment handler: only writes its own CloudWatch logs.",
                ),
                (
                    "AwsSolutions-L1",
                    "CDK's BucketDeployment handler: CDK pins the runtime of its own code.",
                ),
            )
            acknowledge_wildcards(
                child,
                {
                    r".": "CDK's BucketDeployment handler: copies the staged lifecycle assets from the CDK asset bucket "
                    "into the lifecycle bucket (CDK-generated grant_read/grant_read_write).",
                },
            )
