"""No command prints a traceback for a blueprint that ``fmcluster validate`` accepts (issue 12 item 10).

Every CLI command (validate, plan, render, diff of its synthesis against itself, schema, and preflight
with no AWS credentials) runs through typer's CliRunner on every example blueprint and on a generated
set of edge cases that validate accepts: the smallest and largest GPU subnet for several VPC sizes,
every orchestrator, every capacity type and every metrics mode. A command may fail (exit 1, or 2 for
preflight without credentials) but never with an uncaught exception or a "Traceback" in its output.

Marked ``synth``: ``plan`` synthesizes in-process; ``plan --json`` and ``diff`` read the test run's shared synthesis
of the same text (``--cdk-out`` and two assembly folders, tests/conftest.py ``synth_folder``), so the assembly-reading
paths run for every case too. ``diff`` of blueprint files (which synthesizes them as ``plan`` does) is
tests/test_diff.py's.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.validation import BlueprintError, load_blueprint_text
from tests.conftest import synth_folder

# Each case is its own CLI round trip that shares nothing: let xdist spread them (tests/conftest.py).
pytestmark = pytest.mark.spread

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "blueprints").glob("*.yaml"))
DEFAULT = yaml.safe_load((ROOT / "blueprints/default.yaml").read_text())
HYPERPOD = yaml.safe_load((ROOT / "blueprints/hyperpod-p5.yaml").read_text())
PCS = yaml.safe_load((ROOT / "blueprints/pcs-p5en.yaml").read_text())
CR = "cr-0123456789abcdef0"


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(leaf)] = value
        else:
            node[leaf] = value
    return data


def _capacity(base: dict[str, Any], capacity: dict[str, Any]) -> dict[str, Any]:
    return _with(base, compute__0__capacity=capacity)


EDGE_CASES: dict[str, dict[str, Any]] = {
    # subnet sizes: the largest GPU subnet a VPC holds beside its public /24, and AWS's smallest subnet
    "vpc16-gpu17": _with(DEFAULT, network={"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 17}),
    "vpc16-gpu28": _with(DEFAULT, network={"vpc_cidr": "10.0.0.0/16", "gpu_subnet_prefix_length": 28}),
    "vpc20-gpu21": _with(DEFAULT, network={"vpc_cidr": "10.0.0.0/20", "gpu_subnet_prefix_length": 21}),
    "vpc23-gpu24": _with(DEFAULT, network={"vpc_cidr": "10.0.0.0/23", "gpu_subnet_prefix_length": 24}),
    "vpc23-gpu28": _with(DEFAULT, network={"vpc_cidr": "10.0.0.0/23", "gpu_subnet_prefix_length": 28}),
    "imported-subnet": _with(DEFAULT, network={"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}),
    # orchestrators
    "hyperpod-eks": _with(HYPERPOD, orchestrator={"kind": "hyperpod", "hyperpod": {
        "orchestration": "eks", "eks_cluster_arn": "arn:aws:eks:us-east-1:123456789012:cluster/train",
        "login_instance_type": None}},
        network={"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}),
    "hyperpod-no-login": _with(HYPERPOD, orchestrator__hyperpod__login_instance_type=None),
    # capacity types
    "pc-spot": _capacity(DEFAULT, {"type": "spot"}),
    "pc-odcr": _capacity(DEFAULT, {"type": "odcr", "reservation_id": CR}),
    "pc-capacity-block": _capacity(DEFAULT, {"type": "capacity_block", "reservation_id": CR}),
    "hyperpod-training-plan": _capacity(HYPERPOD, {
        "type": "training_plan", "arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/plan-1"}),
    # HyperPod spot (CapacityRequirements) is refused by R-CAP-4 today; issue 12 item 2 allows it.
    "pcs-spot": _capacity(PCS, {"type": "spot"}),
    "pcs-odcr": _capacity(PCS, {"type": "odcr", "reservation_id": CR}),
    # metrics modes
    "metrics-self-hosted": _with(DEFAULT, observability={"metrics": "self_hosted", "alert_email": "oncall@example.com"}),
    "metrics-none": _with(DEFAULT, observability={"metrics": "none"}),
    "pcs-metrics-self-hosted": _with(PCS, observability={"metrics": "self_hosted", "no_alert_receiver": True}),
    "hyperpod-metrics-none": _with(HYPERPOD, observability={"metrics": "none"}),
    # no storage at all
    "no-lustre": _with(DEFAULT, storage={"checkpoints": {"bucket": "create", "versioned": True}}),
}

NO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None,
    "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None, "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
    "AWS_WEB_IDENTITY_TOKEN_FILE": None,
}


def _blueprints() -> list[Any]:
    cases = [pytest.param(p.read_text(), id=f"example-{p.stem}") for p in EXAMPLES]
    cases += [pytest.param(yaml.safe_dump(data, sort_keys=False), id=name) for name, data in EDGE_CASES.items()]
    return cases


def _invoke(args: list[str], env: dict[str, str | None] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env=env)
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    # an uncaught exception: CliRunner stores it instead of printing it
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args[0]} raised {result.exception!r}\n{output}")
    assert "Traceback" not in output, output
    return result.exit_code, output


def test_edge_cases_are_valid() -> None:
    """The generated set only means something if validate accepts every case."""
    refused = {}
    for name, data in EDGE_CASES.items():
        try:
            load_blueprint_text(yaml.safe_dump(data))
        except BlueprintError as e:
            refused[name] = [(p.path, p.message) for p in e.problems]
    assert refused == {}


def test_schema_prints_no_traceback() -> None:
    assert _invoke(["schema"])[0] == 0


@pytest.mark.synth
@pytest.mark.parametrize("text", _blueprints())
def test_every_command_without_traceback(tmp_path: Path, text: str) -> None:
    bp = tmp_path / "blueprint.yaml"
    bp.write_text(text)
    # as a user's project: cdk.json beside the blueprint and no cdk.context.json (plan and diff synthesize offline,
    # and refuse what cdk synth refuses)
    shutil.copy(ROOT / "cdk.json", tmp_path / "cdk.json")
    assert _invoke(["validate", str(bp)])[0] == 0
    assert _invoke(["render", str(bp), "--out", str(tmp_path / "rendered")])[0] == 0
    assert _invoke(["plan", str(bp)])[0] == 0
    assembly = str(synth_folder(text)[0])
    assert _invoke(["plan", str(bp), "--json", "--cdk-out", assembly])[0] == 0
    assert _invoke(["diff", assembly, assembly])[0] == 0
    code, output = _invoke(["preflight", str(bp)], env=NO_CREDENTIALS)
    assert code in (0, 1, 2), output


# ---- odd input: every command answers with a message (and with --json, the envelope), never a traceback ----------
LONG = "a" * 300 + ".yaml"  # longer than a file name may be (ENAMETOOLONG)
ODD_FILES: dict[str, bytes] = {
    "empty": b"", "a-list": b"- 1\n- 2\n", "binary": b"\xd0\xcf\x11\xe0\x00\x01", "bom": b"\xef\xbb\xbfname: abc\n",
    "two-documents": b"name: a\n---\nname: b\n", "self-alias": b"name: &a [*a]\n",
    "unicode-keys": "name: abc\n\u00e9t\u00e9: 1\nr\u00e9gion: x\n".encode(), "huge-number": b"name: abc\ncount: " + b"9" * 5000,
    "complex-key": b"? [a, b]\n: 1\n", "python-tag": b"name: !!python/object:os.system x\n",
}


@pytest.mark.parametrize("content", list(ODD_FILES.values()), ids=list(ODD_FILES))
def test_an_odd_blueprint_file_is_a_message(tmp_path: Path, content: bytes) -> None:
    import json

    f = tmp_path / "odd.yaml"
    f.write_bytes(content)
    code, _ = _invoke(["validate", str(f)])
    assert code == 1
    result = CliRunner().invoke(app, ["validate", "--json", str(f)])
    report = json.loads(result.stdout)
    assert (result.exit_code, report["ok"]) == (1, False) and report["problems"], report


@pytest.mark.parametrize("args", [
    ["validate", LONG], ["--org", LONG, "validate", str(ROOT / "blueprints/default.yaml")],
    ["plan", str(ROOT / "blueprints/default.yaml"), "--cdk-out", LONG], ["diff", LONG, LONG],
    ["topology", "--instances", LONG, "--nodes", LONG],
], ids=["blueprint", "org", "cdk-out", "diff", "topology"])
def test_a_path_too_long_is_a_message(args: list[str]) -> None:
    code, output = _invoke(args)
    flat = re.sub(r"[\s\u2500-\u257f]+", " ", output).lower()  # without rich's box and wrapping
    assert code in (1, 2) and "file name too long" in flat, output


def test_a_number_too_long_to_read_is_a_message(tmp_path: Path) -> None:
    """Python refuses to read an integer of more than 4300 digits (``sys.get_int_max_str_digits``): YAML and JSON
    readers raise ValueError, which must not escape as a traceback."""
    base = tmp_path / "base.yaml"
    base.write_text("count: " + "9" * 5000 + "\n")
    (tmp_path / "bp.yaml").write_text("extends: base.yaml\n")
    code, output = _invoke(["validate", str(tmp_path / "bp.yaml")])
    assert code == 1 and "a number is too long to read" in output
    instances = tmp_path / "i.json"
    instances.write_text('{"Instances": [' + "9" * 5000 + "]}")
    code, output = _invoke(["topology", "--instances", str(instances), "--nodes", str(base)])
    assert code == 2 and "not usable JSON" in output
