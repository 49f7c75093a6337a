"""Helpers for the orchestrator tests: matrix blueprints, synthesis with cdk-nag, and a small
CloudFormation-intrinsic resolver that turns a synthesized resource into the API request it implies.

Matrix: one blueprint per (orchestrator, software stack) holding one compute group per catalog
instance type the stack covers, so the 9 types x 3 orchestrators need 9 syntheses, not 27.
"""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from fmcluster.catalog import get_instance, known_instance_types
from fmcluster.catalog.images import bakeable_stacks
from fmcluster.catalog.software import get_stack
from tests.blueprints import DROP, blueprint_text, example
from tests.conftest import assert_no_synthesis_errors, cdk_context, synth_folder, synth_templates

KINDS = ("parallelcluster", "hyperpod", "pcs")
TRAINING_PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-plan"
CAPACITY_BLOCK = {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
PLACEHOLDER_ACCOUNT = "123456789012"


def group_name(instance_type: str) -> str:
    """``p5.48xlarge`` -> ``p5-48xlarge`` (a valid compute group name)."""
    return instance_type.replace(".", "-")


def stack_for(instance_type: str) -> str:
    """The newest bakeable known-good stack (last in catalog order; stacks that describe an official image are
    booted, not baked) whose families cover the type."""
    family = get_instance(instance_type).family
    return [s for s in bakeable_stacks() if family in get_stack(s).families][-1]


def matrix_stacks() -> dict[str, list[str]]:
    """Software stack -> the catalog types it is used for in the matrix."""
    out: dict[str, list[str]] = {}
    for t in known_instance_types():
        out.setdefault(stack_for(t), []).append(t)
    return out


def _group(kind: str, instance_type: str) -> dict[str, Any]:
    inst = get_instance(instance_type)
    g: dict[str, Any] = {"name": group_name(instance_type), "instance_type": instance_type, "count": 2}
    if inst.ultraserver_sizes:
        g["count"] = inst.ultraserver_sizes[0]
    if inst.capacity_block_only:
        g["capacity"] = {"type": "training_plan", "arn": TRAINING_PLAN} if kind == "hyperpod" else dict(CAPACITY_BLOCK)
    return g


def zone_bound(instance_type: str) -> bool:
    """A type EC2 sells as Capacity Blocks only in certain zones (catalog ``capacity_block_zones``, R-CAP-15)."""
    return bool(get_instance(instance_type).capacity_block_zones)


def runs_on(kind: str, instance_type: str) -> bool:
    """Whether ``kind`` can run the type at all: PCS cannot run a Capacity-Block type sold only in a Local Zone,
    because fmcluster gives the PCS control plane the GPU subnet and it cannot be in a Local Zone (R-LZ-2)."""
    return not (kind == "pcs" and zone_bound(instance_type) and get_instance(instance_type).capacity_block_only)


def matrix_blueprint(kind: str, stack: str) -> str:
    """A blueprint for ``kind`` with one group per catalog type that ``stack`` covers and ``kind`` can run
    (:func:`runs_on`). Capacity Blocks of a zone-bound type put the blueprint in that zone, with an existing VPC
    (a Local Zone, R-LZ-1)."""
    types = [t for t in matrix_stacks()[stack] if runs_on(kind, t)]
    arm = any(get_instance(t).cpu_architecture == "arm64" for t in types)
    patch: dict[str, Any] = {
        "name": f"m-{kind[:3]}-{stack.split('-')[0]}",
        # ParallelCluster's Ubuntu 24.04 image has no Lustre client (R-IMG-8): its baked images use 22.04
        # a pinned parent: HyperPod has no public parameter for its image (R-BAKE-1)
        "software": {"image": {"mode": "bake", "parent_ami_id": "ami-0123456789abcdef0"}, "stack": stack,
                     "os": "ubuntu-22.04" if kind == "parallelcluster" else "ubuntu-24.04"},
        "compute": [_group(kind, t) for t in types],
        "orchestrator": {"kind": kind},
    }
    if kind == "parallelcluster" and arm:
        patch["orchestrator"]["parallelcluster"] = {"head_node_instance_type": "m7g.4xlarge"}
    zones = [get_instance(g["instance_type"]).capacity_block_zones for g in patch["compute"]
             if g.get("capacity", {}).get("type") == "capacity_block" and zone_bound(g["instance_type"])]
    if zones:
        patch["availability_zone"] = zones[0][0]
        patch["network"] = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}
    return blueprint_text(patch)


