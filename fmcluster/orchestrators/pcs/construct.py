"""AWS Parallel Computing Service (PCS) with the ``aws_cdk.aws_pcs`` L1s.

One ``AWS::PCS::Cluster`` (Slurm version from the allow-list in the blueprint model), a login node
group, and per compute group one launch template (NIC layout and capacity from
``fmcluster.constructs.capacity``), one compute node group and one queue wired to it. Node setup runs
as PCS node lifecycle actions in the ``NodeBootstrapped`` stage (after PCS sets the node up, before
``slurmd`` starts): the Lustre mount (every boot, its arguments carry the file system's deploy-time
names) and then ``bootstrap.sh`` (first boot), each from its S3 asset with its SHA-256 and
``OnError: TERMINATE``, so a failed setup replaces the node instead of leaving it half set up. Only the
login node's observability launcher and its admin-steps launcher stay in user data (MIME multi-part, merged by PCS
with its own); the admin scripts themselves are listed in an SSM parameter the launcher reads, so that the user data,
and with it the login node, does not change with the compute groups.

With a metrics layer, the login node's user data downloads the observability head-node script from its
S3 asset and starts it once Slurm answers (``common.start_after_slurm``: user data runs before ``sackd``),
and the node role gets the observability node policy. Login and compute node groups share that one role,
so compute nodes get the policy as well. Every launch template tags its instances (and volumes) with the
blueprint tags, ``fmcluster:blueprint`` included, which Prometheus EC2 service discovery filters on; the
login and compute primaries share the cluster security group, which lets the login node reach the
exporters (9100, 9400).

Sources (the AWS::PCS::* resource schemas, botocore pcs, AWS PCS User Guide):
- Resources and required properties: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/AWS_PCS.html
- Cluster security group: inbound all from itself, outbound all to itself and to 0.0.0.0/0 (R3.5),
  CDK spec ``AWS::PCS::Cluster`` ``Networking.SecurityGroupIds``; nodes carry the same group:
  https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_sg.html
- Instance profile role name starts with ``AWSPCS`` (or path ``/aws-pcs/``) and allows
  ``pcs:RegisterComputeNodeGroupInstance`` (the documented minimum policy uses ``Resource: *``):
  https://docs.aws.amazon.com/pcs/latest/userguide/security-instance-profiles_create.html
- User data must be MIME multi-part; ``text/x-shellscript`` parts run after the node registers
  with PCS and before slurmd starts: https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ec2-user-data.html
- EC2 user data is limited to 16 KB before base64 encoding:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html
- Login nodes are a compute node group that no queue uses:
  https://docs.aws.amazon.com/pcs/latest/userguide/getting-started_create-cng.html
- PCS-ready DLAMI (Ubuntu 24.04, x86_64 and arm64) published as SSM parameters
  ``/aws/service/pcs/ami/dlami-base-ubuntu2404/<arch>/latest/ami-id``, usable as a CloudFormation
  dynamic reference: https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ami_pcs-ready-dlami.html
- Capacity Blocks: node group ``PurchaseOption: CAPACITY_BLOCK`` and a launch template with
  ``MarketType: capacity-block`` plus the reservation: https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-configure-cng.html
- Capacity Block launch templates name the block's instance type (``NodeLaunchTemplate``):
  https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-configure-cng.html
- EFA interface type: the PCS user guide shows ``efa`` on every card
  (https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html) and AWS's
  sample awslabs/awsome-distributed-ai ``architectures/aws-pcs/assets/add-cng-p6-b300.yaml`` says PCS
  needs ``efa`` rather than ``efa-only`` to pass the interfaces on to the launch request: default ``efa``,
  and rule R-PCS-3 refuses ``efa-only``.
- Node lifecycle actions (``NodeLifecycleActions.Stages.NodeBootstrapped``, ``ScriptSource.Checksum`` =
  SHA-256 hex, ``OnError``, ``ExecutionPolicy``, ``Arguments`` up to 20 x 256 characters): CloudFormation
  ``AWS::PCS::ComputeNodeGroup`` NodeLifecycleStages
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-pcs-computenodegroup-nodelifecyclestages.html;
  aws-cdk-lib 2.275 ``CfnComputeNodeGroup.NodeLifecycleActionsProperty``), botocore
  ``data/pcs/2023-02-10/service-2.json`` ``NodeLifecycleStages`` / ``NodeLifecycleScript`` / ``ScriptSource``,
  PCS user guide https://docs.aws.amazon.com/pcs/latest/userguide/cng-node-lifecycle-actions.html and
  https://docs.aws.amazon.com/pcs/latest/userguide/cng-node-lifecycle-actions-configure.html (requires PCS
  agent 1.5.0-1 or later: the PCS-ready DLAMI default floats to the latest; a custom AMI (``software.image.ami_id``) must carry it,
  unverified by fmcluster; rule R-PCS-2 warns for a custom AMI).
- Slurm commands on PCS nodes live in ``/opt/aws/pcs/scheduler/slurm-<version>/bin``
  (``OrchestratorProfile.slurm_bin_dir``, the cluster's version):
  https://docs.aws.amazon.com/pcs/latest/userguide/multi-cluster-login-script-prerequisites.html
- Slurm hooks (:mod:`fmcluster.features.slurm.render_hooks`): PCS takes only the custom Slurm settings it documents, for
  clusters ``Prolog``, ``Epilog``, ``SelectTypeParameters`` (and ``AccountingStorageEnforce``), for compute node groups
  ``Weight`` and ``RealMemory`` (CloudFormation resource schemas AWS::PCS::Cluster / ComputeNodeGroup
  ``SlurmCustomSetting.ParameterName``, cfn-lint 1.58.0; https://docs.aws.amazon.com/pcs/latest/APIReference/API_SlurmCustomSetting.html,
  https://docs.aws.amazon.com/pcs/latest/userguide/slurm-custom-settings.html). ``HealthCheckProgram``, ``TaskProlog``,
  ``PrologFlags`` and ``TopologyPlugin`` are not among them, so: the node check's fast mode runs from a systemd timer on
  every compute node (lifecycle script ``fmcluster slurm hooks``, every boot), draining a failing node with the reason;
  the job environment is not a TaskProlog (jobs source ``<node dir>/etc/job-env.sh``, as the rendered nccl-tests sbatch
  does); with p6e-gb200 groups on a Capacity Block (``OrchestratorProfile.imex``) the cluster's ``Prolog`` is the IMEX
  prolog, which that lifecycle script installs on every compute node before slurmd starts, as the PCS guide
  "Configure UltraServer instances" does (https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-nvidia-imex.html:
  Slurm 25.05 or later, Capacity Block, the prolog at the cluster's Prolog path on all compute nodes; PCS selects the
  UltraServer topology plugin itself). Network topology-aware scheduling (https://docs.aws.amazon.com/pcs/latest/userguide/network-topology.html)
  is enabled per queue. AWS::PCS::Queue now has ``SlurmConfiguration.SlurmCustomSettings`` (cfn-lint 1.58.0's
  schema, aws-cdk-lib 2.275 ``CfnQueue.slurm_configuration``), but no dedicated property enables topology-aware
  scheduling and which queue custom setting (name and value) does was not verified, so fmcluster still does not set it
  and warns (docs/topology.md). PCS notes that compute nodes of node groups created before 2026-11-01 may report a
  wrong network topology until PCS corrects them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from fmcluster.blueprint.model import PcsSettings, SlurmAccountingSpec
from fmcluster.catalog import cpu_architecture_of
from fmcluster.catalog.networking import InterfaceSlot
from fmcluster.constructs.capacity import NodeLaunchTemplate
from fmcluster.constructs.orchestrator import (
    HEAD_NODE_PATH,
    acknowledge,
    acknowledge_wildcards,
    start_after_slurm,
)
from fmcluster.constructs.parameter import string_parameter
from fmcluster.features.network.construct import explicit_egress_only
from fmcluster.features.node.construct_bootstrap import NodeBootstrap, ScriptAsset
from fmcluster.features.node.construct_image import NodeImages
from fmcluster.features.node.render_scripts import ENTRY_POINT
from fmcluster.features.slurm.render_hooks import render_health_timer, render_imex_prolog
from fmcluster.features.storage.construct import (
    CheckpointAccess,
    LustreMount,
    checkpoint_acknowledgement,
    grant_node_storage,
    lustre_mount_script,
)
from fmcluster.orchestrators.pcs.profile import PCS_LOGIN_GROUP
from fmcluster.resolved import NODE_DIR, OrchestratorProfile, ResolvedGroup
from fmcluster.templates.render import render

PCS_AMI_PARAMETER = "/aws/service/pcs/ami/dlami-base-ubuntu2404/{arch}/latest/ami-id"
ROLE_NAME_PREFIX = "AWSPCS"
MIME_BOUNDARY = "==FMCLUSTER=="
HEREDOC_END = "FMCLUSTER_BOOTSTRAP_EOF"
SPOT_ALLOCATION_STRATEGY = "capacity-optimized"
#: Where the login node keeps the admin-steps launcher (``templates/admin-steps.sh.j2``) and how often its timer runs.
ADMIN_STEPS_PATH = f"{NODE_DIR}/fmcluster-admin-steps.sh"
ADMIN_STEPS_INTERVAL_MIN = 5
ADMIN_STEPS_HEREDOC_END = "FMCLUSTER_ADMIN_STEPS_EOF"
#: Lifecycle script names (botocore pcs ``NodeLifecycleScriptNameString``: ``[A-Za-z0-9][A-Za-z0-9 _-]*``,
#: at most 64 characters; they appear in the node's lifecycle log paths).
LUSTRE_SCRIPT_NAME = "fmcluster mount Lustre"
BOOTSTRAP_SCRIPT_NAME = "fmcluster bootstrap"
LUSTRE_SCRIPT_FILE = "mount-lustre.sh"
HOOKS_SCRIPT_NAME = "fmcluster slurm hooks"
#: Synth warning id: a multi-node EFA queue without network topology-aware scheduling (UltraServer node groups on a
#: Capacity Block get PCS's own topology plugin).
TOPOLOGY_WARNING = "fmcluster:pcsTopologyNotEnabled"
HOOKS_SCRIPT_FILE = "fmcluster-slurm-hooks.sh"
#: Where every compute node gets the IMEX prolog, the cluster's ``Prolog`` custom setting (a node-local path: the PCS
#: guide wants the script "available on all compute nodes at the path configured in the cluster's Slurm Prolog").
IMEX_PROLOG = f"{NODE_DIR}/slurm/91_fmcluster_imex_prolog.sh"
#: A failed setup script terminates the node (PCS replaces it); botocore pcs ``OnError`` enum.
ON_ERROR = "TERMINATE"
#: The Lustre mount, as a static lifecycle script (an S3 asset cannot hold deploy-time tokens): arguments
#: are the file system's DNS name, mount name and mount point. Idempotent, so it runs on every boot.
LUSTRE_MOUNT_SCRIPT = """#!/bin/bash
# fmcluster: mount FSx for Lustre and persist it in fstab; rendered by fmcluster, do not edit.
# Arguments: <dns name> <mount name> <mount point>. Idempotent: re-running does not mount twice.
set -euo pipefail
dns="$1" mount_name="$2" mount_point="$3"
src="${dns}@tcp:/${mount_name}"
mkdir -p "${mount_point}"
if ! mountpoint -q "${mount_point}"; then
  mount -t lustre -o relatime,flock "${src}" "${mount_point}"
