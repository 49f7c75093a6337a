"""The metrics layer's AWS side: Amazon Managed Service for Prometheus + Amazon Managed Grafana (managed),
and, in every mode, the IAM policy and SSM parameter the head node needs at boot.

Nothing here depends on the orchestrator: the cluster stack attaches :attr:`ClusterObservability.node_policy`
to the role of the node that runs Prometheus (ParallelCluster head node, HyperPod controller group, PCS
login node group) and that node's script reads :attr:`ClusterObservability.parameter`.

Sources:
- AMP workspace and rule groups namespace: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/
  aws-resource-aps-workspace.html, aws-resource-aps-rulegroupsnamespace.html; remote write needs
  ``aps:RemoteWrite`` (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-and-IAM.html); the
  remote-write URL is ``<PrometheusEndpoint>api/v1/remote_write``.
- Amazon Managed Grafana with a customer-managed role: https://docs.aws.amazon.com/AWSCloudFormation/latest/
  TemplateReference/aws-resource-grafana-workspace.html; the role trusts ``grafana.amazonaws.com`` and needs
  the AMP query actions (``aps:QueryMetrics``, ``aps:GetLabels``, ``aps:GetSeries``,
  ``aps:GetMetricMetadata``) and CloudWatch read for the FSx dashboard
  (https://docs.aws.amazon.com/grafana/latest/userguide/AMG-manage-permissions.html).
- Prometheus EC2 service discovery calls ``ec2:DescribeInstances`` and ``ec2:DescribeAvailabilityZones``
  (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#ec2_sd_config).
- Alerts: AMP's only receiver is SNS; the topic's access policy must let ``aps.amazonaws.com`` publish
  (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-alertmanager-receiver.html, "Giving Amazon
  Managed Service for Prometheus permission to send messages to your Amazon SNS topic";
  Troubleshooting-alerting-no-policy.html for the failure without it). The statement below follows that
  page (sns:Publish and sns:GetTopicAttributes, conditions aws:SourceArn = the workspace and
  aws:SourceAccount); the topic is encrypted with a customer-managed key whose key policy lets the same
  principal use it (kms:GenerateDataKey, kms:Decrypt), as SNS requires for service publishers
  (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html). NOT VERIFIED against the AMP page's
  exact statement text (the corpus holds only its title); a wrong policy shows as the "no resource based
  policy" error in the workspace's alert manager logs.
- Alert-manager and ruler logs: ``AWS::APS::Workspace`` ``LoggingConfiguration.LogGroupArn`` (CloudFormation
  resource schema shipped with cfn-lint); the ARN must end in ``:*`` and the log group must exist first
  (https://docs.aws.amazon.com/prometheus/latest/APIReference/API_CloudWatchLogDestination.html; these
  logs are "only for rules and alerting", CreateLoggingConfiguration). The ``Arn`` attribute of
  ``AWS::Logs::LogGroup`` ends in ``:*``. AMP delivers them as vended logs; the log group name starts with
  ``/aws/vendedlogs/`` as AWS's own example does. NOT VERIFIED here: whether CloudFormation needs
  ``logs:PutResourcePolicy`` rights beyond the deploy role's for AMP to deliver; check the log group after
  the first alert.
- The monitoring host's dead-man alarm (self-hosted, :func:`monitoring_heartbeat_alarm`): the node that runs Prometheus
  and Alertmanager publishes ``fmcluster`` ``MonitoringHeartbeat`` (dimension ``ClusterName``) once a minute while both
  are ready and the Watchdog fires (``render_heartbeat_script``); the alarm treats missing data as breaching
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html: ``breaching``, missing
  data points are "bad" and count as breaching the threshold), so a dead node alarms like a dead Prometheus. It needs
  no instance id, so it is the same on every orchestrator. The node may publish only into that namespace:
  ``cloudwatch:PutMetricData`` has no resource type (``Resource: "*"``) and takes the ``cloudwatch:namespace``
  condition key (service authorization reference, https://docs.aws.amazon.com/service-authorization/latest/reference/
  list_amazoncloudwatch.html; the CloudWatch user guide's example of exactly this policy:
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html). CloudWatch may
  publish to the KMS-encrypted topic only if the key policy lets ``cloudwatch.amazonaws.com`` use the key
  (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services).
- HyperPod EKS: fmcluster runs no Prometheus there; the HyperPod observability add-on's collector writes to this
  workspace instead (its role and configuration: ``fmcluster.orchestrators.hyperpod_eks.addons``), so the workspace,
  rules, alert manager and topic are the same as on the Slurm orchestrators.
"""

