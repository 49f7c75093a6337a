"""Node bootstrap scripts as S3 assets, one per compute group.

The scripts are rendered from Jinja templates (``fmcluster.templates``) with the blueprint's
pinned versions; the construct only stages them as assets and grants read on the object.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from fmcluster.constructs.staging import scratch_dir
from fmcluster.features.node.construct_mirror import Mirror
from fmcluster.features.node.render_context import NodeContext
from fmcluster.features.node.render_scripts import ENTRY_POINT, render_node_scripts


class ScriptAsset(Construct):
    """One rendered script uploaded as an S3 asset (content-hashed, so synthesis stays deterministic).

    Attributes: ``asset``, ``s3_url`` (``s3://bucket/key``), ``bucket_name``, ``object_key`` and ``sha256``
    (hex SHA-256 of the UTF-8 bytes uploaded).
    """

    def __init__(self, scope: Construct, id: str, *, text: str, file_name: str) -> None:
        super().__init__(scope, id)
        staging = scratch_dir("fmcluster-script-") / file_name
        data = text.encode("utf-8")
        staging.write_bytes(data)
        #: SHA-256 (hex) of the uploaded bytes, e.g. for an AWS PCS lifecycle script's ``Checksum``.
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.asset = s3_assets.Asset(self, "Script", path=str(staging))
        self.s3_url = self.asset.s3_object_url
        self.bucket_name = self.asset.s3_bucket_name
        self.object_key = self.asset.s3_object_key

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Object-level read of the script only (not the whole bucket)."""
        grantee.grant_principal.add_to_principal_policy(iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[self.asset.bucket.arn_for_objects(self.object_key)]))


class NodeBootstrap(ScriptAsset):
    """Renders the node scripts for one compute group and uploads ``bootstrap.sh`` as an asset.

    Attributes: ``scripts`` (file name -> text), plus those of :class:`ScriptAsset` for the entry point.
    """

    def __init__(self, scope: Construct, id: str, *, context: NodeContext) -> None:
        self.scripts = render_node_scripts(context)
        super().__init__(scope, id, text=self.scripts[ENTRY_POINT], file_name=ENTRY_POINT)


def node_mirror(scope: Construct, contexts: Iterable[NodeContext]) -> Mirror | None:
    """The cluster's ``Mirror`` (:mod:`fmcluster.features.node.construct_mirror`) for what the groups' boot reads
    from it (every context carries the cluster's list), or ``None`` when there is nothing to mirror."""
    ctx = next(iter(contexts), None)
    if ctx is None or not ctx.mirror_objects:
        return None
    return Mirror(scope, "Mirror", objects=ctx.mirror_objects, bucket_suffix=ctx.mirror_bucket_suffix)
