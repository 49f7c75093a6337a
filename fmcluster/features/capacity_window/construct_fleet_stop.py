"""The budget's stop action: at ``budget.stop_compute_at_percent`` the compute fleet stops, data stays
(docs/capacity.md "Budget").

AWS Budgets actions can only apply an IAM policy, apply a service control policy, or stop listed EC2 or RDS instances
(``AWS::Budgets::BudgetsAction`` ``Definition``: ``IamActionDefinition``, ``ScpActionDefinition``,
``SsmActionDefinition`` with ``Subtype`` ``STOP_EC2_INSTANCES | STOP_RDS_INSTANCES`` and 1-100 ``InstanceIds``;
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-budgets-budgetsaction-definition.html,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-budgets-budgetsaction-ssmactiondefinition.html;
AWS Cost Management user guide "Configuring a budget action"), and an orchestrator's nodes come and go under instance
ids no budget can name, and an instance stopped behind the orchestrator's back is one it did not stop. So the stop is
routed: the budget's notification at the stop threshold goes to its own SNS topic (:class:`BudgetStopTopic`, in
``<name>-observability`` beside the budget), and a Lambda function in ``<name>-cluster`` (:class:`FleetStopAction`)
subscribed to it stops the fleet through the orchestrator's own mechanism. What that mechanism is, its handler, its
environment and its IAM statements are the orchestrator's: each orchestrator slice builds a :class:`FleetStop`
(``fmcluster/orchestrators/<kind>/construct_fleet_stop.py``); this module knows none.

Budgets publishes to a topic only under the topic's policy and, for a KMS-encrypted topic, the key's policy
(``budgets.amazonaws.com`` with ``aws:SourceAccount`` / ``aws:SourceArn``; AWS Cost Management user guide
``budgets-sns-policy.html``); SNS invokes a subscribed function under the function's resource policy
(https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html).

A failed stop is not silent: SNS invokes the function asynchronously and nothing waits for its result, so
:class:`FleetStopAction` adds the CloudWatch alarm ``fmcluster-<name>-budget-stop-errors`` on the function's
``AWS/Lambda`` ``Errors`` metric (dimension ``FunctionName``; "the number of invocations that result in a function
error", exceptions the code raises included: Lambda developer guide, "Types of metrics for Lambda functions",
https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html), ``Sum`` >= 1 in one period, missing data
not breaching (no invocation is no failure), to the cluster's alert topic. Every slice's handler raises on an API
error for this reason. The created alert topic lets this alarm publish (``ClusterObservability``); an imported topic's
policy is its owner's to change (docs/capacity.md "Budget").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from fmcluster.constructs.orchestrator import acknowledge, acknowledge_wildcards
from fmcluster.features.node.construct_parent_ami import RUNTIME

#: Seconds the function may run (one or two API calls per group, with the SDK's retries).
TIMEOUT_S = 120
#: The errors alarm's period: one minute (PutMetricAlarm ``Period``: 60 or a multiple of it for standard-resolution
#: metrics, https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html).
ERRORS_ALARM_PERIOD_S = 60


def budget_stop_topic_name(cluster_name: str) -> str:
    """``fmcluster-<name>-budget-stop``: the SNS topic of the budget's stop notification (at most 53 characters)."""
    return f"fmcluster-{cluster_name}-budget-stop"


def budget_stop_alarm_name(cluster_name: str) -> str:
    """``fmcluster-<name>-budget-stop-errors``: the stop function's errors alarm, also named in the alert topic's
    policy."""
    return f"fmcluster-{cluster_name}-budget-stop-errors"


@dataclass(frozen=True)
class FleetStop:
    """What an orchestrator's slice gives the stop action.

    Attributes:
        handler_source: the Python source of the function (``handler(event, context)``), shipped inline.
        environment: the function's environment (names of what to stop; strings or tokens).
        statements: the function's IAM statements, each limited to this cluster's resources where the action allows.
        mechanism: one line for ``plan`` and the function's description (what "stop" means on this orchestrator).
        wildcard_reasons: regex over an ``AwsSolutions-IAM5`` finding -> why that wildcard is needed (cdk-nag).
    """

    handler_source: str
    environment: Mapping[str, str]
    statements: Sequence[iam.PolicyStatement]
    mechanism: str
    wildcard_reasons: Mapping[str, str] = field(default_factory=dict)


class BudgetStopTopic(Construct):
    """The SNS topic ``fmcluster-<name>-budget-stop`` (KMS-encrypted with its own key, TLS only) that only AWS Budgets of
    this account may publish to.

    Attributes: ``topic`` (``sns.Topic``), ``key`` (``kms.Key``).
    """

    def __init__(self, scope: Construct, id: str, *, cluster_name: str) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.key = kms.Key(self, "Key", enable_key_rotation=True,
                           description=f"fmcluster {cluster_name}: the budget's stop notification topic")
        self.topic = sns.Topic(self, "Topic", topic_name=budget_stop_topic_name(cluster_name), master_key=self.key,
                               enforce_ssl=True, display_name=f"fmcluster {cluster_name} budget stop")
        allow_budgets_to_publish(stack, self.topic, self.key, key_sid="AllowTheBudgetToUseTheStopTopicKey")