from __future__ import annotations

import jsii
from aws_cdk import Acknowledgment, Annotations, ArnFormat, Fn, RemovalPolicy, Stack, Validations
from aws_cdk import aws_aps as aps
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_grafana as grafana
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct, IValidation

from fmcluster.blueprint.model import BudgetSpec, ObservabilitySpec
from fmcluster.constructs.parameter import string_parameter
from fmcluster.features.capacity_window.construct import ClusterBudget, rule_arn
from fmcluster.features.capacity_window.construct_fleet_stop import (
    BudgetStopTopic,
    allow_budgets_to_publish,
    budget_stop_alarm_name,
)
from fmcluster.features.observability.endpoints import (
    HEARTBEAT_ALARM_PERIOD_S,
    HEARTBEAT_ALARM_PERIODS,
    HEARTBEAT_DIMENSION,
    HEARTBEAT_METRIC,
    HEARTBEAT_NAMESPACE,
    heartbeat_alarm_name,
)
from fmcluster.features.observability.pins import GRAFANA_PORT
from fmcluster.features.observability.render_alertmanager import render_amp_alertmanager_definition

#: How long the AMP workspace's alert-manager and ruler logs are kept.
AMP_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
#: Amazon Managed Grafana workspace version; the generated dashboards target Grafana 10.4.
GRAFANA_WORKSPACE_VERSION = "10.4"
AMP_QUERY_ACTIONS = (
    "aps:QueryMetrics",
    "aps:GetLabels",
    "aps:GetSeries",
    "aps:GetMetricMetadata",
    "aps:DescribeWorkspace",
)
CLOUDWATCH_READ_ACTIONS = (
    "cloudwatch:GetMetricData",
    "cloudwatch:GetMetricStatistics",
    "cloudwatch:ListMetrics",
)
EC2_SD_ACTIONS = ("ec2:DescribeInstances", "ec2:DescribeAvailabilityZones")


