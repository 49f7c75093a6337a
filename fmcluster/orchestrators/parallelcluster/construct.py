"""AWS ParallelCluster through its CloudFormation custom resource.

The provider stack is nested from AWS's published template (version pinned from the blueprint)
and the cluster is a ``Custom::PclusterCluster`` whose ``ClusterConfiguration`` is generated from
the model: one Slurm queue per compute group, EFA on, placement group, capacity type and
reservation target, the FSx file system as existing shared storage, and the rendered bootstrap
script as ``OnNodeConfigured``. ParallelCluster builds its own launch templates (3.16.1: ENA primary
plus ``efa-only`` on every EFA card, card 0 ENA-only for p6-b300 and p6e-gb200 --
``pcluster/templates/queues_stack.py`` and ``INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA`` in
``pcluster/constants.py`` of the 3.16.1 package), so ``fmcluster.constructs.capacity`` only contributes
the reservation target and the root volume here; the CapacityType comes from the orchestrator profile.

Update and deletion safety: ``DeletionPolicy`` (a property of the custom resource, not the
CloudFormation attribute) is the blueprint's ``parallelcluster.deletion_policy``, ``Delete`` by default (as
ParallelCluster's own default) so ``cdk destroy`` of the cluster stack deletes the cluster and its instances and
``cdk destroy --all`` can go on to the network stack, whose EFA security group a kept cluster's instances would
still use; keeping the cluster (``Retain``) is an explicit blueprint choice that rule R-PC-6 warns about;
``Scheduling.SlurmSettings.QueueUpdateStrategy`` tells ParallelCluster how to
apply queue changes because the provider does not stop the compute fleet itself.

Sources:
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html (DeletionPolicy Retain|Delete;
  retained clusters keep using their network and storage)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-provider-stack.html (template URL)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-ops.html (QueueUpdateStrategy on updates)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html (SlurmSettings, HealthChecks.Gpu)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/Monitoring-v3.html (Logs, Dashboards, Alarms)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/HeadNode-v3.html (LocalStorage.RootVolume)
- aws/aws-parallelcluster cli/src/pcluster/config/common.py (CapacityType) and cloudformation/custom_resource/cluster.yaml.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, CfnResource, Fn, Stack
from aws_cdk import aws_cloudformation as cfn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from fmcluster.blueprint.model import ComputeGroup, ParallelClusterSettings
from fmcluster.constructs.capacity import ROOT_VOLUME_GIB, ROOT_VOLUME_TYPE, reservation_target
from fmcluster.constructs.orchestrator import acknowledge
from fmcluster.constructs.parameter import string_parameter
from fmcluster.features.accounting.construct import SlurmAccountingDatabase, database_uri
from fmcluster.features.node.construct_bootstrap import NodeBootstrap, ScriptAsset
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.slurm.render_hooks import (
    IMEX_PROLOG_FLAGS,
    render_containers,
    render_hooks_installer,
    render_imex_prolog,
    slurm_conf_settings,
)
from fmcluster.features.storage.construct import CheckpointAccess, LustreMount, checkpoint_statements
from fmcluster.features.topology.render_scripts import (
    PARALLELCLUSTER_CLUSTER_TAG,
    TopologyRefresh,
    parallelcluster_node_names,
    render_topology_installer,
    render_topology_placeholder,
)
from fmcluster.orchestrators.parallelcluster.profile import OS_NAMES, PARALLELCLUSTER_SLURM
from fmcluster.resolved import OrchestratorProfile, ResolvedGroup
from fmcluster.resolved.cluster import NODE_DIR
from fmcluster.templates.render import render

#: The head node's custom-action phases ParallelCluster never lets an update change (UNSUPPORTED):
#: :meth:`ParallelClusterCluster._route_head_node_actions` keeps them constant.
HEAD_NODE_PHASES = ("OnNodeStart", "OnNodeConfigured")


def head_node_steps_parameter(cluster_name: str, phase: str) -> str:
    """The SSM parameter holding the head node's ``phase`` steps: ``/fmcluster/<cluster>/head-node/<phase>``."""
    return f"/fmcluster/{cluster_name}/head-node/{phase}"


