"""Training storage: FSx for Lustre with S3 data repository associations, and the checkpoint bucket.

Stateful resources (file system, data repository associations, data and checkpoint buckets) are
RETAINed unless the blueprint asks for ``removal_policy: destroy`` AND the app sets the context
flag ``fmcluster:allowDataDestruction=true`` (two keys). With one key only, a synth warning says
what was kept (docs/storage.md, "Two-key destroy"). With both keys, created buckets also get
``auto_delete_objects`` (CloudFormation cannot delete a non-empty bucket). The access-log bucket is
always kept: it is the audit trail of what happened to the others.

Construct ids are API: ``Storage/FileSystem``, ``Storage/CheckpointBucket``, ``Storage/DataBucket``,
``Storage/DataRepositoryAssociations/<Path>`` and ``Storage/AccessLogs`` name stateful resources;
renaming one replaces the resource (data loss). ``tests/features/storage/test_storage_construct.py`` pins them.

Sources (FSx CreateFileSystem API, FSx for Lustre User Guide, CloudFormation resource schemas):
- FSx CreateFileSystem API: https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html
- Lustre client ports TCP 988 and 1018-1023 (file-system group, from clients and itself):
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html
- EFA-enabled file systems need a group that allows all traffic to and from itself and the
  clients' group: https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html
  The matching rules on the clients' group (all traffic from the file system's group for EFA,
  Lustre ports otherwise) are defensive and UNVERIFIED: EFA traffic is not connection-tracked
  the way TCP is, so the client side gets an explicit inbound rule too.
- Creation order: "The file system cannot be created because the default security group in the subnet
  provided or the provided security groups do not permit Lustre LNET network traffic on port 988"
  (https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html#fs-create-fails-port988), and for
  EFA "Insufficient security group permissions" (same page, #fs-create-fails-efa). Rules between groups
  are standalone resources that CloudFormation may create in parallel with the file system, so the
  file system DependsOn every ingress and egress rule of its security group.
- Effective egress of the file system's group is exactly its explicit rules
  (:func:`fmcluster.features.network.construct.explicit_egress_only`).
- Teardown: the file system's security group follows the file system's removal policy (a retained
  file system keeps its network interfaces, which keep their group in use), and so do the group's
  self-referencing rules (Lustre 988 and 1018-1023, all traffic for EFA): "You must set up the security
  group to allow inbound traffic on ports 988 and 1018-1023" and, for EFA, "all inbound and outbound
  traffic to and from the security group itself"
  (https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html). Without them a kept file
  system's servers cannot reach each other (UNVERIFIED what FSx does then: the guide documents only the
  creation failure), so they are kept with it. The rules to and from the cluster's group cannot be kept
  (they would keep that group referenced and its stack's deletion would fail), so a synth warning
  (``fmcluster:lustreClientRulesDeleted``) says so; see docs/storage.md.
- Data repository associations:
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html
What nodes need (:func:`grant_node_storage`, :func:`lustre_mount_script`, called by the orchestrator constructs):
- S3 object-level vs bucket-level actions, ``s3:prefix`` condition on ``ListBucket``:
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-with-s3-policy-actions.html
- Lustre over EFA needs ``fsx:DescribeFileSystems`` on the client; without it the client cannot learn
  that the file system is EFA-enabled and mounts over TCP:
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html
- Lustre client mount command (``<dns>@tcp:/<mountname>``):
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/mounting-ec2-instance.html
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import Acknowledgment, Annotations, Duration, RemovalPolicy, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fmcluster.blueprint.model import CheckpointSpec, DataRepository, LustreSpec
from fmcluster.features.network.construct import explicit_egress_only, security_group_rules

LUSTRE_PORT = 988
LUSTRE_PORT_RANGE = (1018, 1023)
ABORT_INCOMPLETE_UPLOADS_DAYS = 7
ACCESS_LOG_RETENTION_DAYS = 365
DATA_DESTRUCTION_WARNING = "fmcluster:dataRetained"
CLIENT_RULES_WARNING = "fmcluster:lustreClientRulesDeleted"
S3_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"

#: Blueprint storage-class names -> CDK storage classes.
STORAGE_CLASSES = {
    "STANDARD_IA": s3.StorageClass.INFREQUENT_ACCESS,
    "ONEZONE_IA": s3.StorageClass.ONE_ZONE_INFREQUENT_ACCESS,
    "INTELLIGENT_TIERING": s3.StorageClass.INTELLIGENT_TIERING,
    "GLACIER_IR": s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
    "GLACIER": s3.StorageClass.GLACIER,
    "DEEP_ARCHIVE": s3.StorageClass.DEEP_ARCHIVE,
}
#: Actions nodes need on checkpoint objects (read, write, overwrite, delete, multipart uploads).
CHECKPOINT_OBJECT_ACTIONS = [
    "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion",
    "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts",
]
CHECKPOINT_BUCKET_ACTIONS = ["s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads"]
KMS_DATA_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"]


@dataclass(frozen=True)
class CheckpointAccess:
    """The checkpoint bucket, the prefix nodes may read and write, and the bucket's KMS key (if any)."""

    bucket: s3.IBucket
    prefix: str
    key: kms.IKey | None = None


