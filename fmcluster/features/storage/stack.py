"""``<name>-storage``: FSx for Lustre, data repository associations, S3 buckets. RETAIN by default."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.blueprint.model import StorageSpec
from fmcluster.features.network.stack import NetworkStack
from fmcluster.features.storage.construct import TrainingStorage
from fmcluster.stacks.context import StackContext


class StorageStack(Stack):
    """FSx for Lustre, data repository associations and buckets (``storage``: TrainingStorage), plus the
    outputs clients need: file system id, DNS and mount name, checkpoint bucket and prefix."""

    def __init__(self, scope: Construct, id: str, *, spec: StorageSpec, vpc: ec2.IVpc, subnet: ec2.ISubnet,
                 client_security_group: ec2.ISecurityGroup, allow_destruction: bool, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.storage = TrainingStorage(
            self, "Storage", lustre=spec.lustre, checkpoints=spec.checkpoints, vpc=vpc, subnet=subnet,
            client_security_group=client_security_group, allow_destruction=allow_destruction,
        )
        if self.storage.mount is not None:
            CfnOutput(self, "FileSystemId", value=self.storage.mount.file_system_id)
            CfnOutput(self, "LustreDnsName", value=self.storage.mount.dns_name)
            CfnOutput(self, "LustreMountName", value=self.storage.mount.mount_name)
        if self.storage.checkpoint_bucket is not None:
            CfnOutput(self, "CheckpointBucket", value=self.storage.checkpoint_bucket.bucket_name)
            CfnOutput(self, "CheckpointPrefix", value=self.storage.checkpoint_prefix)


def build_stack(ctx: StackContext) -> StorageStack:
    """The feature registry's ``stack`` hook: ``<name>-storage`` in the ``network`` stack's GPU subnet, clients in its
    EFA security group. A file system kept at teardown keeps its network interfaces in the GPU subnet, so the GPU
    subnet is then retained too (docs/storage.md)."""
    rc, bp = ctx.rc, ctx.rc.blueprint
    net = ctx.stack("network", NetworkStack).network
    stack = StorageStack(
        ctx.app, rc.stacks.storage, env=ctx.env, spec=bp.storage, vpc=net.vpc, subnet=net.gpu_subnet,
        client_security_group=net.efa_security_group, allow_destruction=ctx.allow_data_destruction,
        description=f"fmcluster {bp.name}: FSx for Lustre, data repositories, checkpoint bucket (retained)",
    )
    if stack.storage.file_system_retained:
        net.retain_gpu_subnet()
    return stack
