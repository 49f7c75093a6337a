"""GPU network: one-AZ VPC (or an imported one), the EFA security group, an S3 gateway endpoint and
cluster placement groups.

Sources:
- EFA security group must allow all traffic to and from itself, in BOTH directions:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security
  (EC2 User Guide, EFA security group; aws-parallelcluster EfaSecurityGroupValidator;
  aws-cdk security-group.ts addEgressRule). CDK drops egress rules added to a group created with
  ``allow_all_outbound=True``, so the group is created with ``allow_all_outbound=False`` and every
  egress rule is explicit.
- Effective egress: CDK drops its "no traffic" placeholder once an egress rule is added and EC2 then
  adds its default allow-all rule; :func:`explicit_egress_only` pins the placeholder so that only the
  explicit rules apply (issue 12 item 4).
- EFA traffic stays in one subnet / AZ (R3.6); cluster placement groups are single-AZ (R4.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Annotations, CfnResource, RemovalPolicy, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from fmcluster.blueprint.model import NetworkSpec
from fmcluster.catalog.vpc_layout import PUBLIC_SUBNET_PREFIX

#: CDK's own "match no traffic" egress rule (aws-cdk-lib ``aws-ec2/lib/security-group.ts``, ``MATCH_NO_TRAFFIC``).
NO_TRAFFIC_EGRESS = {"CidrIp": "255.255.255.255/32", "Description": "Disallow all traffic", "IpProtocol": "icmp",
                     "FromPort": 252, "ToPort": 86}


def explicit_egress_only(sg: ec2.SecurityGroup) -> None:
    """Make ``sg``'s effective egress exactly its explicit egress rules.

    A group created with ``allow_all_outbound=False`` gets CDK's inline placeholder rule
    :data:`NO_TRAFFIC_EGRESS`, and CDK REMOVES it again as soon as an egress rule is added
    (``removeNoTrafficRule`` in aws-cdk-lib ``aws-ec2/lib/security-group.ts``, 2.275.0); rules between
    groups are standalone ``AWS::EC2::SecurityGroupEgress`` resources, so the group itself is then
    synthesized with no ``SecurityGroupEgress`` at all. EC2 then adds its default allow-all egress:
    "When you create a security group, if you do not add egress rules, we add egress rules that allow
    all outbound IPv4 and IPv6 traffic" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-ec2-securitygroup.html).
    Pinning the placeholder inline keeps that default rule away; it matches no traffic, so the
    standalone rules are the whole egress.
    """
    cfn = sg.node.default_child
    assert isinstance(cfn, ec2.CfnSecurityGroup)
    cfn.add_property_override("SecurityGroupEgress", [dict(NO_TRAFFIC_EGRESS)])


def security_group_rules(sg: ec2.SecurityGroup) -> list[ec2.CfnSecurityGroupIngress | ec2.CfnSecurityGroupEgress]:
    """Every standalone rule resource CDK created under ``sg`` (its own rules and the ``remote_rule``s it owns)."""
    return [c for c in sg.node.find_all() if isinstance(c, (ec2.CfnSecurityGroupIngress, ec2.CfnSecurityGroupEgress))]


@dataclass(frozen=True)
class Placement:
    """Where GPU nodes go: ``az`` is an AZ name, or an AZ ID when ``az_is_id``."""

    az: str
    az_is_id: bool


class GpuNetwork(Construct):
    """VPC with a public subnet + NAT and a private GPU subnet in one AZ, the EFA security group,
    an S3 gateway endpoint, and a cluster placement group per name in ``placement_group_names``.

    Attributes: ``vpc`` (IVpc), ``gpu_subnet`` (ISubnet), ``efa_security_group`` (SecurityGroup),
    ``placement_groups`` (compute group name -> PlacementGroup).
    """

    def __init__(
        self, scope: Construct, id: str, *, spec: NetworkSpec, placement: Placement, placement_group_names: Sequence[str]
    ) -> None:
        super().__init__(scope, id)
        if spec.vpc_id and spec.gpu_subnet_id:
            self.vpc = ec2.Vpc.from_vpc_attributes(
                self, "Vpc", vpc_id=spec.vpc_id, availability_zones=[placement.az], private_subnet_ids=[spec.gpu_subnet_id]
            )
            self.gpu_subnet = ec2.Subnet.from_subnet_attributes(
                self, "GpuSubnet", subnet_id=spec.gpu_subnet_id, availability_zone=placement.az
            )
        else:
            self.vpc, self.gpu_subnet = self._new_vpc(spec, placement)

        self.efa_security_group = ec2.SecurityGroup(
            self, "EfaSecurityGroup", vpc=self.vpc, allow_all_outbound=False,
            description="EFA: all traffic to and from itself (required by EFA); all egress for installs",
        )
        sg = self.efa_security_group
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA: all traffic from the EFA security group itself")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "EFA: all traffic to the EFA security group itself")
        # CDK refuses an all-traffic 0.0.0.0/0 egress rule on a group with allow_all_outbound=False; it is
        # still what nodes need (packages, S3, AWS APIs, Lustre), so it is added as an explicit L1 rule.
        ec2.CfnSecurityGroupEgress(
            sg, "AllOutbound", group_id=sg.security_group_id, ip_protocol="-1", cidr_ip="0.0.0.0/0",
            description="Outbound for packages, S3, AWS APIs and Lustre",
        )
        explicit_egress_only(sg)

        self.placement_groups: dict[str, ec2.PlacementGroup] = {}
        if placement_group_names:
            pgs = Construct(self, "PlacementGroups")
            for name in placement_group_names:
                self.placement_groups[name] = ec2.PlacementGroup(
                    pgs, name, strategy=ec2.PlacementGroupStrategy.CLUSTER
                )

    def retain_gpu_subnet(self) -> None:
        """Keep the VPC and the GPU subnet when this stack is deleted (DeletionPolicy/UpdateReplacePolicy Retain).

        For a retained FSx file system: it keeps its network interfaces in the GPU subnet, so deleting
        the subnet (and then the VPC) would fail with a dependency violation and leave the network stack
        in DELETE_FAILED. Everything else in this stack (NAT gateway, public subnet, route tables, EFA
        security group, endpoints, placement groups) is still deleted. No effect on an imported VPC
        (``network.vpc_id``): fmcluster never deletes that one. See docs/storage.md "Teardown".

        Sources: Retain keeps a resource when its stack is deleted
        (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html);
        a security group "associated with an instance or network interface" or "referenced by another
        security group" cannot be deleted (DependencyViolation,
        https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html); a subnet
        with network interfaces in it cannot be deleted either
        (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSubnet.html).
        """
        if not isinstance(self.vpc, ec2.Vpc):
            return
        for construct in (self.vpc, self.gpu_subnet):
            cfn = construct.node.default_child
            assert isinstance(cfn, CfnResource)
            cfn.apply_removal_policy(RemovalPolicy.RETAIN)

    def _new_vpc(self, spec: NetworkSpec, placement: Placement) -> tuple[ec2.IVpc, ec2.ISubnet]:
        vpc = ec2.Vpc(
            self, "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(spec.vpc_cidr),
            availability_zones=[placement.az],
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=PUBLIC_SUBNET_PREFIX),
                ec2.SubnetConfiguration(
                    name="Gpu", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=spec.gpu_subnet_prefix_length
                ),
            ],
            gateway_endpoints={"S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)},
        )
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                logs.LogGroup(self, "FlowLogGroup", retention=logs.RetentionDays.ONE_MONTH)
            ),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
        if placement.az_is_id:
            # Capacity is bound to AZ IDs: place subnets by ID (names map to different IDs per account).
            for subnet in vpc.public_subnets + vpc.private_subnets:
                cfn = subnet.node.default_child
                assert isinstance(cfn, ec2.CfnSubnet)
                cfn.add_property_deletion_override("AvailabilityZone")
                cfn.add_property_override("AvailabilityZoneId", placement.az)
        gpu = vpc.private_subnets[0]
        Tags.of(gpu).add("fmcluster:role", "gpu-subnet")
        if spec.gpu_subnet_prefix_length > 24:
            Annotations.of(self).add_warning_v2("fmcluster:smallGpuSubnet", "GPU subnet smaller than /24")
        return vpc, gpu
