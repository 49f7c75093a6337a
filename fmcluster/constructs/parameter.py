"""SSM String parameters whose value is checked against the Standard tier's size limit at synth.

Every ``AWS::SSM::Parameter`` fmcluster writes goes through :func:`string_parameter`. Its tier is always
Standard, written out: the "Maximum size of a parameter value" is 4 KB in the Standard tier and 8 KB in the Advanced
tier (AWS Systems Manager user guide, "Managing parameter tiers",
https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html); the
service's own error reads "Standard tier parameters support a maximum parameter value of 4096 characters".
fmcluster never switches a parameter to Advanced on its own: Advanced parameters are billed per parameter and
month (https://aws.amazon.com/systems-manager/pricing/), and "you can't revert an advanced parameter to a
standard parameter" (same user guide page), so a value that grew and shrank again would leave a stack that can
no longer update the tier it synthesizes (docs/decisions.md 55).

The value usually holds deploy-time tokens (asset URLs, attributes of other resources), so its size is
bounded, not measured: literal text counts exactly, the pseudo parameters count at their longest
(:data:`PSEUDO_MAX`), and any other token (``Ref``, ``Fn::GetAtt``, ``Fn::ImportValue``) at
:data:`UNKNOWN_TOKEN_MAX`, an assumption (no AWS page bounds every attribute).

- The known part alone above :data:`STANDARD_MAX_CHARS`: a synthesis error naming the parameter and its size
  (CloudFormation would fail the deploy).
- Only the bound with unknown tokens above it: a synth warning ``fmcluster:parameterMayExceedStandardTier``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct

#: Characters a Standard-tier value holds (user guide "Managing parameter tiers": 4 KB; the service's error: 4096).
STANDARD_MAX_CHARS = 4096
#: Longest value of each pseudo parameter. Account ids are 12 digits
#: (https://docs.aws.amazon.com/accounts/latest/reference/manage-acct-identifiers.html); the partition
#: "aws-us-gov" and URL suffix "amazonaws.com.cn" are the longest in the CloudFormation pseudo-parameter reference
#: (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/pseudo-parameter-reference.html); 14 characters is
#: the longest Region code known here (ap-southeast-5), UNVERIFIED for every Region; 128 is a stack name's limit.
PSEUDO_MAX = {"AWS::AccountId": 12, "AWS::Partition": 10, "AWS::URLSuffix": 16, "AWS::Region": 14,
              "AWS::StackName": 128, "AWS::StackId": 256, "AWS::NoValue": 0}
#: Assumed bound of any other token's value (an id, an ARN, a DNS name, an endpoint URL). An assumption.
UNKNOWN_TOKEN_MAX = 256
WARNING_ID = "fmcluster:parameterMayExceedStandardTier"
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass(frozen=True)
class ValueSize:
    """Bound of a synthesized value: ``known`` characters (literals and pseudo parameters at their longest) and
    ``unknown`` tokens whose length is not known at synth."""

    known: int
    unknown: int

    @property
    def bound(self) -> int:
        """Upper bound in characters, each unknown token at :data:`UNKNOWN_TOKEN_MAX`."""
        return self.known + self.unknown * UNKNOWN_TOKEN_MAX

    def __add__(self, other: ValueSize) -> ValueSize:
        return ValueSize(self.known + other.known, self.unknown + other.unknown)


def value_size(value: Any) -> ValueSize:
    """Bound of a resolved CloudFormation value (a string, or ``Fn::Join``/``Fn::Sub``/``Ref``/other intrinsic)."""
    if isinstance(value, str):
        return ValueSize(len(value), 0)
    if isinstance(value, dict) and len(value) == 1:
        [(fn, arg)] = value.items()
        if fn == "Fn::Join":
            sep, parts = arg
            sizes = [value_size(p) for p in parts]
            return sum(sizes, ValueSize(len(sep) * max(len(parts) - 1, 0), 0))
        if fn == "Fn::Sub":
            return _sub_size(arg)
        if fn == "Ref" and arg in PSEUDO_MAX:
            return ValueSize(PSEUDO_MAX[arg], 0)
    return ValueSize(0, 1)


def _sub_size(arg: Any) -> ValueSize:
    """``Fn::Sub``: the template's literal text plus each ``${Name}`` (pseudo parameter or mapped variable)."""
    template, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
    size = ValueSize(len(_SUB_VARIABLE.sub("", template)), 0)
    for name in _SUB_VARIABLE.findall(template):
        if name in variables:
            size += value_size(variables[name])
        elif name in PSEUDO_MAX:
            size += ValueSize(PSEUDO_MAX[name], 0)
        else:
            size += ValueSize(0, 1)
    return size


def string_parameter(scope: Construct, id: str, *, parameter_name: str, string_value: str,
                     description: str) -> ssm.StringParameter:
    """A Standard-tier ``ssm.StringParameter`` whose value is bounded at synth (module docstring): an error
    annotation on the parameter when its known size exceeds 4096 characters, a warning when only its bound does.
    The construct id and parameter name are the caller's (ids are API)."""
    parameter = ssm.StringParameter(scope, id, parameter_name=parameter_name, string_value=string_value,
                                    description=description, tier=ssm.ParameterTier.STANDARD)
    size = value_size(Stack.of(scope).resolve(string_value))
    for level, message in size_problems(parameter_name, size):
        if level == "error":
            Annotations.of(parameter).add_error(message)
        else:
            Annotations.of(parameter).add_warning_v2(WARNING_ID, message)
    return parameter


def size_problems(name: str, size: ValueSize) -> list[tuple[str, str]]:
    """``[(level, message)]`` for a value of ``size`` in parameter ``name``: ``error`` when the known part exceeds
    :data:`STANDARD_MAX_CHARS`, ``warning`` when only the bound does, none otherwise."""
    limit = f"the Standard tier holds at most {STANDARD_MAX_CHARS} characters"
    if size.known > STANDARD_MAX_CHARS:
        return [("error", f"SSM parameter {name}: its value is at least {size.known} characters and {limit}; "
                          "split what it holds (fewer or shorter steps) - fmcluster does not switch to the Advanced "
                          "tier (billed, and never reverted to Standard)")]
    if size.bound > STANDARD_MAX_CHARS:
        return [("warning", f"SSM parameter {name}: its value is {size.known} characters plus {size.unknown} "
                            f"deploy-time value(s) (at most {size.bound} if each is {UNKNOWN_TOKEN_MAX} characters) "
                            f"and {limit}; the deploy fails if they resolve longer")]
    return []
