"""Pieces every orchestrator construct shares: cdk-nag acknowledgements and the launcher that starts the head-node
script once Slurm answers (HyperPod controller, PCS login node). What nodes need from the storage layer (checkpoint
access, FSx describe, the Lustre mount script) is the storage feature's (:mod:`fmcluster.features.storage.construct`).

Sources:
- PCS runs ``text/x-shellscript`` user data after the node registers and before the Slurm daemon starts
  (login nodes: ``sackd``, which fetches the configuration the client commands need):
  https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ec2-user-data.html,
  https://docs.aws.amazon.com/pcs/latest/userguide/slurm-configuration.html
"""

from __future__ import annotations

import re

import jsii
from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct, IValidation

from fmcluster.resolved import NODE_DIR

#: File name of the observability head-node script (lifecycle folder, S3 asset) and where nodes keep it
#: (in :data:`fmcluster.resolved.NODE_DIR`).
HEAD_NODE_SCRIPT = "head-node.sh"
HEAD_NODE_PATH = f"{NODE_DIR}/{HEAD_NODE_SCRIPT}"
#: Transient systemd unit that runs the head-node script, and its log.
HEAD_NODE_UNIT = "fmcluster-head-node"
HEAD_NODE_LOG = "/var/log/fmcluster-head-node.log"
AFTER_SLURM_PATH = f"{NODE_DIR}/after-slurm.sh"
#: How long the launcher waits for Slurm to answer before it runs the script anyway (the Slurm exporter
#: and the Slurm target refresh retry on their own), and how often it asks.
SLURM_WAIT_SECONDS = 1800
SLURM_POLL_SECONDS = 15
#: Where ``sinfo`` lives when it is not on PATH: HyperPod (``/opt/slurm``), PCS (``/opt/aws/pcs/scheduler``).
SINFO_CANDIDATES = ("/opt/slurm/bin/sinfo", "/opt/aws/pcs/scheduler/slurm-*/bin/sinfo")
_AFTER_SLURM_EOF = "FMCLUSTER_AFTER_SLURM_EOF"

def acknowledge(scope: IConstruct, *findings: tuple[str, str]) -> None:
    """Acknowledge cdk-nag findings ``(id, reason)`` on ``scope`` only (narrowest scope)."""
    Validations.of(scope).acknowledge(*(Acknowledgment(id=i, reason=r) for i, r in findings))


def acknowledge_wildcards(policy_scope: IConstruct, reason_by_pattern: dict[str, str]) -> None:
    """Acknowledge every ``AwsSolutions-IAM5`` finding of the IAM policies under ``policy_scope`` whose
    action or resource matches one of the regex patterns, each with its own reason.

    cdk-nag v3 needs the exact finding id (``AwsSolutions-IAM5[Resource::<...>]``), and resources from
    another stack only get their final form (an export name) when CDK resolves cross-stack
    references, after construction. The ids are therefore computed in a construct validation
    (which runs after references are resolved and before the templates are written) from the
    policy document itself, not written by hand. A wildcard no pattern explains stays
    unacknowledged and fails synth.
    """
    policy_scope.node.add_validation(_WildcardAcknowledger(policy_scope, reason_by_pattern))


@jsii.implements(IValidation)
class _WildcardAcknowledger:
    def __init__(self, scope: IConstruct, reasons: dict[str, str]) -> None:
        self._scope = scope
        self._reasons = reasons

    def validate(self) -> list[str]:
        stack = Stack.of(self._scope)
        for node in self._scope.node.find_all():
            if not isinstance(node, iam.Policy):
                continue
            doc = stack.resolve(node.document.to_json())
            findings = []
            for st in doc.get("Statement", []):
                findings += [f"Action::{a}" for a in _as_list(st.get("Action")) if "*" in str(a)]
                findings += [
                    f"Resource::{t}" for t in map(_nag_text, _as_list(st.get("Resource"))) if "*" in t
                ]
            acks = []
            for f in dict.fromkeys(findings):
                reason = next((r for p, r in self._reasons.items() if re.search(p, f)), None)
                if reason is not None:
                    acks.append((f"AwsSolutions-IAM5[{f}]", reason))
            if acks:
                acknowledge(node, *acks)
        return []


