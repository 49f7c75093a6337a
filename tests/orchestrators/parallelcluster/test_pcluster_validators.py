"""ParallelCluster's own create-time validation, offline, on every generated config (tools/pcluster_validate.py in
the ParallelCluster venv: what ``pcluster create-cluster --dryrun`` runs, every AWS call answered from the
synthesized templates and recorded instance-type data; a sitecustomize refuses any request that would be sent).

Every ParallelCluster example passes with one expected warning; the bad blueprints of
tests/orchestrators/parallelcluster/test_deploy_pcluster_rules.py that ParallelCluster refuses are refused by fmcluster first.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmcluster.blueprint import Blueprint, BlueprintError
from fmcluster.validation import load_blueprint_text
from tests.blueprints import MINIMAL, blueprint_text
from tests.conftest import EXAMPLES, ROOT, synth_templates

PCLUSTER_PY = ROOT / ".venv-pcluster" / "bin" / "python"
OFFLINE = ROOT / "tests" / "fixtures" / "pcluster" / "offline"
pytestmark = pytest.mark.skipif(not PCLUSTER_PY.exists(), reason="make setup creates .venv-pcluster")

#: Warnings fmcluster keeps on purpose. No key pair: the head node is reached through SSM Session Manager
#: (the construct adds AmazonSSMManagedInstanceCore to the head node; orchestrator.parallelcluster.ssh_key_name
#: sets a key). DetailedMonitoring is off by default (orchestrator.parallelcluster.detailed_monitoring).
EXPECTED_WARNINGS = {"KeyPairValidator"}


def _run(tool: str, *args: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(OFFLINE)}
    proc = subprocess.run([str(PCLUSTER_PY), str(ROOT / "tools" / tool), *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=env)
    assert "would have left the machine" not in proc.stderr, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert results, proc.stderr[-3000:]
    return results


def _folder(templates: dict[str, dict[str, Any]]) -> str:
    out = Path(tempfile.mkdtemp(prefix="pcluster-validate-"))
    for stack, template in templates.items():
        (out / f"{stack}.template.json").write_text(json.dumps(template))
    return str(out)


@cache
def _synth_unchecked(text: str) -> dict[str, dict[str, Any]]:
    """Synthesize a blueprint that only passed its shape check (fmcluster's rules would refuse it)."""
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from tests.conftest import cdk_context

    bp = Blueprint.model_validate(yaml.safe_load(text))
    out = tempfile.mkdtemp(prefix="fmcluster-unchecked-")
    app = cdk.App(outdir=out, context=cdk_context())
    stacks = build_app(app, bp)
    app.synth()
    return {s.stack_name: json.loads((Path(out) / f"{s.stack_name}.template.json").read_text()) for s in stacks.all()}


def _pcluster_blueprints() -> dict[str, str]:
    out = {p.stem: p.read_text() for p in EXAMPLES
           if yaml.safe_load(p.read_text()).get("orchestrator", {}).get("kind", "parallelcluster") == "parallelcluster"}
    base = yaml.safe_load((ROOT / "blueprints" / "hyperpod-p5.yaml").read_text())
    out["hyperpod-p5-as-parallelcluster"] = yaml.safe_dump({**base, "orchestrator": {"kind": "parallelcluster"}})
    return out


#: ParallelCluster errors fmcluster can only warn about (its data is a snapshot): validator -> fmcluster rule.
WARNED_FIRST = {"InstanceTypeBaseAMICompatibleValidator": "R-REGION-3"}

#: Matrix stacks whose instance types have no recorded DescribeInstanceTypes data (moto 5.2.5 lacks p6e-gb200).
UNRECORDED_MATRIX_STACKS = {"gb200-580-cuda13.0"}
#: Examples whose instance types have no recorded DescribeInstanceTypes data, for the same reason: ParallelCluster's
#: validators cannot run on them offline (their schema check still does: tests/test_examples.py).
UNRECORDED_EXAMPLES = {"p6e-gb200"}


def test_every_parallelcluster_example_passes_parallelclusters_validators() -> None:
    from tests.orchestrator_support import matrix_blueprint, matrix_stacks

    blueprints = _pcluster_blueprints()
    assert {"default", "efa-lustre", "p5en-capacity-block", "p6-b200"} <= set(blueprints)
    recorded = set(json.loads((ROOT / "tests/fixtures/pcluster/instance_types.json").read_text())["InstanceTypes"])
    unrecorded = {name for name, text in blueprints.items()
                  if {g["instance_type"] for g in yaml.safe_load(text)["compute"]} - recorded}
    assert unrecorded == UNRECORDED_EXAMPLES  # the list cannot grow unnoticed
    blueprints = {name: text for name, text in blueprints.items() if name not in unrecorded}
    blueprints |= {f"matrix-{stack}": matrix_blueprint("parallelcluster", stack) for stack in matrix_stacks()
                   if stack not in UNRECORDED_MATRIX_STACKS}
    folders = {name: _folder(synth_templates(text)) for name, text in blueprints.items()}
    results = _run("pcluster_validate.py", *folders.values())
    by_dir = {r["dir"]: r for r in results}
    for name, folder in folders.items():
        r = by_dir[folder]
        assert r["unanswered"] == [], name
        assert len(r["validators"]) >= 60, (name, r["validators"])  # the validators really ran
        warned = {w.rule_id for w in load_blueprint_text(blueprints[name]).warnings}
        # An error ParallelCluster reports must be one fmcluster already warned about (the matrix puts p5e.48xlarge in
        # us-east-1, which the recorded offerings lack: R-REGION-3); the examples have none.
        errors = {f["validator"] for f in r["failures"] if f["level"] == "ERROR"}
        assert errors <= {v for v, rule in WARNED_FIRST.items() if rule in warned}, (name, r["failures"])
        assert not (errors and not name.startswith("matrix-")), (name, r["failures"])
        assert [(f["level"], f["validator"]) for f in r["failures"] if f["level"] != "ERROR"] == [
            ("WARNING", v) for v in sorted(EXPECTED_WARNINGS)], (name, r["failures"])


#: Blueprints ParallelCluster refuses: (patch, fmcluster rule ids, ParallelCluster validators reporting an ERROR).
BAD: list[tuple[str, dict[str, Any], set[str], set[str]]] = [
    ("validators", {
        "compute": [{"name": "default", "instance_type": "p5.48xlarge", "count": 1000},
                    {"name": "gpu2", "instance_type": "p5.48xlarge", "count": 1000}],
        "storage": {"lustre": {"mount_point": "/opt"}},
        "orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.large"}},
    }, {"R-PC-3", "R-PATH-1", "R-PC-1"}, {"NameValidator", "SharedStorageMountDirValidator", "HeadNodeMemorySizeValidator"}),
    ("slurm-dir", {
        "storage": {"lustre": {"mount_point": "/opt/slurm"}},
    }, {"R-PATH-1"}, {"SharedStorageMountDirValidator"}),
    ("sizes", {"compute": [
        {"name": "cb", "instance_type": "p5.48xlarge", "count": 2, "min_count": 1,
         "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}},
        {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "min_count": 5}],
    }, {"R-CAP-2", "R-COMPUTE-2"}, {"ComputeResourceSizeValidator"}),
    ("schema", {"tags": {"parallelcluster:team": "ml"}}, {"R-PC-4"}, {"ConfigSchemaValidator"}),
]


