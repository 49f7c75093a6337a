"""Storage blueprints synthesize clean: cdk-nag (AwsSolutions, as app.py runs it) and cfn-lint with zero errors.

Covers the EFA-enabled file system example and the two-key destroy path (whose auto-delete
provider adds a Lambda function to the storage stack).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.blueprints import blueprint_text, example
from tests.conftest import ROOT, cdk_context


@cache
def nag_synth(text: str, allow_destruction: bool) -> Path:
    """In-process synth with the AwsSolutions pack attached the way app.py does; returns the cdk.out."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import ALLOW_DATA_DESTRUCTION, build_app
    from fmcluster.validation import load_blueprint_text

    out = Path(tempfile.mkdtemp(prefix="fmcluster-nag-"))
    app = cdk.App(outdir=str(out), context={**cdk_context(), ALLOW_DATA_DESTRUCTION: allow_destruction})
    build_app(app, load_blueprint_text(text).blueprint)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return out


def cfn_lint_errors(templates: list[Path], region: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "cfnlint", "--regions", region, "--format", "json", "--", *map(str, templates)],
        capture_output=True, text=True, timeout=300,
    )
    return [m for m in json.loads(proc.stdout or "[]") if m["Level"] == "Error"]


EFA = (ROOT / "blueprints" / "efa-lustre.yaml").read_text()
DESTROY = blueprint_text({"storage": {"lustre": {"removal_policy": "destroy"}, "checkpoints": {"removal_policy": "destroy"}}},
                         base=example("efa-lustre"))


@pytest.mark.synth
@pytest.mark.parametrize(("text", "allow"), [(EFA, False), (DESTROY, True)], ids=["efa-lustre", "efa-lustre-destroy"])
def test_synthesizes_clean(text: str, allow: bool) -> None:
    out = nag_synth(text, allow)
    report = json.loads((out / "validation-report.json").read_text())
    # nag raises in app.synth() on any unacknowledged finding; in-process synth also adds aws-cdk-lib's own
    # "CloudFormation Validate" plugin, which must succeed too
    assert [(r["pluginName"], r["conclusion"], r["violations"]) for r in report["pluginReports"]
            if r["conclusion"] != "success" or r["violations"]] == []
    templates = sorted(out.glob("*-storage.template.json")) + sorted(out.glob("*-cluster.template.json"))
    assert len(templates) == 2
    assert cfn_lint_errors(templates, "us-east-1") == []
    storage = json.loads(templates[0].read_text())["Resources"]
    auto_delete = [r for r in storage.values() if r["Type"] == "Custom::S3AutoDeleteObjects"]
    assert len(auto_delete) == (2 if allow else 0)
