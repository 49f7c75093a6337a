"""Teardown on the synthesized templates of one example per orchestrator: `cdk destroy --all` deletes the cluster
stack first (the CDK CLI destroys stacks in reverse deployment order: aws/aws-cdk packages/aws-cdk/lib/cdk-toolkit.ts
``destroy``, "The stacks will have been ordered for deployment, so reverse them for deletion"), the cluster stack keeps
nothing (ParallelCluster's ``Custom::PclusterCluster`` with ``DeletionPolicy: Delete``, its own default:
https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html), and what stays is the data and what
the data needs (docs/storage.md "Teardown", docs/operations.md "Teardown")."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, cdk_context

NETWORK_KEPT = {"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::Logs::LogGroup"}  # VPC + GPU subnet for the FSx ENIs; flow logs
#: The file system, its group and the group's rules between file servers (docs/storage.md "Teardown"), the buckets.
STORAGE_KEPT = {"AWS::FSx::FileSystem", "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress",
                "AWS::EC2::SecurityGroupEgress", "AWS::S3::Bucket"}
TEARDOWN = [
    # (example, stack suffix -> resource types kept by DeletionPolicy Retain)
    ("default", {"network": NETWORK_KEPT, "storage": STORAGE_KEPT | {"AWS::FSx::DataRepositoryAssociation"},
                 "observability": {"AWS::KMS::Key"}, "cluster": set()}),
    ("hyperpod-p5", {"network": NETWORK_KEPT, "storage": STORAGE_KEPT | {"AWS::FSx::DataRepositoryAssociation"},
                     "observability": {"AWS::KMS::Key"}, "cluster": set()}),
    ("pcs-p5en", {"network": NETWORK_KEPT, "storage": STORAGE_KEPT, "cluster": set()}),
]


@cache
def _app(example: str) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """(stack -> stacks it depends on, stack -> template) of an example."""
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text

    bp = load_blueprint_text((ROOT / "blueprints" / f"{example}.yaml").read_text()).blueprint
    out = tempfile.mkdtemp(prefix="fmcluster-teardown-")
    app = cdk.App(outdir=out, context=cdk_context())
    stacks = build_app(app, bp)
    app.synth()
    deps = {s.stack_name: [d.stack_name for d in s.dependencies] for s in stacks.all()}
    templates = {s.stack_name: json.loads((Path(out) / f"{s.stack_name}.template.json").read_text()) for s in stacks.all()}
    return deps, templates


def _destroy_order(deps: dict[str, list[str]]) -> list[str]:
    """Reverse of a deployment order (every stack after the stacks it depends on), as `cdk destroy --all` runs."""
    order: list[str] = []
    while len(order) < len(deps):
        order += sorted(s for s, d in deps.items() if s not in order and all(x in order for x in d))
    return order[::-1]


@pytest.mark.parametrize(("example", "kept"), TEARDOWN, ids=[t[0] for t in TEARDOWN])
def test_cdk_destroy_all_deletes_the_cluster_first_and_keeps_only_the_data(example: str, kept: dict[str, set[str]]) -> None:
    deps, templates = _app(example)
    by_suffix = {name.rsplit("-", 1)[1]: name for name in templates}
    assert set(by_suffix) == set(kept)
    order = _destroy_order(deps)
    cluster = by_suffix["cluster"]
    assert order[0] == cluster, order  # nothing depends on the cluster stack: it goes first
    assert {by_suffix["network"], by_suffix["storage"]} <= set(deps[cluster])
    for suffix, types in kept.items():
        resources = templates[by_suffix[suffix]]["Resources"].values()
        assert {r["Type"] for r in resources if r.get("DeletionPolicy") == "Retain"} == types, suffix


def test_the_parallelcluster_cluster_is_deleted_with_its_stack() -> None:
    _, templates = _app("default")
    [cluster] = [r for r in templates["llm-train-cluster"]["Resources"].values() if r["Type"] == "Custom::PclusterCluster"]
    assert cluster["Properties"]["DeletionPolicy"] == "Delete"
    assert "DeletionPolicy" not in cluster  # the CloudFormation attribute: CloudFormation's default, delete
    # the EFA security group the cluster's instances use goes with the network stack, after the cluster
    network = templates["llm-train-network"]["Resources"].values()
    groups = [r for r in network if r["Type"] == "AWS::EC2::SecurityGroup"]
    assert groups and all(r.get("DeletionPolicy", "Delete") == "Delete" for r in groups)


def test_hyperpod_eks_destroys_its_addons_then_the_cluster() -> None:
    """HyperPod EKS: ``<name>-addons`` depends on ``<name>-cluster`` (docs/decisions.md 50), so `cdk destroy --all`
    deletes the add-ons first, then the HyperPod cluster, then the EKS cluster; none of the three keeps anything."""
    deps, templates = _app("hyperpod-eks")
    order = _destroy_order(deps)
    assert order[:2] == ["hp-eks-addons", "hp-eks-cluster"], order
    assert order.index("hp-eks-cluster") < order.index("hp-eks-eks")
    for name in ("hp-eks-addons", "hp-eks-cluster", "hp-eks-eks"):
        assert [r["Type"] for r in templates[name]["Resources"].values() if r.get("DeletionPolicy") == "Retain"] == [], name
