"""Every string pattern of the blueprint model has a human hint, and no regex reaches a user message.

The model is walked field by field (every nested section, discriminated-union member, list item,
dict key and value); each pattern found must be in ``PATTERN_HINTS``. Then a value that violates
the pattern is fed through the loader at every such field: the message shows the hint, never the
regex.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from fmcluster.blueprint import BlueprintError
from fmcluster.blueprint.model import PATTERN_HINTS, Blueprint
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text


def _patterns(metadata: list[Any]) -> Iterator[str]:
    for m in metadata:
        pattern = getattr(m, "pattern", None)
        if isinstance(pattern, str):
            yield pattern


def model_patterns(tp: Any, where: str = "", seen: set[type] | None = None) -> Iterator[tuple[str, str]]:
    """``(Model.field[{key}|{value}], pattern)`` for every string pattern reachable from ``tp``."""
    seen = set() if seen is None else seen
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        yield from ((where, p) for p in _patterns(metadata))
        yield from model_patterns(base, where, seen)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        for name, field in tp.model_fields.items():
            here = f"{tp.__name__}.{name}"
            yield from ((here, p) for p in _patterns(field.metadata))
            yield from model_patterns(field.annotation, here, seen)
    elif origin is dict:
        key, value = get_args(tp)
        yield from model_patterns(key, where + "{key}", seen)
        yield from model_patterns(value, where + "{value}", seen)
    elif origin in (list, tuple, Union, types.UnionType):
        for arg in get_args(tp):
            yield from model_patterns(arg, where, seen)


FIELD_PATTERNS = sorted(set(model_patterns(Blueprint)))

#: A value no pattern of the model accepts: a newline, a space, '#' and '!'.
BAD = "bad\n#! value"


def _group(**kw: Any) -> dict[str, Any]:
    return {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, **kw}]}


def _lustre(**kw: Any) -> dict[str, Any]:
    return {"storage": {"lustre": kw}}


def _checkpoints(**kw: Any) -> dict[str, Any]:
    return {"storage": {"checkpoints": kw}}


def _override(component: str) -> Callable[[str], dict[str, Any]]:
    return lambda v: {"software": {"overrides": {component: v}}}


def _orch(kind: str, **kw: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": kind, kind: kw}}


#: Where each patterned field is set in a blueprint: (patch with the bad value, YAML path of the problem).
WHERE: dict[str, tuple[Callable[[str], dict[str, Any]], str]] = {
    "Blueprint.name": (lambda v: {"name": v}, "name"),
    "Blueprint.region": (lambda v: {"region": v}, "region"),
    "Blueprint.availability_zone": (lambda v: {"availability_zone": v}, "availability_zone"),
    "Blueprint.availability_zone_id": (lambda v: {"availability_zone": None, "availability_zone_id": v},
                                       "availability_zone_id"),
    "Blueprint.tags{key}": (lambda v: {"tags": {v: "x"}}, "tags"),
    "Blueprint.tags{value}": (lambda v: {"tags": {"team": v}}, "tags.team"),
    "NetworkSpec.vpc_id": (lambda v: {"network": {"vpc_id": v}}, "network.vpc_id"),
    "NetworkSpec.gpu_subnet_id": (lambda v: {"network": {"gpu_subnet_id": v}}, "network.gpu_subnet_id"),
    **{f"SoftwareOverrides.{c}": (_override(c), f"software.overrides.{c}")
       for c in ("driver", "fabric_manager", "cuda", "nccl", "efa_installer", "gdrcopy", "aws_ofi_nccl")},
    "ImageSpec.ami_id": (lambda v: {"software": {"image": {"mode": "custom", "ami_id": v}}}, "software.image.ami_id"),
    "ImageSpec.parent_ami_id": (lambda v: {"software": {"image": {"mode": "bake", "parent_ami_id": v}}},
                                "software.image.parent_ami_id"),
    "SoftwareSpec.environment{key}": (lambda v: {"software": {"environment": {v: "1"}}}, "software.environment"),
    "SoftwareSpec.environment{value}": (lambda v: {"software": {"environment": {"NCCL_DEBUG": v}}},
                                        "software.environment.NCCL_DEBUG"),
    "ContainerSpec.name": (lambda v: {"software": {"containers": [{"name": v, "image": "ngc-pytorch-26.08"}]}},
                           "software.containers[0].name"),
    "ContainerSpec.image": (lambda v: {"software": {"containers": [{"name": "ngc", "image": v}]}},
                            "software.containers[0].image"),
    "ContainerSpec.groups": (lambda v: {"software": {"containers": [{"name": "ngc", "image": "ngc-pytorch-26.08",
                                                                     "groups": [v]}]}},
                             "software.containers[0].groups[0]"),
    "ComputeGroup.name": (lambda v: {"compute": [{"name": v, "instance_type": "p5.48xlarge", "count": 2}]},
                          "compute[0].name"),
    "ComputeGroup.scratch_path": (lambda v: _group(scratch_path=v), "compute[0].scratch_path"),
    "OdcrCapacity.reservation_id": (lambda v: _group(capacity={"type": "odcr", "reservation_id": v}),
                                    "compute[0].capacity.reservation_id"),
    "OdcrCapacity.resource_group_arn": (lambda v: _group(capacity={"type": "odcr", "resource_group_arn": v}),
                                        "compute[0].capacity.resource_group_arn"),
    "CapacityBlockCapacity.reservation_id": (lambda v: _group(capacity={"type": "capacity_block", "reservation_id": v}),
                                             "compute[0].capacity.reservation_id"),
    "TrainingPlanCapacity.arn": (lambda v: _group(capacity={"type": "training_plan", "arn": v}), "compute[0].capacity.arn"),
    "LustreSpec.daily_automatic_backup_start_time": (lambda v: _lustre(daily_automatic_backup_start_time=v),
                                                     "storage.lustre.daily_automatic_backup_start_time"),
    "LustreSpec.weekly_maintenance_start_time": (lambda v: _lustre(weekly_maintenance_start_time=v),
                                                 "storage.lustre.weekly_maintenance_start_time"),
    "LustreSpec.kms_key_arn": (lambda v: _lustre(kms_key_arn=v), "storage.lustre.kms_key_arn"),
    "LustreSpec.import_path": (lambda v: _lustre(import_path=v), "storage.lustre.import_path"),
    "LustreSpec.mount_point": (lambda v: _lustre(mount_point=v), "storage.lustre.mount_point"),
    "DataRepository.file_system_path": (lambda v: _lustre(data_repositories=[{"file_system_path": v, "s3_uri": "s3://b/p/"}]),
                                        "storage.lustre.data_repositories[0].file_system_path"),
    "DataRepository.s3_uri": (lambda v: _lustre(data_repositories=[{"file_system_path": "/data", "s3_uri": v}]),
                              "storage.lustre.data_repositories[0].s3_uri"),
    "CheckpointSpec.bucket": (lambda v: _checkpoints(bucket=v), "storage.checkpoints.bucket"),
    "CheckpointSpec.prefix": (lambda v: _checkpoints(prefix=v), "storage.checkpoints.prefix"),
    "CheckpointSpec.kms_key_arn": (lambda v: _checkpoints(kms_key_arn=v), "storage.checkpoints.kms_key_arn"),
    "ParallelClusterSettings.head_node_instance_type": (
        lambda v: _orch("parallelcluster", head_node_instance_type=v), "orchestrator.parallelcluster.head_node_instance_type"),
    "HyperPodSettings.eks_cluster_arn": (lambda v: _orch("hyperpod", eks_cluster_arn=v), "orchestrator.hyperpod.eks_cluster_arn"),
    "HyperPodEksSettings.admin_role_arn": (lambda v: _orch("hyperpod", orchestration="eks", eks={"admin_role_arn": v}),
                                           "orchestrator.hyperpod.eks.admin_role_arn"),
    "SlurmAccountingSpec.second_availability_zone": (
        lambda v: {"orchestrator": {"slurm": {"accounting": {"second_availability_zone": v}}}},
        "orchestrator.slurm.accounting.second_availability_zone"),
    "SlurmAccountingSpec.subnet_ids": (
        lambda v: {"orchestrator": {"slurm": {"accounting": {"subnet_ids": [v]}}}},
        "orchestrator.slurm.accounting.subnet_ids"),
    "HyperPodEksSettings.control_plane_availability_zone": (
        lambda v: _orch("hyperpod", orchestration="eks", eks={"control_plane_availability_zone": v}),
        "orchestrator.hyperpod.eks.control_plane_availability_zone"),
    "HyperPodEksSettings.control_plane_subnet_ids": (
        lambda v: _orch("hyperpod", orchestration="eks", eks={"control_plane_subnet_ids": [v]}),
        "orchestrator.hyperpod.eks.control_plane_subnet_ids"),
    "HyperPodEksSettings.api_access_security_group_ids": (
        lambda v: _orch("hyperpod", orchestration="eks", eks={"api_access_security_group_ids": [v]}),
        "orchestrator.hyperpod.eks.api_access_security_group_ids"),
    "HyperPodEksSettings.queue_namespaces": (
        lambda v: _orch("hyperpod", orchestration="eks", eks={"queue_namespaces": [v]}),
        "orchestrator.hyperpod.eks.queue_namespaces"),
    "HyperPodSettings.controller_instance_type": (lambda v: _orch("hyperpod", controller_instance_type=v),
                                                  "orchestrator.hyperpod.controller_instance_type"),
    "HyperPodSettings.login_instance_type": (lambda v: _orch("hyperpod", login_instance_type=v),
                                             "orchestrator.hyperpod.login_instance_type"),
    "HyperPodAmiUpdates.schedule": (lambda v: _orch("hyperpod", ami_updates={"schedule": v}),
                                    "orchestrator.hyperpod.ami_updates.schedule"),
    "PcsSettings.login_instance_type": (lambda v: _orch("pcs", login_instance_type=v), "orchestrator.pcs.login_instance_type"),
    "ParallelClusterSettings.login_instance_type": (lambda v: _orch("parallelcluster", login_instance_type=v),
                                                    "orchestrator.parallelcluster.login_instance_type"),
    "ObservabilitySpec.alert_email": (lambda v: {"observability": {"alert_email": v}}, "observability.alert_email"),
    "ObservabilitySpec.alert_topic_arn": (lambda v: {"observability": {"alert_topic_arn": v}},
                                          "observability.alert_topic_arn"),
}


def test_the_walk_finds_the_patterned_fields() -> None:
    # every nested kind of place: top level, sections, union members, list items, dict keys and values
    found = {where for where, _ in FIELD_PATTERNS}
    assert {"Blueprint.name", "Blueprint.tags{key}", "Blueprint.tags{value}", "OdcrCapacity.reservation_id",
            "DataRepository.s3_uri", "SoftwareSpec.environment{key}", "ImageSpec.ami_id"} <= found
    assert len(FIELD_PATTERNS) >= 40


@pytest.mark.parametrize(("where", "pattern"), FIELD_PATTERNS, ids=[w for w, _ in FIELD_PATTERNS])
def test_every_model_pattern_has_a_hint(where: str, pattern: str) -> None:
    assert PATTERN_HINTS.get(pattern), f"{where}: no PATTERN_HINTS entry for {pattern!r}"


def test_every_patterned_field_is_in_the_loader_table() -> None:
    assert {where for where, _ in FIELD_PATTERNS} == set(WHERE)


@pytest.mark.parametrize(("where", "pattern"), FIELD_PATTERNS, ids=[w for w, _ in FIELD_PATTERNS])
def test_no_regex_reaches_the_user(where: str, pattern: str) -> None:
    make_patch, path = WHERE[where]
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(make_patch(BAD)))
    hint = PATTERN_HINTS[pattern]
    mine = [p for p in exc.value.problems if p.path.startswith(path) and "invalid format" in p.message]
    assert [p.message for p in mine] == [f"invalid format, got {BAD!r}; allowed {hint}"]
    for p in exc.value.problems:
        assert pattern not in p.message and "^" not in p.message and "$" not in p.message, p.message
