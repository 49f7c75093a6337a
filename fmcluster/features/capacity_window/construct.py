"""The end of a capacity window in ``<name>-cluster``: one EventBridge rule on EC2's Capacity Block expiration
warning (:func:`fmcluster.features.capacity_window.plan.expiration_warning_pattern`) with two targets:

- ``HeadNode``: SSM Run Command of the AWS-owned document ``AWS-RunShellScript`` on the head node's instance id, whose
  one command runs the rendered ``fmcluster-window-end`` (carried in the command, base64, so the head node needs no
  download and no extra permission) with the event's ``capacity-reservation-id`` and ``end-date``. EventBridge can
  target Run Command directly with a role that may ``ssm:SendCommand`` (RunCommandParameters: ``InstanceIds`` or a
  tag; https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RunCommandParameters.html,
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-targets.html "Systems Manager Run Command"); the input
  transformer puts the event's fields into the command
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html; an input template is at
  most 8192 characters: :data:`INPUT_TEMPLATE_MAX`, checked here).
- ``AlertTopic`` (when the cluster has one): the alert receivers get one message from the same event; the topic's
  policy lets this rule publish (:mod:`fmcluster.features.observability.construct`).

The start of a window: one-time schedules (:class:`WindowPreloadSchedules`, :class:`WindowStartGate`) and a second
rule on EC2's Capacity Block Delivered event (:class:`WindowStartRule`) that deletes the previous end's hold. The
budget (:class:`ClusterBudget`) lives here too; its stop action is :mod:`.construct_fleet_stop`.

What fmcluster cannot check offline: that the head node's SSM agent is online at the warning (it is the same agent the
Session Manager access output uses); the Run Command's output is in the SSM console's command history.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import UTC, datetime

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from fmcluster.features.capacity_window.plan import (
    CHECKPOINT_GRACE_S,
    Window,
    delivered_pattern,
    expiration_warning_pattern,
    preload_schedule_name,
    window_end_rule_name,
    window_start_rule_name,
)
from fmcluster.features.capacity_window.render_window import PRELOAD_SCRIPT, SCRIPT, START_SCRIPT

#: EventBridge's limit on an input transformer's ``InputTemplate`` (API InputTransformer: "Maximum length of 8192").
INPUT_TEMPLATE_MAX = 8192
#: The event fields the targets receive (the detail of the expiration warning, EC2 user guide capacity-blocks-monitor).
INPUT_PATHS = {"reservation": "$.detail.capacity-reservation-id", "end": "$.detail.end-date"}


def run_command(script: str) -> str:
    """The one shell command the head node runs: the script decoded from base64 and run by bash with the event's
    reservation id and end date (EventBridge placeholders ``<reservation>`` ``<end>``); no file and no redirection,
    so the command has no ``<`` or ``>`` but the placeholders'."""
    encoded = base64.b64encode(script.encode()).decode()
    return f'bash -c "$(echo {encoded} | base64 -d)" {SCRIPT} <reservation> <end>'


#: Seconds the preload's Run Command may run past the window's start (its last progress report and exit).
PRELOAD_TIMEOUT_MARGIN_S = 900


def preload_command(script: str) -> str:
    """The one shell command the head node runs for a window's preload (the script from base64, as
    :func:`run_command`)."""
    encoded = base64.b64encode(script.encode()).decode()
    return f'bash -c "$(echo {encoded} | base64 -d)" {PRELOAD_SCRIPT}'


def start_command(script: str, group: str) -> str:
    """The one shell command the head node runs at a window's start: ``fmcluster-window-start <group>`` from base64
    (as :func:`run_command`), which deletes the previous window end's hold if it is still there."""
    encoded = base64.b64encode(script.encode()).decode()
    return f'bash -c "$(echo {encoded} | base64 -d)" {START_SCRIPT} {group}'


