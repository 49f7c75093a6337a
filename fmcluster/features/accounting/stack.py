"""``<name>-accounting``: the Slurm accounting database of AWS ParallelCluster (retained; docs/accounting.md).

Its own stack, like ``<name>-storage``: the database holds data and outlives the cluster. The cluster stack imports
the endpoint, the secret ARN and the client security group, so CloudFormation deploys this stack first
(ParallelCluster: "The database must be reachable before ... a cluster is created").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.blueprint.model import SlurmAccountingSpec
from fmcluster.features.accounting.construct import SlurmAccountingDatabase, database_uri
from fmcluster.features.accounting.plan import as_accounting_plan
from fmcluster.features.network.construct import Placement
from fmcluster.features.network.stack import NetworkStack
from fmcluster.stacks.context import StackContext


class AccountingStack(Stack):
    """:class:`SlurmAccountingDatabase` plus outputs: database URI, user name, secret ARN, client security group."""

    def __init__(self, scope: Construct, id: str, *, spec: SlurmAccountingSpec, vpc: ec2.IVpc, placement: Placement,
                 subnet_cidrs: Sequence[str] | None, cluster_name: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.database = SlurmAccountingDatabase(self, "Accounting", spec=spec, vpc=vpc, placement=placement,
                                                subnet_cidrs=subnet_cidrs, cluster_name=cluster_name)
        CfnOutput(self, "DatabaseUri", value=database_uri(self.database))
        CfnOutput(self, "DatabaseUserName", value=self.database.user_name)
        CfnOutput(self, "DatabasePasswordSecretArn", value=self.database.secret.secret_arn)
        CfnOutput(self, "DatabaseClientSecurityGroup", value=self.database.client_security_group.security_group_id)


def build_stack(ctx: StackContext) -> AccountingStack | None:
    """The feature registry's ``stack`` hook: ``<name>-accounting`` when the orchestrator's accounting route is a
    database fmcluster creates (ParallelCluster with ``orchestrator.slurm.accounting.enabled``; docs/accounting.md),
    in the ``network`` stack's VPC, else ``None``. The retained database keeps its network interfaces in the VPC,
    so the GPU subnet (and with it the VPC) is retained too."""
    rc = ctx.rc
    plan = as_accounting_plan(rc.accounting)
    if plan is None or rc.stacks.accounting is None:
        return None
    network = ctx.stack("network", NetworkStack)
    stack = AccountingStack(
        ctx.app, rc.stacks.accounting, env=ctx.env, spec=plan.spec, vpc=network.network.vpc,
        placement=network.placement, subnet_cidrs=plan.subnet_cidrs, cluster_name=rc.name,
        description=f"fmcluster {rc.name}: Slurm accounting database (Aurora MySQL, retained)",
    )
    network.network.retain_gpu_subnet()
    return stack
