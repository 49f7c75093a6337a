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

What only one orchestration adds comes from its slice, as a :class:`HyperPodOrchestration` the slice's stack
builder passes in: Slurm (controller and login groups, ``SlurmConfig``, the FSx mount, the Slurm hooks, the
head-node script and policy) in :mod:`fmcluster.orchestrators.hyperpod_slurm.construct_slurm`; EKS (``Orchestrator.Eks``
and the execution role's EKS additions) in :mod:`fmcluster.orchestrators.hyperpod_eks.construct_eks`. EKS joins
worker groups (no controller/login) to an existing EKS cluster or to the one the ``<name>-eks`` stack creates
(:mod:`fmcluster.orchestrators.hyperpod_eks.addons`), also with ``OnInitComplete``.

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
- ``fsx:DescribeFileSystems`` for Lustre over EFA: see ``fmcluster.features.storage.construct.fsx_describe_statement``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from fmcluster.constructs.orchestrator import (
    HEAD_NODE_PATH,
    HEAD_NODE_SCRIPT,
    acknowledge,
    acknowledge_wildcards,
    start_after_slurm,
)
from fmcluster.constructs.staging import scratch_dir
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.node.render_context import NodeContext
from fmcluster.features.node.render_scripts import ENTRY_POINT, render_node_scripts
from fmcluster.features.storage.construct import (
    CheckpointAccess,
    LustreMount,
    checkpoint_acknowledgement,
    grant_node_storage,
)
from fmcluster.resolved import OrchestratorProfile, ResolvedGroup

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
                            hooks: Sequence[str] = (), final_hooks: Sequence[str] = ()) -> str:
    """The ``OnInitComplete`` script of one instance group (HyperPod runs it as root from the group's prefix,
    after it configured Slurm and mounted FSx for Lustre from the cluster request; HyperPod's own
    configuration is under ``/opt/ml/config/``). It neither starts Slurm nor mounts anything.

    ``runs_bootstrap``: run the group's ``bootstrap.sh`` (GPU groups). ``starts_head_node``: copy ``head-node.sh``
    from the group's folder to ``/opt/fmcluster`` and start it once Slurm answers. Default: off (no head-node
    script). ``hooks``: scripts of the group's folder run first (the Slurm hooks: on the controller the slurm.conf
    editor, on compute nodes the TaskProlog/IMEX prolog installer). Default: none. ``final_hooks``: scripts run last,
    after everything else succeeded (Slurm: resume the node the first hook drained). Default: none. A non-zero exit
    fails the node's creation.
    """
    lines = [
        "#!/usr/bin/env bash",
        f"# fmcluster HyperPod OnInitComplete script for instance group {group} ({role}).",
        "# Rendered by fmcluster. HyperPod has configured Slurm and mounted FSx for Lustre from the cluster request",
        "# before this runs (its own configuration is under /opt/ml/config/); this script starts and mounts nothing.",
        "set -euo pipefail",
        *(['here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"']
          if runs_bootstrap or starts_head_node or hooks or final_hooks else []),
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
    lines += [f'bash "${{here}}/{hook}"' for hook in final_hooks]
    lines.append('log "done"')
    return "\n".join(lines) + "\n"



def stage_lifecycle_scripts(scripts: Mapping[str, Mapping[str, str]]) -> Path:
    """A new temporary folder holding ``<group>/<file>`` for every script (``*.sh`` executable): the asset the
    lifecycle bucket deployment uploads."""
    staging = scratch_dir("fmcluster-lifecycle-")
    for name, files in scripts.items():
        for fname, text in files.items():
            path = staging / name / fname
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if fname.endswith(".sh"):
                path.chmod(0o755)
    return staging


@dataclass(frozen=True)
class GroupLifecycle:
    """What an orchestration adds to one instance group's lifecycle folder: ``files`` (name -> text, written before
    ``on_init_complete.sh``), ``hooks`` (files of the folder ``on_init_complete.sh`` runs first) and whether it starts
    the head-node script (``starts_head_node``). Default: nothing."""

    files: dict[str, str] = field(default_factory=dict)
    hooks: tuple[str, ...] = ()
    starts_head_node: bool = False
    #: files of the folder ``on_init_complete.sh`` runs last, after the node bootstrap succeeded. Default: none.
    final_hooks: tuple[str, ...] = ()


@dataclass(frozen=True)
class VpcGrants:
    """Execution-role VPC permissions an orchestration adds to the shared ones: ENI actions and targets, and describe
    actions. Default: none."""

    eni_actions: tuple[str, ...] = ()
    eni_targets: tuple[str, ...] = ()
    describe: tuple[str, ...] = ()


class HyperPodOrchestration:
    """What one HyperPod orchestration adds to :class:`HyperPodCluster` (a strategy each orchestration slice passes
    in from its stack builder). Every hook's default adds nothing."""

    def management_groups(self, spec: HyperPodSettings) -> list[tuple[str, str]]:
        """(instance group name, node type) of the groups before the compute groups. Default: none."""
        return []

    def lifecycle_files(self, name: str, node_type: str) -> GroupLifecycle:
        """The files and hooks this orchestration adds to instance group ``name``'s lifecycle folder."""
        return GroupLifecycle()

    def vpc_grants(self, arn: str) -> VpcGrants:
        """Extra VPC permissions; ``arn`` is ``arn:<partition>:ec2:<region>:<account>``."""
        return VpcGrants()

    def grant_role(self, role: iam.Role, arn: str) -> None:
        """Statements added to the execution role after the shared VPC ones (before the storage grants)."""

    def attach_policies(self, role: iam.Role) -> None:
        """Managed policies attached to the finished execution role."""

    def configure_instance_group(self, ig: dict[str, Any], name: str, node_type: str,
                                 storage: list[dict[str, Any]]) -> None:
        """Adds this orchestration's keys to instance group ``ig`` and its ``InstanceStorageConfigs`` (``storage``)."""

    def orchestrator(self) -> dict[str, Any]:
        """The cluster's ``Orchestrator`` property."""
        raise NotImplementedError


#: One instance group: (name, node type, the resolved compute group or ``None`` for a management group).
Topology = list[tuple[str, str, ResolvedGroup | None]]


class HyperPodCluster(Construct):
    """A HyperPod cluster, its lifecycle bucket and scripts, and its execution role.

    Attributes: ``cluster`` (CfnCluster), ``bucket`` (lifecycle bucket), ``deployment``
    (BucketDeployment of the scripts), ``role`` (execution role), ``instance_groups`` (the
    CloudFormation ``InstanceGroups`` list as plain dicts, with tokens), ``scripts`` (group -> file -> text).

    ``orchestration`` is what the orchestration adds (:class:`HyperPodOrchestration`, from the hyperpod_slurm or
    hyperpod_eks slice). ``groups`` are the resolved compute groups (one ``Compute`` instance group each, in order);
    ``profile`` is the HyperPod profile (accepted capacity types, EFA interface type).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: HyperPodSettings,
        profile: OrchestratorProfile,
        orchestration: HyperPodOrchestration,
        cluster_name: str,
        groups: Sequence[ResolvedGroup],
        node_contexts: Mapping[str, NodeContext],
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
        tags: Mapping[str, str],
        images: NodeImages | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.orchestration = orchestration
        self.images = images or NodeImages({})
        self._check_capacity_types(profile, groups)
        self.bucket = self._add_lifecycle_bucket(cluster_name)
        topology = self._topology(spec, groups)
        self.scripts = self._render_scripts(topology, node_contexts)
        self.deployment = self._add_lifecycle_scripts()
        self.role = self._add_execution_role(cluster_name, vpc, subnet, security_group, lustre, checkpoints)
        self.orchestration.attach_policies(self.role)
        self.instance_groups = [self._instance_group(spec, profile, name, node_type, g) for name, node_type, g in topology]
        self.cluster = self._add_cluster(spec, cluster_name, subnet, security_group, tags)
        self._wire_dependencies()

    # -- checks -------------------------------------------------------------------------------
    def _check_capacity_types(self, profile: OrchestratorProfile, groups: Sequence[ResolvedGroup]) -> None:
        """An error on this construct for each compute group whose capacity type HyperPod does not take."""
        for rg in groups:
            g = rg.spec
            if not profile.accepts(g.capacity.type):
                Annotations.of(self).add_error(
                    f"compute group {g.name}: HyperPod does not take capacity type {g.capacity.type!r}; "
                    f"allowed {', '.join(profile.capacity_types)}"
                )

    # -- steps --------------------------------------------------------------------------------
    def _add_lifecycle_bucket(self, cluster_name: str) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            bucket_name=lifecycle_bucket_name(cluster_name, Stack.of(self).region),
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            bucket,
            (
                "AwsSolutions-S1",
                "Holds only the lifecycle scripts this stack renders and redeploys; the checkpoint and data buckets "
                "carry access logs. A log bucket in another stack would make the storage stack depend on this one.",
            ),
        )
        return bucket

    def _topology(self, spec: HyperPodSettings, groups: Sequence[ResolvedGroup]) -> Topology:
        """The orchestration's management groups, then one ``Compute`` group per compute group."""
        topology: Topology = [(name, node_type, None) for name, node_type in self.orchestration.management_groups(spec)]
        return topology + [(g.name, "Compute", g) for g in groups]

    def _render_scripts(self, topology: Topology, node_contexts: Mapping[str, NodeContext]) -> dict[str, dict[str, str]]:
        """group -> file -> text: the node scripts (compute groups), the orchestration's files, ``on_init_complete.sh``."""
        scripts: dict[str, dict[str, str]] = {}
        for name, node_type, g in topology:
            files = dict(render_node_scripts(node_contexts[name])) if g is not None else {}
            extra = self.orchestration.lifecycle_files(name, node_type)
            files.update(extra.files)
            files[ON_INIT_COMPLETE] = on_init_complete_script(
                group=name,
                role=node_type.lower(),
                runs_bootstrap=g is not None,
                starts_head_node=extra.starts_head_node,
                hooks=extra.hooks,
                final_hooks=extra.final_hooks,
            )
            scripts[name] = files
        return scripts

    def _add_lifecycle_scripts(self) -> s3deploy.BucketDeployment:
        """The rendered scripts, staged by :func:`stage_lifecycle_scripts`, deployed under the lifecycle prefix."""
        # Only the rendered scripts: no provisioning_parameters.json next to SlurmConfig (AWS refuses both).
        sources = [s3deploy.Source.asset(str(stage_lifecycle_scripts(self.scripts)))]
        deployment = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            destination_bucket=self.bucket,
            sources=sources,
            destination_key_prefix=f"{LIFECYCLE_PREFIX}/",
            retain_on_delete=False,
            prune=True,
        )
        self._acknowledge_deployment_handler(Stack.of(self))
        return deployment

    def _add_cluster(self, spec: HyperPodSettings, cluster_name: str, subnet: ec2.ISubnet,
                     security_group: ec2.ISecurityGroup, tags: Mapping[str, str]) -> sagemaker.CfnCluster:
        cluster = sagemaker.CfnCluster(
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
        cluster.add_property_override("InstanceGroups", self.instance_groups)
        cluster.add_property_override("Orchestrator", self.orchestration.orchestrator())
        return cluster

    def _wire_dependencies(self) -> None:
        """Scripts and permissions must be in place before HyperPod starts the first node."""
        self.cluster.node.add_dependency(self.deployment)
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is not None:  # the role's ARN is referenced already; its inline policy is not
            self.cluster.node.add_dependency(policy)

    # -- pieces -------------------------------------------------------------------------------
    def _instance_group(
        self,
        spec: HyperPodSettings,
        profile: OrchestratorProfile,
        name: str,
        node_type: str,
        rg: ResolvedGroup | None,
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
            self._compute_settings(ig, storage, spec, profile, rg)
        self.orchestration.configure_instance_group(ig, name, node_type, storage)
        if storage:
            ig["InstanceStorageConfigs"] = storage
        return ig

    @staticmethod
    def _compute_settings(ig: dict[str, Any], storage: list[dict[str, Any]], spec: HyperPodSettings,
                          profile: OrchestratorProfile, rg: ResolvedGroup) -> None:
        """Type, count, threads, health checks, EFA, training plan, spot and EBS of a compute group's instance group."""
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
        if inst.nvme.count == 0:
            storage.append({"EbsVolumeConfig": {"VolumeSizeInGB": EBS_VOLUME_GIB}})

    def _add_execution_role(
        self,
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
        self._grant_vpc(role, arn, vpc, subnet, sg)
        self.orchestration.grant_role(role, arn)
        grant_node_storage(role, lustre, checkpoints)
        self._acknowledge_role(role, checkpoints)
        return role

    def _grant_vpc(self, role: iam.Role, arn: str, vpc: ec2.IVpc, subnet: ec2.ISubnet, sg: ec2.ISecurityGroup) -> None:
        """ENIs in the customer VPC (the orchestration's additions included), describe calls and ENI tags."""
        extra = self.orchestration.vpc_grants(arn)
        eni_targets = [
            f"{arn}:network-interface/*",
            f"{arn}:subnet/{subnet.subnet_id}",
            f"{arn}:security-group/{sg.security_group_id}",
            f"{arn}:vpc/{vpc.vpc_id}",
            *extra.eni_targets,
        ]
        eni_actions = [
            "ec2:CreateNetworkInterface",
            "ec2:CreateNetworkInterfacePermission",
            "ec2:DeleteNetworkInterface",
            "ec2:DeleteNetworkInterfacePermission",
            *extra.eni_actions,
        ]
        describe = [
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeVpcs",
            "ec2:DescribeDhcpOptions",
            "ec2:DescribeSubnets",
            "ec2:DescribeSecurityGroups",
            "ec2:DetachNetworkInterface",
            *extra.describe,
        ]
        role.add_to_policy(iam.PolicyStatement(sid="VpcEnis", actions=eni_actions, resources=eni_targets))
        role.add_to_policy(iam.PolicyStatement(sid="VpcDescribe", actions=describe, resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="VpcEniTags",
                actions=["ec2:CreateTags"],
                resources=[f"{arn}:network-interface/*"],
            )
        )

    @staticmethod
    def _acknowledge_role(role: iam.Role, checkpoints: CheckpointAccess | None) -> None:
        """cdk-nag findings of the execution role."""
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