def alert_message(cluster_name: str, ws: Sequence[Window]) -> str:
    """The alert topic's message (an input template: a JSON string with the event's placeholders)."""
    groups = ", ".join(f"{w.group} ({w.reservation_id})" for w in ws)
    holds = ", ".join(sorted({w.hold_reservation for w in ws}))
    return json.dumps(
        f"fmcluster {cluster_name}: Capacity Block <reservation> ends at <end>; its instances begin to terminate in "
        f"10 minutes. The head node holds the window's nodes in a Slurm reservation (no new job starts there: {holds}), "
        f"signals their jobs to checkpoint and requeues them "
        f"after {CHECKPOINT_GRACE_S} s (SSM Run Command history: {SCRIPT}). Windows of this cluster: {groups}."
    )



def run_shell_arns(stack: Stack, instance_id: str) -> tuple[str, str]:
    """The two resources ``ssm:SendCommand`` of ``AWS-RunShellScript`` on one instance needs: the AWS-owned document's
    ARN (no account) and the instance's ARN (Service Authorization Reference, AWS Systems Manager, SendCommand:
    document and instance resource types, https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssystemsmanager.html)."""
    document_arn = stack.format_arn(service="ssm", account="", resource="document", resource_name="AWS-RunShellScript")
    return document_arn, stack.format_arn(service="ec2", resource="instance", resource_name=instance_id)

class WindowEndAutomation(Construct):
    """The rule ``fmcluster-<name>-window-end`` and the role EventBridge sends the command with.

    Args:
        windows: the cluster's windows (one or more; :func:`fmcluster.features.capacity_window.plan.windows`).
        script: the rendered ``fmcluster-window-end`` (:func:`render_window.render_window_end`).
        instance_id: the head node's EC2 instance id (a token, e.g. ParallelCluster's ``headNode.instanceId``).
        cluster_name: the blueprint name.
        topic_arn: the alert topic, or ``None`` (no receivers: only the head node acts).

    Attributes: ``rule`` (the ``AWS::Events::Rule``), ``role``.

    Raises:
        ValueError: ``windows`` is empty, or the command does not fit EventBridge's input template.
    """

    def __init__(self, scope: Construct, id: str, *, windows: Sequence[Window], script: str, instance_id: str,
                 cluster_name: str, topic_arn: str | None = None) -> None:
        super().__init__(scope, id)
        if not windows:
            raise ValueError("WindowEndAutomation needs at least one window")
        stack = Stack.of(self)
        document_arn, instance_arn = run_shell_arns(stack, instance_id)
        # Only this rule may assume the role (confused-deputy guard: aws:SourceArn on the trust,
        # https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-identity-based.html)
        trusted = iam.ServicePrincipal("events.amazonaws.com",
                                       conditions={"ArnEquals": {"aws:SourceArn": rule_arn(stack, cluster_name)}})
        self.role = iam.Role(self, "RunCommandRole", assumed_by=trusted,
                             description=f"fmcluster {cluster_name}: EventBridge sends the window-end command to the head node")
        self.role.add_to_policy(iam.PolicyStatement(actions=["ssm:SendCommand"], resources=[document_arn, instance_arn]))
        template = json.dumps({"commands": [run_command(script)]})
        if len(template) > INPUT_TEMPLATE_MAX:
            raise ValueError(f"the window-end command takes {len(template)} characters; EventBridge allows "
                             f"{INPUT_TEMPLATE_MAX} in an input template")
        targets = [events.CfnRule.TargetProperty(
            id="HeadNode", arn=document_arn, role_arn=self.role.role_arn,
            run_command_parameters=events.CfnRule.RunCommandParametersProperty(run_command_targets=[
                events.CfnRule.RunCommandTargetProperty(key="InstanceIds", values=[instance_id])]),
            input_transformer=events.CfnRule.InputTransformerProperty(input_paths_map=INPUT_PATHS,
                                                                      input_template=template),
        )]
        if topic_arn is not None:
            targets.append(events.CfnRule.TargetProperty(
                id="AlertTopic", arn=topic_arn,
                input_transformer=events.CfnRule.InputTransformerProperty(
                    input_paths_map=INPUT_PATHS, input_template=alert_message(cluster_name, windows)),
            ))
        self.rule = events.CfnRule(
            self, "Rule", name=window_end_rule_name(cluster_name), state="ENABLED",
            description=f"fmcluster {cluster_name}: Capacity Block expiration warning -> hold, checkpoint, requeue, alert",
            event_pattern=expiration_warning_pattern(windows), targets=targets,
        )


