"""Rules on the orchestrator section that hold for every orchestrator; each orchestrator's own rules live in its
slice (``fmcluster/orchestrators/<key>/rules.py``)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from fmcluster.blueprint.model import INSTANCE_TYPE_PATTERN, OrchestratorSpec
from fmcluster.catalog import known_instance_types
from fmcluster.catalog.instance_types import ec2_instance_types, unknown_type_hint
from fmcluster.orchestrators.registry import KINDS
from fmcluster.validation.rules import Violation, rule


@rule("R-ORCH-1", source="fmcluster: settings for an orchestrator other than orchestrator.kind would be silently ignored",
      scope="orchestrator")
def settings_match_kind(orch: OrchestratorSpec) -> Iterator[Violation]:
    for other in KINDS:
        if other != orch.kind and other in orch.model_fields_set:
            yield f"orchestrator.{other}", (
                f"settings for {other} are ignored because orchestrator.kind is {orch.kind!r}; "
                f"allowed only orchestrator.{orch.kind} - did you mean kind: {other}?"
            )


def ec2_type_fields(section: BaseModel, prefix: str) -> Iterator[tuple[str, str]]:
    """``(YAML path, type)`` of every EC2 instance type field of an orchestrator section (the fields with the model's
    EC2 type format: the ParallelCluster head and login nodes, the PCS login node), found by the field's format so that
    a new one is covered the day it is added. Compute groups' types are the catalog's (``compute[i].instance_type``)."""
    for name, info in type(section).model_fields.items():
        value = getattr(section, name)
        if isinstance(value, str) and any(getattr(m, "pattern", None) == INSTANCE_TYPE_PATTERN for m in info.metadata):
            yield f"{prefix}.{name}", value


@rule("R-TYPE-1", level="warning", scope="orchestrator",
      source="botocore data/ec2/*/service-2.json shape InstanceType (the EC2 instance types, read offline: "
      "fmcluster.catalog.instance_types); https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html "
      "(InstanceType)")
def ec2_type_exists(orch: OrchestratorSpec) -> Iterator[Violation]:
    """A head or login node type of the chosen orchestrator that neither botocore's EC2 ``InstanceType`` list nor
    fmcluster's catalog knows (``m7i.5xlarge``: m7i has no 5xlarge) fails at deploy. A warning: EC2 takes the type as
    text and botocore's list misses a type launched after it, so the list is not closed; the message lists the
    family's sizes and a did-you-mean."""
    section = getattr(orch, orch.kind, None)
    if not isinstance(section, BaseModel):
        return
    known = ec2_instance_types() | frozenset(known_instance_types())
    for path, instance_type in ec2_type_fields(section, f"orchestrator.{orch.kind}"):
        if instance_type not in known:
            import botocore

            yield path, (
                f"not an EC2 instance type botocore {botocore.__version__} lists, got {instance_type!r}; "
                f"allowed a listed type{unknown_type_hint(instance_type, known)} (EC2 refuses an unknown type at deploy; "
                "a type newer than the installed botocore is listed once botocore is updated)"
            )