class ClusterObservability(Construct):
    """Metrics workspaces (``spec.metrics == "managed"``) plus the node policy and SSM parameter.

    Args:
        spec: the blueprint's observability section (``metrics`` must not be ``none``).
        cluster_name: the blueprint name (workspace alias, descriptions).
        parameter_name: name of the SSM parameter nodes read at boot (``ResolvedCluster.observability_parameter``,
            ``/fmcluster/<name>/observability``).
        alert_rules: Prometheus rule-file YAML (``fmcluster.features.observability.render_alert_rules.render_alert_rules``),
            stored as the workspace's rule groups namespace when managed.
        vpc, subnet, security_group: where the ``aps-workspaces`` interface endpoint goes when
            ``spec.amp_vpc_endpoint`` (required then).
        budget, budget_tag: the blueprint's ``budget`` and the ``(key, value)`` tag it filters on: a
            :class:`fmcluster.features.capacity_window.construct.ClusterBudget` notifying the alert topic, whose policy
            (when created here) lets ``budgets.amazonaws.com`` publish. Default: none.
        window_events: the cluster has a capacity window whose EventBridge rule publishes to the created alert topic
            (:mod:`fmcluster.features.capacity_window.construct`): the topic and key policies let it. Default False.

    Attributes:
        workspace: ``aps.CfnWorkspace`` or None (self-hosted).
        workspace_id, remote_write_url, query_url: tokens, or None when self-hosted.
        grafana_workspace: ``grafana.CfnWorkspace`` or None; grafana_url: ``https://<endpoint>`` token, or the
            self-hosted ``http://localhost:3000`` (through SSM port forwarding).
        grafana_role: the role the Grafana workspace assumes (AMP query, CloudWatch read), or None.
        node_policy: ``iam.ManagedPolicy`` for the node running Prometheus (SSM parameter read, EC2
            discovery, and aps:RemoteWrite when managed / CloudWatch read and sns:Publish when self-hosted).
        alert_topic_arn: the SNS topic every alert goes to (created, or ``spec.alert_topic_arn``).
        budget_stop_topic_arn: the topic of the budget's stop notification (``budget.stop_compute_at_percent``:
            :class:`fmcluster.features.capacity_window.construct_fleet_stop.BudgetStopTopic`), or None.
            alert_topic: the created ``sns.Topic`` or None.
        amp_endpoint: the ``aps-workspaces`` ``ec2.InterfaceVpcEndpoint`` or None.
        log_group: the ``logs.LogGroup`` the AMP workspace writes its alert-manager and ruler logs to
            (``/aws/vendedlogs/prometheus/fmcluster-<name>``, 90 days), or None when self-hosted.
        parameter: ``ssm.StringParameter`` ``parameter_name`` holding JSON
            ``{"metrics", "region", "remote_write_url", "query_url", "grafana_url", "workspace_id",
            "alert_topic_arn"}``.
    """

    def __init__(
        self, scope: Construct, id: str, *, spec: ObservabilitySpec, cluster_name: str, parameter_name: str,
        alert_rules: str, vpc: ec2.IVpc | None = None,
        subnet: ec2.ISubnet | None = None, security_group: ec2.ISecurityGroup | None = None,
        window_events: bool = False, budget: BudgetSpec | None = None, budget_tag: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        if not spec.enabled:
            raise ValueError(
                "ClusterObservability needs observability.metrics managed or self_hosted, got 'none'"
            )
        self.spec = spec
        self.node.add_validation(_ScrapeTimeoutValidation(spec))
        stack = Stack.of(self)
        self.workspace: aps.CfnWorkspace | None = None
        self.workspace_id: str | None = None
        self.remote_write_url: str | None = None
        self.query_url: str | None = None
        self.grafana_workspace: grafana.CfnWorkspace | None = None
        self.grafana_role: iam.Role | None = None
        self.grafana_url: str = f"http://localhost:{GRAFANA_PORT}"
        self.alert_topic: sns.Topic | None = None
        self.alert_key: kms.Key | None = None
        self._alarms_use_key = False  # the alert key lets CloudWatch alarms use it (_allow_alarm_to_publish)
        self.alert_topic_arn: str | None = None
        self.amp_endpoint: ec2.InterfaceVpcEndpoint | None = None
        self.log_group: logs.LogGroup | None = None
        self.budget_stop_topic_arn: str | None = None
        self._alert_topic(cluster_name, spec)
        if window_events:
            self._allow_window_rule(cluster_name)
        if budget is not None and budget_tag is not None and self.alert_topic_arn is not None:
            self._budget(cluster_name, budget, budget_tag)
        if spec.metrics == "managed":
            self._managed(cluster_name, alert_rules, spec.grafana_authentication)
            if spec.amp_vpc_endpoint:
                if vpc is None or subnet is None or security_group is None:
                    raise ValueError("amp_vpc_endpoint needs vpc, subnet and security_group")
                # Private DNS makes aps-workspaces.<region>.amazonaws.com resolve to the endpoint, so the
                # remote-write URL stays the same (https://docs.aws.amazon.com/prometheus/latest/userguide/
                # AMP-and-interface-VPC.html, service name com.amazonaws.<region>.aps-workspaces).
                self.amp_endpoint = ec2.InterfaceVpcEndpoint(
                    self, "AmpEndpoint", vpc=vpc,
                    service=ec2.InterfaceVpcEndpointAwsService("aps-workspaces"),
                    subnets=ec2.SubnetSelection(subnets=[subnet]), security_groups=[security_group],
                    private_dns_enabled=True, open=False,
                )

        parameter_value = stack.to_json_string(
            {
                "metrics": spec.metrics,
                "region": stack.region,
                "remote_write_url": self.remote_write_url or "",
                "query_url": self.query_url or "",
                "grafana_url": self.grafana_url,
                "workspace_id": self.workspace_id or "",
                "alert_topic_arn": self.alert_topic_arn or "",
            }
        )
        self.parameter = string_parameter(
            self,
            "Parameter",
            parameter_name=parameter_name,
            string_value=parameter_value,
            description=f"fmcluster {cluster_name}: metrics settings nodes read at boot",
        )
        self.node_policy = iam.ManagedPolicy(
            self,
            "NodePolicy",
            description=f"fmcluster {cluster_name}: what the node running Prometheus needs ({spec.metrics})",
        )
        self.node_policy.add_statements(
            iam.PolicyStatement(actions=["ssm:GetParameter"], resources=[self.parameter.parameter_arn]),
            iam.PolicyStatement(actions=list(EC2_SD_ACTIONS), resources=["*"]),
        )
        acks = [
            (
                "AwsSolutions-IAM5[Resource::*]",
                "ec2:DescribeInstances and ec2:DescribeAvailabilityZones (Prometheus EC2 service discovery)"
                + (
                    ""
                    if spec.metrics == "managed"
                    else " and CloudWatch metric reads (self-hosted Grafana, FSx dashboard) and"
                    f" cloudwatch:PutMetricData (the heartbeat; limited to the namespace {HEARTBEAT_NAMESPACE} by the"
                    " cloudwatch:namespace condition)"
                )
                + " do not support resource-level permissions.",
            )
        ]
        if self.workspace is not None:
            self.node_policy.add_statements(
                iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[self.workspace.attr_arn])
            )
        else:
            self.node_policy.add_statements(
                iam.PolicyStatement(actions=list(CLOUDWATCH_READ_ACTIONS), resources=["*"]),
                # the heartbeat (render_heartbeat_script): only into its own namespace (module docstring)
                iam.PolicyStatement(
                    actions=["cloudwatch:PutMetricData"], resources=["*"],
                    conditions={"StringEquals": {"cloudwatch:namespace": HEARTBEAT_NAMESPACE}},
                ),
            )
            if self.alert_topic_arn is not None:  # self-hosted Alertmanager publishes with the node's role
                self.node_policy.add_statements(
                    iam.PolicyStatement(actions=["sns:Publish"], resources=[self.alert_topic_arn])
                )
                if self.alert_key is not None:
                    self.node_policy.add_statements(
                        iam.PolicyStatement(
                            actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[self.alert_key.key_arn]
                        )
                    )
        for finding, reason in acks:
            Validations.of(self.node_policy).acknowledge(Acknowledgment(id=finding, reason=reason))

    def _alert_topic(self, cluster_name: str, spec: ObservabilitySpec) -> None:
        """The SNS topic alerts go to: ``spec.alert_topic_arn``, or a new KMS-encrypted topic with
        ``spec.alert_email`` subscribed (an unconfirmed subscription receives nothing)."""
        if spec.alert_topic_arn:
            self.alert_topic_arn = spec.alert_topic_arn
            return
        key = kms.Key(
            self, "AlertKey", enable_key_rotation=True,
            description=f"fmcluster {cluster_name}: encrypts the alert SNS topic",
        )
        topic = sns.Topic(
            self, "AlertTopic", display_name=f"fmcluster {cluster_name} alerts", master_key=key,
            enforce_ssl=True,
        )
        if spec.alert_email:
            sns.Subscription(
                self, "AlertEmail", topic=topic, protocol=sns.SubscriptionProtocol.EMAIL,
                endpoint=spec.alert_email,
            )
        self.alert_key, self.alert_topic, self.alert_topic_arn = key, topic, topic.topic_arn
        if spec.metrics == "self_hosted":  # the monitoring host's heartbeat alarm publishes from CloudWatch
            self._allow_alarm_to_publish("AllowTheHeartbeatAlarmToPublish", heartbeat_alarm_name(cluster_name))

    def _budget(self, cluster_name: str, spec: BudgetSpec, tag: tuple[str, str]) -> None:
        """The cluster's budget, and on a created topic the policy statements AWS Budgets needs to publish to it: the
        topic policy (principal ``budgets.amazonaws.com``, conditions aws:SourceAccount and aws:SourceArn
        ``arn:<partition>:budgets::<account>:*``) and, the topic being KMS-encrypted, the key policy
        (https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-sns-policy.html). An imported topic's
        policy is its owner's to change (docs/capacity.md "Budget")."""
        assert self.alert_topic_arn is not None
        if spec.stop_compute_at_percent is not None:
            stop = BudgetStopTopic(self, "BudgetStop", cluster_name=cluster_name)
            self.budget_stop_topic_arn = stop.topic.topic_arn
        ClusterBudget(self, "Budget", monthly_usd=spec.monthly_usd, thresholds_percent=spec.thresholds_percent,
                      tag_key=tag[0], tag_value=tag[1], topic_arn=self.alert_topic_arn, cluster_name=cluster_name,
                      region=Stack.of(self).region, stop_percent=spec.stop_compute_at_percent,
                      stop_topic_arn=self.budget_stop_topic_arn,
                      stop_emails=[self.spec.alert_email] if self.spec.alert_email else [])
        if self.alert_topic is None or self.alert_key is None:
            return
        allow_budgets_to_publish(Stack.of(self), self.alert_topic, self.alert_key,
                                 key_sid="AllowTheBudgetToUseTheAlertTopicKey")
        if spec.stop_compute_at_percent is not None:  # the stop function's errors alarm (<name>-cluster)
            self._allow_alarm_to_publish("AllowTheBudgetStopAlarmToPublish", budget_stop_alarm_name(cluster_name))

    def _allow_alarm_to_publish(self, sid: str, alarm_name: str) -> None:
        """Let the CloudWatch alarm ``alarm_name`` of this account publish to the created topic (statement ``sid``):
        ``enforce_ssl`` gives the topic a policy of its own, which replaces SNS's default one, so CloudWatch may
        publish only if this policy allows it (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
        AlarmThatSendsEmail.html, "permissions for CloudWatch to publish to an encrypted topic"; without it the alarm
        history shows "not authorized to perform: SNS:Publish"), and the key policy lets CloudWatch use the key
        (once, for every alarm: https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html)."""
        assert self.alert_topic is not None and self.alert_key is not None
        if not self._alarms_use_key:
            _allow_cloudwatch_alarms_to_use(self.alert_key)
            self._alarms_use_key = True
        stack = Stack.of(self)
        self.alert_topic.add_to_resource_policy(iam.PolicyStatement(
            sid=sid, principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["sns:Publish"], resources=[self.alert_topic.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": stack.account},
                        "ArnLike": {"aws:SourceArn": stack.format_arn(
                            service="cloudwatch", resource="alarm", resource_name=alarm_name,
                            arn_format=ArnFormat.COLON_RESOURCE_NAME)}}))

    def _allow_window_rule(self, cluster_name: str) -> None:
        """Let the capacity window's EventBridge rule publish to the created topic (an imported topic's policy is its
        owner's). EventBridge publishes to SNS under the topic's resource policy, and to a topic encrypted with a
        customer managed key only if the key policy lets ``events.amazonaws.com`` use the key
        (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html "Amazon SNS permissions").
        The rule lives in ``<name>-cluster``, so its ARN is built from its fixed name (no reference back)."""
        if self.alert_topic is None or self.alert_key is None:
            return
        stack = Stack.of(self)
        events_principal = iam.ServicePrincipal("events.amazonaws.com")
        # No aws:SourceAccount/aws:SourceArn condition on the key statement: the SNS developer guide ("Enabling
        # compatibility between event sources from AWS services and encrypted topics",
        # https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html) says those conditions in a KMS key policy
        # are not supported for EventBridge publishing to an encrypted topic (the publish then fails: the rule's
        # FailedInvocations; awslabs/landing-zone-accelerator-on-aws#407). The topic policy keeps aws:SourceArn.
        self.alert_key.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowTheWindowRuleToUseTheAlertTopicKey", principals=[events_principal],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"],
        ))
        self.alert_topic.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowTheWindowRuleToPublish", principals=[events_principal],
            actions=["sns:Publish"], resources=[self.alert_topic.topic_arn],
            conditions={"ArnEquals": {"aws:SourceArn": rule_arn(stack, cluster_name)}},
        ))

    def _managed(self, cluster_name: str, alert_rules: str, authentication: str) -> None:
        stack = Stack.of(self)
        topic_arn = self.alert_topic_arn
        self.log_group = logs.LogGroup(
            self, "AmpLogs", log_group_name=f"/aws/vendedlogs/prometheus/fmcluster-{cluster_name}",
            retention=AMP_LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY,
        )
        ws = aps.CfnWorkspace(
            self, "Workspace", alias=f"fmcluster-{cluster_name}",
            alert_manager_definition=(
                render_amp_alertmanager_definition(topic_arn, stack.region) if topic_arn else None
            ),
            logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(
                log_group_arn=self.log_group.log_group_arn
            ),
        )
        self.workspace = ws
        self.workspace_id = ws.attr_workspace_id
        self.remote_write_url = Fn.join("", [ws.attr_prometheus_endpoint, "api/v1/remote_write"])
        self.query_url = Fn.join("", [ws.attr_prometheus_endpoint, "api/v1/query"])
        aps.CfnRuleGroupsNamespace(
            self, "AlertRules", workspace=ws.attr_arn, name=f"{cluster_name}-alerts", data=alert_rules
        )
        if self.alert_topic is not None and self.alert_key is not None:
            aps_principal = iam.ServicePrincipal("aps.amazonaws.com")
            conditions = {
                "ArnEquals": {"aws:SourceArn": ws.attr_arn},
                "StringEquals": {"aws:SourceAccount": stack.account},
            }
            self.alert_topic.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowAmpAlertManagerPublish", principals=[aps_principal],
                    actions=["sns:Publish", "sns:GetTopicAttributes"], resources=[self.alert_topic.topic_arn],
                    conditions=conditions,
                )
            )
            # The key policy is part of the key, which the topic and thus the workspace depend on: it names the
            # account's workspaces by pattern (naming this workspace would be a circular dependency).
            self.alert_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowAmpToUseTheAlertTopicKey", principals=[aps_principal],
                    actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=["*"],
                    conditions={
                        "ArnLike": {
                            "aws:SourceArn": stack.format_arn(service="aps", resource="workspace", resource_name="*")
                        },
                        "StringEquals": {"aws:SourceAccount": stack.account},
                    },
                )
            )

        role = iam.Role(
            self,
            "GrafanaRole",
            assumed_by=iam.ServicePrincipal(
                "grafana.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description=f"fmcluster {cluster_name}: Amazon Managed Grafana reads the AMP workspace and CloudWatch",
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(AMP_QUERY_ACTIONS), resources=[ws.attr_arn]))
        role.add_to_policy(iam.PolicyStatement(actions=["aps:ListWorkspaces"], resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(actions=[*CLOUDWATCH_READ_ACTIONS, "ec2:DescribeRegions"], resources=["*"])
        )
        default_policy = role.node.find_child("DefaultPolicy")
        Validations.of(default_policy).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="aps:ListWorkspaces, CloudWatch metric reads (FSx dashboard) and ec2:DescribeRegions do not "
                "support resource-level permissions; AMP queries are scoped to the workspace ARN.",
            )
        )
        self.grafana_role = role
        self.grafana_workspace = grafana.CfnWorkspace(
            self,
            "Grafana",
            name=f"fmcluster-{cluster_name}",
            description=f"fmcluster {cluster_name}: GPU, EFA, FSx and Slurm dashboards",
            account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[authentication],
            permission_type="CUSTOMER_MANAGED",
            role_arn=role.role_arn,
            data_sources=["PROMETHEUS", "CLOUDWATCH"],
            grafana_version=GRAFANA_WORKSPACE_VERSION,
        )
        self.grafana_url = Fn.join("", ["https://", self.grafana_workspace.attr_endpoint])
        if authentication == "SAML":
            Annotations.of(self.grafana_workspace).add_info(
                "Grafana uses SAML: configure the identity provider on the workspace after deploy "
                "(aws grafana update-workspace-authentication)."
            )