class WindowStartRule(Construct):
    """The rule ``fmcluster-<name>-window-start`` on EC2's Capacity Block Delivered event
    (:func:`fmcluster.features.capacity_window.plan.delivered_pattern`): SSM Run Command of ``AWS-RunShellScript`` on
    the head node runs :func:`start_command` with the event's reservation id, so that a window's start deletes the
    previous end's hold also when the blueprint gives no ``starts_at`` (no start schedule) or the block starts
    late. Same target, role and trust as :class:`WindowEndAutomation`.

    Args:
        windows: the cluster's windows (one or more); script: the rendered ``fmcluster-window-start``;
        instance_id: the head node's EC2 instance id (a token); cluster_name: the blueprint name.

    Attributes: ``rule`` (the ``AWS::Events::Rule``), ``role``.

    Raises:
        ValueError: ``windows`` is empty, or the command does not fit EventBridge's input template.
    """

    def __init__(self, scope: Construct, id: str, *, windows: Sequence[Window], script: str, instance_id: str,
                 cluster_name: str) -> None:
        super().__init__(scope, id)
        if not windows:
            raise ValueError("WindowStartRule needs at least one window")
        stack = Stack.of(self)
        document_arn, instance_arn = run_shell_arns(stack, instance_id)
        name = window_start_rule_name(cluster_name)
        trusted = iam.ServicePrincipal("events.amazonaws.com", conditions={"ArnEquals": {"aws:SourceArn": stack.format_arn(
            service="events", resource="rule", resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME)}})
        self.role = iam.Role(self, "RunCommandRole", assumed_by=trusted,
                             description=f"fmcluster {cluster_name}: EventBridge sends the window-start command to the head node")
        self.role.add_to_policy(iam.PolicyStatement(actions=["ssm:SendCommand"], resources=[document_arn, instance_arn]))
        template = json.dumps({"commands": [start_command(script, "<reservation>")]})
        if len(template) > INPUT_TEMPLATE_MAX:
            raise ValueError(f"the window-start command takes {len(template)} characters; EventBridge allows "
                             f"{INPUT_TEMPLATE_MAX} in an input template")
        self.rule = events.CfnRule(
            self, "Rule", name=name, state="ENABLED",
            description=f"fmcluster {cluster_name}: Capacity Block delivered -> delete the last window end's hold",
            event_pattern=delivered_pattern(windows),
            targets=[events.CfnRule.TargetProperty(
                id="HeadNode", arn=document_arn, role_arn=self.role.role_arn,
                run_command_parameters=events.CfnRule.RunCommandParametersProperty(run_command_targets=[
                    events.CfnRule.RunCommandTargetProperty(key="InstanceIds", values=[instance_id])]),
                input_transformer=events.CfnRule.InputTransformerProperty(
                    input_paths_map={"reservation": INPUT_PATHS["reservation"]}, input_template=template),
            )],
        )