def checkpoint_statements(cp: CheckpointAccess) -> list[iam.PolicyStatement]:
    """Least-privilege statements for the checkpoint prefix: objects under ``bucket/prefix*``, listing
    only under the prefix, and the bucket's KMS key when it has one. The one definition every
    orchestrator and :meth:`TrainingStorage.grant_checkpoint_read_write` use."""
    statements = [
        iam.PolicyStatement(sid="CheckpointPrefixReadWrite", actions=CHECKPOINT_OBJECT_ACTIONS,
                            resources=[cp.bucket.arn_for_objects(f"{cp.prefix}*")]),
        iam.PolicyStatement(sid="CheckpointPrefixList", actions=CHECKPOINT_BUCKET_ACTIONS, resources=[cp.bucket.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [f"{cp.prefix}*"]}}),
    ]
    if cp.key is not None:
        statements.append(iam.PolicyStatement(sid="CheckpointKey", actions=KMS_DATA_ACTIONS, resources=[cp.key.key_arn]))
    return statements


def effective_removal_policy(scope: Construct, requested: str, allow_destruction: bool, what: str) -> RemovalPolicy:
    """DESTROY only when the blueprint asks for it AND the context flag allows it; else RETAIN.

    With exactly one of the two keys, adds a synth warning on ``scope`` naming ``what`` was kept.
    """
    if requested == "destroy" and allow_destruction:
        return RemovalPolicy.DESTROY
    if requested == "destroy":
        Annotations.of(scope).add_warning_v2(
            DATA_DESTRUCTION_WARNING,
            f"{what}: removal_policy is 'destroy' in the blueprint but the context flag "
            "fmcluster:allowDataDestruction is not true, so it is RETAINED (set both to delete data).",
        )
    elif allow_destruction:
        Annotations.of(scope).add_warning_v2(
            DATA_DESTRUCTION_WARNING,
            f"{what}: the context flag fmcluster:allowDataDestruction is true but the blueprint's removal_policy "
            "is 'retain', so it is RETAINED (set both to delete data).",
        )
    return RemovalPolicy.RETAIN


@dataclass(frozen=True)
class LustreMount:
    """What clients need to mount the file system (tokens resolved at deploy).

    ``efa_enabled``: the file system is EFA-enabled, so clients should configure the EFA-capable
    Lustre client (LNet over EFA); clients without it still mount over TCP (unverified).
    """

    file_system_id: str
    dns_name: str
    mount_name: str
    mount_point: str
    efa_enabled: bool = False


@dataclass(frozen=True)
class S3Location:
    """A data repository's S3 side: bucket and key prefix (``""`` for the whole bucket)."""

    bucket: s3.IBucket
    prefix: str


