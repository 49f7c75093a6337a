"""The Amazon EKS cluster of HyperPod EKS orchestration, with L1 resources only (``AWS::EKS::Cluster``,
``AWS::EKS::AccessEntry``, ``AWS::EKS::Addon``, ``AWS::EC2::Subnet``, ``AWS::EC2::VPCEndpoint``).

Why L1 (docs/decisions.md): CDK's L2 ``aws_eks.Cluster`` creates the cluster through a custom resource backed by Lambda
functions and a kubectl layer; the L1 resources are CloudFormation's own handlers, need no Lambda in the VPC, and
are what cdk-nag and cfn-lint check directly.

:class:`EksControlPlane` (the ``<name>-eks`` stack): the cluster in the blueprint's VPC with authentication mode
``API`` and no bootstrap admin (an access entry with ``AmazonEKSClusterAdminPolicy`` for the named admin role), all
control-plane log types on, the node add-ons (VPC CNI, kube-proxy, EKS Pod Identity agent), two /28 control-plane
subnets in a new VPC (EKS needs two AZs) and the interface VPC endpoints of a private cluster.

:class:`EksWorkloadAddons` (the cluster stack, after the HyperPod worker groups): add-ons whose pods need nodes
(CoreDNS, the HyperPod training operator, HyperPod task governance).

The HyperPod execution role gets NO access entry from fmcluster: HyperPod creates the EKS access entries of the
execution roles itself ("EksRoleAccessEntries: A list of Amazon EKS IAM role ARNs associated with the cluster. This
is created by HyperPod on your behalf": https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterMetadata.html),
and a second entry for the same principal would fail one of the two creations.

Sources: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html (authentication
mode API or API_AND_CONFIG_MAP, VPC CNI >= 1.18.3, Kubernetes versions);
https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html (two subnets in different AZs);
https://docs.aws.amazon.com/eks/latest/userguide/access-policies.html (AmazonEKSClusterAdminPolicy, cluster scope);
https://docs.aws.amazon.com/eks/latest/userguide/cluster-iam-role.html (AmazonEKSClusterPolicy); add-ons and
endpoints: :mod:`fmcluster.catalog.eks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Aws, CfnOutput
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from fmcluster.catalog import eks as cat
from fmcluster.constructs.orchestrator import acknowledge
from fmcluster.orchestrators.hyperpod_eks.plan import EksPlan

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


def _addon(scope: Construct, cluster_name: str, addon: cat.Addon, tags: Mapping[str, str]) -> eks.CfnAddon:
    resource = eks.CfnAddon(
        scope, addon.name, cluster_name=cluster_name, addon_name=addon.name,
        # OVERWRITE: the add-on owns its objects (a default self-managed copy EKS installed is replaced).
        resolve_conflicts="OVERWRITE",
        tags=[{"key": k, "value": v} for k, v in sorted(tags.items())],
    )
    if addon.version is not None:
        resource.addon_version = addon.version
    return resource


class EksControlPlane(Construct):
    """The EKS cluster fmcluster creates (``plan.creates_cluster``).

    ``vpc``, ``gpu_subnet`` and ``security_group`` are the network stack's; the control plane's ENIs join
    ``security_group`` (the EFA group, which allows all traffic among its members), so nodes reach the API server and
    the API server reaches the kubelets without another group. ``az``/``az_is_id`` place the GPU-AZ control-plane
    subnet. Attributes: ``cluster`` (CfnCluster), ``cluster_name``, ``cluster_arn`` (token), ``addons`` (name ->
    CfnAddon), ``endpoints`` (service -> CfnVPCEndpoint), ``subnet_ids``.
    """

    def __init__(
        self, scope: Construct, id: str, *, plan: EksPlan, vpc: ec2.IVpc, gpu_subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup, az: str, az_is_id: bool, tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, id)
        s = plan.settings
        self.cluster_name = plan.cluster_name
        role = iam.Role(
            self, "ClusterRole", assumed_by=iam.ServicePrincipal("eks.amazonaws.com"),
            description=f"fmcluster {plan.cluster_name}: EKS control plane",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonEKSClusterPolicy")],
        )
        acknowledge(role, (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy]",
            "The EKS cluster role's documented managed policy (https://docs.aws.amazon.com/eks/latest/userguide/"
            "cluster-iam-role.html); AWS maintains it with the control plane.",
        ))

        self.subnet_ids: list[str] = list(s.control_plane_subnet_ids)
        if plan.control_plane_cidrs is not None:
            zones = ((az, az_is_id), (s.control_plane_availability_zone or "", az_is_id))
            for i, (cidr, (zone, by_id)) in enumerate(zip(plan.control_plane_cidrs, zones, strict=True)):
                subnet = ec2.CfnSubnet(
                    self, f"ControlPlaneSubnet{i + 1}", vpc_id=vpc.vpc_id, cidr_block=cidr,
                    availability_zone=None if by_id else zone, availability_zone_id=zone if by_id else None,
                    tags=[{"key": "Name", "value": f"{plan.cluster_name}-eks-control-plane-{i + 1}"}],
                )
                acknowledge(subnet, (
                    "CloudFormation-Validate::W3010",
                    "The control-plane subnets go to the blueprint's AZ and control_plane_availability_zone by design "
                    "(capacity and EFA placement are bound to the blueprint's zone; EKS needs a second one).",
                ))
                self.subnet_ids.append(subnet.ref)

        public = list(s.public_access_cidrs)
        self.cluster = eks.CfnCluster(
            self, "Cluster", name=plan.cluster_name, version=s.kubernetes_version, role_arn=role.role_arn,
            resources_vpc_config=eks.CfnCluster.ResourcesVpcConfigProperty(
                subnet_ids=self.subnet_ids, security_group_ids=[security_group.security_group_id],
                endpoint_private_access=True, endpoint_public_access=bool(public),
                public_access_cidrs=public or None,
            ),
            access_config=eks.CfnCluster.AccessConfigProperty(
                authentication_mode=cat.AUTHENTICATION_MODE, bootstrap_cluster_creator_admin_permissions=False,
            ),
            logging=eks.CfnCluster.LoggingProperty(
                cluster_logging=eks.CfnCluster.ClusterLoggingProperty(
                    enabled_types=[eks.CfnCluster.LoggingTypeConfigProperty(type=t) for t in LOG_TYPES],
                ),
            ),
            tags=[{"key": k, "value": v} for k, v in sorted(tags.items())],
        )
        self.cluster_arn = self.cluster.attr_arn
        if public:
            acknowledge(self.cluster, (
                "AwsSolutions-EKS1",
                f"Public endpoint access is limited to orchestrator.hyperpod.eks.public_access_cidrs ({', '.join(public)}); "
                "with none set the endpoint is private only.",
            ))

        if s.admin_role_arn is not None:
            eks.CfnAccessEntry(
                self, "AdminAccess", cluster_name=self.cluster.ref, principal_arn=s.admin_role_arn, type="STANDARD",
                access_policies=[eks.CfnAccessEntry.AccessPolicyProperty(
                    policy_arn=f"arn:{Aws.PARTITION}:eks::aws:cluster-access-policy/{CLUSTER_ADMIN_POLICY}",
                    access_scope=eks.CfnAccessEntry.AccessScopeProperty(type="cluster"),
                )],
            )

        addons = Construct(self, "Addons")
        self.addons = {a.name: _addon(addons, self.cluster.ref, a, tags) for a in plan.addons_before_nodes}

        self.endpoints: dict[str, ec2.CfnVPCEndpoint] = {}
        if s.interface_endpoints:
            root = Construct(self, "Endpoints")
            for service in cat.INTERFACE_ENDPOINTS:
                self.endpoints[service] = ec2.CfnVPCEndpoint(
                    root, service.replace(".", "-"), vpc_id=vpc.vpc_id,
                    service_name=f"com.amazonaws.{Aws.REGION}.{service}", vpc_endpoint_type="Interface",
                    private_dns_enabled=True, subnet_ids=[gpu_subnet.subnet_id],
                    # The EFA group allows all traffic among its members: the nodes and the control plane reach the
                    # endpoints on 443 without a group of their own.
                    security_group_ids=[security_group.security_group_id],
                )

        CfnOutput(self, "EksClusterName", value=self.cluster.ref)
        CfnOutput(self, "EksClusterArn", value=self.cluster.attr_arn)
        CfnOutput(self, "EksClusterEndpoint", value=self.cluster.attr_endpoint)


class EksWorkloadAddons(Construct):
    """The add-ons whose pods need nodes (``plan.addons_after_nodes``), each created after ``after`` (the HyperPod
    cluster resource, so the worker groups have joined). Attribute: ``addons`` (name -> CfnAddon)."""

    def __init__(
        self, scope: Construct, id: str, *, plan: EksPlan, cluster_name: str, after: Sequence[IConstruct],
        tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, id)
        self.addons: dict[str, eks.CfnAddon] = {}
        previous: eks.CfnAddon | None = None
        for a in plan.addons_after_nodes:
            addon = _addon(self, cluster_name, a, tags)
            for dep in after:
                addon.node.add_dependency(dep)
            # One at a time, in order: the training operator needs cert-manager and the Pod Identity agent
            # (sagemaker-eks-operator-install.html); CoreDNS first so that webhooks resolve service names.
            if previous is not None:
                addon.node.add_dependency(previous)
            previous = addon
            self.addons[a.name] = addon