class WindowPreloadSchedules(Construct):
    """One ``AWS::Scheduler::Schedule`` per window that has a start time and a preload: at
    ``starts_at - lead_s`` (a one-time ``at()`` expression in UTC, flexible window off) its universal target calls
    SSM ``SendCommand`` (``arn:aws:scheduler:::aws-sdk:ssm:sendCommand``) with ``AWS-RunShellScript`` on the head node,
    which runs ``fmcluster-window-preload`` (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html
    "One-time schedules"; https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html).
    The schedule stays after it ran (``ActionAfterCompletion: NONE``): CloudFormation owns it. EventBridge Scheduler's
    limit on a target's ``Input`` is not checked here (not verified offline; the command of the example is ~3 KB).

    Args:
        windows: the cluster's windows; those without ``starts_at`` or a preload get no schedule.
        scripts: group -> the rendered ``fmcluster-window-preload`` of that window.
        instance_id: the head node's EC2 instance id (a token).
        cluster_name: the blueprint name.

    Attributes: ``schedules`` (group -> ``CfnSchedule``), ``role`` (or ``None`` without a schedule).
    """

    def __init__(self, scope: Construct, id: str, *, windows: Sequence[Window], scripts: dict[str, str],
                 instance_id: str, cluster_name: str) -> None:
        super().__init__(scope, id)
        due = [w for w in windows if w.preload_starts_at is not None and w.group in scripts]
        self.schedules: dict[str, scheduler.CfnSchedule] = {}
        self.role: iam.Role | None = None
        if not due:
            return
        self.role = send_command_role(self, instance_id,
                                      f"fmcluster {cluster_name}: EventBridge Scheduler starts the window preload")
        for w in due:
            when = w.preload_starts_at
            assert when is not None
            self.schedules[w.group] = send_command_schedule(
                self, w.group, role=self.role, instance_id=instance_id, when=when,
                name=preload_schedule_name(cluster_name, w.index),  # at most 53 of Scheduler's 64 characters
                description=f"fmcluster {cluster_name}: preload {w.preload_gib} GiB before window {w.group} starts",
                # AWS-RunShellScript stops a command at executionTimeout, 3600 s by default (the document's
                # parameters); the preload polls until the window starts: lead time plus a margin.
                command=preload_command(scripts[w.group]), timeout_s=(w.lead_s or 0) + PRELOAD_TIMEOUT_MARGIN_S,
                comment=f"fmcluster {cluster_name} preload {w.group}")


class WindowStartGate(Construct):
    """One ``AWS::Scheduler::Schedule`` per window with a start time: at ``starts_at`` it runs ``commands[group]`` on
    the head node through SSM ``SendCommand`` (as :class:`WindowPreloadSchedules`): :func:`start_command` (delete the
    previous window end's hold) and then, where the head node runs it, the acceptance gate watcher's
    ``request <group>``, so that the window's nodes are gated on the watcher's next pass (docs/capacity.md "The
    capacity window"). Jobs already queued for the window may still start on a node before that pass (up to the
    watcher's 60 s); submit them with ``--begin`` after the start to leave the gate the first minutes.

    Args:
        windows: the cluster's windows; those without ``starts_at`` or a command get no schedule.
        commands: group -> the command to run at that window's start.
        instance_id: the head node's EC2 instance id (a token).
        cluster_name: the blueprint name.

    Attributes: ``schedules`` (group -> ``CfnSchedule``), ``role`` (or ``None`` without a schedule).
    """

    def __init__(self, scope: Construct, id: str, *, windows: Sequence[Window], commands: dict[str, str],
                 instance_id: str, cluster_name: str) -> None:
        super().__init__(scope, id)
        due = [w for w in windows if w.starts_at is not None and w.group in commands]
        self.schedules: dict[str, scheduler.CfnSchedule] = {}
        self.role: iam.Role | None = None
        if not due:
            return
        self.role = send_command_role(self, instance_id,
                                      f"fmcluster {cluster_name}: EventBridge Scheduler resumes and gates a window's nodes at its start")
        for w in due:
            assert w.starts_at is not None
            self.schedules[w.group] = send_command_schedule(
                self, w.group, role=self.role, instance_id=instance_id, when=w.starts_at,
                name=start_schedule_name(cluster_name, w.index),
                description=f"fmcluster {cluster_name}: resume and gate the nodes of window {w.group} at its start",
                command=commands[w.group], timeout_s=START_COMMAND_TIMEOUT_S,
                comment=f"fmcluster {cluster_name} window start {w.group}")


