"""Where alerts go: an Alertmanager configuration that routes every alert to one SNS topic.

- managed: the configuration is the ``AlertManagerDefinition`` of the AMP workspace. AMP supports only SNS
  receivers, needs ``sigv4.region`` and forbids ``api_url`` and ``http_config``
  (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-alertmanager-receiver-config.html); the
  definition is YAML with the Alertmanager configuration under ``alertmanager_config``
  (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-alert-manager-upload.html).
- self-hosted: the same configuration runs in Alertmanager on the head node (``sns_configs`` with SigV4
  signing through the instance credentials, https://prometheus.io/docs/alerting/latest/configuration/#sns_config).

The Watchdog alert of the dead-man's switch (render_alert_rules.py) repeats every ``WATCHDOG_REPEAT``; every other alert
repeats every ``REPEAT_INTERVAL`` while it fires.
"""

from __future__ import annotations

from typing import Any

import yaml

from fmcluster.features.observability.render_alert_rules import WATCHDOG_ALERT, WATCHDOG_REPEAT

RECEIVER = "sns"
REPEAT_INTERVAL = "4h"
#: Written into the self-hosted alertmanager.yml in place of the topic ARN; the head-node script replaces it
#: with ``alert_topic_arn`` from the SSM parameter at boot.
TOPIC_PLACEHOLDER = "arn:aws:sns:FMCLUSTER-REGION:000000000000:FMCLUSTER_ALERT_TOPIC"
#: SNS subjects are limited to 100 characters (AMP truncates longer ones); keep ours short.
SUBJECT = '[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }} ({{ .CommonLabels.cluster }})'


def alertmanager_config(topic_arn: str, region: str) -> dict[str, Any]:
    """The Alertmanager configuration: one SNS receiver, grouped by alert name and instance.

    ``topic_arn`` may be a CloudFormation token (the topic the observability stack creates) or
    :data:`TOPIC_PLACEHOLDER`.
    """
    sns = {
        "topic_arn": topic_arn,
        "sigv4": {"region": region},
        "subject": SUBJECT,
        "attributes": {"source": "fmcluster"},
    }
    return {
        "route": {
            "receiver": RECEIVER,
            "group_by": ["alertname", "cluster", "instance"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": REPEAT_INTERVAL,
            "routes": [
                {
                    "receiver": RECEIVER,
                    "matchers": [f'alertname="{WATCHDOG_ALERT}"'],
                    "repeat_interval": WATCHDOG_REPEAT,
                }
            ],
        },
        "receivers": [{"name": RECEIVER, "sns_configs": [sns]}],
    }


def render_alertmanager_yml(topic_arn: str, region: str) -> str:
    """``alertmanager.yml`` for the self-hosted Alertmanager (``amtool check-config`` accepts it)."""
    header = "# fmcluster Alertmanager: every alert to SNS. Rendered by fmcluster; do not edit by hand.\n"
    return header + yaml.safe_dump(alertmanager_config(topic_arn, region), sort_keys=False, width=100000)


def render_amp_alertmanager_definition(topic_arn: str, region: str) -> str:
    """The ``AlertManagerDefinition`` of an AMP workspace: the configuration under ``alertmanager_config``
    as a block string (AMP's upload format)."""
    inner = yaml.safe_dump(alertmanager_config(topic_arn, region), sort_keys=False, width=100000)
    return "alertmanager_config: |\n" + "".join(f"  {line}\n" for line in inner.splitlines())