@cache
def matrix_templates(kind: str, stack: str) -> dict[str, dict[str, Any]]:
    return synth_templates(matrix_blueprint(kind, stack))


def same_blueprint_text(kind: str) -> str:
    """blueprints/hyperpod-p5.yaml with ``orchestrator`` replaced by ``{kind: <kind>}`` and ``software.os`` left to
    each orchestrator's official image (the PCS-ready DLAMI exists for Ubuntu 24.04 only, R-IMG-3)."""
    return blueprint_text({"orchestrator": {"kind": kind, "hyperpod": DROP}, "software": {"os": DROP}},
                          base=example("hyperpod-p5"))


def matrix_cases() -> list[tuple[str, str]]:
    """(orchestrator, instance type) for every pair the orchestrator can run (:func:`runs_on`)."""
    return [(k, t) for k in KINDS for t in known_instance_types() if runs_on(k, t)]


def cluster_template(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return next(t for name, t in templates.items() if name.endswith("-cluster"))


def pcs_launch_templates(tpl: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """PCS node group name -> (instance type, LaunchTemplateData of the template it uses)."""
    lts = {k: r["Properties"]["LaunchTemplateData"] for k, r in tpl["Resources"].items()
           if r["Type"] == "AWS::EC2::LaunchTemplate"}
    return {
        r["Properties"]["Name"]: (r["Properties"]["InstanceConfigs"][0]["InstanceType"],
                                  lts[r["Properties"]["CustomLaunchTemplate"]["TemplateId"]["Ref"]])
        for r in tpl["Resources"].values() if r["Type"] == "AWS::PCS::ComputeNodeGroup"
    }


def synth_with_nag(blueprint_text: str) -> Path:
    """Synthesize in-process with the AwsSolutions pack (as app.py does); raises on any finding."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text

    bp = load_blueprint_text(blueprint_text).blueprint
    out = Path(tempfile.mkdtemp(prefix="fmcluster-nag-"))
    app = cdk.App(outdir=str(out), context=cdk_context())
    build_app(app, bp)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assert_no_synthesis_errors(app.synth())
    return out



def synth_to_folder(blueprint_text: str) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Synthesize in-process (no nag) into a folder of its own; return the folder (assets are there) and
    stack name -> template JSON (the synthesis :func:`tests.conftest.synth_templates` shares)."""
    return synth_folder(blueprint_text)


def imported_resource_type(templates: dict[str, dict[str, Any]], value: dict[str, Any]) -> str:
    """The type of the resource an ``Fn::ImportValue`` resolves to, through the exporting stack's output."""
    name = value["Fn::ImportValue"]
    for tpl in templates.values():
        for output in tpl.get("Outputs", {}).values():
            if output.get("Export", {}).get("Name") == name:
                return str(tpl["Resources"][output["Value"]["Ref"]]["Type"])
    raise AssertionError(f"no stack exports {name}")


def nag_report(outdir: Path) -> list[dict[str, Any]]:
    """cdk-nag (AwsSolutions) violations in the validation report; CDK's own "CloudFormation Validate"
    warnings (per-Region type lists, the same data cfn-lint uses) are checked by cfn-lint instead."""
    path = outdir / "validation-report.json"
    if not path.exists():
        return []
    return [v for r in json.loads(path.read_text()).get("pluginReports", [])
            if r.get("pluginName") != "CloudFormation Validate" for v in r.get("violations", [])]


# ---- a small resolver for CloudFormation intrinsics -------------------------------------------
class Resolver:
    """Resolves the intrinsics fmcluster templates use, with realistic placeholders for values only
    AWS knows (ids, ARNs, imported outputs). Good enough to turn a resource into an API request."""

    def __init__(self, template: dict[str, Any], region: str) -> None:
        self.t = template
        self.region = region

    def __call__(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self(x) for x in v]
        if not isinstance(v, dict):
            return v
        if len(v) == 1:
            (k, arg), = v.items()
            if k == "Ref":
                return self._ref(arg)
            if k == "Fn::GetAtt":
                return self._getatt(*arg)
            if k == "Fn::Join":
                sep, parts = arg
                return sep.join(str(self(p)) for p in parts)
            if k == "Fn::ImportValue":
                return self._import(arg)
            if k == "Fn::Sub":
                return arg.replace("${AWS::AccountId}", PLACEHOLDER_ACCOUNT).replace("${AWS::Region}", self.region)
        return {k: self(x) for k, x in v.items()}

    def _ref(self, name: str) -> str:
        pseudo = {"AWS::AccountId": PLACEHOLDER_ACCOUNT, "AWS::Region": self.region, "AWS::Partition": "aws",
                  "AWS::URLSuffix": "amazonaws.com"}
        if name in pseudo:
            return pseudo[name]
        res = self.t["Resources"][name]
        if res["Type"] == "AWS::S3::Bucket" and "BucketName" in res.get("Properties", {}):
            return str(self(res["Properties"]["BucketName"]))
        return f"{name.lower()[:20]}-0123456789abcdef0"

    def _getatt(self, name: str, attr: str) -> str:
        if attr == "Arn":
            kind = self.t["Resources"][name]["Type"].split("::")[1].lower()
            return f"arn:aws:{kind}::{PLACEHOLDER_ACCOUNT}:role/{name}"
        return f"{name}-{attr}".lower()

    def _import(self, export: str) -> str:
        if "SecurityGroup" in export:
            return "sg-0123456789abcdef0"
        if "Subnet" in export:
            return "subnet-0123456789abcdef0"
        if "DNSName" in export:
            return f"fs-0123456789abcdef0.fsx.{self.region}.amazonaws.com"
        if "LustreMountName" in export:
            return "abcdefgh"
        return "imported-value"



def head_node_steps(t: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    """The ParallelCluster head node's ``phase`` steps, from the SSM parameter its launcher reads
    (tests/orchestrators/parallelcluster/test_head_node_actions.py): the parameter's ``Fn::Join`` value, an
    ``Fn::Sub`` shown as its template string."""
    [value] = [r["Properties"]["Value"] for r in t["Resources"].values() if r["Type"] == "AWS::SSM::Parameter"
               and r["Properties"]["Name"].endswith(f"/head-node/{phase}")]
    parts = value["Fn::Join"][1] if isinstance(value, dict) else [value]
    text = "".join(p if isinstance(p, str) else p.get("Fn::Sub", "<token>") if isinstance(p, dict) else "<token>"
                   for p in parts)
    steps: list[dict[str, Any]] = json.loads(text)
    return steps


def pcluster_schema_results(configs: dict[str, dict[str, Any]], folder: Path) -> tuple[int, list[tuple[str, bool, Any]]]:
    """The checker's exit code and ``(file name, ok, errors)`` of each ParallelCluster config, as ParallelCluster's own schema loads it
    (``tools/pcluster_schema_check.py`` in ``.venv-pcluster``), with the files written as ``<name>.pcluster-config.yaml``
    in ``folder``."""
    import subprocess

    import yaml

    from tests.conftest import ROOT

    paths = []
    for name, config in configs.items():
        path = folder / f"{name}.pcluster-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths.append(str(path))
    proc = subprocess.run([str(ROOT / ".venv-pcluster" / "bin" / "python"), str(ROOT / "tools" / "pcluster_schema_check.py"),
                           *paths], capture_output=True, text=True, timeout=300, cwd=ROOT)
    return proc.returncode, [(Path(r["file"]).name, r["ok"], r["errors"]) for r in
                             (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))]
