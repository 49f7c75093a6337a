"""Orchestrator x instance type: every catalog type synthesizes under every orchestrator; the same
blueprint gives three clean clusters (cdk-nag, cfn-lint) with the same plan; every orchestrator's node
role reaches a KMS checkpoint bucket; examples are clean."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from fmcluster.catalog import get_instance
from fmcluster.orchestrators.hyperpod.rules import HYPERPOD_PRICED_TYPES
from fmcluster.resolved import resolve
from fmcluster.review.plan import build_plan
from fmcluster.validation import load_blueprint_text
from tests import blueprints
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import (
    KINDS,
    cluster_template,
    group_name,
    matrix_cases,
    matrix_stacks,
    matrix_templates,
    nag_report,
    pcs_launch_templates,
    runs_on,
    same_blueprint_text,
    stack_for,
    synth_with_nag,
)

CFN_LINT = ROOT / ".venv" / "bin" / "cfn-lint"
same_blueprint = same_blueprint_text


def cfn_lint(paths: list[Path], region: str) -> list[str]:
    """cfn-lint findings at error level, one line each (warnings are allowed)."""
    proc = subprocess.run(
        [str(CFN_LINT), "--format", "parseable", "--regions", region, "--", *map(str, paths)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 2, 4, 6), proc.stderr
    return [line for line in proc.stdout.splitlines() if re.search(r":E\d{4}:", line)]


# ---- every catalog type x every orchestrator ----------------------------------------------------
@pytest.mark.parametrize(("kind", "instance_type"), matrix_cases())
def test_every_type_synthesizes_under_every_orchestrator(kind: str, instance_type: str) -> None:
    tpl = cluster_template(matrix_templates(kind, stack_for(instance_type)))
    name = group_name(instance_type)
    inst = get_instance(instance_type)
    if kind == "parallelcluster":
        (res,) = resources_of(tpl, "Custom::PclusterCluster").values()
        (queue,) = [q for q in res["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmQueues"] if q["Name"] == name]
        (cr,) = queue["ComputeResources"]
        assert (cr["InstanceType"], cr["Efa"]) == (instance_type, {"Enabled": True})
        assert queue["CapacityType"] == ("CAPACITY_BLOCK" if inst.capacity_block_only else "ONDEMAND")
    elif kind == "hyperpod":
        (res,) = resources_of(tpl, "AWS::SageMaker::Cluster").values()
        (ig,) = [g for g in res["Properties"]["InstanceGroups"] if g["InstanceGroupName"] == name]
        assert ig["InstanceType"] == inst.hyperpod_name
    else:
        (ng,) = [r["Properties"] for r in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()
                 if r["Properties"]["Name"] == name]
        assert ng["InstanceConfigs"] == [{"InstanceType": instance_type}]
        _, lt = pcs_launch_templates(tpl)[name]
        efa = [n for n in lt["NetworkInterfaces"] if n.get("InterfaceType") in ("efa", "efa-only")]
        assert len(efa) == inst.efa_interface_count


def test_matrix_passes_cfn_lint(tmp_path: Path) -> None:
    """Every (orchestrator, type) pair the orchestrator can run (``matrix_cases``: not p6e-gb200 on PCS) in one
    synthesized app per (orchestrator, stack), linted in one cfn-lint run. The only errors allowed are E3644 on
    HyperPod types without a public price in the Region, which rule R-HP-4 warns about."""
    paths = []
    for kind in KINDS:
        for stack in [s for s, types in matrix_stacks().items() if any(runs_on(kind, t) for t in types)]:
            for name, tpl in matrix_templates(kind, stack).items():
                path = tmp_path / f"{name}.template.json"
                path.write_text(json.dumps(tpl))
                paths.append(path)
    errors = cfn_lint(paths, "us-east-1")
    unpriced = {f"ml.{t}" for _, t in matrix_cases() if t not in HYPERPOD_PRICED_TYPES["us-east-1"]}
    assert unpriced == {"ml.p5e.48xlarge", "ml.p6e-gb200.36xlarge"}
    unexpected = [e for e in errors if not (":E3644:" in e and any(f"'{t}'" in e for t in unpriced))]
    assert unexpected == []
    assert {t for t in unpriced if any(f"'{t}'" in e for e in errors)} == unpriced


# ---- one blueprint, three orchestrators -------------------------------------------------------
@pytest.fixture(scope="module")
def three_clusters() -> dict[str, Path]:
    return {kind: synth_with_nag(same_blueprint(kind)) for kind in KINDS}


def test_same_blueprint_three_clean_clusters(three_clusters: dict[str, Path]) -> None:
    for kind, out in three_clusters.items():
        assert nag_report(out) == [], kind
        stacks = sorted(p.name for p in out.glob("*.template.json"))
        assert stacks == ["hp-train-cluster.template.json", "hp-train-network.template.json",
                          "hp-train-observability.template.json", "hp-train-storage.template.json"]
    errors = cfn_lint([p for out in three_clusters.values() for p in out.glob("*.template.json")], "us-east-1")
    assert errors == []
    kinds = {kind: {r["Type"] for r in json.loads((out / "hp-train-cluster.template.json").read_text())["Resources"].values()}
             for kind, out in three_clusters.items()}
    assert "Custom::PclusterCluster" in kinds["parallelcluster"]
    assert "AWS::SageMaker::Cluster" in kinds["hyperpod"]
    assert {"AWS::PCS::Cluster", "AWS::PCS::ComputeNodeGroup", "AWS::PCS::Queue"} <= kinds["pcs"]


def test_same_blueprint_same_plan() -> None:
    lines = {}
    for kind in KINDS:
        plan = build_plan(resolve(load_blueprint_text(same_blueprint(kind)).blueprint))
        (c,) = plan.compute
        lines[kind] = (plan.gpus_total, c.gpu_model, c.efa_interfaces_per_node, c.network_gbps_per_node, c.network_gbps_total,
                       c.efa_interface_type, c.ipv4_per_node)
    assert lines == {
        "parallelcluster": (32, "H100", 32, 3200, 12800, "efa-only", 1),
        "hyperpod": (32, "H100", 32, 3200, 12800, "efa-only", 1),
        # PCS uses efa, one address per EFA card (R-PCS-3; changed on purpose, issue 12 item 3)
        "pcs": (32, "H100", 32, 3200, 12800, "efa", 32),
    }


# ---- shared across orchestrators: checkpoint access -------------------------------------------------
KMS_ARN = "arn:aws:kms:us-east-1:123456789012:key/0123abcd-0123-4567-89ab-0123456789ab"


@pytest.mark.parametrize("kind", ["hyperpod", "pcs"])
def test_node_role_gets_the_checkpoint_key_of_a_kms_bucket(kind: str) -> None:
    """One definition of checkpoint access (storage.checkpoint_statements) serves every orchestrator,
    so nodes can write to a KMS-encrypted checkpoint bucket."""
    text = blueprint_text({"software": {"os": "ubuntu-24.04"}, "orchestrator": {"kind": kind},
                           "storage": {"checkpoints": {"bucket": "existing-ckpt", "kms_key_arn": KMS_ARN}}})
    tpl = synth_templates(text)["t-cluster-cluster"]
    statements = [st for p in resources_of(tpl, "AWS::IAM::Policy").values() for st in p["Properties"]["PolicyDocument"]["Statement"]]
    [key] = [st for st in statements if st.get("Sid") == "CheckpointKey"]
    assert key["Resource"] == KMS_ARN
    assert key["Action"] == ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"]


# ---- examples with the other metrics modes: cdk-nag and cfn-lint --------------------------------------
# (every example as shipped: tests/test_examples.py, cfn-lint and cdk-nag per example)
@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
@pytest.mark.parametrize(("example", "region"), [("hyperpod-p5", "us-east-1"), ("pcs-p5en", "us-east-2")])
def test_examples_with_metrics_are_clean(example: str, region: str, metrics: str) -> None:
    """The HyperPod controller and the PCS login node run the head-node script with the node policy; the
    examples stay clean with either metrics mode (pcs-p5en itself has metrics: none)."""
    obs = {"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}}
    out = synth_with_nag(blueprint_text(obs, base=blueprints.example(example)))
    assert nag_report(out) == []
    cluster = json.loads(next(out.glob("*-cluster.template.json")).read_text())
    assert "head-node" in json.dumps(cluster) or example == "hyperpod-p5"  # HyperPod: in the lifecycle asset
    assert "ObservabilityNodePolicy" in json.dumps(cluster)
    assert cfn_lint(sorted(out.glob("*.template.json")), region) == []


def test_hyperpod_matrix_passes_cdk_nag() -> None:
    """Representative nag run over six GPU instance groups (ENI, checkpoint and lifecycle grants)."""
    from tests.orchestrator_support import matrix_blueprint

    out = synth_with_nag(matrix_blueprint("hyperpod", stack_for("p5.48xlarge")))
    assert nag_report(out) == []


def test_unexplained_wildcards_still_fail_cdk_nag(tmp_path: Path) -> None:
    """Acknowledgements are computed per finding: a wildcard no reason covers fails synth."""
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import build_app
    from tests.conftest import cdk_context

    app = cdk.App(outdir=str(tmp_path), context=cdk_context())
    stacks = build_app(app, load_blueprint_text(same_blueprint_text("pcs")).blueprint)
    stacks.cluster.orchestrator.role.add_to_policy(  # type: ignore[union-attr]
        iam.PolicyStatement(actions=["s3:GetObject"], resources=["arn:aws:s3:::somebody-elses-bucket/*"]))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    (violation,) = nag_report(tmp_path)  # every other wildcard is acknowledged with its reason
    assert violation["ruleName"].startswith("AwsSolutions-IAM5")
    assert "somebody-elses-bucket" in json.dumps(violation)
