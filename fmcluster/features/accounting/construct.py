"""The Slurm accounting database of AWS ParallelCluster (``orchestrator.slurm.accounting``; docs/accounting.md).

An Aurora MySQL 3 (MySQL 8.0-compatible) Serverless v2 cluster with one writer, modelled on AWS's own ParallelCluster
accounting template (aws/aws-parallelcluster ``cloudformation/database/serverless-database.yaml``, commit 04d5f789:
Aurora MySQL ``8.0.mysql_aurora.3.03.0``, Serverless v2 1-4 ACU, a DB subnet group of two subnets in two AZs, a
database security group reachable on the MySQL port only from a client security group, the password as the plain
string of a Secrets Manager secret, cluster parameters ``require_secure_transport=ON`` and
``innodb_lock_wait_timeout=900``) and made safe to keep data in:

- retained: ``DeletionPolicy``/``UpdateReplacePolicy`` Retain on the cluster, its writer, the secret (the password of
  a kept database), the cluster parameter group, the subnet group, the database security group and the subnets fmcluster created (a kept
  database keeps its network interfaces there), plus deletion protection;
- storage encrypted (``StorageEncrypted``), automated backups for ``backup_retention_days``;
- credentials: a generated 32-character alphanumeric password (no characters that need quoting in
  ``slurmdbd.conf``), stored as the secret's plain string, as ``PasswordSecretArn`` requires: "the AWS Secrets
  Manager secret that contains the ``UserName`` plaintext password"
  (https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html#Scheduling-v3-SlurmSettings-Database);
  the master password is a ``{{resolve:secretsmanager:...}}`` reference, never in the template;
- reachable ONLY from :attr:`SlurmAccountingDatabase.client_security_group`, which the cluster stack adds to the
  head node (``HeadNode.Networking.AdditionalSecurityGroups``): ParallelCluster creates the head node's own security
  group itself, and the EFA group fmcluster gives the head node is shared with every compute node. The client group's
  only egress is the database on 3306; the database group has no egress.

The head node reads the secret with the role ParallelCluster creates: for ``SlurmSettings.Database`` it adds
``secretsmanager:GetSecretValue`` on ``PasswordSecretArn`` (statement ``AllowGettingSlurmDbSecretValue`` in
aws/aws-parallelcluster 3.16.1 ``cli/src/pcluster/templates/cdk_builder_utils.py``), so fmcluster adds no policy.

Why Aurora MySQL 3: ParallelCluster "supports Slurm accounting for Slurm supported MySQL database servers"
(https://docs.aws.amazon.com/parallelcluster/latest/ug/slurm-accounting-v3.html), AWS tests it with Aurora MySQL 3
(the template above). RDS for MySQL was not chosen: its 8.0 line leaves RDS standard support in 2026 (the release
calendar of "Supported MySQL major versions on Amazon RDS"; the date was not re-checked here), and whether the head
node's slurmdbd client handles 8.4's authentication defaults could not be verified. The 3.10 line is the newest Aurora MySQL 3
patch line aws-cdk-lib 2.275.0 names (``AuroraMysqlEngineVersion.VER_3_10_4``, 8.0.mysql_aurora.3.10.4); whether AWS still lists it as a
long-term-support release when you deploy is not checked here.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from fmcluster.blueprint.model import SlurmAccountingSpec
from fmcluster.constructs.orchestrator import acknowledge
from fmcluster.features.accounting.plan import AURORA_MYSQL_MAJOR, AURORA_MYSQL_VERSION, DATABASE_PORT, DATABASE_USER
from fmcluster.features.network.construct import Placement, explicit_egress_only

#: The Aurora MySQL engine (see the module docstring; the version string lives in fmcluster.features.accounting.plan).
ENGINE_VERSION = rds.AuroraMysqlEngineVersion.of(AURORA_MYSQL_VERSION, AURORA_MYSQL_MAJOR)
#: Cluster parameters of AWS's ParallelCluster accounting template (serverless-database.yaml).
CLUSTER_PARAMETERS = {"require_secure_transport": "ON", "innodb_lock_wait_timeout": "900"}

__all__ = ["SlurmAccountingDatabase", "CLUSTER_PARAMETERS", "ENGINE_VERSION"]


class SlurmAccountingDatabase(Construct):
    """Aurora MySQL Serverless v2 cluster, secret, subnet group and the two security groups (module docstring).

    ``subnet_cidrs``: two /28 subnets to create in a new VPC (the cluster's AZ, then ``spec.second_availability_zone``;
    :func:`fmcluster.features.accounting.plan.database_subnet_cidrs`); ``None`` in an imported VPC, where
    ``spec.subnet_ids`` are used. ``placement`` is the cluster's AZ (name or ID).

    Attributes: ``cluster`` (rds.DatabaseCluster), ``secret`` (the password, a plain string), ``security_group``
    (the database's), ``client_security_group`` (for the head node), ``subnet_ids``, ``host`` (endpoint address
    token), ``port``, ``user_name``.
    """

    def __init__(self, scope: Construct, id: str, *, spec: SlurmAccountingSpec, vpc: ec2.IVpc, placement: Placement,
                 subnet_cidrs: Sequence[str] | None, cluster_name: str) -> None:
        super().__init__(scope, id)
        self.user_name = DATABASE_USER
        self.port = DATABASE_PORT
        self.subnet_ids = self._subnets(spec, vpc, placement, subnet_cidrs, cluster_name)

        subnet_group = rds.CfnDBSubnetGroup(
            self, "SubnetGroup", subnet_ids=self.subnet_ids,
            db_subnet_group_description=f"fmcluster {cluster_name}: Slurm accounting database (two AZs)",
        )
        subnet_group.apply_removal_policy(RemovalPolicy.RETAIN)

        self.security_group = ec2.SecurityGroup(
            self, "DatabaseSecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="Slurm accounting database: MySQL only from the head node client group, no egress",
        )
        self.client_security_group = ec2.SecurityGroup(
            self, "ClientSecurityGroup", vpc=vpc, allow_all_outbound=False,
            description="Head node: MySQL to the Slurm accounting database",
        )
        mysql = ec2.Port.tcp(DATABASE_PORT)
        self.security_group.add_ingress_rule(self.client_security_group, mysql, "slurmdbd on the head node")
        self.client_security_group.add_egress_rule(self.security_group, mysql, "Slurm accounting database")
        explicit_egress_only(self.security_group)
        explicit_egress_only(self.client_security_group)
        for sg in (self.security_group, self.client_security_group):
            sg.apply_removal_policy(RemovalPolicy.RETAIN)

        self.secret = secretsmanager.Secret(
            self, "Password", description=f"fmcluster {cluster_name}: Slurm accounting database password of "
            f"{DATABASE_USER} (plain string, ParallelCluster PasswordSecretArn)",
            generate_secret_string=secretsmanager.SecretStringGenerator(exclude_punctuation=True, password_length=32),
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(self.secret, (
            "AwsSolutions-SMG4",
            "No automatic rotation: ParallelCluster reads the password when the head node is configured and a new "
            "value reaches slurmdbd only through update_slurm_database_password.sh with the compute fleet stopped "
            "(Scheduling-v3 SlurmSettings/Database/PasswordSecretArn); rotation would cut accounting off.",
        ))

        # Kept with the database: deleting a parameter group that a (kept) cluster still uses fails
        # (InvalidDBParameterGroupState, https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DeleteDBClusterParameterGroup.html).
        parameter_group = rds.ParameterGroup(
            self, "ClusterParameterGroup", engine=rds.DatabaseClusterEngine.aurora_mysql(version=ENGINE_VERSION),
            description=f"fmcluster {cluster_name}: Slurm accounting database cluster parameters",
            parameters=dict(CLUSTER_PARAMETERS), removal_policy=RemovalPolicy.RETAIN,
        )
        writer_az = None if placement.az_is_id else placement.az
        self.cluster = rds.DatabaseCluster(
            self, "Cluster",
            engine=rds.DatabaseClusterEngine.aurora_mysql(version=ENGINE_VERSION),
            credentials=rds.Credentials.from_password(DATABASE_USER, self.secret.secret_value),
            writer=rds.ClusterInstance.serverless_v2("Writer", availability_zone=writer_az,
                                                     auto_minor_version_upgrade=True, publicly_accessible=False),
            serverless_v2_min_capacity=spec.min_capacity_acu, serverless_v2_max_capacity=spec.max_capacity_acu,
            # the subnets are named too: DatabaseCluster checks that its subnet selection has two, even with a subnet group
            vpc=vpc, vpc_subnets=ec2.SubnetSelection(subnets=self._subnet_refs()),
            subnet_group=rds.SubnetGroup.from_subnet_group_name(self, "SubnetGroupRef", subnet_group.ref),
            security_groups=[self.security_group], port=DATABASE_PORT,
            parameter_group=parameter_group,
            storage_encrypted=True, deletion_protection=True, copy_tags_to_snapshot=True,
            backup=rds.BackupProps(retention=Duration.days(spec.backup_retention_days)),
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.host = self.cluster.cluster_endpoint.hostname
        if writer_az is not None:
            writer = self.cluster.node.find_child("Writer").node.default_child
            assert writer is not None
            acknowledge(writer, (
                "CloudFormation-Validate::W3010",
                "The writer runs in the blueprint's AZ, next to the head node, by design (nodes are bound to that zone).",
            ))
        acknowledge(self.cluster, *_NAG_REASONS)

    def _subnet_refs(self) -> list[ec2.ISubnet]:
        """The database subnets as ``ISubnet`` for the cluster's subnet selection (nothing reads their route table)."""
        refs = []
        for i, sid in enumerate(self.subnet_ids):
            ref = ec2.Subnet.from_subnet_id(self, f"SubnetRef{i + 1}", sid)
            Annotations.of(ref).acknowledge_warning(
                "@aws-cdk/aws-ec2:noSubnetRouteTableId", "the database subnets' route table is never read")
            refs.append(ref)
        return refs

    def _subnets(self, spec: SlurmAccountingSpec, vpc: ec2.IVpc, placement: Placement,
                 cidrs: Sequence[str] | None, cluster_name: str) -> list[str]:
        if cidrs is None:
            return list(spec.subnet_ids)
        ids = []
        zones = (placement.az, spec.second_availability_zone or "")
        for i, (cidr, zone) in enumerate(zip(cidrs, zones, strict=True)):
            by_id = placement.az_is_id
            subnet = ec2.CfnSubnet(
                self, f"Subnet{i + 1}", vpc_id=vpc.vpc_id, cidr_block=cidr,
                availability_zone=None if by_id else zone, availability_zone_id=zone if by_id else None,
                map_public_ip_on_launch=False,
                tags=[{"key": "Name", "value": f"{cluster_name}-accounting-{i + 1}"}],
            )
            # A kept database keeps its network interfaces here (DeleteSubnet fails while it has any).
            subnet.apply_removal_policy(RemovalPolicy.RETAIN)
            acknowledge(subnet, (
                "CloudFormation-Validate::W3010",
                "The database subnets go to the blueprint's AZ and second_availability_zone by design (an RDS DB "
                "subnet group needs two AZs; the nodes are bound to the blueprint's zone).",
            ))
            ids.append(subnet.ref)
        return ids


_NAG_REASONS = (
    ("AwsSolutions-RDS6", "slurmdbd authenticates with a user name and password (ParallelCluster SlurmSettings/"
                          "Database takes a PasswordSecretArn); it has no IAM database authentication."),
    ("AwsSolutions-RDS11", "3306 is the port slurmdbd and ParallelCluster's Uri default to; the database is reachable "
                           "only from the head node's client security group."),
    ("AwsSolutions-RDS14", "Recovery is point-in-time restore from automated backups (backup_retention_days) into a "
                           "new cluster; Backtrack rewinds the live cluster in place and bills change records."),
)


def database_uri(db: SlurmAccountingDatabase) -> str:
    """``Scheduling.SlurmSettings.Database.Uri``: ``host:port`` without a scheme (Scheduling-v3)."""
    return f"{db.host}:{db.port}"