fi
grep -q " ${mount_point} lustre " /etc/fstab ||
  echo "${src} ${mount_point} lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0" >> /etc/fstab
"""


def mime_user_data(shell_script: str) -> str:
    """Wrap one shell script as the MIME multi-part user data PCS merges with its own."""
    return "\n".join(
        [
            "MIME-Version: 1.0",
            f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"',
            "",
            f"--{MIME_BOUNDARY}",
            'Content-Type: text/x-shellscript; charset="us-ascii"',
            "",
            shell_script.rstrip("\n"),
            "",
            f"--{MIME_BOUNDARY}--",
            "",
        ]
    )


def admin_steps_parameter(cluster_name: str) -> str:
    """The SSM parameter listing the login node's admin steps: ``/fmcluster/<cluster>/login/admin-steps``."""
    return f"/fmcluster/{cluster_name}/login/admin-steps"


def admin_steps_launcher() -> str:
    """``fmcluster-admin-steps.sh PARAMETER REGION`` (``templates/admin-steps.sh.j2``): runs the scripts the SSM
    parameter lists when its version is not the one last applied. Its text never changes with the blueprint."""
    return render("pcs/admin-steps.sh.j2", {"interval_min": ADMIN_STEPS_INTERVAL_MIN})


def admin_steps_lines(parameter: str, region: str) -> list[str]:
    """User-data lines that install the admin-steps launcher and its timer (every :data:`ADMIN_STEPS_INTERVAL_MIN`
    minutes, as root) and run it once. Only ``parameter`` and ``region`` reach the text, neither of which changes
    with the compute groups, so the login launch template does not either."""
    launcher = admin_steps_launcher()
    if any(line.strip() == ADMIN_STEPS_HEREDOC_END for line in launcher.splitlines()):
        raise ValueError(f"the admin-steps launcher contains the heredoc terminator {ADMIN_STEPS_HEREDOC_END}")
    command = f"{ADMIN_STEPS_PATH} {parameter} {region}"
    return [
        f"install -d -m 0755 {NODE_DIR}",
        f"cat > {ADMIN_STEPS_PATH} <<'{ADMIN_STEPS_HEREDOC_END}'", launcher.rstrip("\n"), ADMIN_STEPS_HEREDOC_END,
        f"chmod 0755 {ADMIN_STEPS_PATH}",
        "cat > /etc/systemd/system/fmcluster-admin-steps.service <<'FMCLUSTER_UNIT_EOF'",
        "[Unit]", "Description=fmcluster admin steps (SSM parameter) on the login node", "",
        "[Service]", "Type=oneshot", f"ExecStart={command}", "FMCLUSTER_UNIT_EOF",
        "cat > /etc/systemd/system/fmcluster-admin-steps.timer <<'FMCLUSTER_UNIT_EOF'",
        "[Unit]", f"Description=Apply changed fmcluster admin steps every {ADMIN_STEPS_INTERVAL_MIN} min", "",
        "[Timer]", f"OnBootSec={ADMIN_STEPS_INTERVAL_MIN}min", f"OnUnitActiveSec={ADMIN_STEPS_INTERVAL_MIN}min", "",
        "[Install]", "WantedBy=timers.target", "FMCLUSTER_UNIT_EOF",
        # the timer first: a first run that fails (IAM still propagating, SSM throttled) must not end the user data
        # under `set -e` before the timer that retries it exists
        "systemctl daemon-reload",
        "systemctl enable --now fmcluster-admin-steps.timer",
        f"bash {command} || echo 'fmcluster: the first admin-steps run failed; the timer retries it' >&2",
    ]


