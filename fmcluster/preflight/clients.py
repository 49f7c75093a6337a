"""boto3 clients for preflight, and the one place that decides whether preflight can run at all.

:func:`make_clients` is looked up at call time by the CLI, so tests replace it (monkeypatch) to
inject moto- or Stubber-backed clients.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ProfileNotFound

NO_CREDENTIALS = (
    "no AWS credentials found; provide them with AWS_PROFILE=<profile> or --profile <profile> for a "
    "configured profile, `aws configure` (or `aws configure sso`) to create one, or the "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables"
)

#: Fail fast and retry a little: preflight is interactive.
CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=20, retries={"mode": "standard", "max_attempts": 3})


class PreflightCannotRun(Exception):
    """Preflight cannot start or continue (no credentials, rejected credentials, bad arguments): exit 2."""


@dataclass
class Clients:
    """The AWS clients preflight uses, all for the blueprint's Region."""

    ec2: Any
    s3: Any
    service_quotas: Any
    fsx: Any
    sts: Any
    sagemaker: Any
    #: EKS (HyperPod EKS with an existing cluster). Default: none (the check is skipped).
    eks: Any = None
    #: IAM Identity Center admin (managed Grafana with AWS_SSO sign-in). Default: none (the check is skipped).
    sso_admin: Any = None


def make_clients(region: str, profile: str | None = None) -> Clients:
    """Clients for ``region`` from the standard credential chain (or ``profile``).

    Raises:
        PreflightCannotRun: the profile does not exist or no credentials are found. Nothing is sent
            to AWS before this check.
    """
    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except ProfileNotFound as e:
        # the profile botocore looked for: --profile, else AWS_PROFILE (the message names it as botocore read it)
        name = profile if profile is not None else e.kwargs.get("profile", os.environ.get("AWS_PROFILE", ""))
        shown = repr(name) if name else "'' (blank)"
        raise PreflightCannotRun(
            f"AWS profile {shown} not found; allowed a profile from `aws configure list-profiles` "
            "(create one with `aws configure --profile NAME`)"
        ) from None
    if session.get_credentials() is None:
        raise PreflightCannotRun(NO_CREDENTIALS)

    def client(name: str) -> Any:
        return session.client(name, region_name=region, config=CLIENT_CONFIG)  # type: ignore[call-overload]

    return Clients(ec2=client("ec2"), s3=client("s3"), service_quotas=client("service-quotas"),
                   fsx=client("fsx"), sts=client("sts"), sagemaker=client("sagemaker"), eks=client("eks"),
                   sso_admin=client("sso-admin"))
