"""SSM parameters are Standard tier and their value is bounded at synth (fmcluster/constructs/parameter.py):
bounds of resolved values, the error and warning thresholds, and the annotations on a synthesized parameter,
including an oversized head-node steps parameter."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match

from fmcluster.constructs.parameter import (
    STANDARD_MAX_CHARS,
    UNKNOWN_TOKEN_MAX,
    WARNING_ID,
    ValueSize,
    size_problems,
    string_parameter,
    value_size,
)
from tests.conftest import ROOT, resources_of, synth_templates

SUB_URL = "s3://cdk-hnb659fds-assets-${AWS::AccountId}-us-east-1/abc.sh"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x" * 10, ValueSize(10, 0)),
        ({"Ref": "AWS::AccountId"}, ValueSize(12, 0)),
        ({"Ref": "AWS::Region"}, ValueSize(14, 0)),
        ({"Ref": "SomeBucket"}, ValueSize(0, 1)),
        ({"Fn::GetAtt": ["Workspace", "PrometheusEndpoint"]}, ValueSize(0, 1)),
        ({"Fn::ImportValue": "net:Vpc"}, ValueSize(0, 1)),
        ({"Fn::Sub": SUB_URL}, ValueSize(len(SUB_URL) - len("${AWS::AccountId}") + 12, 0)),
        ({"Fn::Sub": ["a${X}b${AWS::Region}", {"X": {"Ref": "Other"}}]}, ValueSize(2 + 14, 1)),
        ({"Fn::Sub": "${Unmapped}!"}, ValueSize(1, 1)),
        ({"Fn::Join": ["--", ["ab", {"Ref": "AWS::Partition"}, {"Ref": "R"}]]}, ValueSize(2 + 10 + 2 * 2, 1)),
        ({"Fn::Join": ["", []]}, ValueSize(0, 0)),
    ],
    ids=["literal", "account", "region", "ref", "getatt", "import", "sub-pseudo", "sub-mapped", "sub-unmapped",
         "join-separators", "join-empty"],
)
def test_value_size_bounds_each_form(value: Any, expected: ValueSize) -> None:
    assert value_size(value) == expected


@pytest.mark.parametrize(
    ("size", "levels"),
    [
        (ValueSize(STANDARD_MAX_CHARS, 0), []),
        (ValueSize(STANDARD_MAX_CHARS + 1, 0), ["error"]),
        (ValueSize(STANDARD_MAX_CHARS - UNKNOWN_TOKEN_MAX, 1), []),
        (ValueSize(STANDARD_MAX_CHARS - UNKNOWN_TOKEN_MAX + 1, 1), ["warning"]),
        (ValueSize(STANDARD_MAX_CHARS + 1, 3), ["error"]),
    ],
    ids=["at-limit", "one-over", "bound-at-limit", "bound-one-over", "known-over-with-tokens"],
)
def test_thresholds(size: ValueSize, levels: list[str]) -> None:
    assert [level for level, _ in size_problems("/p", size)] == levels


def test_error_names_the_parameter_and_its_size() -> None:
    [(_, message)] = size_problems("/fmcluster/c/head-node/OnNodeConfigured", ValueSize(5000, 0))
    assert message.startswith("SSM parameter /fmcluster/c/head-node/OnNodeConfigured: its value is at least 5000 "
                              "characters and the Standard tier holds at most 4096 characters")


def synth_parameter(value_of: Any) -> tuple[dict[str, Any], list[str], list[str]]:
    """Template, error and warning messages of a stack holding one parameter whose value ``value_of(stack)`` gives."""
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="123456789012", region="us-east-1"))
    string_parameter(stack, "P", parameter_name="/fmcluster/t/steps", string_value=value_of(stack), description="d")
    template = app.synth().get_stack_by_name("S").template
    ann = Annotations.from_stack(stack)
    errors = [str(m.entry.data) for m in ann.find_error("*", Match.any_value())]
    warnings = [str(m.entry.data) for m in ann.find_warning("*", Match.any_value())]
    return template, errors, warnings


def steps_of(n: int) -> Any:
    """A head-node steps value of ``n`` steps, each a script in a bucket named at deploy time (like the real ones)."""
    def build(stack: cdk.Stack) -> str:
        bucket = s3.Bucket(stack, "B")
        return stack.to_json_string([{"Script": f"s3://{bucket.bucket_name}/{i:064x}.sh"} for i in range(n)])
    return build


@pytest.mark.parametrize(
    ("value_of", "errors", "warned"),
    [
        (lambda _: "x" * STANDARD_MAX_CHARS, 0, False),
        (lambda _: "x" * (STANDARD_MAX_CHARS + 1), 1, False),
        (steps_of(3), 0, False),
        (steps_of(14), 0, True),
        (steps_of(60), 1, False),
    ],
    ids=["literal-at-limit", "literal-oversized", "three-steps", "fourteen-steps-bound-over", "sixty-steps-oversized"],
)
def test_synthesized_parameter(value_of: Any, errors: int, warned: bool) -> None:
    template, found_errors, warnings = synth_parameter(value_of)
    [param] = resources_of({"Resources": template["Resources"]}, "AWS::SSM::Parameter").values()
    assert param["Properties"]["Tier"] == "Standard"
    assert len(found_errors) == errors
    assert all(e.startswith("SSM parameter /fmcluster/t/steps: its value is at least ") for e in found_errors)
    assert [WARNING_ID in w for w in warnings] == ([True] if warned else [])


def test_every_parameter_of_the_default_example_is_standard_tier() -> None:
    templates = synth_templates((ROOT / "blueprints" / "default.yaml").read_text())
    tiers = [p["Properties"].get("Tier") for t in templates.values() for p in resources_of(t, "AWS::SSM::Parameter").values()]
    assert len(tiers) >= 3
    assert set(tiers) == {"Standard"}