def allow_budgets_to_publish(stack: Stack, topic: sns.ITopic, key: kms.IKey, *, key_sid: str) -> None:
    """Let AWS Budgets of this account publish to ``topic`` (statement ``AllowTheBudgetToPublish``) and use its KMS
    ``key`` (statement ``key_sid``), both limited by ``aws:SourceAccount`` and a budgets ``aws:SourceArn`` against the
    confused deputy (AWS Cost Management user guide, "Creating an Amazon SNS topic for budget notifications",
    https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-sns-policy.html)."""
    principal = iam.ServicePrincipal("budgets.amazonaws.com")
    conditions = {"StringEquals": {"aws:SourceAccount": stack.account},
                  "ArnLike": {"aws:SourceArn": stack.format_arn(service="budgets", region="", resource="*",
                                                                arn_format=ArnFormat.NO_RESOURCE_NAME)}}
    key.add_to_resource_policy(iam.PolicyStatement(
        sid=key_sid, principals=[principal],
        actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"], conditions=conditions))
    topic.add_to_resource_policy(iam.PolicyStatement(
        sid="AllowTheBudgetToPublish", principals=[principal], actions=["sns:Publish"],
        resources=[topic.topic_arn], conditions=conditions))


class FleetStopAction(Construct):
    """A Lambda function subscribed to the budget's stop topic that runs the orchestrator's :class:`FleetStop`.

    Args:
        topic_arn: the stop topic (:class:`BudgetStopTopic`, from ``<name>-observability``).
        stop: the orchestrator's stop (handler, environment, statements).
        cluster_name: the blueprint name.
        alert_topic_arn: the alert receivers' topic the errors alarm notifies, or None (no alarm).

    Attributes: ``function`` (``lambda_.Function``), ``role``, ``policy`` (``iam.Policy`` with ``stop.statements``),
    ``alarm`` (``cloudwatch.CfnAlarm`` ``fmcluster-<name>-budget-stop-errors``, or None without ``alert_topic_arn``).
    """

    def __init__(self, scope: Construct, id: str, *, topic_arn: str, stop: FleetStop, cluster_name: str,
                 alert_topic_arn: str | None = None) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                             description=f"fmcluster {cluster_name}: the budget's stop action ({stop.mechanism})"[:1000],
                             managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(
                                 "service-role/AWSLambdaBasicExecutionRole")])
        acknowledge(self.role, ("AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                                "AWSLambdaBasicExecutionRole]",
                                "The AWS managed policy Lambda documents for writing the function's logs; nothing else."))
        self.policy = iam.Policy(self, "Stop", statements=list(stop.statements))
        self.policy.attach_to_role(self.role)
        if stop.wildcard_reasons:
            acknowledge_wildcards(self.policy, dict(stop.wildcard_reasons))
        self.function = lambda_.Function(
            self, "Function", runtime=RUNTIME, handler="index.handler", role=self.role,
            code=lambda_.Code.from_inline(stop.handler_source), timeout=Duration.seconds(TIMEOUT_S),
            environment=dict(stop.environment), description=f"fmcluster {cluster_name}: budget stop: {stop.mechanism}"[:256])
        self.function.node.add_dependency(self.policy)
        topic = sns.Topic.from_topic_arn(self, "Topic", topic_arn)
        # the subscription and the function's resource policy (sns.amazonaws.com, aws:SourceArn = the topic)
        sns.Subscription(self, "Subscription", topic=topic, endpoint=self.function.function_arn,
                         protocol=sns.SubscriptionProtocol.LAMBDA)
        self.function.add_permission("InvokedByTheStopTopic", principal=iam.ServicePrincipal("sns.amazonaws.com"),
                                     source_arn=topic_arn)
        self.alarm = None if alert_topic_arn is None else self._errors_alarm(cluster_name, alert_topic_arn)

    def _errors_alarm(self, cluster_name: str, alert_topic_arn: str) -> cloudwatch.CfnAlarm:
        """``Errors`` of the function, ``Sum`` >= 1 over one ``ERRORS_ALARM_PERIOD_S`` period, missing data not
        breaching, to ``alert_topic_arn`` (module docstring)."""
        return cloudwatch.CfnAlarm(
            self, "ErrorsAlarm", alarm_name=budget_stop_alarm_name(cluster_name),
            alarm_description=(f"fmcluster {cluster_name}: the budget's stop action failed, so the compute fleet may "
                               "still be running. Its log says why (CloudWatch Logs, the function "
                               f"{self.function.function_name}); docs/capacity.md \"Budget\"."),
            namespace="AWS/Lambda", metric_name="Errors",
            dimensions=[cloudwatch.CfnAlarm.DimensionProperty(name="FunctionName", value=self.function.function_name)],
            statistic="Sum", period=ERRORS_ALARM_PERIOD_S, evaluation_periods=1, datapoints_to_alarm=1, threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold", treat_missing_data="notBreaching",
            alarm_actions=[alert_topic_arn])
