"""``fmcluster grafana FILE``: provision the blueprint's Amazon Managed Grafana workspace from its deployed
observability stack (the feature registry's ``provision`` hook of observability; the work is
:func:`fmcluster.features.observability.provision_grafana.provision_grafana`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fmcluster.output import out, print_error, print_problems


def run(file: Path, *, profile: str | None = None, session_factory: Any = None) -> int:
    """``fmcluster grafana FILE``: provision the blueprint's AMG workspace from its deployed observability
    stack. Exit 0 done, 1 a call failed, 2 bad input or cannot run (invalid blueprint, not managed, no
    credentials, stack not deployed). ``session_factory(profile, region)`` returns a boto3-like session
    (tests pass one with Stubber-backed clients)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ProfileNotFound

    from fmcluster.blueprint import BlueprintError
    from fmcluster.features.observability.provision_grafana import GrafanaTarget, ProvisionError, provision_grafana
    from fmcluster.features.observability.render_context import observability_context
    from fmcluster.resolved import resolve
    from fmcluster.validation import load_blueprint_with_warnings

    try:
        result = load_blueprint_with_warnings(file)
    except BlueprintError as e:
        print_problems(e.file, e.problems)
        return 2
    bp = result.blueprint
    rc = resolve(bp)
    if bp.observability.metrics != "managed" or rc.profile.head_node_label is None or rc.stacks.observability is None:
        print_error(
            f"observability.metrics: no Amazon Managed Grafana workspace to provision, got {bp.observability.metrics!r} "
            f"with orchestrator {rc.profile.kind}; allowed metrics: managed on a cluster with a head node "
            "(self-hosted Grafana is provisioned from files on the head node)"
        )
        return 2
    try:
        session = (session_factory or (lambda p, r: boto3.Session(profile_name=p, region_name=r)))(profile, bp.region)
        stack = session.client("cloudformation").describe_stacks(StackName=rc.stacks.observability)["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        target = GrafanaTarget.from_outputs(outputs, bp.region)
        report = provision_grafana(observability_context(rc), target, grafana=session.client("grafana"))
    except ProfileNotFound:
        print_error(f"AWS profile {profile!r} not found; allowed a profile from `aws configure list-profiles`")
        return 2
    except NoCredentialsError:
        print_error("no AWS credentials found; allowed the standard chain (environment, ~/.aws, SSO, instance role) "
                    "or --profile NAME of `aws configure list-profiles`")
        return 2
    except ClientError as e:
        print_error(f"{e.operation_name}: {e.response.get('Error', {}).get('Message', e)}")
        return 1
    except (ProvisionError, BotoCoreError) as e:
        print_error(str(e))
        return 1
    for action in report.actions:
        out.print(f"ok {action}", highlight=False)
    out.print(f"Grafana workspace {target.workspace_id}: data source and {len([a for a in report.actions if a.startswith('dashboard')])} "
              "dashboards provisioned", highlight=False)
    return 0