def _allow_cloudwatch_alarms_to_use(key: kms.Key) -> None:
    """Let CloudWatch alarms of this account use the alert topic's ``key`` (statement
    ``AllowCloudWatchAlarmsToUseTheAlertTopicKey``): CloudWatch publishes to a KMS-encrypted topic only then
    (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services)."""
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchAlarmsToUseTheAlertTopicKey",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(key).account}},
        )
    )


def monitoring_heartbeat_alarm(scope: Construct, id: str, *, topic_arn: str, cluster_name: str) -> cloudwatch.CfnAlarm:
    """The dead-man check of the node that runs Prometheus and Alertmanager, from outside it: a CloudWatch alarm on the
    heartbeat that node publishes (``HEARTBEAT_NAMESPACE`` ``HEARTBEAT_METRIC``, ``HEARTBEAT_DIMENSION`` = the
    blueprint name): ``Sum`` < 1 in ``HEARTBEAT_ALARM_PERIODS`` consecutive ``HEARTBEAT_ALARM_PERIOD_S`` periods,
    missing data breaching (a dead node publishes nothing), notifying ``topic_arn`` when it fires and again when it
    recovers. Needs no instance id, so every orchestrator gets the same alarm.

    Args:
        topic_arn: the alert topic (:attr:`ClusterObservability.alert_topic_arn`, created or the blueprint's).
        cluster_name: the blueprint name (the dimension's value; alarm name ``fmcluster-<name>-monitoring-heartbeat``,
            which the created topic's policy names).
    """
    minutes = HEARTBEAT_ALARM_PERIODS * HEARTBEAT_ALARM_PERIOD_S // 60
    return cloudwatch.CfnAlarm(
        scope, id, alarm_name=heartbeat_alarm_name(cluster_name),
        alarm_description=(
            f"fmcluster {cluster_name}: no heartbeat for {minutes} min from the node that runs Prometheus and "
            "Alertmanager (node down, Prometheus or Alertmanager not ready, or the Watchdog not firing). No other "
            "alert of this cluster can reach you meanwhile. See docs/operations.md \"The monitoring host is silent\"."
        ),
        namespace=HEARTBEAT_NAMESPACE, metric_name=HEARTBEAT_METRIC, dimensions=[
            cloudwatch.CfnAlarm.DimensionProperty(name=HEARTBEAT_DIMENSION, value=cluster_name)],
        statistic="Sum", period=HEARTBEAT_ALARM_PERIOD_S, evaluation_periods=HEARTBEAT_ALARM_PERIODS,
        datapoints_to_alarm=HEARTBEAT_ALARM_PERIODS, threshold=1, comparison_operator="LessThanThreshold",
        treat_missing_data="breaching", alarm_actions=[topic_arn], ok_actions=[topic_arn],
    )


@jsii.implements(IValidation)
class _ScrapeTimeoutValidation:
    """Tree-level check (the loader's R-OBS-1 is the first line): Prometheus refuses a config whose
    scrape_timeout is longer than its scrape_interval."""

    def __init__(self, spec: ObservabilitySpec) -> None:
        self.spec = spec

    def validate(self) -> list[str]:
        s = self.spec
        if s.scrape_timeout_seconds > s.scrape_interval_seconds:
            return [
                f"observability.scrape_timeout_seconds: longer than scrape_interval_seconds "
                f"({s.scrape_interval_seconds} s), got {s.scrape_timeout_seconds}; allowed 1..{s.scrape_interval_seconds}"
            ]
        return []
