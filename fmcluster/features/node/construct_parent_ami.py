"""``Custom::FmclusterParentAmi``: a bake's ParallelCluster parent AMI, found at deploy time, so synthesis stays
offline and needs no ``cdk.context.json`` (issue 23 item 7).

ParallelCluster publishes no SSM parameter for its official AMIs; ``pcluster`` finds them with DescribeImages by
name and owner (:mod:`fmcluster.features.node.handler_parent_ami`, which also documents the pick). A Lambda function
with that handler's text inline (``ZipFile``: CloudFormation's former 4,096-character limit on inline code is gone,
aws/aws-cdk PR #20624) backs one custom resource per (version, OS, architecture); the recipe's ``ParentImage`` is
its ``ImageId`` attribute. DescribeImages has no resource-level permissions (Service Authorization Reference,
Amazon EC2, "DescribeImages": no resource type,
https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html), so the role's one
statement is ``ec2:DescribeImages`` on ``*``.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fmcluster.catalog.images import PARALLELCLUSTER_AMI_OWNER
from fmcluster.constructs.orchestrator import acknowledge

#: The handler shipped inline (this file's neighbour).
HANDLER_SOURCE = Path(__file__).with_name("handler_parent_ami.py")
#: Lambda runtime of the lookup: the newest Python runtime aws-cdk-lib knows (cdk-nag AwsSolutions-L1 asks for the
#: latest); the handler needs Python >= 3.11 (``datetime.UTC``).
RUNTIME = lambda_.Runtime.PYTHON_3_14
RESOURCE_TYPE = "Custom::FmclusterParentAmi"


class ParentAmiLookups(Construct):
    """One Lambda function (``Function``) and a ``Custom::FmclusterParentAmi`` per :meth:`image_id` call.

    ``image_id(key, name_filter, arch)`` -> the token of the AMI id (``GetAtt <resource>.ImageId``); ``key`` is the
    resource's construct id (stable API: the image target key)."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                        description="fmcluster: find the bake's ParallelCluster parent AMI (ec2:DescribeImages)",
                        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(
                            "service-role/AWSLambdaBasicExecutionRole")])
        policy = iam.Policy(self, "DescribeImages", statements=[
            iam.PolicyStatement(actions=["ec2:DescribeImages"], resources=["*"])])
        policy.attach_to_role(role)
        acknowledge(role, ("AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                           "AWSLambdaBasicExecutionRole]",
                           "The AWS managed policy Lambda documents for writing the function's logs; nothing else."))
        acknowledge(policy, ("AwsSolutions-IAM5[Resource::*]",
                             "ec2:DescribeImages supports no resource-level permissions (Service Authorization "
                             "Reference, Amazon EC2); read-only."))
        self.function = lambda_.Function(
            self, "Function", runtime=RUNTIME, handler="index.handler",
            code=lambda_.Code.from_inline(HANDLER_SOURCE.read_text()), timeout=Duration.minutes(2), role=role,
            description="fmcluster: the ParallelCluster official AMI a bake builds from (pcluster's query)")
        self.function.node.add_dependency(policy)

    def image_id(self, key: str, name_filter: str, arch: str) -> str:
        """The AMI id the deployment finds for ``name_filter`` / ``arch`` (a token)."""
        # ServiceTimeout a little over the function's 2 minutes: an unanswered request fails in minutes, not an hour.
        resource = CustomResource(self, key, service_token=self.function.function_arn, resource_type=RESOURCE_TYPE,
                                  service_timeout=Duration.minutes(4), properties={"NameFilter": name_filter, "Architecture": arch,
                                              "Owner": PARALLELCLUSTER_AMI_OWNER})
        return resource.get_att_string("ImageId")
