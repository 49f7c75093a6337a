"""After-deploy provisioning that CloudFormation cannot express (Amazon Managed Grafana contents).

Layer: above review, below cli (tests/test_layering.py). Each feature's after-deploy command is its ``provision`` hook
in the feature registry (:data:`fmcluster.features.registry.FEATURES`); :func:`run` is ``fmcluster grafana``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fmcluster.features.registry import FEATURES


def run(file: Path, *, profile: str | None = None, session_factory: Any = None) -> int:
    """``fmcluster grafana FILE``: provision the blueprint's AMG workspace from its deployed observability
    stack (the observability feature's ``provision`` hook). Exit 0 done, 1 a call failed, 2 bad input or cannot run
    (invalid blueprint, not managed, no credentials, stack not deployed). ``session_factory(profile, region)``
    returns a boto3-like session (tests pass one with Stubber-backed clients)."""
    return FEATURES["observability"].run_provision(file, profile=profile, session_factory=session_factory)
