"""Training storage: FSx for Lustre with S3 data repository associations, and the checkpoint bucket.

Stateful resources are RETAINed unless the blueprint asks for ``removal_policy: destroy`` AND the
app sets the context flag ``fmcluster:allowDataDestruction=true`` (two keys); with one key only, a
synth warning says what was kept (style-anchors.md section 5 item 11).

Sources (aws-resource-rules.md section 6):
- FSx CreateFileSystem API: https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html
- Lustre client ports TCP 988 and 1018-1023:
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html
- Data repository associations:
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Acknowledgment, Annotations, Duration, RemovalPolicy, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fmcluster.blueprint.model import CheckpointSpec, DataRepository, LustreSpec

LUSTRE_PORT = 988
LUSTRE_PORT_RANGE = (1018, 1023)


def effective_removal_policy(scope: Construct, requested: str, allow_destruction: bool, what: str) -> RemovalPolicy:
    """RETAIN unless both keys agree; warns when only the blueprint asks for destroy."""
    if requested == "destroy" and allow_destruction:
        return RemovalPolicy.DESTROY
    if requested == "destroy":
        Annotations.of(scope).add_warning_v2(
            "fmcluster:dataRetained",
            f"{what}: removal_policy is 'destroy' in the blueprint but the context flag "
            "fmcluster:allowDataDestruction is not true, so it is RETAINED (set both to delete data).",
        )
    return RemovalPolicy.RETAIN


def _secure_bucket(scope: Construct, id: str, *, removal: RemovalPolicy, logs: s3.IBucket | None,
                   logs_prefix: str, versioned: bool, noncurrent_days: int | None = None) -> s3.Bucket:
    rules = []
    if versioned and noncurrent_days:
        rules.append(s3.LifecycleRule(id="ExpireNoncurrent", noncurrent_version_expiration=Duration.days(noncurrent_days),
                                      abort_incomplete_multipart_upload_after=Duration.days(7)))
    return s3.Bucket(
        scope, id,
        versioned=versioned,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        server_access_logs_bucket=logs,
        server_access_logs_prefix=logs_prefix if logs else None,
        lifecycle_rules=rules or None,
        removal_policy=removal,
    )


@dataclass(frozen=True)
class LustreMount:
    """What clients need to mount the file system (tokens resolved at deploy)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    mount_point: str


