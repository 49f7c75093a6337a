"""HyperPod Slurm controller and login instance types: SageMaker's ClusterInstanceType enum (R-HP-11), read offline
from the installed botocore, with the family's sizes and a did-you-mean."""

from __future__ import annotations

from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text


def hp(**settings: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": "hyperpod", "hyperpod": settings}}



# ---- controller and login types: SageMaker's ClusterInstanceType enum (R-HP-11) -------------------------------------
def _not_hyperpod(got: str, hint: str) -> str:
    import botocore

    return (f"not a SageMaker HyperPod instance type, got {got!r}; allowed a type of SageMaker's ClusterInstanceType "
            f"list (botocore {botocore.__version__}){hint}")


ML_M5 = (", for ml.m5: ml.m5.large, ml.m5.xlarge, ml.m5.2xlarge, ml.m5.4xlarge, ml.m5.8xlarge, ml.m5.12xlarge, "
         "ml.m5.16xlarge, ml.m5.24xlarge")


@pytest.mark.parametrize(("patch", "expected"), [
    (hp(controller_instance_type="ml.m5.5xlarge"),
     [("orchestrator.hyperpod.controller_instance_type", _not_hyperpod("ml.m5.5xlarge", ML_M5), "R-HP-11")]),
    (hp(login_instance_type="ml.mm5.4xlarge"),  # a misspelt family: a guess (ml.m5.4xlarg is a format error)
     [("orchestrator.hyperpod.login_instance_type",
       _not_hyperpod("ml.mm5.4xlarge", " - did you mean 'ml.m5.4xlarge'?"), "R-HP-11")]),
    (hp(login_instance_type="ml.m7i.3xlarge"),
     [("orchestrator.hyperpod.login_instance_type", _not_hyperpod("ml.m7i.3xlarge", (
         ", for ml.m7i: ml.m7i.large, ml.m7i.xlarge, ml.m7i.2xlarge, ml.m7i.4xlarge, ml.m7i.8xlarge, ml.m7i.12xlarge, "
         "ml.m7i.16xlarge, ml.m7i.24xlarge, ml.m7i.48xlarge")), "R-HP-11")]),
    (hp(controller_instance_type="ml.m5.8xlarge", login_instance_type="ml.c7g.4xlarge"), []),
    (hp(login_instance_type=None), []),
])
def test_controller_and_login_types_are_hyperpods(patch: dict[str, Any], expected: list[Any]) -> None:
    try:
        load_blueprint_text(blueprint_text(patch))
        errors: list[tuple[str, str, str | None]] = []
    except BlueprintError as exc:
        errors = [(p.path, p.message, p.rule_id) for p in exc.errors]
    assert [e for e in errors if e[2] == "R-HP-11"] == expected
