"""What HyperPod Slurm orchestration adds to the shared HyperPod construct
(:class:`fmcluster.orchestrators.hyperpod.construct.HyperPodCluster`): the ``Controller`` and optional ``Login``
instance groups, ``SlurmConfig`` on every group (partition = compute group name), FSx for Lustre mounted by HyperPod
from ``InstanceStorageConfigs``, the Slurm hooks, the observability head-node script on the controller group and its
node policy on the (shared) execution role, and ``Orchestrator.Slurm``.

With a metrics layer, the ``controller`` group's folder also holds the observability head-node script; its
``on_init_complete.sh`` copies it to ``/opt/fmcluster`` and starts it once Slurm answers (``common.start_after_slurm``;
Slurm is up already in this mode, so it starts at once), and the execution role gets the observability node policy.
All instance groups share that one execution role, so the GPU groups get the policy as well.

Sources: API-driven Slurm configuration (``SlurmConfig``, ``Orchestrator.Slurm.SlurmConfigStrategy``,
``FsxLustreConfig``): https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html.

Slurm hooks (:mod:`fmcluster.features.slurm.render_hooks`): ``SlurmConfig`` takes only ``NodeType`` and ``PartitionNames``
(botocore sagemaker service-2.json ``ClusterSlurmConfig``), so the controller's ``OnInitComplete`` runs
``fmcluster-slurm-conf.sh``, which adds ``HealthCheckProgram`` (the node check's fast mode, draining with the reason),
``HealthCheckInterval``, ``HealthCheckNodeState`` and ``TaskProlog`` (the job environment) to
``/opt/slurm/etc/slurm.conf`` and, with p6e-gb200 groups (``OrchestratorProfile.imex``), ``Prolog`` (the per-job IMEX
prolog, as a glob over ``/opt/fmcluster/slurm/prolog.d/``, one more ``Prolog`` line beside the site's) with
``PrologFlags=Alloc,NoHold`` merged into the flags already there (no ``NoHold`` beside ``Contain``/``X11``/``RunInJob``,
which slurmctld refuses), then ``scontrol reconfigure``. HyperPod's Slurm lives in ``/opt/slurm`` and its controller's
slurm.conf is edited in place the same way by AWS's own HyperPod lifecycle samples
(aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/``
``setup_rds_accounting.sh``, ``utils/pam_adopt_cgroup_wheel.sh``: ``PrologFlags=Contain`` then a restart); compute
nodes read it configless. The controller keeps the editor at ``/opt/fmcluster/slurm/`` and re-runs it from a systemd
path unit (slurm.conf changed) and a timer (every 5 minutes): HyperPod may rewrite slurm.conf when it scales or replaces
nodes (issue 23; not confirmed by an AWS page: ``SlurmConfigStrategy: Managed`` is documented for partitions), and the
editor is idempotent. Each compute group's ``OnInitComplete`` first drains the node (HyperPod starts Slurm before
the script runs, so a new or replaced node could take jobs meanwhile), installs the TaskProlog and the IMEX prolog
(``fmcluster-slurm-hooks-install.sh``), runs the node bootstrap and, on success, resumes the node, only if it is still
drained with fmcluster's reason. The login group gets none of this (no GPUs, no health check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import aws_iam as iam

from fmcluster.blueprint.model import HyperPodSettings
from fmcluster.constructs.orchestrator import HEAD_NODE_SCRIPT
from fmcluster.features.slurm.render_hooks import (
    render_hooks_installer,
    render_imex_prolog,
    render_node_state,
    render_slurm_conf_editor,
    render_slurm_conf_watch,
    slurm_conf_settings,
)
from fmcluster.features.storage.construct import LustreMount
from fmcluster.orchestrators.hyperpod.construct import GroupLifecycle, HyperPodOrchestration
from fmcluster.orchestrators.hyperpod.profile import HYPERPOD_CONTROLLER_GROUP, HYPERPOD_LOGIN_GROUP
from fmcluster.orchestrators.hyperpod_slurm.profile import HYPERPOD_SLURM
from fmcluster.resolved import NODE_DIR, OrchestratorProfile, ResolvedGroup

SLURM_CONFIG_STRATEGY = "Managed"
#: Slurm hooks on each HyperPod compute node's own disk (installed by its OnInitComplete; fmcluster does not rely on a
#: file system shared with the controller).
TASK_PROLOG = f"{NODE_DIR}/slurm/fmcluster-task-prolog.sh"
IMEX_PROLOG = f"{NODE_DIR}/slurm/prolog.d/91_fmcluster_imex_prolog.sh"
#: slurm.conf ``Prolog`` as a glob ("A glob pattern (See glob(7)) may also be used to specify more than one program",
#: SchedMD/slurm doc/man/man5/slurm.conf.5), over the directory compute nodes fill at OnInitComplete.
PROLOG_GLOB = f"{NODE_DIR}/slurm/prolog.d/*"
SLURM_CONF_SCRIPT = "fmcluster-slurm-conf.sh"
SLURM_CONF_WATCH_SCRIPT = "fmcluster-slurm-conf-watch.sh"
#: Where the controller keeps the slurm.conf editor its path and timer units re-run.
SLURM_CONF_EDITOR = f"{NODE_DIR}/slurm/{SLURM_CONF_SCRIPT}"
HOOKS_INSTALL_SCRIPT = "fmcluster-slurm-hooks-install.sh"
DRAIN_SCRIPT = "fmcluster-slurm-drain.sh"
RESUME_SCRIPT = "fmcluster-slurm-resume.sh"
#: Why a compute node is drained while OnInitComplete runs: HyperPod's Extended mode runs OnInitComplete after it has
#: configured its default software, Slurm included (AWS::SageMaker::Cluster ClusterLifeCycleConfig, "runs after
#: HyperPod configures the default software"; botocore sagemaker ClusterLifeCycleConfig.OnInitComplete), so slurmd is
#: up and the node can take jobs before fmcluster's script has configured and checked it.
DRAIN_WHY = ("HyperPod starts Slurm before OnInitComplete (Extended mode), so a new or replaced node could take jobs "
             "while this script still configures it.")
#: Why the controller re-applies the hooks: UNVERIFIED. AWS documents SlurmConfigStrategy as "the strategy for
#: managing partitions" (Managed | Overwrite | Merge, API_ClusterOrchestratorSlurmConfig); issue 23 reports that
#: HyperPod's agent rewrites slurm.conf on scaling and node replacement, which no AWS page fmcluster found confirms or
#: rules out. Re-applying is idempotent, so it costs nothing if the rewrite never happens.
WATCH_WHY = ("HyperPod may rewrite slurm.conf when it scales or replaces nodes (unverified; SlurmConfigStrategy "
             "Managed manages partitions), which would drop these keys: a path unit and a timer re-apply them.")


class SlurmOrchestration(HyperPodOrchestration):
    """HyperPod Slurm's part of the shared construct (see the module docstring).

    ``profile`` and ``groups``: the IMEX groups the profile wires (``imex_types``, R-IMEX-1 refuses the others).
    ``lustre``: mounted by HyperPod on every group; default: none. ``head_node_script`` (text) runs on the controller
    group once Slurm answers and ``head_node_policy`` is attached to the execution role (shared by all groups);
    default: no head-node script and no extra policy. ``admin_scripts`` (file name -> text: the acceptance gate's
    watcher) run on the controller after the Slurm hooks; default: none.
    """

    def __init__(self, *, profile: OrchestratorProfile, groups: Sequence[ResolvedGroup],
                 lustre: LustreMount | None = None, head_node_script: str | None = None,
                 head_node_policy: iam.IManagedPolicy | None = None,
                 admin_scripts: Mapping[str, str] | None = None) -> None:
        self.lustre = lustre
        self.head_node_script = head_node_script
        self.head_node_policy = head_node_policy
        # IMEX per job on the groups the profile wires (R-IMEX-1 refuses the others): one fact, ResolvedGroup.imex
        self.imex_types = sorted({g.spec.instance_type for g in groups
                                  if g.imex})
        self.scontrol = f"{profile.slurm_bin_dir or HYPERPOD_SLURM + '/bin'}/scontrol"
        self.admin_scripts = dict(admin_scripts or {})
        self.hooks = self._slurm_hooks()

    def management_groups(self, spec: HyperPodSettings) -> list[tuple[str, str]]:
        """The controller, then the login group when the blueprint has one."""
        return [(HYPERPOD_CONTROLLER_GROUP, "Controller"),
                *([(HYPERPOD_LOGIN_GROUP, "Login")] if spec.login_instance_type else [])]

    def lifecycle_files(self, name: str, node_type: str) -> GroupLifecycle:
        """The head-node script on the controller group and the group's Slurm hooks: the controller installs the
        slurm.conf editor and its watch; a compute node is drained first, gets the TaskProlog/IMEX prolog, and is
        resumed last (after its bootstrap succeeded). The login group gets none (no GPU, no health check)."""
        files: dict[str, str] = {}
        head = self.head_node_script if name == HYPERPOD_CONTROLLER_GROUP else None
        if head is not None:
            files[HEAD_NODE_SCRIPT] = head
        hooks = self.hooks.get(node_type, {})
        files.update(hooks)
        first = {"Controller": (SLURM_CONF_WATCH_SCRIPT, *self.admin_scripts), "Compute": (DRAIN_SCRIPT, HOOKS_INSTALL_SCRIPT)}
        last = {"Compute": (RESUME_SCRIPT,)}
        return GroupLifecycle(files=files, hooks=first.get(node_type, ()) if hooks else (),
                              final_hooks=last.get(node_type, ()) if hooks else (), starts_head_node=head is not None)

    def attach_policies(self, role: iam.Role) -> None:
        """The head-node policy: the controller group runs Prometheus; HyperPod takes one execution role per group,
        and all groups share this one."""
        if self.head_node_policy is not None:
            role.add_managed_policy(self.head_node_policy)

    def configure_instance_group(self, ig: dict[str, Any], name: str, node_type: str,
                                 storage: list[dict[str, Any]]) -> None:
        """``SlurmConfig`` (a compute group is its own partition) and the FSx for Lustre mount."""
        ig["SlurmConfig"] = {"NodeType": node_type}
        if node_type == "Compute":
            ig["SlurmConfig"]["PartitionNames"] = [name]
        if self.lustre is not None:
            storage.append(
                {
                    "FsxLustreConfig": {
                        "DnsName": self.lustre.dns_name,
                        "MountName": self.lustre.mount_name,
                        "MountPath": self.lustre.mount_point,
                    }
                }
            )

    def orchestrator(self) -> dict[str, Any]:
        return {"Slurm": {"SlurmConfigStrategy": SLURM_CONFIG_STRATEGY}}

    def _slurm_hooks(self) -> dict[str, dict[str, str]]:
        """Instance-group node type -> {file name: script} of the Slurm hooks (see the module docstring): the
        controller's slurm.conf editor and its watch installer; every compute group's drain, TaskProlog / IMEX prolog
        installer and resume."""
        imex = bool(self.imex_types)
        editor = render_slurm_conf_editor(
            slurm_conf=f"{HYPERPOD_SLURM}/etc/slurm.conf", scontrol=self.scontrol,
            settings=slurm_conf_settings(NODE_DIR, TASK_PROLOG), orchestrator="SageMaker HyperPod",
            node_label="controller", prolog=PROLOG_GLOB if imex else None,
            why="HyperPod's SlurmConfig has no keys for these (NodeType and PartitionNames only), so its controller's "
                "OnInitComplete edits slurm.conf.")
        installer = render_hooks_installer(
            NODE_DIR, TASK_PROLOG, orchestrator="SageMaker HyperPod", node_label="compute node",
            share_note="Every compute node installs its own copy (OnInitComplete, before the node bootstrap).",
            imex_prolog=IMEX_PROLOG if imex else None,
            imex_script=render_imex_prolog(NODE_DIR, self.scontrol, self.imex_types) if imex else "")
        scontrol = self.scontrol
        watch = render_slurm_conf_watch(
            slurm_conf=f"{HYPERPOD_SLURM}/etc/slurm.conf", editor_file=SLURM_CONF_SCRIPT, editor_path=SLURM_CONF_EDITOR,
            orchestrator="SageMaker HyperPod", node_label="controller", why=WATCH_WHY)
        state = {mode: render_node_state(mode=mode, scontrol=scontrol, orchestrator="SageMaker HyperPod", why=DRAIN_WHY)
                 for mode in ("drain", "resume")}
        return {"Controller": {SLURM_CONF_SCRIPT: editor, SLURM_CONF_WATCH_SCRIPT: watch, **self.admin_scripts},
                "Compute": {DRAIN_SCRIPT: state["drain"], HOOKS_INSTALL_SCRIPT: installer, RESUME_SCRIPT: state["resume"]}}