#: Seconds the start's Run Command may run (it only writes the watcher's request and returns).
START_COMMAND_TIMEOUT_S = 300


def start_schedule_name(cluster_name: str, index: int) -> str:
    """``fmcluster-<name>-start-<n>``: the schedule of ``compute[n]``'s window start (at most 51 characters)."""
    return f"fmcluster-{cluster_name}-start-{index}"


def send_command_role(scope: Construct, instance_id: str, description: str) -> iam.Role:
    """A role EventBridge Scheduler assumes to run ``AWS-RunShellScript`` on the instance ``instance_id`` only."""
    stack = Stack.of(scope)
    document_arn, instance_arn = run_shell_arns(stack, instance_id)
    # Confused-deputy guard: only schedules of this account's default schedule group (fmcluster's schedules set no
    # group) may assume the role; Scheduler's guide scopes aws:SourceArn to a schedule group, never to a schedule
    # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/cross-service-confused-deputy-prevention.html).
    group_arn = stack.format_arn(service="scheduler", resource="schedule-group", resource_name="default")
    trusted = iam.ServicePrincipal("scheduler.amazonaws.com", conditions={
        "StringEquals": {"aws:SourceAccount": stack.account}, "ArnEquals": {"aws:SourceArn": group_arn}})
    role = iam.Role(scope, "SchedulerRole", assumed_by=trusted, description=description)
    role.add_to_policy(iam.PolicyStatement(actions=["ssm:SendCommand"], resources=[document_arn, instance_arn]))
    return role


def send_command_schedule(scope: Construct, id: str, *, role: iam.Role, instance_id: str, when: datetime, name: str,
                          description: str, command: str, timeout_s: int, comment: str) -> scheduler.CfnSchedule:
    """A one-time schedule at ``when`` (``at()`` in UTC, flexible window off) whose universal target calls SSM
    ``SendCommand`` with ``AWS-RunShellScript`` running ``command`` on ``instance_id`` for at most ``timeout_s``
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html "One-time schedules";
    https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html)."""
    stack = Stack.of(scope)
    return scheduler.CfnSchedule(
        scope, id, name=name, state="ENABLED", description=description,
        schedule_expression=f"at({when.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})",
        schedule_expression_timezone="UTC",
        flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
        target=scheduler.CfnSchedule.TargetProperty(
            arn=f"arn:{stack.partition}:scheduler:::aws-sdk:ssm:sendCommand", role_arn=role.role_arn,
            input=stack.to_json_string({
                "DocumentName": "AWS-RunShellScript", "InstanceIds": [instance_id],
                "Parameters": {"commands": [command], "executionTimeout": [str(timeout_s)]},
                "Comment": comment[:100],
            }),
        ),
    )


def rule_arn(stack: Stack, cluster_name: str) -> str:
    """The ARN of the cluster's window-end rule, from its fixed name (for the alert topic's policy, in another stack)."""
    return stack.format_arn(service="events", resource="rule", resource_name=window_end_rule_name(cluster_name),
                            arn_format=ArnFormat.SLASH_RESOURCE_NAME)


#: The cost-allocation tag the budget filters on: fmcluster's own tag, which every resource of the cluster carries
#: (``fmcluster.resolved.BLUEPRINT_TAG``; a user-defined tag appears in billing data as ``user:<key>``, and only
#: after it is activated as a cost allocation tag in the Billing console:
#: https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/activating-tags.html).
def budget_tag_filter(tag_key: str, tag_value: str) -> str:
    """The budget's ``TagKeyValue`` cost filter value, ``user:<key>$<value>`` (AWS Budgets CostFilters: the tag key
    and value joined by ``$``; https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Budget.html)."""
    return f"user:{tag_key}${tag_value}"