class TrainingStorage(Construct):
    """FSx for Lustre (optional), its data repository associations and data bucket, and the checkpoint bucket.

    Args:
        lustre: file-system section, or ``None`` for no FSx.
        checkpoints: checkpoint bucket section, or ``None`` for none.
        vpc, subnet: where the file system lives (the GPU subnet: one AZ with the nodes).
        client_security_group: the cluster's security group; Lustre ports (all traffic for EFA) are
            opened between it and the file system's group.
        allow_destruction: the second key of two-key destroy (context flag).

    Attributes: ``file_system`` (CfnFileSystem | None), ``file_system_retained`` (bool: a file system
    exists and its DeletionPolicy is Retain), ``security_group`` (SecurityGroup | None),
    ``mount`` (LustreMount | None), ``data_bucket`` (Bucket | None), ``data_locations``
    (list[S3Location]), ``checkpoint_bucket`` (IBucket | None), ``checkpoint_prefix``,
    ``checkpoint_key`` (IKey | None), ``access_logs`` (Bucket | None).

    Use :meth:`grant_checkpoint_read_write` to give nodes access to their checkpoint prefix only.
    """

    def __init__(
        self, scope: Construct, id: str, *, lustre: LustreSpec | None, checkpoints: CheckpointSpec | None,
        vpc: ec2.IVpc, subnet: ec2.ISubnet, client_security_group: ec2.ISecurityGroup, allow_destruction: bool,
    ) -> None:
        super().__init__(scope, id)
        # Server access logs are delivered through a bucket policy, not the legacy LogDeliveryWrite ACL
        # (cfn-lint W3045); the flag is scoped to this construct (context must be set before children).
        self.node.set_context(S3_LOGS_USE_BUCKET_POLICY, True)
        self.file_system: fsx.CfnFileSystem | None = None
        self.file_system_retained = False
        self.security_group: ec2.SecurityGroup | None = None
        self.mount: LustreMount | None = None
        self.data_bucket: s3.Bucket | None = None
        self.data_locations: list[S3Location] = []
        self.checkpoint_bucket: s3.IBucket | None = None
        self.checkpoint_prefix = checkpoints.prefix if checkpoints else ""
        self.checkpoint_key: kms.IKey | None = None
        self.access_logs: s3.Bucket | None = None
        self._allow_destruction = allow_destruction
        self._repository_buckets: dict[str, s3.IBucket] = {}

        if lustre is not None:
            self._lustre(lustre, vpc, subnet, client_security_group)
        if checkpoints is not None:
            self._checkpoints(checkpoints)

    # -- grants ---------------------------------------------------------------------------------
    @property
    def checkpoint_access(self) -> CheckpointAccess | None:
        """What nodes need to use the checkpoint prefix (``None`` without a checkpoint bucket)."""
        if self.checkpoint_bucket is None:
            return None
        return CheckpointAccess(self.checkpoint_bucket, self.checkpoint_prefix, self.checkpoint_key)

    def checkpoint_statements(self) -> list[iam.PolicyStatement]:
        """:func:`checkpoint_statements` for this construct's bucket; empty without one. For orchestrators
        that take a managed policy rather than a role, wrap these in an ``iam.ManagedPolicy``."""
        return checkpoint_statements(self.checkpoint_access) if self.checkpoint_access else []

    def grant_checkpoint_read_write(self, grantee: iam.IGrantable) -> iam.Grant | None:
        """Let ``grantee`` read, write and delete objects under the checkpoint prefix (and nothing else
        in the bucket). Returns ``None`` when there is no checkpoint bucket."""
        grant: iam.Grant | None = None
        for st in self.checkpoint_statements():
            g = iam.Grant.add_to_principal(grantee=grantee, actions=st.actions, resource_arns=st.resources,
                                           conditions=st.conditions or None)
            grant = g if grant is None else grant.combine(g)
        return grant

    def grant_data_read(self, grantee: iam.IGrantable) -> None:
        """Let ``grantee`` read the S3 side of every data repository (its prefix only)."""
        for loc in self.data_locations:
            loc.bucket.grant_read(grantee, f"{loc.prefix}*")

    # -- shared helpers -------------------------------------------------------------------------
    def _removal(self, requested: str, what: str) -> RemovalPolicy:
        return effective_removal_policy(self, requested, self._allow_destruction, what)

    def _logs(self) -> s3.Bucket:
        if self.access_logs is None:
            self.access_logs = s3.Bucket(
                self, "AccessLogs",
                encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                lifecycle_rules=[s3.LifecycleRule(id="ExpireLogs", expiration=Duration.days(ACCESS_LOG_RETENTION_DAYS))],
                removal_policy=RemovalPolicy.RETAIN,
            )
            Validations.of(self.access_logs).acknowledge(Acknowledgment(
                id="AwsSolutions-S1", reason="This is the access-log bucket; logging it into itself would loop."))
        return self.access_logs

    def _bucket(self, id: str, *, removal: RemovalPolicy, logs_prefix: str, versioned: bool,
                rules: list[s3.LifecycleRule], key: kms.IKey | None = None) -> s3.Bucket:
        bucket = s3.Bucket(
            self, id,
            versioned=versioned,
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=key,
            bucket_key_enabled=True if key else None,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self._logs(),
            server_access_logs_prefix=logs_prefix,
            lifecycle_rules=rules or None,
            removal_policy=removal,
            auto_delete_objects=removal == RemovalPolicy.DESTROY,
        )
        return bucket

    # -- FSx ------------------------------------------------------------------------------------
    def _lustre(self, spec: LustreSpec, vpc: ec2.IVpc, subnet: ec2.ISubnet, clients: ec2.ISecurityGroup) -> None:
        sg = ec2.SecurityGroup(self, "LustreSecurityGroup", vpc=vpc, allow_all_outbound=False,
                               description="FSx for Lustre: Lustre ports from the cluster and itself")
        for peer, who in ((clients, "cluster nodes"), (sg, "file servers")):
            sg.add_ingress_rule(peer, ec2.Port.tcp(LUSTRE_PORT), f"Lustre from {who}")
            sg.add_ingress_rule(peer, ec2.Port.tcp_range(*LUSTRE_PORT_RANGE), f"Lustre from {who}")
        # Outbound on the Lustre ports to the file servers themselves and to the cluster nodes: ParallelCluster
        # refuses an existing file system whose groups do not allow "inbound and outbound TCP traffic through
        # ports [988]" to the cluster (aws-parallelcluster cli/src/pcluster/validators/cluster_validators.py,
        # ExistingFsxNetworkingValidator).
        for peer, who in ((sg, "file servers"), (clients, "cluster nodes")):
            sg.add_egress_rule(peer, ec2.Port.tcp(LUSTRE_PORT), f"Lustre to {who}")
            sg.add_egress_rule(peer, ec2.Port.tcp_range(*LUSTRE_PORT_RANGE), f"Lustre to {who}")
        if spec.efa_enabled:
            # EFA-enabled file systems need all traffic to/from the file system's and the clients' groups.
            for peer in (sg, clients):
                sg.add_ingress_rule(peer, ec2.Port.all_traffic(), "EFA Lustre: all traffic")
                sg.add_egress_rule(peer, ec2.Port.all_traffic(), "EFA Lustre: all traffic")
            # Client side (defensive, see module docstring); the rule lives in this stack (remote_rule).
            clients.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA Lustre: all traffic from the file servers",
                                     remote_rule=True)
        explicit_egress_only(sg)
        self.security_group = sg

        persistent = spec.persistent
        mode = spec.metadata_mode
        metadata = (fsx.CfnFileSystem.MetadataConfigurationProperty(mode=mode, iops=spec.metadata_iops)
                    if mode is not None else None)
        backups = spec.automatic_backup_retention_days if persistent else None
        fs = fsx.CfnFileSystem(
            self, "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version=spec.file_system_type_version,
            storage_capacity=spec.storage_capacity_gib,
            storage_type="SSD",
            subnet_ids=[subnet.subnet_id],
            security_group_ids=[sg.security_group_id],
            kms_key_id=spec.kms_key_arn if persistent else None,
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=spec.deployment_type,
                per_unit_storage_throughput=spec.throughput_tier if persistent else None,
                data_compression_type=spec.data_compression,
                efa_enabled=spec.efa_enabled or None,
                metadata_configuration=metadata,
                automatic_backup_retention_days=backups,
                daily_automatic_backup_start_time=spec.daily_automatic_backup_start_time if backups else None,
                weekly_maintenance_start_time=spec.weekly_maintenance_start_time,
                import_path=spec.import_path,
            ),
        )
        removal = self._removal(spec.removal_policy, "FSx for Lustre file system")
        fs.apply_removal_policy(removal)
        # A retained file system keeps its ENIs and so its security group: the group must stay with it, or
        # stack deletion fails on the group ("has a dependent object").
        sg.apply_removal_policy(removal)
        kept_rules = self_rules(sg)
        for rule in kept_rules:
            rule.apply_removal_policy(removal)
        self.file_system_retained = removal == RemovalPolicy.RETAIN
        if self.file_system_retained:
            self._warn_client_rules_not_kept(len(security_group_rules(sg)) - len(kept_rules))
        for rule in security_group_rules(sg):
            fs.node.add_dependency(rule)
        self.file_system = fs
        self.mount = LustreMount(
            file_system_id=fs.ref, dns_name=fs.attr_dns_name, mount_name=fs.attr_lustre_mount_name,
            mount_point=spec.mount_point, efa_enabled=spec.efa_enabled,
        )
        if spec.data_repositories:
            self._data_repositories(fs, spec)

    def _warn_client_rules_not_kept(self, deleted: int) -> None:
        """Say that a kept file system loses its rules to and from the cluster's group on teardown."""
        Annotations.of(self).add_warning_v2(
            CLIENT_RULES_WARNING,
            f"FSx for Lustre file system is RETAINED with its security group and its rules between file servers, "
            f"but its {deleted} rule(s) to and from the cluster's security group are deleted with this stack (they "
            "refer to a group the teardown deletes). A cluster that mounts the kept file system later must allow "
            f"TCP {LUSTRE_PORT} and {LUSTRE_PORT_RANGE[0]}-{LUSTRE_PORT_RANGE[1]} (all traffic for EFA) between its "
            "group and the file system's group (docs/storage.md, \"Teardown\").",
        )

    def _data_repositories(self, fs: fsx.CfnFileSystem, spec: LustreSpec) -> None:
        if any(r.s3_uri is None for r in spec.data_repositories):
            self.data_bucket = self._bucket(
                "DataBucket", removal=self._removal(spec.removal_policy, "data bucket"), logs_prefix="data/",
                versioned=False, rules=[s3.LifecycleRule(
                    id="AbortIncompleteUploads",
                    abort_incomplete_multipart_upload_after=Duration.days(ABORT_INCOMPLETE_UPLOADS_DAYS))],
            )
        group = Construct(self, "DataRepositoryAssociations")
        removal = self._removal(spec.removal_policy, "data repository associations")
        for repo in spec.data_repositories:
            location = self._location(repo)
            self.data_locations.append(location)
            cfn = fsx.CfnDataRepositoryAssociation(
                group, _dra_id(repo),
                file_system_id=fs.ref,
                file_system_path=repo.file_system_path,
                data_repository_path=f"s3://{location.bucket.bucket_name}/{location.prefix}",
                batch_import_meta_data_on_create=repo.batch_import_metadata_on_create,
                imported_file_chunk_size=repo.imported_file_chunk_size_mib,
                s3=fsx.CfnDataRepositoryAssociation.S3Property(
                    auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(events=repo.import_policy)
                    if repo.import_policy else None,
                    auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(events=repo.export_policy)
                    if repo.export_policy else None,
                ),
            )
            cfn.apply_removal_policy(removal)

    def _location(self, repo: DataRepository) -> S3Location:
        if repo.s3_uri is None:
            assert self.data_bucket is not None
            path = repo.file_system_path.strip("/")
            return S3Location(self.data_bucket, f"{path}/" if path else "")
        name, _, prefix = repo.s3_uri.removeprefix("s3://").partition("/")
        if name not in self._repository_buckets:
            self._repository_buckets[name] = s3.Bucket.from_bucket_name(self, f"Repository-{name}", name)
        return S3Location(self._repository_buckets[name], prefix)

    # -- checkpoints ----------------------------------------------------------------------------
    def _checkpoints(self, spec: CheckpointSpec) -> None:
        key = kms.Key.from_key_arn(self, "CheckpointKey", spec.kms_key_arn) if spec.kms_key_arn else None
        self.checkpoint_key = key
        if not spec.created:
            if spec.removal_policy == "destroy":
                Annotations.of(self).add_warning_v2(
                    DATA_DESTRUCTION_WARNING,
                    f"checkpoint bucket {spec.bucket!r} is an existing bucket: fmcluster never deletes it, "
                    "whatever removal_policy says.",
                )
            self.checkpoint_bucket = s3.Bucket.from_bucket_attributes(
                self, "CheckpointBucket", bucket_name=spec.bucket, encryption_key=key)
            return
        rules = []
        if spec.versioned:
            rules.append(s3.LifecycleRule(
                id="ExpireNoncurrent",
                noncurrent_version_expiration=Duration.days(spec.noncurrent_version_expiration_days),
                abort_incomplete_multipart_upload_after=Duration.days(ABORT_INCOMPLETE_UPLOADS_DAYS)))
        else:
            rules.append(s3.LifecycleRule(
                id="AbortIncompleteUploads",
                abort_incomplete_multipart_upload_after=Duration.days(ABORT_INCOMPLETE_UPLOADS_DAYS)))
        if spec.transition is not None:
            rules.append(s3.LifecycleRule(
                id="Transition", prefix=spec.prefix,
                transitions=[s3.Transition(storage_class=STORAGE_CLASSES[spec.transition.storage_class],
                                           transition_after=Duration.days(spec.transition.after_days))]))
        self.checkpoint_bucket = self._bucket(
            "CheckpointBucket", removal=self._removal(spec.removal_policy, "checkpoint bucket"),
            logs_prefix="checkpoints/", versioned=spec.versioned, rules=rules, key=key,
        )


