"""Slurm accounting rules (``orchestrator.slurm.accounting``; docs/accounting.md, fmcluster.features.accounting.plan)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import OrchestratorSpec
from fmcluster.features.accounting.plan import as_accounting_plan
from fmcluster.features.network.rules_subnet import second_az_subnet_problems
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule

ACCT = "orchestrator.slurm.accounting"
PCLUSTER_DB = "https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html#Scheduling-v3-SlurmSettings-Database"
PCS_ACCOUNTING = "https://docs.aws.amazon.com/pcs/latest/userguide/slurm-accounting.html"
HYPERPOD_EXTERNAL_DB = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-external-accounting-db-slurm.html"
RDS_SUBNETS = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_VPC.WorkingWithRDSInstanceinaVPC.html"


@rule("R-ACCT-1", scope="cluster", orchestrators=("hyperpod",),
      source=f"{HYPERPOD_EXTERNAL_DB} (an external accounting database requires continuous provisioning and AMIs "
      "released after 2026-08-30; Orchestrator.Slurm.AccountingDatabase: 'Supported only with Continuous node "
      "provisioning', CloudFormation schema AWS::SageMaker::Cluster ClusterAccountingDatabase, cfn-lint 1.58.0)")
def hyperpod_accounting(rc: ResolvedCluster) -> Iterator[Violation]:
    """HyperPod: accounting is not wired (Slurm) or impossible (EKS)."""
    spec = rc.blueprint.orchestrator.slurm.accounting
    if not spec.enabled:
        return
    if not rc.profile.runs_slurm:
        yield f"{ACCT}.enabled", (
            "Slurm accounting on HyperPod EKS orchestration, got true; allowed false (the cluster runs Kubernetes, "
            "not Slurm)"
        )
        return
    yield f"{ACCT}.enabled", (
        "Slurm accounting is not wired on SageMaker HyperPod yet, got true; allowed false. "
        "HyperPod already runs slurmdbd with MariaDB on the controller; "
        "an external database (Orchestrator.Slurm.AccountingDatabase) needs NodeProvisioningMode Continuous, "
        "which fmcluster does not set for HyperPod Slurm, and cannot be detached again. "
        "Use orchestrator.kind parallelcluster or pcs for accounting fmcluster manages"
    )


@rule("R-ACCT-2", scope="cluster", orchestrators=("parallelcluster",),
      source=f"{RDS_SUBNETS} (a DB subnet group needs subnets in at least two Availability Zones); fmcluster adds "
      "two /28 subnets to a new VPC (fmcluster.features.accounting.plan.database_subnet_cidrs)")
def database_subnets(rc: ResolvedCluster) -> Iterator[Violation]:
    """ParallelCluster: the accounting database's subnet group has subnets in two AZs."""
    plan = as_accounting_plan(rc.accounting)
    if plan is None or not plan.creates_database:
        return
    s = plan.spec
    yield from second_az_subnet_problems(
        rc.blueprint, what="accounting database subnets", az=s.second_availability_zone,
        az_path=f"{ACCT}.second_availability_zone", subnet_ids=s.subnet_ids, subnets_path=f"{ACCT}.subnet_ids",
        cidrs=plan.subnet_cidrs)


@rule("R-ACCT-3", scope="orchestrator", source="Aurora Serverless v2 ServerlessV2ScalingConfiguration (MinCapacity <= MaxCapacity), "
      "https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/aurora-serverless-v2.setting-capacity.html")
def capacity_range(orch: OrchestratorSpec) -> Iterator[Violation]:
    """min_capacity_acu <= max_capacity_acu."""
    s = orch.slurm.accounting
    if s.enabled and s.min_capacity_acu > s.max_capacity_acu:
        yield f"{ACCT}.min_capacity_acu", (
            f"above max_capacity_acu ({s.max_capacity_acu:g}), got {s.min_capacity_acu:g}; "
            f"allowed 0.5-{s.max_capacity_acu:g} ACU"
        )


#: Settings of ``orchestrator.slurm.accounting`` that only one route reads.
_DATABASE_ONLY = ("min_capacity_acu", "max_capacity_acu", "backup_retention_days", "second_availability_zone",
                  "subnet_ids")
_MANAGED_ONLY = ("purge_after_days",)


@rule("R-ACCT-4", level="warning", scope="cluster", orchestrators=("parallelcluster", "pcs"),
      source=f"{PCLUSTER_DB} (Database: Uri, UserName, PasswordSecretArn, DatabaseName; no purge setting); "
      f"{PCS_ACCOUNTING} (Accounting: Mode, DefaultPurgeTimeInDays; PCS runs the database)")
def unused_settings(rc: ResolvedCluster) -> Iterator[Violation]:
    """A setting the orchestrator's accounting route does not read is reported, not silently dropped."""
    plan = as_accounting_plan(rc.accounting)
    if plan is None or plan.route is None:
        return
    s = plan.spec
    unused = _MANAGED_ONLY if plan.route == "database" else _DATABASE_ONLY
    default = type(s)()
    for name in unused:
        value = getattr(s, name)
        if value != getattr(default, name):
            reader = "AWS PCS" if name in _MANAGED_ONLY else "AWS ParallelCluster (the database fmcluster creates)"
            yield f"{ACCT}.{name}", (
                f"not used by {rc.profile.kind}, got {value!r}; allowed the default (only {reader} reads it)"
            )
