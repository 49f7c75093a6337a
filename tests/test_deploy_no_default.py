"""No default deploy: the CDK app refuses to run without ``-c blueprint=FILE`` (issue 12 item 13).

The CDK CLI hands context to the app in ``CDK_CONTEXT_JSON`` (cdk.json's context merged with ``-c``);
without a blueprint the app must stop with exit 1 and say how to name one, not synthesize
blueprints/default.yaml, which ``cdk deploy`` or ``cdk destroy`` would then act on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run_app(context: dict[str, object], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    return subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize(("case", "context"), [
    ("missing", {"fmcluster:allowDataDestruction": False}),
    ("empty", {"blueprint": ""}),
    ("blank", {"blueprint": "   "}),
])
def test_app_without_blueprint_is_an_error(tmp_path: Path, case: str, context: dict[str, object]) -> None:
    r = _run_app(context, tmp_path)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert "error: no blueprint named" in r.stderr
    assert "-c blueprint=blueprints/default.yaml" in r.stderr  # says how to name one
    assert not (tmp_path / "cdk.out" / "manifest.json").exists()  # nothing synthesized


def test_cdk_json_has_no_default_blueprint() -> None:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    assert "blueprint" not in context


def test_makefile_synth_names_the_blueprint() -> None:
    text = (ROOT / "Makefile").read_text()
    synth = re.search(r"^synth:.*?(?=^\S)", text, re.S | re.M)
    assert synth and '-c blueprint="$(BLUEPRINT)"' in synth.group(0)  # quoted: a path may hold spaces