def self_rules(sg: ec2.SecurityGroup) -> list[ec2.CfnSecurityGroupIngress | ec2.CfnSecurityGroupEgress]:
    """The standalone rules of ``sg`` whose peer is ``sg`` itself (file server to file server).

    These are the rules a retained file system needs to stay reachable; they refer only to the group
    that is retained with it, so they can be kept too. Rules whose peer is another group are not
    returned: keeping them would keep that group referenced and its deletion would fail
    (DependencyViolation, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html).
    """
    own = sg.security_group_id
    return [r for r in security_group_rules(sg) if r.group_id == own and _peer(r) == own]


def _peer(rule: ec2.CfnSecurityGroupIngress | ec2.CfnSecurityGroupEgress) -> str | None:
    if isinstance(rule, ec2.CfnSecurityGroupIngress):
        return rule.source_security_group_id
    return rule.destination_security_group_id


def _dra_id(repo: DataRepository) -> str:
    """Stable construct id from the file-system path: ``/datasets/llm`` -> ``DatasetsLlm`` (ids are API)."""
    parts = [p for p in repo.file_system_path.split("/") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Root"


# ---- what every node needs from the storage layer (the orchestrator constructs call these) ----------------------
def checkpoint_acknowledgement(cp: CheckpointAccess | None) -> dict[str, str]:
    """The IAM5 pattern and reason for :func:`fmcluster.features.storage.construct.checkpoint_statements`
    (matches only ``<bucket>/<prefix>*``)."""
    if cp is None:
        return {}
    return {rf"^Resource::.*/{re.escape(cp.prefix)}\*$": "Checkpoint bucket access is limited to the blueprint's "
            f"checkpoint prefix {cp.prefix!r}."}


def grant_node_storage(role: iam.IRole, lustre: LustreMount | None, checkpoints: CheckpointAccess | None) -> None:
    """What every node role needs from the storage layer: FSx describe (without it the Lustre client
    silently skips EFA) and read/write on the checkpoint prefix only."""
    if lustre is not None:
        role.add_to_principal_policy(fsx_describe_statement())
    if checkpoints is not None:
        for st in checkpoint_statements(checkpoints):
            role.add_to_principal_policy(st)


def fsx_describe_statement() -> iam.PolicyStatement:
    """``fsx:DescribeFileSystems`` (a list action: it does not take a file-system ARN)."""
    return iam.PolicyStatement(sid="LustreEfaDiscovery", actions=["fsx:DescribeFileSystems"], resources=["*"])


def lustre_mount_script(mount: LustreMount) -> str:
    """Shell lines that mount FSx for Lustre at its mount point and persist it in fstab (tokens
    resolve at deploy). Idempotent: re-running does not mount twice."""
    src = f"{mount.dns_name}@tcp:/{mount.mount_name}"
    return "\n".join(
        [
            f"mkdir -p {mount.mount_point}",
            f"if ! mountpoint -q {mount.mount_point}; then",
            f"  mount -t lustre -o relatime,flock {src} {mount.mount_point}",
            "fi",
            f"grep -q ' {mount.mount_point} lustre ' /etc/fstab || "
            f"echo '{src} {mount.mount_point} lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0' >> /etc/fstab",
        ]
    )