def _as_list(v: object) -> list[object]:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _nag_text(res: object) -> str:
    """Render a policy resource the way cdk-nag names it in findings (``<LogicalId.Arn>``, ``<AWS::Region>``)."""
    if isinstance(res, str):
        return res
    if isinstance(res, dict):
        ((key, val),) = res.items()
        if key == "Fn::Join":
            sep, parts = val
            return sep.join(_nag_text(p) for p in parts)
        if key == "Ref":
            return f"<{val}>"
        if key == "Fn::GetAtt":
            return f"<{val[0]}.{val[1]}>"
        if key == "Fn::ImportValue":
            return _nag_text(val)
        if key == "Fn::Sub" and isinstance(val, str):
            return re.sub(r"\$\{([^}]+)\}", r"<\1>", val)
    return str(res)


def start_after_slurm(script_path: str, slurm_bin_dir: str | None = None) -> str:
    """Shell lines that start ``script_path`` (as root, in the transient systemd unit
    ``fmcluster-head-node``) once ``sinfo`` answers, and return at once.

    ``slurm_bin_dir`` is the cluster's Slurm command directory (the profile's ``slurm_bin_dir``; PCS:
    the cluster's version, not whichever version the image happens to carry); when given, only
    ``<slurm_bin_dir>/sinfo`` is asked. Default ``None``: ``sinfo`` on PATH, then :data:`SINFO_CANDIDATES`.

    The boot step that runs these lines comes before Slurm is usable on a PCS login node (user data runs
    before ``sackd`` starts); waiting inline could hold up the very step Slurm waits for. On a HyperPod
    controller it is the ``OnInitComplete`` script, which runs after HyperPod configured Slurm, so ``sinfo``
    normally answers at once. After
    ``SLURM_WAIT_SECONDS`` the script runs anyway. Output goes to ``HEAD_NODE_LOG``. Idempotent: a
    second run while the unit is active starts nothing. The callers put ``script_path`` in
    ``/opt/fmcluster`` first, which is where the waiter (``AFTER_SLURM_PATH``) goes too.
    """
    if slurm_bin_dir is not None:
        answers = f"""slurm_answers() {{
  local sinfo="{slurm_bin_dir}/sinfo"
  [[ -x "${{sinfo}}" ]] && "${{sinfo}}" -h > /dev/null 2>&1
}}"""
    else:
        answers = f"""slurm_answers() {{
  local sinfo
  for sinfo in "$(command -v sinfo || true)" {" ".join(SINFO_CANDIDATES)}; do
    if [[ -x "${{sinfo}}" ]] && "${{sinfo}}" -h > /dev/null 2>&1; then
      return 0
    fi
  done
  return 1
}}"""
    waiter = f"""#!/bin/bash
# fmcluster: run the script given as $1 once Slurm answers (sinfo), or after {SLURM_WAIT_SECONDS} s anyway.
set -uo pipefail
exec >> {HEAD_NODE_LOG} 2>&1
{answers}
waited=0
until slurm_answers; do
  if ((waited >= {SLURM_WAIT_SECONDS})); then
    echo "$(date -u +%FT%TZ) fmcluster: Slurm did not answer within {SLURM_WAIT_SECONDS} s; running $1 anyway"
    break
  fi
  sleep {SLURM_POLL_SECONDS}
  waited=$((waited + {SLURM_POLL_SECONDS}))
done
echo "$(date -u +%FT%TZ) fmcluster: running $1"
exec /bin/bash "$1"
"""
    unit = f"{HEAD_NODE_UNIT}.service"
    return "\n".join(
        [
            f"cat > {AFTER_SLURM_PATH} <<'{_AFTER_SLURM_EOF}'",
            waiter.rstrip("\n"),
            _AFTER_SLURM_EOF,
            f"chmod 0755 {AFTER_SLURM_PATH}",
            f"if systemctl is-active --quiet {unit}; then",
            f'  echo "{unit} is already running"',
            "else",
            f"  systemctl reset-failed {unit} 2> /dev/null || true",
            f'  systemd-run --unit={HEAD_NODE_UNIT} --description="fmcluster head-node script (once Slurm answers)" '
            f"{AFTER_SLURM_PATH} {script_path}",
            "fi",
        ]
    )