def node_shell_script(
    *,
    group: str,
    bootstrap: NodeBootstrap | None,
    lustre: LustreMount | None,
    embed_limit_bytes: int | None,
    head_node_script: ScriptAsset | None = None,
    slurm_bin_dir: str | None = None,
    admin_steps: tuple[str, str] | None = None,
) -> str:
    """The shell part of a node's user data: mount Lustre, then run ``bootstrap.sh`` from
    :data:`fmcluster.resolved.NODE_DIR` (embedded when it is at most ``embed_limit_bytes`` bytes, the
    profile's ``user_data_embed_limit_bytes``, else copied from its S3 asset; ``None``: always copied),
    then, with ``head_node_script``, copy that script from its S3 asset and start it once Slurm answers, then with
    ``admin_steps`` (``(SSM parameter name, region)``) install and run the admin-steps launcher
    (:func:`admin_steps_lines`: the acceptance gate's watcher installer, whose timer waits for Slurm itself).
    Default: no head-node script, no admin steps. Raises ValueError when an embedded script contains its heredoc
    terminator."""
    lines = [
        "#!/bin/bash",
        f"# fmcluster node user data for PCS node group {group}; rendered by fmcluster, do not edit.",
        "set -euo pipefail",
        "exec > >(tee -a /var/log/fmcluster-user-data.log) 2>&1",
    ]
    if lustre is not None:
        lines.append(lustre_mount_script(lustre))
    if bootstrap is not None:
        script = bootstrap.scripts[ENTRY_POINT]
        lines.append(f"install -d -m 0755 {NODE_DIR}")
        if embed_limit_bytes is not None and len(script.encode()) <= embed_limit_bytes:
            if any(line.strip() == HEREDOC_END for line in script.splitlines()):
                raise ValueError(f"{ENTRY_POINT} contains the heredoc terminator {HEREDOC_END}")
            lines += [
                f"cat > {NODE_DIR}/{ENTRY_POINT} <<'{HEREDOC_END}'",
                script.rstrip("\n"),
                HEREDOC_END,
            ]
        else:
            lines.append(f"aws s3 cp {bootstrap.s3_url} {NODE_DIR}/{ENTRY_POINT}")
        lines.append(f"bash {NODE_DIR}/{ENTRY_POINT}")
    if head_node_script is not None:
        # Always downloaded: with its Prometheus configuration it is larger than the user-data limit.
        lines += [
            f"install -d -m 0755 {NODE_DIR}",
            f"aws s3 cp {head_node_script.s3_url} {HEAD_NODE_PATH}",
            start_after_slurm(HEAD_NODE_PATH, slurm_bin_dir),
        ]
    if admin_steps is not None:
        lines += admin_steps_lines(*admin_steps)
    return "\n".join(lines) + "\n"