def budget_name(cluster_name: str, region: str) -> str:
    """``fmcluster-<name>-<region>``: the budget's name. AWS Budgets names are unique within an account, not a Region
    (API Budget ``BudgetName``: "The name must be unique within an account"; 1-100 characters, no ``:`` or ``\\``;
    https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Budget.html), so two clusters of
    the same name in two Regions need the Region in the name; it stays the same across updates of one cluster (at
    most 10 + 32 + 1 + 14 characters). ``region`` may be a token (``AWS::Region``)."""
    return f"fmcluster-{cluster_name}-{region}"


class ClusterBudget(Construct):
    """An ``AWS::Budgets::Budget`` (COST, MONTHLY, USD) over the resources tagged ``tag_key=tag_value``, with one
    ACTUAL / GREATER_THAN / PERCENTAGE notification per threshold, each to the alert topic (subscriber type SNS).
    The topic's policy must let ``budgets.amazonaws.com`` publish (:meth:`ClusterObservability`'s budget statement;
    https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-sns-policy.html).

    Args:
        monthly_usd: the limit; thresholds_percent: the notification thresholds (percent of the limit).
        tag_key, tag_value: the cost filter (the cluster's ``fmcluster:blueprint`` tag).
        topic_arn: the alert topic.
        stop_percent, stop_topic_arn: the stop threshold (``budget.stop_compute_at_percent``) and the topic its
            notification goes to (:class:`fmcluster.features.capacity_window.construct_fleet_stop.BudgetStopTopic`),
            one more notification after the thresholds'; both or neither. Default: none.
        stop_emails: addresses the stop's notification also mails (the blueprint's ``alert_email``). Default: none.
        cluster_name: the blueprint name; region: the cluster's Region (budget name :func:`budget_name`, and a
            ``Region`` cost filter: a cluster of the same name in another Region carries the same tag, and AWS Budgets
            filters on ``Region`` among its cost filters, API Budget ``CostFilters``: "such as Region, Service,
            LinkedAccount, Tag, or CostCategory").

    Attributes: ``budget`` (the ``CfnBudget``).
    """

    def __init__(self, scope: Construct, id: str, *, monthly_usd: int, thresholds_percent: Sequence[int], tag_key: str,
                 tag_value: str, topic_arn: str, cluster_name: str, region: str, stop_percent: int | None = None,
                 stop_topic_arn: str | None = None, stop_emails: Sequence[str] = ()) -> None:
        super().__init__(scope, id)
        def sns(address: str) -> budgets.CfnBudget.SubscriberProperty:
            return budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=address)

        notes = [(pct, [sns(topic_arn)]) for pct in thresholds_percent]
        if stop_percent is not None and stop_topic_arn is not None:
            # the stop's notification also mails the alert receivers, so people hear the fleet was stopped: a
            # notification has one SNS subscriber and up to 10 email subscribers (API CreateBudget,
            # NotificationsWithSubscribers)
            notes.append((stop_percent, [sns(stop_topic_arn), *(
                budgets.CfnBudget.SubscriberProperty(subscription_type="EMAIL", address=a) for a in stop_emails[:10])]))
        self.budget = budgets.CfnBudget(
            self, "Budget",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_name=budget_name(cluster_name, region), budget_type="COST", time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=monthly_usd, unit="USD"),
                cost_filters={"TagKeyValue": [budget_tag_filter(tag_key, tag_value)], "Region": [region]},
            ),
            notifications_with_subscribers=[
                budgets.CfnBudget.NotificationWithSubscribersProperty(
                    notification=budgets.CfnBudget.NotificationProperty(
                        notification_type="ACTUAL", comparison_operator="GREATER_THAN", threshold=pct,
                        threshold_type="PERCENTAGE"),
                    subscribers=subscribers,
                )
                for pct, subscribers in notes
            ],
        )
