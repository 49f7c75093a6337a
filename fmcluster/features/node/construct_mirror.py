"""``Mirror``: the cluster's mirror bucket and ``Custom::FmclusterMirror``, which copies what the nodes' boot needs
from outside AWS into it at deploy time (issue 23 item 4; :mod:`fmcluster.features.node.plan_mirror` says what and
why, :mod:`fmcluster.features.node.handler_mirror` how).

- Bucket ``fmc-mirror-<account><suffix>`` (named so a node can compute it from its account, see plan_mirror),
  S3-managed encryption, public access blocked, TLS only, deleted with its objects when the stack goes (it holds
  only public files): ``auto_delete_objects`` is CDK's own custom resource.
- Read access: the bucket policy lets principals of this account read ``mirror/*`` (``aws:PrincipalAccount``), so
  every orchestrator's node role can read it without a per-orchestrator grant; writing is the Lambda's only.
- The Lambda function runs outside the VPC (it needs the internet; the nodes do not).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import Aws, CustomResource, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fmcluster.constructs.orchestrator import acknowledge, acknowledge_wildcards
from fmcluster.features.node.construct_parent_ami import RUNTIME
from fmcluster.features.node.plan_mirror import MirrorObject
from fmcluster.resolved.mirror import BUCKET_PREFIX, MIRROR_PREFIX, REGENERATED

HANDLER_SOURCE = Path(__file__).with_name("handler_mirror.py")
RESOURCE_TYPE = "Custom::FmclusterMirror"
#: The function's memory: each object is held in memory while it is hashed and stored, and NVIDIA's NCCL packages
#: (libnccl2, libnccl-dev) are a few hundred MB each, next to the Prometheus and Grafana archives (about 100 MB each);
#: 2 GB leaves room for one object, its upload and an index. Lambda's memory also sets its CPU and network share
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
MEMORY_MB = 2048
#: The copy's time limit (Lambda's maximum is 15 minutes): a deploy copies up to about 1.1 GB (NCCL for two OS/arch
#: pairs plus a self-hosted head node's stack), most of it from CDNs.
TIMEOUT = Duration.minutes(14)
#: How long CloudFormation waits for the function's answer: a little more than its timeout (default: 1 hour).
SERVICE_TIMEOUT = Duration.minutes(16)


class Mirror(Construct):
    """``Bucket``, ``Function`` and ``Copy`` (the custom resource) for ``objects``; ``bucket_suffix`` from
    :func:`fmcluster.resolved.mirror.mirror_bucket_suffix`. Attributes: ``bucket``, ``copy``."""

    def __init__(self, scope: Construct, id: str, *, objects: Sequence[MirrorObject], bucket_suffix: str) -> None:
        super().__init__(scope, id)
        self.bucket = s3.Bucket(
            self, "Bucket", bucket_name=f"{BUCKET_PREFIX}{Aws.ACCOUNT_ID}{bucket_suffix}",
            encryption=s3.BucketEncryption.S3_MANAGED, block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True, removal_policy=RemovalPolicy.DESTROY, auto_delete_objects=True)
        # copies of public files every deploy re-creates: fmcluster diff does not treat it as data
        self.bucket.node.default_child.add_metadata(  # type: ignore[union-attr]
            REGENERATED, "copies of public files the deploy re-creates (Custom::FmclusterMirror)")
        self.bucket.add_to_resource_policy(iam.PolicyStatement(
            actions=["s3:GetObject"], principals=[iam.AnyPrincipal()],
            resources=[self.bucket.arn_for_objects(f"{MIRROR_PREFIX}/*")],
            conditions={"StringEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}}))
        acknowledge(self.bucket, ("AwsSolutions-S1", "Holds only public release archives copied at deploy time; "
                                  "CloudTrail data events cover reads if an account wants them."))
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                        description="fmcluster: copy the boot's downloads into the mirror bucket",
                        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(
                            "service-role/AWSLambdaBasicExecutionRole")])
        self.bucket.grant_put(role, f"{MIRROR_PREFIX}/*")
        acknowledge(role, ("AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                           "AWSLambdaBasicExecutionRole]",
                           "The AWS managed policy Lambda documents for writing the function's logs; nothing else."))
        acknowledge_wildcards(role, {r"mirror/\*|Abort\*|PutObject\*": "Writes only the mirror/ prefix of this "
                                     "cluster's own mirror bucket (CDK grant_put's actions)."})
        function = lambda_.Function(
            self, "Function", runtime=RUNTIME, handler="index.handler", timeout=TIMEOUT, role=role,
            code=lambda_.Code.from_inline(HANDLER_SOURCE.read_text()), memory_size=MEMORY_MB,
            description="fmcluster: copy the nodes' boot downloads into the mirror bucket, sha256 checked")
        # ServiceTimeout: a function that dies at its own timeout never answers; CloudFormation would wait an hour.
        self.copy = CustomResource(self, "Copy", service_token=function.function_arn, resource_type=RESOURCE_TYPE,
                                   service_timeout=SERVICE_TIMEOUT, properties={"Bucket": self.bucket.bucket_name,
                                               "Objects": [o.as_property() for o in objects]})
        self.copy.node.add_dependency(role)