def _lifecycle_script(name: str, asset: ScriptAsset, execution_policy: str,
                      arguments: Sequence[str] | None = None) -> pcs.CfnComputeNodeGroup.NodeLifecycleScriptProperty:
    """One lifecycle script from its S3 asset with its SHA-256 checksum and ``OnError: TERMINATE``."""
    return pcs.CfnComputeNodeGroup.NodeLifecycleScriptProperty(
        name=name,
        script_source=pcs.CfnComputeNodeGroup.ScriptSourceProperty(script_location=asset.s3_url, checksum=asset.sha256),
        arguments=list(arguments) if arguments is not None else None,
        on_error=ON_ERROR,
        execution_policy=execution_policy,
    )


def lifecycle_actions(
    *, bootstrap: ScriptAsset | None, lustre_script: ScriptAsset | None, lustre: LustreMount | None,
    hooks: ScriptAsset | None = None,
) -> pcs.CfnComputeNodeGroup.NodeLifecycleActionsProperty | None:
    """``NodeLifecycleActions`` of a node group: in the ``NodeBootstrapped`` stage (before ``slurmd``), the
    Lustre mount (``lustre_script`` with the file system's DNS name, mount name and mount point as
    arguments; every boot) when both ``lustre_script`` and ``lustre`` are given, then ``bootstrap`` (first
    boot), then ``hooks`` (the Slurm hooks: health timer, IMEX prolog; every boot; default none). Each script comes
    from its S3 asset with its SHA-256 checksum and ``OnError: TERMINATE``. ``None`` when there is nothing to run."""
    scripts = []
    if lustre_script is not None and lustre is not None:
        scripts.append(_lifecycle_script(LUSTRE_SCRIPT_NAME, lustre_script, "EVERY_BOOT",
                                         arguments=[lustre.dns_name, lustre.mount_name, lustre.mount_point]))
    if bootstrap is not None:
        scripts.append(_lifecycle_script(BOOTSTRAP_SCRIPT_NAME, bootstrap, "FIRST_BOOT_ONLY"))
    if hooks is not None:
        scripts.append(_lifecycle_script(HOOKS_SCRIPT_NAME, hooks, "EVERY_BOOT"))
    if not scripts:
        return None
    return pcs.CfnComputeNodeGroup.NodeLifecycleActionsProperty(
        stages=pcs.CfnComputeNodeGroup.NodeLifecycleStagesProperty(node_bootstrapped=scripts)
    )


