"""The Amazon EKS cluster of HyperPod EKS orchestration, with L1 resources only (``AWS::EKS::Cluster``,
``AWS::EKS::AccessEntry``, ``AWS::EKS::Addon``, ``AWS::EKS::PodIdentityAssociation``, ``AWS::EC2::Subnet``,
``AWS::EC2::VPCEndpoint``).

Why L1 (docs/decisions.md): CDK's L2 ``aws_eks.Cluster`` creates the cluster through a custom resource backed by Lambda
functions and a kubectl layer; the L1 resources are CloudFormation's own handlers, need no Lambda in the VPC, and
are what cdk-nag and cfn-lint check directly.

:class:`EksControlPlane` (the ``<name>-eks`` stack): the cluster in the blueprint's VPC with authentication mode
``API`` and no bootstrap admin (an access entry with ``AmazonEKSClusterAdminPolicy`` for the named admin role), all
control-plane log types on, the node add-ons (VPC CNI, kube-proxy, EKS Pod Identity agent), two /28 control-plane
subnets in a new VPC (EKS needs two AZs) and the interface VPC endpoints of a private cluster.

:class:`EksWorkloadAddons` (the ``<name>-addons`` stack, deployed after the cluster stack: an add-on that fails rolls
back only that stack, never the HyperPod cluster; docs/decisions.md 50): add-ons whose pods need nodes (CoreDNS, the
HyperPod training operator, HyperPod task governance, the HyperPod observability add-on) and the Pod Identity roles of
the training operator and of the observability collector.

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
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, Aws, CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

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
    CfnAddon), ``endpoints`` (service -> CfnVPCEndpoint), ``subnet_ids``, ``api_access`` (the ingress rules on 443 of
    ``api_access_cidrs`` and ``api_access_security_group_ids`` on EKS's cluster security group).
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
        self.api_access = _api_access(self, self.cluster, s.api_access_cidrs, s.api_access_security_group_ids)
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
        CfnOutput(self, "EksClusterSecurityGroupId", value=self.cluster.attr_cluster_security_group_id,
                  description="EKS's cluster security group (control-plane interfaces): api_access_* rules admit 443")
        if s.admin_role_arn is not None:
            CfnOutput(self, "KubeconfigCommand", description="Run from a host that reaches the API endpoint "
                      "(docs/kubernetes.md 'Reaching the API')",
                      value=f"aws eks update-kubeconfig --region {Stack.of(self).region} --name {plan.cluster_name} "
                      f"--role-arn {s.admin_role_arn}")


@dataclass(frozen=True)
class MetricsWorkspace:
    """The AMP workspace the observability add-on writes to (the ``<name>-observability`` stack's, tokens):
    ``arn`` and ``prometheus_endpoint`` (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>``, without
    the trailing ``/`` of the workspace's ``PrometheusEndpoint`` attribute: AWS's sample strips it before handing it to
    the add-on, aws-samples/awsome-distributed-training ``.../modules/observability/main.tf`` ``trimsuffix``).

    No Grafana workspace is handed to the add-on (its ``amgWorkspace`` setting): that needs the workspace ARN, which
    ``AWS::Grafana::Workspace`` does not return, and what the add-on then does in it is not documented at hand."""

    arn: str
    prometheus_endpoint: str


def observability_configuration(plan: EksPlan, workspace: MetricsWorkspace) -> dict[str, Any]:
    """The observability add-on's ``ConfigurationValues`` (as a dict; CloudFormation takes it as a JSON string):
    ``ampWorkspace`` (endpoint, ARN), ``metricsProvider`` (:data:`fmcluster.catalog.eks.OBSERVABILITY_METRIC_LEVELS`,
    task-governance metrics when that add-on is installed, each scraped every ``plan.metrics_scrape_interval_s``
    seconds) and ``logging`` off (fmcluster does not ship container logs).
    Keys: aws-samples/awsome-distributed-training ``.../modules/observability/eks_addon.tf`` (NOT VERIFIED against the
    add-on's configuration schema: R-EKS-9). Raises ValueError when the plan installs no observability add-on."""
    interval = plan.metrics_scrape_interval_s
    if interval is None:
        raise ValueError("the EKS plan installs no observability add-on (observability.metrics is not managed)")
    levels = dict(cat.OBSERVABILITY_METRIC_LEVELS)
    if cat.TASK_GOVERNANCE in plan.addons_after_nodes:
        levels["taskGovernanceMetrics"] = cat.OBSERVABILITY_TASK_GOVERNANCE_LEVEL
    config: dict[str, Any] = {
        "ampWorkspace": {"prometheusEndpoint": workspace.prometheus_endpoint, "arn": workspace.arn},
        "metricsProvider": {k: {"level": v, "scrapeInterval": interval} for k, v in levels.items()},
        "logging": {"enabled": False},
    }
    return config


def _pod_identity_role(scope: Construct, id: str, *, identity: cat.PodIdentity, cluster_arn: str,
                       statements: Sequence[iam.PolicyStatement], description: str) -> iam.Role:
    """The role of one add-on's service account: trusted by ``pods.eks.amazonaws.com`` (``sts:AssumeRole``,
    ``sts:TagSession``) from ``cluster_arn`` in this account only
    (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html), with ``identity``'s managed policies and
    ``statements``."""
    stack = Stack.of(scope)
    principal = iam.ServicePrincipal("pods.eks.amazonaws.com", conditions={
        "StringEquals": {"aws:SourceAccount": stack.account, "aws:SourceArn": cluster_arn}})
    role = iam.Role(
        # Pod Identity needs sts:TagSession besides sts:AssumeRole (pod-id-role.html): SessionTagsPrincipal adds it.
        scope, id, assumed_by=iam.SessionTagsPrincipal(principal), description=description,
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in identity.managed_policies],
    )
    for statement in statements:
        role.add_to_policy(statement)
    for policy in identity.managed_policies:
        acknowledge(role, (
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
            f"The add-on's own AWS managed policy ({identity.source}); AWS maintains it with the add-on.",
        ))
    return role


#: The Kubernetes API port of the cluster endpoint.
API_PORT = 443


def _api_access(scope: Construct, cluster: eks.CfnCluster, cidrs: Sequence[str],
                groups: Sequence[str]) -> list[ec2.CfnSecurityGroupIngress]:
    """One ingress rule on 443 per CIDR and per security group on the cluster security group EKS creates and attaches
    to the control-plane network interfaces (``ClusterSecurityGroupId``): "If you have disabled public access for your
    cluster's Kubernetes API server endpoint, you can only access the API server from within your VPC or a connected
    network ... your Amazon EKS control plane security group [must contain] rules to allow ingress traffic on port 443
    from your connected network" (https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html);
    the cluster security group: https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html."""
    if not cidrs and not groups:
        return []
    root = Construct(scope, "ApiAccess")
    rules = [
        ec2.CfnSecurityGroupIngress(
            root, f"Cidr{i + 1}", group_id=cluster.attr_cluster_security_group_id, ip_protocol="tcp",
            from_port=API_PORT, to_port=API_PORT, cidr_ip=cidr,
            description=f"Kubernetes API from {cidr} (orchestrator.hyperpod.eks.api_access_cidrs)",
        )
        for i, cidr in enumerate(cidrs)
    ]
    rules += [
        ec2.CfnSecurityGroupIngress(
            root, f"Group{i + 1}", group_id=cluster.attr_cluster_security_group_id, ip_protocol="tcp",
            from_port=API_PORT, to_port=API_PORT, source_security_group_id=group,
            description=f"Kubernetes API from {group} (orchestrator.hyperpod.eks.api_access_security_group_ids)",
        )
        for i, group in enumerate(groups)
    ]
    return rules


class EksWorkloadAddons(Construct):
    """The add-ons whose pods need nodes (``plan.addons_after_nodes``), one at a time in that order, each created after
    ``after`` (the HyperPod cluster's stack, so the worker groups have joined), with the Pod Identity associations they
    need: the training operator's controller (:data:`fmcluster.catalog.eks.TRAINING_OPERATOR_IDENTITY`, a standalone
    association created before the add-on) and the observability add-on's collector
    (:data:`fmcluster.catalog.eks.OBSERVABILITY_IDENTITY`, inside the add-on, writing to ``workspace``, required when
    the plan installs that add-on: ValueError otherwise). ``cluster_arn``: the EKS cluster's ARN (the roles' trust
    condition). Attributes: ``addons`` (name -> CfnAddon), ``roles`` (add-on name -> iam.Role), ``associations``
    (add-on name -> the standalone CfnPodIdentityAssociation)."""

    def __init__(
        self, scope: Construct, id: str, *, plan: EksPlan, cluster_name: str, cluster_arn: str,
        tags: Mapping[str, str], workspace: MetricsWorkspace | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.addons: dict[str, eks.CfnAddon] = {}
        self.roles: dict[str, iam.Role] = {}
        self.associations: dict[str, eks.CfnPodIdentityAssociation] = {}
        previous: eks.CfnAddon | None = None
        for a in plan.addons_after_nodes:
            addon = _addon(self, cluster_name, a, tags)
            if a == cat.TRAINING_OPERATOR:
                self._associate_apart(addon, cat.TRAINING_OPERATOR_IDENTITY, cluster_name, cluster_arn)
            if a == cat.OBSERVABILITY:
                if workspace is None:
                    raise ValueError("the observability add-on needs the AMP workspace it writes to")
                addon.configuration_values = Stack.of(self).to_json_string(observability_configuration(plan, workspace))
                role = self._associate(addon, cat.OBSERVABILITY_IDENTITY, cluster_arn,
                                       _observability_statements(self, workspace))
                _acknowledge_log_groups(role)
            # One at a time, in order: the training operator needs cert-manager and the Pod Identity agent
            # (sagemaker-eks-operator-install.html); CoreDNS first so that webhooks resolve service names.
            if previous is not None:
                addon.node.add_dependency(previous)
            previous = addon
            self.addons[a.name] = addon

    def _role(self, addon: eks.CfnAddon, identity: cat.PodIdentity, cluster_arn: str,
              statements: Sequence[iam.PolicyStatement]) -> iam.Role:
        role = _pod_identity_role(
            self, f"{addon.addon_name}-role", identity=identity, cluster_arn=cluster_arn, statements=statements,
            description=f"EKS Pod Identity: {identity.namespace}/{identity.service_account} ({addon.addon_name})",
        )
        self.roles[addon.addon_name] = role
        return role

    def _associate_apart(self, addon: eks.CfnAddon, identity: cat.PodIdentity, cluster_name: str,
                         cluster_arn: str) -> eks.CfnPodIdentityAssociation:
        """The Pod Identity association of ``identity`` as its own ``AWS::EKS::PodIdentityAssociation``, created before
        ``addon``: EKS refuses an association inside an add-on whose version does not declare IAM permissions, which
        the training operator's default version does not (:data:`fmcluster.catalog.eks.TRAINING_OPERATOR`). The
        association names the service account by namespace and name
        (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreatePodIdentityAssociation.html); that it may precede
        the service account the add-on creates is what awslabs/awsome-distributed-ai PR #1076 does (association first,
        add-on after), NOT VERIFIED against an EKS reference page."""
        role = self._role(addon, identity, cluster_arn, [])
        association = eks.CfnPodIdentityAssociation(
            self, f"{addon.addon_name}-pod-identity", cluster_name=cluster_name, namespace=identity.namespace,
            service_account=identity.service_account, role_arn=role.role_arn,
        )
        association.node.add_dependency(role)
        addon.node.add_dependency(association)
        self.associations[addon.addon_name] = association
        return association

    def _associate(self, addon: eks.CfnAddon, identity: cat.PodIdentity, cluster_arn: str,
                   statements: Sequence[iam.PolicyStatement]) -> iam.Role:
        role = self._role(addon, identity, cluster_arn, statements)
        addon.pod_identity_associations = [eks.CfnAddon.PodIdentityAssociationProperty(
            role_arn=role.role_arn, service_account=identity.service_account)]
        # The add-on starts its collector as soon as it exists: it waits for the role's inline policy (remote write,
        # logs), not only for the role's ARN, or its first writes are refused.
        addon.node.add_dependency(role)
        return role


def _acknowledge_log_groups(role: iam.Role) -> None:
    """cdk-nag IAM5: the collector's log groups are named by HyperPod per cluster under ``/aws/sagemaker/Clusters/``."""
    region = Stack.of(role).region
    groups = f"arn:<AWS::Partition>:logs:{region}:<AWS::AccountId>:log-group:{cat.OBSERVABILITY_LOG_GROUPS}"
    for resource in (groups, f"{groups}:log-stream:*"):
        acknowledge(role.node.find_child("DefaultPolicy"), (
            f"AwsSolutions-IAM5[Resource::{resource}]",
            "The observability add-on's collector writes the log groups HyperPod names per cluster under "
            f"{cat.OBSERVABILITY_LOG_GROUPS} (the role AWS documents: {cat.OBSERVABILITY_IDENTITY.source}).",
        ))


def _observability_statements(scope: Construct, workspace: MetricsWorkspace) -> list[iam.PolicyStatement]:
    """Remote write to ``workspace`` and the collector's CloudWatch Logs actions on ``/aws/sagemaker/Clusters/*``
    (hyperpod-observability-addon-troubleshooting.html)."""
    stack = Stack.of(scope)
    groups = stack.format_arn(service="logs", resource="log-group", resource_name=cat.OBSERVABILITY_LOG_GROUPS,
                              arn_format=ArnFormat.COLON_RESOURCE_NAME)
    return [
        iam.PolicyStatement(actions=list(cat.OBSERVABILITY_IDENTITY.actions), resources=[workspace.arn]),
        iam.PolicyStatement(actions=list(cat.OBSERVABILITY_LOG_ACTIONS), resources=[groups, f"{groups}:log-stream:*"]),
    ]