@pytest.mark.parametrize(("patch", "rules", "validators"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_fmcluster_refuses_what_parallelcluster_refuses(patch: dict[str, Any], rules: set[str], validators: set[str]) -> None:
    text = blueprint_text(patch)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text)
    assert {p.rule_id for p in exc.value.errors} == rules
    [result] = _run("pcluster_validate.py", _folder(_synth_unchecked(text)))
    assert result["unanswered"] == []
    errors = {f["validator"] for f in result["failures"] if f["level"] == "ERROR"}
    assert errors == validators, result["failures"]
    if "ConfigSchemaValidator" in validators:
        assert any("The tag key prefix 'parallelcluster:' is reserved" in f["message"] for f in result["failures"])


def test_schema_check_answers_reservation_lookups_offline(tmp_path: Path) -> None:
    """Loading a config with a capacity reservation makes ParallelCluster call DescribeCapacityReservations; the
    schema check answers it offline (before, the call went to AWS and, offline, aborted the check)."""
    text = (ROOT / "blueprints" / "p5en-capacity-block.yaml").read_text()
    from fmcluster.orchestrators.parallelcluster.review import cluster_configurations

    [config] = [c for t in synth_templates(text).values() for c in cluster_configurations(t).values()]
    path = tmp_path / "cb.pcluster-config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert _run("pcluster_schema_check.py", str(path)) == [{"file": str(path), "ok": True, "errors": {}}]


def test_base_blueprint_is_a_parallelcluster_blueprint() -> None:
    assert "orchestrator" not in MINIMAL  # BAD patches rely on ParallelCluster being the default orchestrator