def pcs_ami(ami: str | None, instance_type: str) -> str:
    """``ami`` (bake mode's image reference or custom mode's AMI id) when given, else the PCS-ready DLAMI resolved
    from SSM at deploy time for the type's CPU."""
    if ami:
        return ami
    arch = cpu_architecture_of(instance_type) or "x86_64"
    return "{{resolve:ssm:" + PCS_AMI_PARAMETER.format(arch=arch) + "}}"


def pcs_accounting(spec: SlurmAccountingSpec | None) -> pcs.CfnCluster.AccountingProperty | None:
    """``SlurmConfiguration.Accounting`` of an AWS PCS cluster: ``Mode: STANDARD`` and ``DefaultPurgeTimeInDays`` from
    ``purge_after_days`` (-1 keeps records as long as the cluster exists; 0 is invalid) when accounting is enabled,
    else ``None`` (the property is left out: PCS's default mode is NONE). PCS creates and runs the accounting
    database itself, for Slurm 24.11 or later (every version fmcluster allows): "AWS PCS creates and manages the
    accounting database for your cluster" (https://docs.aws.amazon.com/pcs/latest/userguide/slurm-accounting.html;
    https://docs.aws.amazon.com/pcs/latest/APIReference/API_Accounting.html). Enabling it adds PCS charges."""
    if spec is None or not spec.enabled:
        return None
    return pcs.CfnCluster.AccountingProperty(mode="STANDARD", default_purge_time_in_days=spec.purge_after_days)


@dataclass(frozen=True)
class _NodeGroups:
    """What :class:`PcsCluster`'s node groups share: the three scopes, the profile, subnet, Lustre mount, tags, AMIs
    and the launch templates' common settings (``template``)."""

    lt_scope: Construct
    ng_scope: Construct
    q_scope: Construct
    profile: OrchestratorProfile
    subnet: ec2.ISubnet
    lustre: LustreMount | None
    tags: Mapping[str, str]
    amis: NodeImages
    template: dict[str, Any]