def _steps(action: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A custom action (``{"Script", "Args"}`` or ``{"Sequence": [...]}``) as its list of steps."""
    return [dict(step) for step in action["Sequence"]] if "Sequence" in action else [dict(action)]

PROVIDER_TEMPLATE_URL = (
    "https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
    "/parallelcluster/{version}/templates/custom_resource/cluster.yaml"
)
SSM_CORE_POLICY = "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
#: Where the head node writes fmcluster's Slurm TaskProlog (shared with the compute nodes).
TASK_PROLOG = "/opt/slurm/etc/fmcluster-task-prolog.sh"
#: ParallelCluster runs every script of this shared directory as the Slurm prolog (the ParallelCluster IMEX guide).
IMEX_PROLOG = "/opt/slurm/etc/scripts/prolog.d/91_fmcluster_imex_prolog.sh"

__all__ = ["ParallelClusterCluster", "capacity_settings", "compute_resource_name"]


def compute_resource_name(instance_type: str) -> str:
    """``p5.48xlarge`` -> ``p5-48xlarge`` (ParallelCluster names allow ``[a-z0-9-]``)."""
    return instance_type.replace(".", "-")


def capacity_settings(group: ComputeGroup, profile: OrchestratorProfile) -> tuple[str, dict[str, str] | None]:
    """(CapacityType, CapacityReservationTarget) for a group (aws-parallelcluster ``CapacityType``,
    ``launch_template_utils.get_capacity_reservation``): the
    profile's term for the capacity type and the ODCR / Capacity Block reservation target (or ``None``).

    Training plans are SageMaker capacity (rule R-CAP-1 rejects them here); a queue that reaches
    this point with one gets ``ONDEMAND`` and a synth error from the construct.
    """
    return profile.capacity_term(group.capacity.type) or "ONDEMAND", reservation_target(group)


class ParallelClusterCluster(Construct):
    """The ParallelCluster provider (nested stack) and one ``Custom::PclusterCluster``.

    ``groups`` are the resolved compute groups (one queue each, in order); ``profile`` is the
    ParallelCluster profile (capacity terms); ``placement_groups`` maps the name of every group whose
    ``placement_group`` flag is set to its placement group.

    Attributes: ``config`` (the ClusterConfiguration mapping, with CDK tokens), ``resource``.
    """

    def __init__(
        self, scope: Construct, id: str, *, spec: ParallelClusterSettings, profile: OrchestratorProfile,
        cluster_name: str, region: str, os: str,
        groups: Sequence[ResolvedGroup], subnet: ec2.ISubnet, security_group: ec2.ISecurityGroup,
        placement_groups: Mapping[str, ec2.PlacementGroup], bootstraps: Mapping[str, NodeBootstrap],
        lustre: LustreMount | None, checkpoints: CheckpointAccess | None, tags: Mapping[str, str],
        head_node_script: ScriptAsset | None = None, head_node_policy: iam.IManagedPolicy | None = None,
        images: NodeImages | None = None, accounting: SlurmAccountingDatabase | None = None,
        admin_scripts: Mapping[str, str] | None = None,
    ) -> None:
        """``accounting``: the Slurm accounting database (``<name>-accounting`` stack) wired as
        ``SlurmSettings.Database`` (:meth:`_wire_accounting`). Default: no accounting.

        ``head_node_script`` runs as the head node's OnNodeConfigured (e.g. the Prometheus agent and
        Slurm exporter of the observability layer); ``head_node_policy`` is attached to its role. ``images``:
        each listed queue's ``Image.CustomAmi`` (bake and custom modes; the head node keeps the official AMI,
        see :class:`fmcluster.features.node.construct_image.NodeImages`). Default: every node on the official AMI.
        ``admin_scripts`` (file name -> text: the acceptance gate's watcher) run on the head node after the Slurm hooks
        (:meth:`_wire_admin_scripts`). Default: none."""
        super().__init__(scope, id)
        self._check_capacity_types(profile, groups)
        key_policy = self._checkpoint_policy(checkpoints)
        self.provider = cfn.CfnStack(
            self, "Provider", template_url=Fn.sub(PROVIDER_TEMPLATE_URL.replace("{version}", spec.version))
        )
        head_node = self._head_node(spec, subnet, security_group, head_node_script)
        head_policies = self._head_node_policies(head_node_policy)
        self.topology_wired = self._wire_topology(head_node, head_policies, cluster_name, region, groups)
        # IMEX per job on the groups the profile wires (R-IMEX-1 refuses the others): one fact, ResolvedGroup.imex
        imex_types = sorted({g.spec.instance_type for g in groups
                             if g.imex})
        self._wire_slurm_hooks(head_node, imex_types)
        self._wire_admin_scripts(head_node, admin_scripts or {})
        head_node.setdefault("Iam", {})["AdditionalIamPolicies"] = head_policies
        amis = images or NodeImages({})
        queues = [
            self._queue(g.spec, capacity_settings(g.spec, profile), subnet, security_group,
                        placement_groups[g.name] if g.placement_group else None, bootstraps[g.name],
                        checkpoints, spec.gpu_health_checks, key_policy, amis.for_group(g.name))
            for g in groups
        ]
        self.config: dict[str, Any] = self._cluster_config(spec, region, os, head_node, queues, tags)
        self._wire_containers(head_node, queues, groups)
        self._wire_custom_slurm_settings(imex_types)
        if accounting is not None:
            self._wire_accounting(head_node, self.config["Scheduling"]["SlurmSettings"], accounting)
        self._wire_login_nodes(spec, subnet, security_group)
        self._wire_shared_storage(lustre)
        self.head_node_steps = self._route_head_node_actions(head_node, cluster_name, region)
        self.resource = CfnResource(
            self, "Cluster", type="Custom::PclusterCluster",
            properties={
                "ServiceToken": self.provider.get_att("Outputs.ServiceToken"),
                "ClusterName": cluster_name,
                "ClusterConfiguration": self.config,
                "DeletionPolicy": spec.deletion_policy,
            },
        )
        for param in self.head_node_steps.values():  # the steps are in place before ParallelCluster reads them
            self.resource.node.add_dependency(param)

    # -- checks -------------------------------------------------------------------------------
    def _check_capacity_types(self, profile: OrchestratorProfile, groups: Sequence[ResolvedGroup]) -> None:
        """An error on this construct for each compute group whose capacity type ParallelCluster cannot use."""
        for g in groups:
            if not profile.accepts(g.spec.capacity.type):
                Annotations.of(self).add_error(
                    f"compute group {g.name}: ParallelCluster cannot use capacity type {g.spec.capacity.type!r}; "
                    f"allowed {', '.join(profile.capacity_types)}"
                )

    # -- steps --------------------------------------------------------------------------------
    @staticmethod
    def _head_node(spec: ParallelClusterSettings, subnet: ec2.ISubnet, security_group: ec2.ISecurityGroup,
                   head_node_script: ScriptAsset | None) -> dict[str, Any]:
        """``HeadNode``: type, network, encrypted root volume, IMDSv2, the key pair when given and the head-node
        script as ``OnNodeConfigured``."""
        head_node: dict[str, Any] = {
            "InstanceType": spec.head_node_instance_type,
            "Networking": {"SubnetId": subnet.subnet_id, "AdditionalSecurityGroups": [security_group.security_group_id]},
            "LocalStorage": {"RootVolume": {
                "Size": spec.head_node_root_volume_gib, "Encrypted": True, "VolumeType": ROOT_VOLUME_TYPE,
            }},
            "Imds": {"Secured": True},
        }
        if spec.ssh_key_name:
            head_node["Ssh"] = {"KeyName": spec.ssh_key_name}
        if head_node_script is not None:
            head_node["CustomActions"] = {"OnNodeConfigured": {"Script": head_node_script.s3_url}}
            head_node["Iam"] = {"S3Access": [{"BucketName": head_node_script.bucket_name, "KeyName": head_node_script.object_key}]}
        return head_node

    def _route_head_node_actions(self, head_node: dict[str, Any], cluster_name: str,
                                 region: str) -> dict[str, ssm.StringParameter]:
        """Route the head node's ``OnNodeStart``/``OnNodeConfigured`` through a script whose URL and arguments never
        change (``templates/head-node-actions.sh.j2``): each phase's steps go into an SSM parameter
        (``/fmcluster/<cluster>/head-node/<phase>``), and ``OnNodeUpdated`` re-runs the configured steps with their
        revision as argument. ParallelCluster refuses any update of the two phases (UNSUPPORTED,
        ``data/update_policies.yaml``), and fmcluster's head-node scripts are content-addressed assets, so without
        this every change of a head-node script would fail the stack update. Returns phase -> parameter."""
        actions = head_node.get("CustomActions") or {}
        phases = {p: actions[p] for p in HEAD_NODE_PHASES if p in actions}
        if not phases:
            return {}
        stack = Stack.of(self)
        launcher = ScriptAsset(self, "HeadNodeActions", text=render("parallelcluster/head-node-actions.sh.j2", {}),
                               file_name="fmcluster-head-node-actions.sh")
        steps = {phase: _steps(action) for phase, action in phases.items()}
        names = {phase: head_node_steps_parameter(cluster_name, phase) for phase in phases}
        params = {
            phase: string_parameter(self, f"HeadNode{phase}", parameter_name=names[phase],
                                    string_value=stack.to_json_string(steps[phase]),
                                    description=f"fmcluster: the head node's {phase} steps (head-node-actions.sh)")
            for phase in phases
        }
        routed = {phase: {"Script": launcher.s3_url, "Args": [names[phase], region]} for phase in phases}
        if "OnNodeConfigured" in phases:
            # Every phase's steps: a changed OnNodeStart step (the topology placeholder) is a new revision too.
            revision = hashlib.sha256(json.dumps(stack.resolve(steps), sort_keys=True).encode()).hexdigest()[:16]
            routed["OnNodeUpdated"] = {"Script": launcher.s3_url,
                                       "Args": [names["OnNodeConfigured"], region, revision]}
        head_node["CustomActions"] = {**{k: v for k, v in actions.items() if k not in HEAD_NODE_PHASES}, **routed}
        iam_settings = head_node.setdefault("Iam", {})
        iam_settings.setdefault("S3Access", []).append({"BucketName": launcher.bucket_name, "KeyName": launcher.object_key})
        read = iam.ManagedPolicy(self, "HeadNodeActionsPolicy", statements=[iam.PolicyStatement(
            actions=["ssm:GetParameter"], resources=[p.parameter_arn for p in params.values()])])
        iam_settings.setdefault("AdditionalIamPolicies", []).append({"Policy": read.managed_policy_arn})
        return params

    @staticmethod
    def _head_node_policies(head_node_policy: iam.IManagedPolicy | None) -> list[dict[str, Any]]:
        """The head node's ``AdditionalIamPolicies``: SSM, then the head-node policy when given."""
        # No key pair by default: the way in is SSM Session Manager, whose agent needs AmazonSSMManagedInstanceCore
        # on the instance role (https://docs.aws.amazon.com/systems-manager/latest/userguide/setup-instance-permissions.html).
        # ParallelCluster attaches only CloudWatchAgentServerPolicy and the AdditionalIamPolicies to node roles
        # (aws/aws-parallelcluster 3.16.1 cli/src/pcluster/templates/cdk_builder_utils.py _add_node_role), so the
        # head node gets it here; its KeyPairValidator warning for a missing key is then expected.
        head_policies: list[dict[str, Any]] = [{"Policy": Fn.sub(SSM_CORE_POLICY)}]
        if head_node_policy is not None:
            head_policies.append({"Policy": head_node_policy.managed_policy_arn})
        return head_policies

    @staticmethod
    def _cluster_config(spec: ParallelClusterSettings, region: str, os: str, head_node: dict[str, Any],
                        queues: list[dict[str, Any]], tags: Mapping[str, str]) -> dict[str, Any]:
        """The cluster configuration: region, image, head node, Slurm scheduling with ``queues``, monitoring, tags."""
        return {
            "Region": region,
            "Image": {"Os": OS_NAMES[os]},
            "HeadNode": head_node,
            "Scheduling": {
                "Scheduler": "slurm",
                "SlurmSettings": {
                    "QueueUpdateStrategy": spec.queue_update_strategy,
                    "ScaledownIdletime": spec.scaledown_idletime_minutes,
                    "EnableMemoryBasedScheduling": spec.memory_based_scheduling,
                },
                "SlurmQueues": queues,
            },
            "Monitoring": {
                "DetailedMonitoring": spec.detailed_monitoring,
                "Logs": {
                    "CloudWatch": {"Enabled": True, "RetentionInDays": spec.log_retention_days, "DeletionPolicy": "Retain"},
                    "Rotation": {"Enabled": True},
                },
                "Dashboards": {"CloudWatch": {"Enabled": spec.cloudwatch_dashboard}},
                "Alarms": {"Enabled": True},
            },
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        }

    def _wire_custom_slurm_settings(self, imex_types: Sequence[str]) -> None:
        """``CustomSlurmSettings``: the topology plugin when wired, the Slurm hooks' keys, the IMEX prolog flags."""
        custom: list[dict[str, Any]] = [{"TopologyPlugin": "topology/tree"}] if self.topology_wired else []
        custom += slurm_conf_settings(NODE_DIR, TASK_PROLOG)
        if imex_types:
            custom.append({"PrologFlags": IMEX_PROLOG_FLAGS})
        self.config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] = custom

    def _wire_login_nodes(self, spec: ParallelClusterSettings, subnet: ec2.ISubnet, sg: ec2.ISecurityGroup) -> None:
        """``LoginNodes`` with one pool when the blueprint has login nodes."""
        if spec.login_instance_type:
            self.config["LoginNodes"] = {"Pools": [self._login_pool(spec, subnet, sg)]}

    def _wire_shared_storage(self, lustre: LustreMount | None) -> None:
        """``SharedStorage``: the FSx for Lustre file system, when there is one."""
        if lustre is not None:
            self.config["SharedStorage"] = [{
                "MountDir": lustre.mount_point, "Name": "fsx", "StorageType": "FsxLustre",
                "FsxLustreSettings": {"FileSystemId": lustre.file_system_id},
            }]

    @staticmethod
    def _wire_accounting(head_node: dict[str, Any], slurm_settings: dict[str, Any],
                         db: SlurmAccountingDatabase) -> None:
        """Slurm accounting: ``SlurmSettings.Database`` (``Uri`` ``host:port`` without a scheme, ``UserName``,
        ``PasswordSecretArn`` of the secret holding the plain password; ParallelCluster >= 3.3.0) and the database's
        client security group on the head node, the only group the database accepts MySQL from. Source:
        https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html#Scheduling-v3-SlurmSettings-Database;
        ParallelCluster's head node role gets ``secretsmanager:GetSecretValue`` on the secret itself
        (:mod:`fmcluster.features.accounting.construct`). No ``DatabaseName``: ParallelCluster then names the database after the
        cluster, so one database server could hold several clusters."""
        slurm_settings["Database"] = {"Uri": database_uri(db), "UserName": db.user_name,
                                      "PasswordSecretArn": db.secret.secret_arn}
        head_node["Networking"]["AdditionalSecurityGroups"].append(db.client_security_group.security_group_id)

    def _wire_topology(self, head_node: dict[str, Any], head_policies: list[dict[str, Any]], cluster_name: str,
                       region: str, groups: Sequence[ResolvedGroup]) -> bool:
        """Slurm ``topology/tree`` from EC2 instance topology, kept current by a timer on the head node
        (:mod:`fmcluster.features.topology.render_scripts`); True when wired.

        Not wired when a queue has an UltraServer type (p6e-gb200): ParallelCluster then writes
        ``topology.conf`` for ``topology/block`` itself (aws-parallelcluster 3.16.1
        ``pcluster/templates/cluster_stack.py`` passes ``p6egb200_block_sizes`` to the cookbook, whose
        ``block_topology`` resource runs ``pcluster_topology_generator.py``), and a second writer would fight it.
        Otherwise the topology is ``/opt/slurm/etc/topology.yaml`` (a tree, Slurm >= 25.05), which slurmctld
        reads instead of ``topology.conf`` when it exists (SchedMD/slurm ``src/interfaces/topology.c``): on a
        cluster update that changes queues ParallelCluster deletes ``topology.conf`` when it has no p6e-gb200
        block sizes (cookbook ``block_topology`` resource, action ``:update``, ``pcluster_topology_generator.py
        --cleanup``), so that file cannot be ours. ``TopologyPlugin=topology/tree`` through
        ``SlurmSettings.CustomSlurmSettings`` (not on ParallelCluster's deny-list,
        ``pcluster/validators/slurm_settings_validator.py``) covers a Slurm that reads ``topology.conf`` only;
        a first ``topology.yaml`` and ``topology.conf`` with every node at ``OnNodeStart`` (before slurmctld
        starts), the refresh timer at
        ``OnNodeConfigured`` (after the observability script, when there is one: ``CustomActions`` ``Sequence``,
        ``pcluster/schemas/cluster_schema.py``), and ``ec2:DescribeInstanceTopology`` /
        ``ec2:DescribeInstances`` for the head node's role. Those two actions take no resource-level
        permissions (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html),
        hence ``*``.
        """
        if any(g.instance.ultraserver_sizes for g in groups):
            return False
        nodes = [n for g in groups for n in parallelcluster_node_names(
            g.name, compute_resource_name(g.spec.instance_type), g.spec.effective_min_count, g.spec.count)]
        refresh = TopologyRefresh(
            region=region, tag_key=PARALLELCLUSTER_CLUSTER_TAG, tag_value=cluster_name,
            slurm_bin=f"{PARALLELCLUSTER_SLURM}/bin", topology_file=f"{PARALLELCLUSTER_SLURM}/etc/topology.yaml",
            orchestrator="AWS ParallelCluster", node_label="head node", format="yaml", plugin="tree")
        installer = ScriptAsset(self, "TopologyInstaller", text=render_topology_installer(refresh),
                                file_name="fmcluster-topology-install.sh")
        placeholder = ScriptAsset(self, "TopologyPlaceholder", text=render_topology_placeholder(
            f"{PARALLELCLUSTER_SLURM}/etc", nodes), file_name="fmcluster-topology-placeholder.sh")
        self._on_node_configured(head_node, installer)
        head_node["CustomActions"]["OnNodeStart"] = {"Script": placeholder.s3_url}
        head_node["Iam"]["S3Access"].append({"BucketName": placeholder.bucket_name, "KeyName": placeholder.object_key})
        policy = iam.ManagedPolicy(self, "TopologyPolicy", description="Slurm topology refresh on the head node",
                                   statements=[iam.PolicyStatement(
                                       sid="TopologyRead", actions=["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"],
                                       resources=["*"])])
        acknowledge(policy, ("AwsSolutions-IAM5[Resource::*]",
                             "ec2:DescribeInstanceTopology and ec2:DescribeInstances support no resource-level "
                             "permissions; read-only"))
        head_policies.append({"Policy": policy.managed_policy_arn})
        return True

    def _wire_containers(self, head_node: dict[str, Any], queues: list[dict[str, Any]],
                         groups: Sequence[ResolvedGroup]) -> None:
        """enroot + pyxis, installed but disabled on ParallelCluster's official images (aws-parallelcluster-cookbook
        PR #2820: example configurations in ``/opt/parallelcluster/examples``), enabled as in
        aws-samples/aws-parallelcluster-post-install-scripts ``pyxis/postinstall.sh``: on the head node the SPANK
        configuration in the shared ``/opt/slurm/etc``; on every compute node ``/etc/enroot/enroot.conf`` with data
        and cache on the group's NVMe scratch (``OnNodeConfigured`` after the bootstrap, scratch path as argument)."""
        head = ScriptAsset(self, "ContainersHeadNode", file_name="fmcluster-containers-head.sh",
                           text=render_containers(head_node=True, default_dir="/var/lib/fmcluster"))
        self._on_node_configured(head_node, head)
        compute = ScriptAsset(self, "ContainersCompute", file_name="fmcluster-containers.sh",
                              text=render_containers(head_node=False, default_dir="/scratch"))
        for queue, g in zip(queues, groups, strict=True):
            bootstrap = queue["CustomActions"]["OnNodeConfigured"]
            queue["CustomActions"]["OnNodeConfigured"] = {"Sequence": [
                bootstrap, {"Script": compute.s3_url, "Args": [g.spec.scratch_path]}]}
            queue["Iam"]["S3Access"].append({"BucketName": compute.bucket_name, "KeyName": compute.object_key})

    @staticmethod
    def _login_pool(spec: ParallelClusterSettings, subnet: ec2.ISubnet, sg: ec2.ISecurityGroup) -> dict[str, Any]:
        """One ``LoginNodes.Pools`` entry (ParallelCluster >= 3.7; ``LoginNodesPoolSchema`` in 3.16.1
        ``pcluster/schemas/cluster_schema.py``: Name, InstanceType, Count, Networking.SubnetIds required): the
        head node's subnet and extra security group, SSM Session Manager through the same managed policy. No
        ``Ssh.KeyName``: "Starting with ParallelCluster 3.15, the KeyName parameter is no longer supported for
        Login Nodes" (3.16.1 schema; login nodes take the head node's key)."""
        pool: dict[str, Any] = {
            "Name": "login", "InstanceType": spec.login_instance_type, "Count": spec.login_count,
            "Networking": {"SubnetIds": [subnet.subnet_id], "AdditionalSecurityGroups": [sg.security_group_id]},
            "Iam": {"AdditionalIamPolicies": [{"Policy": Fn.sub(SSM_CORE_POLICY)}]},
        }
        return pool

    @staticmethod
    def _on_node_configured(head_node: dict[str, Any], asset: ScriptAsset) -> None:
        """Run ``asset`` at the head node's ``OnNodeConfigured``, after the scripts already there (a
        ``Sequence`` from the second one on), and let the head node read it."""
        actions = head_node.setdefault("CustomActions", {})
        configured = actions.get("OnNodeConfigured")
        step = {"Script": asset.s3_url}
        if configured is None:
            actions["OnNodeConfigured"] = step
        elif "Sequence" in configured:
            configured["Sequence"].append(step)
        else:
            actions["OnNodeConfigured"] = {"Sequence": [configured, step]}
        head_node.setdefault("Iam", {}).setdefault("S3Access", []).append(
            {"BucketName": asset.bucket_name, "KeyName": asset.object_key})

    def _wire_slurm_hooks(self, head_node: dict[str, Any], imex_types: Sequence[str]) -> None:
        """The node check's fast mode as ``HealthCheckProgram`` (draining with the reason) and the job
        environment as ``TaskProlog`` (:mod:`fmcluster.features.slurm.render_hooks`). The TaskProlog is written to
        ``/opt/slurm/etc`` on the head node, which compute nodes mount over NFS (aws-parallelcluster-cookbook
        ``aws-parallelcluster-slurm/recipes/config/mount_slurm_dir.rb``); ``HealthCheckProgram``,
        ``HealthCheckInterval``, ``HealthCheckNodeState`` and ``TaskProlog`` are not on ParallelCluster's
        deny-list (``Prolog`` and ``Epilog`` are: ParallelCluster owns those).

        With IMEX types (p6e-gb200) the IMEX prolog goes into ParallelCluster's prolog directory
        ``/opt/slurm/etc/scripts/prolog.d/`` and ``PrologFlags=Alloc,NoHold`` into ``CustomSlurmSettings``, as the
        ParallelCluster guide "Support NVIDIA-Imex with p6e-gb200 instance"
        (https://docs.aws.amazon.com/parallelcluster/latest/ug/support-nvidia-imex-p6e-gb200-instance.html) does."""
        imex_script = render_imex_prolog(NODE_DIR, f"{PARALLELCLUSTER_SLURM}/bin/scontrol", imex_types) if imex_types else ""
        installer = ScriptAsset(self, "SlurmHooksInstaller", file_name="fmcluster-slurm-hooks-install.sh",
                                text=render_hooks_installer(
                                    NODE_DIR, TASK_PROLOG, orchestrator="AWS ParallelCluster", node_label="head node",
                                    share_note="Compute nodes mount /opt/slurm from the head node over NFS.",
                                    imex_prolog=IMEX_PROLOG if imex_types else None, imex_script=imex_script))
        self._on_node_configured(head_node, installer)

    def _wire_admin_scripts(self, head_node: dict[str, Any], scripts: Mapping[str, str]) -> None:
        """Each script for the node that administers Slurm (the acceptance gate's watcher, which installs a systemd
        timer) at the head node's ``OnNodeConfigured``, as root, after slurmctld is configured; the compute fleet may
        not be up yet (ParallelCluster runs ``OnNodeConfigured`` on the head node before it starts the static nodes),
        which the watcher's timer waits for. Construct id ``AdminScript-<file name>`` (stable)."""
        for name, text in scripts.items():
            self._on_node_configured(head_node, ScriptAsset(self, f"AdminScript-{name}", text=text, file_name=name))

    def _checkpoint_policy(self, checkpoints: CheckpointAccess | None) -> iam.ManagedPolicy | None:
        """What ParallelCluster's ``S3Access`` does not grant for the checkpoint prefix, as one managed policy
        that every queue attaches through ``Iam.AdditionalIamPolicies`` (a key ParallelCluster's
        ``QueueIamSchema`` accepts next to ``S3Access``).

        ``S3Access`` with ``KeyName: <prefix>*`` becomes one statement on the object ARN
        ``arn:aws:s3:::<bucket>/<prefix>*`` only (``s3:*`` with ``EnableWriteAccess``): aws-parallelcluster
        ``cli/src/pcluster/config/cluster_config.py`` (``S3Access.resource_regex``) and
        ``cli/src/pcluster/templates/cdk_builder_utils.py`` (``_add_s3_access_policies_to_role``), 3.16.1.
        Listing the prefix needs ``s3:ListBucket`` on the BUCKET ARN, so the queues also get the
        ``CheckpointPrefixList`` statement of :func:`checkpoint_statements` (bucket ARN, ``s3:prefix``
        condition) and, with a KMS bucket, its ``CheckpointKey`` statement: the same grants HyperPod and
        PCS nodes get. ``None`` without a checkpoint bucket."""
        if checkpoints is None:
            return None
        statements = [st for st in checkpoint_statements(checkpoints) if st.sid in ("CheckpointPrefixList", "CheckpointKey")]
        policy = iam.ManagedPolicy(self, "CheckpointPolicy", statements=statements,
                                   description="Checkpoint prefix listing (and the bucket's KMS key) for compute nodes")
        if checkpoints.key is not None:
            reason = ("KMS data-key actions on the one checkpoint key (GenerateDataKey*/ReEncrypt* are the documented "
                      "S3 SSE-KMS set)")
            acknowledge(policy, ("AwsSolutions-IAM5[Action::kms:GenerateDataKey*]", reason),
                        ("AwsSolutions-IAM5[Action::kms:ReEncrypt*]", reason))
        return policy

    @staticmethod
    def _queue(
        g: ComputeGroup, capacity: tuple[str, dict[str, str] | None], subnet: ec2.ISubnet, sg: ec2.ISecurityGroup,
        pg: ec2.PlacementGroup | None, bootstrap: NodeBootstrap, checkpoints: CheckpointAccess | None,
        gpu_health_checks: bool, key_policy: iam.ManagedPolicy | None = None, ami: str | None = None,
    ) -> dict[str, Any]:
        capacity_type, target = capacity
        resource: dict[str, Any] = {
            "Name": compute_resource_name(g.instance_type),
            "InstanceType": g.instance_type,
            "MinCount": g.effective_min_count,
            "MaxCount": g.count,
            # no GdrSupport: "The GdrSupport parameter has no effect and should no longer be used" since 3.0.2 (EFA
            # enables GPUDirect RDMA by default; https://github.com/aws/aws-parallelcluster/releases/tag/v3.0.2)
            "Efa": {"Enabled": g.efa_enabled},
            "DisableSimultaneousMultithreading": g.threads_per_core == 1,
        }
        if target:
            resource["CapacityReservationTarget"] = target
        placement: dict[str, Any] = {"Enabled": pg is not None}
        if pg is not None:
            placement["Name"] = pg.placement_group_name
        s3_access: list[dict[str, Any]] = [{"BucketName": bootstrap.bucket_name, "KeyName": bootstrap.object_key}]
        if checkpoints is not None:
            s3_access.append({"BucketName": checkpoints.bucket.bucket_name, "KeyName": f"{checkpoints.prefix}*",
                              "EnableWriteAccess": True})
        return {
            "Name": g.name,
            "CapacityType": capacity_type,
            "Networking": {
                "SubnetIds": [subnet.subnet_id],
                "AdditionalSecurityGroups": [sg.security_group_id],
                "PlacementGroup": placement,
            },
            "ComputeResources": [resource],
            "ComputeSettings": {"LocalStorage": {
                "RootVolume": {"Size": ROOT_VOLUME_GIB, "Encrypted": True, "VolumeType": ROOT_VOLUME_TYPE},
                "EphemeralVolume": {"MountDir": g.scratch_path},
            }},
            "CustomActions": {"OnNodeConfigured": {"Script": bootstrap.s3_url}},
            "Iam": {"S3Access": s3_access,
                    **({"AdditionalIamPolicies": [{"Policy": key_policy.managed_policy_arn}]} if key_policy else {})},
            "HealthChecks": {"Gpu": {"Enabled": gpu_health_checks}},
            **({"Image": {"CustomAmi": ami}} if ami else {}),
        }