class TrainingStorage(Construct):
    """FSx for Lustre (optional), its data repository associations and buckets, and the checkpoint bucket.

    Args:
        lustre: file-system section, or ``None`` for no FSx.
        checkpoints: checkpoint bucket section, or ``None`` for none.
        vpc, subnet: where the file system lives (the GPU subnet: one AZ with the nodes).
        client_security_group: the cluster's security group; gets Lustre ports into the FSx group.
        allow_destruction: the second key of two-key destroy (context flag).

    Attributes: ``file_system`` (CfnFileSystem | None), ``mount`` (LustreMount | None),
    ``data_bucket`` (Bucket | None), ``checkpoint_bucket`` (IBucket | None), ``checkpoint_prefix``.
    """

    def __init__(
        self, scope: Construct, id: str, *, lustre: LustreSpec | None, checkpoints: CheckpointSpec | None,
        vpc: ec2.IVpc, subnet: ec2.ISubnet, client_security_group: ec2.ISecurityGroup, allow_destruction: bool,
    ) -> None:
        super().__init__(scope, id)
        self.file_system: fsx.CfnFileSystem | None = None
        self.mount: LustreMount | None = None
        self.data_bucket: s3.Bucket | None = None
        self.checkpoint_bucket: s3.IBucket | None = None
        self.checkpoint_prefix = checkpoints.prefix if checkpoints else ""

        self.access_logs = s3.Bucket(
            self, "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireLogs", expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.access_logs).acknowledge(Acknowledgment(
            id="AwsSolutions-S1", reason="This is the access-log bucket; logging it into itself would loop."))

        if lustre is not None:
            self._lustre(lustre, vpc, subnet, client_security_group, allow_destruction)
        if checkpoints is not None:
            self._checkpoints(checkpoints, allow_destruction)

    # -- FSx ------------------------------------------------------------------------------------
    def _lustre(self, spec: LustreSpec, vpc: ec2.IVpc, subnet: ec2.ISubnet, clients: ec2.ISecurityGroup,
                allow_destruction: bool) -> None:
        sg = ec2.SecurityGroup(self, "LustreSecurityGroup", vpc=vpc, allow_all_outbound=False,
                               description="FSx for Lustre: Lustre ports from the cluster and itself")
        for peer, who in ((clients, "cluster nodes"), (sg, "file servers")):
            sg.add_ingress_rule(peer, ec2.Port.tcp(LUSTRE_PORT), f"Lustre from {who}")
            sg.add_ingress_rule(peer, ec2.Port.tcp_range(*LUSTRE_PORT_RANGE), f"Lustre from {who}")
        sg.add_egress_rule(sg, ec2.Port.tcp(LUSTRE_PORT), "Lustre between file servers")
        sg.add_egress_rule(sg, ec2.Port.tcp_range(*LUSTRE_PORT_RANGE), "Lustre between file servers")
        if spec.efa_enabled:
            # EFA-enabled file systems need all traffic to/from the file system's and clients' groups.
            # https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html
            for peer in (sg, clients):
                sg.add_ingress_rule(peer, ec2.Port.all_traffic(), "EFA Lustre: all traffic")
                sg.add_egress_rule(peer, ec2.Port.all_traffic(), "EFA Lustre: all traffic")
        self.security_group = sg

        persistent = spec.deployment_type.startswith("PERSISTENT")
        metadata = None
        if spec.deployment_type == "PERSISTENT_2" and (spec.efa_enabled or spec.metadata_iops is not None):
            metadata = fsx.CfnFileSystem.MetadataConfigurationProperty(
                mode="USER_PROVISIONED" if spec.metadata_iops else "AUTOMATIC", iops=spec.metadata_iops)
        fs = fsx.CfnFileSystem(
            self, "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version=spec.file_system_type_version,
            storage_capacity=spec.storage_capacity_gib,
            storage_type="SSD",
            subnet_ids=[subnet.subnet_id],
            security_group_ids=[sg.security_group_id],
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=spec.deployment_type,
                per_unit_storage_throughput=spec.per_unit_storage_throughput if persistent else None,
                data_compression_type=spec.data_compression,
                efa_enabled=spec.efa_enabled or None,
                metadata_configuration=metadata,
                automatic_backup_retention_days=spec.automatic_backup_retention_days if persistent else None,
                weekly_maintenance_start_time=spec.weekly_maintenance_start_time,
            ),
        )
        fs.apply_removal_policy(effective_removal_policy(self, spec.removal_policy, allow_destruction, "FSx for Lustre"))
        self.file_system = fs
        self.mount = LustreMount(
            file_system_id=fs.ref, dns_name=fs.attr_dns_name, mount_name=fs.attr_lustre_mount_name,
            mount_point=spec.mount_point,
        )
        if spec.data_repositories:
            self._data_repositories(fs, spec, allow_destruction)

    def _data_repositories(self, fs: fsx.CfnFileSystem, spec: LustreSpec, allow_destruction: bool) -> None:
        if any(r.s3_uri is None for r in spec.data_repositories):
            self.data_bucket = _secure_bucket(
                self, "DataBucket", removal=effective_removal_policy(self, spec.removal_policy, allow_destruction, "data bucket"),
                logs=self.access_logs, logs_prefix="data/", versioned=False,
            )
        group = Construct(self, "DataRepositoryAssociations")
        for repo in spec.data_repositories:
            cfn = fsx.CfnDataRepositoryAssociation(
                group, _dra_id(repo),
                file_system_id=fs.ref,
                file_system_path=repo.file_system_path,
                data_repository_path=self._s3_path(repo),
                batch_import_meta_data_on_create=repo.batch_import_metadata_on_create,
                imported_file_chunk_size=repo.imported_file_chunk_size_mib,
                s3=fsx.CfnDataRepositoryAssociation.S3Property(
                    auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(events=repo.import_policy)
                    if repo.import_policy else None,
                    auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(events=repo.export_policy)
                    if repo.export_policy else None,
                ),
            )
            cfn.apply_removal_policy(effective_removal_policy(self, spec.removal_policy, allow_destruction, "data repository association"))

    def _s3_path(self, repo: DataRepository) -> str:
        if repo.s3_uri is not None:
            return repo.s3_uri
        assert self.data_bucket is not None
        return f"s3://{self.data_bucket.bucket_name}{repo.file_system_path.rstrip('/')}/"

    # -- checkpoints ----------------------------------------------------------------------------
    def _checkpoints(self, spec: CheckpointSpec, allow_destruction: bool) -> None:
        if spec.bucket != "create":
            self.checkpoint_bucket = s3.Bucket.from_bucket_name(self, "CheckpointBucket", spec.bucket)
            return
        self.checkpoint_bucket = _secure_bucket(
            self, "CheckpointBucket",
            removal=effective_removal_policy(self, spec.removal_policy, allow_destruction, "checkpoint bucket"),
            logs=self.access_logs, logs_prefix="checkpoints/", versioned=spec.versioned,
            noncurrent_days=spec.noncurrent_version_expiration_days,
        )


def _dra_id(repo: DataRepository) -> str:
    """Stable construct id from the file-system path: ``/datasets/llm`` -> ``DatasetsLlm`` (ids are API)."""
    parts = [p for p in repo.file_system_path.split("/") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Root"