class PcsCluster(Construct):
    """A PCS cluster with a login node group and one compute node group + queue per compute group.

    ``groups`` are the resolved compute groups (interface layout, CPU options, placement-group flag);
    ``profile`` is the PCS profile (purchase options, user-data embed limit, the cluster's Slurm command
    directory); ``bootstraps`` become each compute node group's ``NodeBootstrapped`` lifecycle script, and
    with ``lustre`` every node group first runs the ``mount-lustre.sh`` lifecycle script
    (:func:`lifecycle_actions`); ``placement_groups`` maps
    the name of every group whose ``placement_group`` flag is set to its placement group.
    ``accounting`` (``orchestrator.slurm.accounting``): PCS-managed Slurm accounting when enabled
    (:func:`pcs_accounting`). Default: off.

    Attributes: ``cluster`` (CfnCluster), ``security_group`` (cluster group), ``role`` (node role,
    name starts with ``AWSPCS``), ``instance_profile``, ``lustre_script`` (the mount script's asset, or
    ``None`` without Lustre), ``launch_templates`` / ``node_groups`` /
    ``queues`` (compute group name -> construct; the login group under ``PCS_LOGIN_GROUP``).

    ``head_node_script`` (an S3 asset) runs on the login node once Slurm answers and ``head_node_policy``
    is attached to the node role (shared by all node groups). Default: no head-node script and no extra
    policy. ``admin_scripts`` (file name -> text: the acceptance gate's watcher installer) run as root on the login
    node, the one node of a PCS cluster fmcluster configures that is not a compute node (the controller is AWS's):
    S3 assets ``AdminScript-<file name>``, read by the node role, listed in the SSM parameter ``AdminSteps`` that the
    login node's admin-steps launcher reads at boot and every few minutes (:func:`admin_steps_lines`). Default: none. ``images``
    (:class:`fmcluster.features.node.construct_image.NodeImages`): the AMI per compute group and of the login
    group; default: the PCS-ready DLAMI everywhere.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: PcsSettings,
        profile: OrchestratorProfile,
        cluster_name: str,
        os: str,
        groups: Sequence[ResolvedGroup],
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        placement_groups: Mapping[str, ec2.PlacementGroup],
        bootstraps: Mapping[str, NodeBootstrap],
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
        tags: Mapping[str, str],
        head_node_script: ScriptAsset | None = None,
        head_node_policy: iam.IManagedPolicy | None = None,
        images: NodeImages | None = None,
        accounting: SlurmAccountingSpec | None = None,
        admin_scripts: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self._check_capacity_types(profile, groups)
        # IMEX per job on the groups the profile wires (R-IMEX-1 refuses the others): one fact, ResolvedGroup.imex
        self.imex_types = sorted({g.spec.instance_type for g in groups
                                  if g.imex})
        #: The cluster's ``SlurmCustomSettings`` (only keys PCS documents for clusters; see the module docstring).
        self.slurm_custom_settings = [{"ParameterName": "Prolog", "ParameterValue": IMEX_PROLOG}] if self.imex_types else []
        self.security_group = self._cluster_security_group(vpc)
        self.cluster = self._add_cluster(spec, cluster_name, subnet, tags, accounting)
        self.role = self._node_role(cluster_name, Stack.of(self).region, groups, bootstraps, lustre, checkpoints)
        self._grant_head_node(head_node_script, head_node_policy)
        self.admin_scripts = self._admin_scripts(admin_scripts or {})
        self.admin_steps = self._admin_steps(cluster_name) if self.admin_scripts else None
        self.instance_profile = iam.InstanceProfile(self, "NodeInstanceProfile", role=self.role)
        self.lustre_script = self._add_lustre_script(lustre)
        self.hooks_script = self._slurm_hooks(profile)
        self.hooks_script.grant_read(self.role)
        self.launch_templates: dict[str, NodeLaunchTemplate] = {}
        self.node_groups: dict[str, pcs.CfnComputeNodeGroup] = {}
        self.queues: dict[str, pcs.CfnQueue] = {}
        nodes = self._node_group_context(profile, os, subnet, security_group, lustre, tags, images)
        self._add_login_group(nodes, spec, head_node_script)
        for g in groups:
            self._add_compute_group(nodes, g, placement_groups[g.name] if g.placement_group else None,
                                    bootstraps[g.name])

    # -- checks -------------------------------------------------------------------------------
    def _check_capacity_types(self, profile: OrchestratorProfile, groups: Sequence[ResolvedGroup]) -> None:
        """An error on this construct for each compute group whose capacity type PCS cannot use (its node group is
        then built with ``ONDEMAND``)."""
        for g in groups:
            if profile.capacity_term(g.spec.capacity.type) is None:
                Annotations.of(self).add_error(
                    f"compute group {g.name}: PCS cannot use capacity type {g.spec.capacity.type!r}; allowed "
                    f"{', '.join(profile.capacity_types)}"
                )

    # -- steps --------------------------------------------------------------------------------
    def _add_cluster(self, spec: PcsSettings, cluster_name: str, subnet: ec2.ISubnet, tags: Mapping[str, str],
                     accounting: SlurmAccountingSpec | None) -> pcs.CfnCluster:
        return pcs.CfnCluster(
            self,
            "Resource",
            name=cluster_name,
            size=spec.size,
            scheduler=pcs.CfnCluster.SchedulerProperty(type="SLURM", version=spec.slurm_version),
            networking=pcs.CfnCluster.NetworkingProperty(
                subnet_ids=[subnet.subnet_id],
                security_group_ids=[self.security_group.security_group_id],
            ),
            slurm_configuration=pcs.CfnCluster.SlurmConfigurationProperty(
                scale_down_idle_time_in_seconds=spec.scaledown_idle_seconds,
                slurm_custom_settings=[
                    pcs.CfnCluster.SlurmCustomSettingProperty(parameter_name=c["ParameterName"],
                                                              parameter_value=c["ParameterValue"])
                    for c in self.slurm_custom_settings
                ] or None,
                accounting=pcs_accounting(accounting),
            ),
            tags=dict(tags),
        )

    def _grant_head_node(self, head_node_script: ScriptAsset | None, head_node_policy: iam.IManagedPolicy | None) -> None:
        """The node role reads the head-node script and gets the head-node policy (shared by all node groups)."""
        if head_node_script is not None:
            head_node_script.grant_read(self.role)
        if head_node_policy is not None:
            self.role.add_managed_policy(head_node_policy)

    def _admin_scripts(self, scripts: Mapping[str, str]) -> list[tuple[str, ScriptAsset]]:
        """``(file name, S3 asset)`` per admin script (construct id ``AdminScript-<file name>``), readable by the node
        role."""
        assets = [(name, ScriptAsset(self, f"AdminScript-{name}", text=text, file_name=name))
                  for name, text in scripts.items()]
        for _, asset in assets:
            asset.grant_read(self.role)
        return assets

    def _admin_steps(self, cluster_name: str) -> tuple[str, str]:
        """The SSM parameter (construct id ``AdminSteps``, :func:`admin_steps_parameter`) listing the admin scripts'
        S3 URLs in order, readable by the node role; returns ``(parameter name, region)`` for the login user data.
        The parameter, not the user data, changes when a script does: an in-place update, no new launch template
        version, so the login node stays (PCS replaces a node group's instances after a launch template update,
        "Updating a compute node group" in the PCS user guide)."""
        stack = Stack.of(self)
        name = admin_steps_parameter(cluster_name)
        param = string_parameter(
            self, "AdminSteps", parameter_name=name,
            string_value=stack.to_json_string([{"Script": asset.s3_url} for _, asset in self.admin_scripts]),
            description="fmcluster: the login node's admin steps (fmcluster-admin-steps.sh)")
        param.grant_read(self.role)
        return name, stack.region

    def _add_lustre_script(self, lustre: LustreMount | None) -> ScriptAsset | None:
        """The ``mount-lustre.sh`` lifecycle script, readable by the node role (``None`` without Lustre)."""
        if lustre is None:
            return None
        script = ScriptAsset(self, "LustreMountScript", text=LUSTRE_MOUNT_SCRIPT, file_name=LUSTRE_SCRIPT_FILE)
        script.grant_read(self.role)
        return script

    def _node_group_context(self, profile: OrchestratorProfile, os: str, subnet: ec2.ISubnet,
                            security_group: ec2.ISecurityGroup, lustre: LustreMount | None, tags: Mapping[str, str],
                            images: NodeImages | None) -> _NodeGroups:
        """The ``LaunchTemplates``, ``NodeGroups`` and ``Queues`` scopes and what every node group shares."""
        lt_scope, ng_scope, q_scope = (
            Construct(self, n) for n in ("LaunchTemplates", "NodeGroups", "Queues")
        )
        return _NodeGroups(
            lt_scope=lt_scope, ng_scope=ng_scope, q_scope=q_scope, profile=profile, subnet=subnet, lustre=lustre,
            tags=tags, amis=images or NodeImages({}),
            template={"os": os, "subnet": subnet, "efa_security_group": security_group,
                      "primary_security_groups": [self.security_group]},
        )

    def _add_login_group(self, nodes: _NodeGroups, spec: PcsSettings, head_node_script: ScriptAsset | None) -> None:
        """The login node group (one on-demand node) and its launch template (user data only with a head-node
        script)."""
        login_lt = NodeLaunchTemplate(
            nodes.lt_scope,
            "Login",
            instance_type=None,  # PCS launches the node group's InstanceConfigs types
            interfaces=(InterfaceSlot(0, 0, "interface"),),
            user_data=mime_user_data(
                node_shell_script(group=PCS_LOGIN_GROUP, bootstrap=None, lustre=None,
                                  embed_limit_bytes=nodes.profile.user_data_embed_limit_bytes,
                                  head_node_script=head_node_script, slurm_bin_dir=nodes.profile.slurm_bin_dir,
                                  admin_steps=self.admin_steps)
            ) if head_node_script is not None or self.admin_scripts else None,
            tags={**nodes.tags, "fmcluster:node-group": PCS_LOGIN_GROUP},
            **nodes.template,
        )
        self.launch_templates[PCS_LOGIN_GROUP] = login_lt
        self.node_groups[PCS_LOGIN_GROUP] = self._node_group(
            nodes.ng_scope,
            "Login",
            name=PCS_LOGIN_GROUP,
            instance_type=spec.login_instance_type,
            min_count=1,
            max_count=1,
            purchase="ONDEMAND",
            lt=login_lt,
            ami=pcs_ami(nodes.amis.others, spec.login_instance_type),
            subnet=nodes.subnet,
            tags=nodes.tags,
            lifecycle=lifecycle_actions(bootstrap=None, lustre_script=self.lustre_script, lustre=nodes.lustre),
        )

    def _add_compute_group(self, nodes: _NodeGroups, g: ResolvedGroup, placement_group: ec2.PlacementGroup | None,
                           bootstrap: NodeBootstrap) -> None:
        """One compute group's launch template, node group and queue."""
        lt = NodeLaunchTemplate(
            nodes.lt_scope,
            g.name,
            instance_type=None,
            interfaces=g.interfaces,
            group=g.spec,
            placement_group=placement_group,
            cpu_options=g.cpu_options,
            tags={**nodes.tags, "fmcluster:node-group": g.name},
            **nodes.template,
        )
        ng = self._node_group(
            nodes.ng_scope,
            g.name,
            name=g.name,
            instance_type=g.spec.instance_type,
            min_count=g.spec.effective_min_count,
            max_count=g.spec.count,
            purchase=nodes.profile.capacity_term(g.spec.capacity.type) or "ONDEMAND",  # see _check_capacity_types
            lt=lt,
            ami=pcs_ami(nodes.amis.for_group(g.name), g.spec.instance_type),
            subnet=nodes.subnet,
            tags=nodes.tags,
            lifecycle=lifecycle_actions(bootstrap=bootstrap, lustre_script=self.lustre_script,
                                        lustre=nodes.lustre, hooks=self.hooks_script),
        )
        self.launch_templates[g.name] = lt
        self.node_groups[g.name] = ng
        self.queues[g.name] = self._add_queue(nodes, g, ng)

    def _add_queue(self, nodes: _NodeGroups, g: ResolvedGroup, ng: pcs.CfnComputeNodeGroup) -> pcs.CfnQueue:
        """The compute group's queue, with a warning where topology-aware scheduling would matter."""
        queue = pcs.CfnQueue(
            nodes.q_scope,
            g.name,
            cluster_id=self.cluster.attr_id,
            name=g.name,
            compute_node_group_configurations=[
                pcs.CfnQueue.ComputeNodeGroupConfigurationProperty(compute_node_group_id=ng.attr_id),
            ],
            tags=dict(nodes.tags),
        )
        if g.efa_devices and g.spec.count > 1 and not g.instance.ultraserver_sizes:
            Annotations.of(queue).add_warning_v2(TOPOLOGY_WARNING, (
                f"queue {g.name}: fmcluster does not enable PCS network topology-aware scheduling (no "
                "AWS::PCS::Queue property sets it, and which queue SlurmCustomSettings entry does is not verified); "
                "enable it on the queue after deploy for multi-node EFA jobs (docs/topology.md, "
                "https://docs.aws.amazon.com/pcs/latest/userguide/network-topology.html)"))
        return queue

    # -- pieces -------------------------------------------------------------------------------
    def _slurm_hooks(self, profile: OrchestratorProfile) -> ScriptAsset:
        """The compute nodes' Slurm hooks lifecycle script: the health timer and, with IMEX types, the IMEX prolog
        at :data:`IMEX_PROLOG` (on every compute node group: the cluster's ``Prolog`` runs on every node, and the
        prolog does nothing on nodes without ``fmcluster-imex-nodes``)."""
        slurm_bin = profile.slurm_bin_dir or ""
        return ScriptAsset(self, "SlurmHooksScript", file_name=HOOKS_SCRIPT_FILE, text=render_health_timer(
            node_dir=NODE_DIR, slurm_bin_dir=slurm_bin, orchestrator="AWS PCS",
            why="AWS PCS custom Slurm settings do not take HealthCheckProgram, so a timer runs the check on each node.",
            imex_prolog=IMEX_PROLOG if self.imex_types else None,
            imex_script=render_imex_prolog(NODE_DIR, f"{slurm_bin}/scontrol", self.imex_types) if self.imex_types else ""))

    def _cluster_security_group(self, vpc: ec2.IVpc) -> ec2.SecurityGroup:
        sg = ec2.SecurityGroup(
            self,
            "ClusterSecurityGroup",
            vpc=vpc,
            allow_all_outbound=False,
            description="AWS PCS: cluster control plane and nodes (all traffic within the group)",
        )
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "PCS: all traffic from the cluster group itself")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "PCS: all traffic to the cluster group itself")
        ec2.CfnSecurityGroupEgress(
            sg,
            "AllOutbound",
            group_id=sg.security_group_id,
            ip_protocol="-1",
            cidr_ip="0.0.0.0/0",
            description="PCS: outbound to AWS APIs and the internet (R3.5)",
        )
        explicit_egress_only(sg)  # effective egress = the two rules above, not EC2's default (issue 12 item 4)
        return sg

    def _node_role(
        self,
        cluster_name: str,
        region: str,
        groups: Sequence[ResolvedGroup],
        bootstraps: Mapping[str, NodeBootstrap],
        lustre: LustreMount | None,
        checkpoints: CheckpointAccess | None,
    ) -> iam.Role:
        role = iam.Role(
            self,
            "NodeRole",
            role_name=f"{ROLE_NAME_PREFIX}-{cluster_name}-{region}",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"fmcluster {cluster_name}: AWS PCS node role (login and compute node groups)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PcsNodeRegistration",
                actions=["pcs:RegisterComputeNodeGroupInstance"],
                resources=["*"],
            )
        )
        for g in groups:
            bootstraps[g.name].grant_read(role)
        grant_node_storage(role, lustre, checkpoints)
        acknowledge(
            role,
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
                "Nodes have no SSH key and no public IP; Session Manager is the documented way in, and the AWS "
                "managed policy tracks the agent's needs.",
            ),
        )
        acknowledge_wildcards(
            role,
            {
                r"^Resource::\*$": "pcs:RegisterComputeNodeGroupInstance and fsx:DescribeFileSystems are granted on * as "
                "in the AWS PCS minimum instance-profile policy and the FSx EFA client guide (no resource-level scope).",
                **checkpoint_acknowledgement(checkpoints),
            },
        )
        return role

    def _node_group(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        instance_type: str,
        min_count: int,
        max_count: int,
        purchase: str,
        lt: NodeLaunchTemplate,
        ami: str,
        subnet: ec2.ISubnet,
        tags: Mapping[str, str],
        lifecycle: pcs.CfnComputeNodeGroup.NodeLifecycleActionsProperty | None,
    ) -> pcs.CfnComputeNodeGroup:
        ng = pcs.CfnComputeNodeGroup(
            scope,
            id,
            cluster_id=self.cluster.attr_id,
            name=name,
            iam_instance_profile_arn=self.instance_profile.instance_profile_arn,
            instance_configs=[pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=instance_type)],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=min_count,
                max_instance_count=max_count,
            ),
            subnet_ids=[subnet.subnet_id],
            ami_id=ami,
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=lt.template_id,
                version=lt.latest_version,
            ),
            purchase_option=purchase,
            spot_options=pcs.CfnComputeNodeGroup.SpotOptionsProperty(
                allocation_strategy=SPOT_ALLOCATION_STRATEGY
            )
            if purchase == "SPOT"
            else None,
            node_lifecycle_actions=lifecycle,
            tags=dict(tags),
        )
        # Nodes register with PCS using the role's inline policy: create it before any node can launch.
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            ng.node.add_dependency(policy)
        return ng
