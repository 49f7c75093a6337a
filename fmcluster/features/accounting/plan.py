"""Slurm accounting, resolved once (``orchestrator.slurm.accounting``; docs/accounting.md).

Which route an orchestrator takes is its profile's (:attr:`OrchestratorProfile.slurm_accounting`): ``database``
(AWS ParallelCluster: an Aurora MySQL cluster fmcluster creates in the ``<name>-accounting`` stack, wired into
``Scheduling.SlurmSettings.Database``), ``managed`` (AWS PCS runs the accounting database itself) or ``None`` (not
wired: SageMaker HyperPod, rule R-ACCT-1). Constructs, the plan and the rules read :class:`AccountingPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fmcluster.blueprint.model import Blueprint, SlurmAccountingSpec
from fmcluster.catalog.vpc_layout import tail_subnet_pair
from fmcluster.orchestrators.profile import OrchestratorProfile

# Why /28 for each database subnet fmcluster adds to a new VPC. An RDS DB subnet group needs "at least two subnets in
# at least two Availability Zones" (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_VPC.WorkingWithRDSInstanceinaVPC.html);
# a /28 (11 usable addresses) is the smallest subnet AWS allows and holds the Aurora writer's interface with room
# for the ones RDS adds during maintenance.
# (fmcluster.catalog.vpc_layout.tail_subnet_pair).

#: How many /28 blocks from the end of the VPC the database subnets start: the last two /28 blocks belong to the EKS
#: control-plane subnets (:func:`fmcluster.orchestrators.hyperpod_eks.plan.control_plane_cidrs`), so the database takes the two before.
_BLOCKS_FROM_END = 4
#: ``Scheduling.SlurmSettings.Database.UserName`` and the Aurora master user: the default user name of AWS's
#: ParallelCluster accounting template (aws/aws-parallelcluster cloudformation/database/serverless-database.yaml).
DATABASE_USER = "clusteradmin"
#: The MySQL port: slurmdbd's default StoragePort and the port ParallelCluster assumes without one in ``Uri``.
DATABASE_PORT = 3306

#: Aurora MySQL engine version of the database (fmcluster.features.accounting.construct explains the choice).
AURORA_MYSQL_VERSION = "8.0.mysql_aurora.3.10.4"
AURORA_MYSQL_MAJOR = "8.0"

AccountingRoute = Literal["database", "managed"]


def database_subnet_cidrs(vpc_cidr: str, gpu_prefix: int) -> tuple[str, str] | None:
    """The two /28 database subnets fmcluster adds to a new VPC (cluster AZ first, then
    ``second_availability_zone``): the 4th- and 3rd-last /28 blocks of ``vpc_cidr``, after CDK's public /24 and the
    ``/gpu_prefix`` GPU subnet (allocated from the start of the VPC, each aligned to its size) and before the EKS
    control-plane blocks. ``None`` when they would overlap the public or GPU subnet (the VPC is full, R-ACCT-2)."""
    return tail_subnet_pair(vpc_cidr, gpu_prefix, blocks_from_end=_BLOCKS_FROM_END)


@dataclass(frozen=True)
class AccountingPlan:
    """Slurm accounting of one blueprint.

    Attributes:
        spec: ``orchestrator.slurm.accounting``.
        route: ``database`` (fmcluster creates the database), ``managed`` (PCS) or ``None`` (accounting off, or the
            orchestrator has no wired route: R-ACCT-1 reports that).
        subnet_cidrs: the two /28 database subnets fmcluster adds to a new VPC, or ``None`` (no database, an
            imported VPC, or no room: R-ACCT-2).
    """

    spec: SlurmAccountingSpec
    route: AccountingRoute | None
    subnet_cidrs: tuple[str, str] | None

    @property
    def creates_database(self) -> bool:
        return self.route == "database"

    @property
    def database_capacity(self) -> str:
        """The database fmcluster creates, as a cost line's quantity: ``"Aurora Serverless v2, <min>-<max> ACU"``."""
        return f"Aurora Serverless v2, {self.spec.min_capacity_acu:g}-{self.spec.max_capacity_acu:g} ACU"

    def summary(self, stack: str | None) -> dict[str, str] | None:
        """What ``fmcluster plan`` shows (route, where, retention), or ``None`` when accounting is off. ``stack``: the
        accounting stack's name (:attr:`fmcluster.resolved.cluster.StackNames.accounting`)."""
        s = self.spec
        if self.route == "database":
            return {"route": "ParallelCluster SlurmSettings.Database", "stack": stack or "",
                    "database": f"Aurora MySQL {AURORA_MYSQL_VERSION} Serverless v2, {s.min_capacity_acu:g}-"
                                f"{s.max_capacity_acu:g} ACU",
                    "data": f"retained, encrypted, {s.backup_retention_days} days of backups; password in Secrets "
                            "Manager; MySQL only from the head node"}
        if self.route == "managed":
            keep = "as long as the cluster exists" if s.purge_after_days == -1 else f"{s.purge_after_days} days"
            return {"route": "AWS PCS managed accounting (Mode STANDARD)", "stack": "",
                    "database": "run by AWS PCS", "data": f"records kept {keep}; deleted with the PCS cluster"}
        return None


def accounting_route(bp: Blueprint, profile: OrchestratorProfile) -> AccountingRoute | None:
    """The accounting route of ``bp`` for its orchestrator ``profile`` (``None``: accounting off, or no wired route)."""
    return profile.slurm_accounting if bp.orchestrator.slurm.accounting.enabled else None


def accounting_plan(bp: Blueprint, profile: OrchestratorProfile) -> AccountingPlan:
    """The :class:`AccountingPlan` of ``bp`` for its orchestrator ``profile``. Its stack's name is
    :attr:`fmcluster.resolved.cluster.StackNames.accounting`."""
    route = accounting_route(bp, profile)
    cidrs = None
    if route == "database" and bp.network.vpc_id is None:
        cidrs = database_subnet_cidrs(bp.network.vpc_cidr, bp.network.gpu_subnet_prefix_length)
    return AccountingPlan(spec=bp.orchestrator.slurm.accounting, route=route, subnet_cidrs=cidrs)


def as_accounting_plan(plan: object) -> AccountingPlan | None:
    """``plan`` (the resolved cluster's ``accounting`` slot) as this feature's :class:`AccountingPlan`, or ``None``.

    Raises:
        TypeError: ``plan`` is something else (the slot was filled by another hook: a wiring mistake).
    """
    if plan is None or isinstance(plan, AccountingPlan):
        return plan
    raise TypeError(f"accounting plan expected, got {type(plan).__name__}")
