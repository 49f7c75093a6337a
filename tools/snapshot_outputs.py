"""Write every generated output of every example blueprint (and a few variants) into one folder, for a refactor
that must change no output: run it before and after, then compare the two folders with ``diff -r``.

Usage (from the repository root, after ``make setup``)::

    .venv/bin/python -m tools.snapshot_outputs OUT_DIR

Per blueprint ``B`` (every ``blueprints/*.yaml`` plus :data:`VARIANTS`) it writes ``OUT_DIR/B/``:

- ``validate.json``: ``fmcluster validate --json`` (exit code included);
- ``cdk.out/``: the in-process synthesis (templates, rendered assets, manifest), for valid blueprints;
- ``plan.txt``, ``plan.json``, ``plan.md``: ``fmcluster plan --cdk-out`` in the three formats;
- ``render/``: ``fmcluster render``.

and ``OUT_DIR/diff/<old>--<new>.{txt,json,md}`` for :data:`DIFFS`, ``OUT_DIR/schema.json`` and ``OUT_DIR/org-schema.json``.
Outputs that carry a temporary path have it replaced by ``<tmp>``, the checkout's path by ``<root>``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.blueprints import DROP, merge

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "blueprints").glob("*.yaml"))

#: name -> (example it patches, patch in tests.blueprints.merge's semantics: DROP removes a key).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "default-accounting": ("default", {"orchestrator": {"slurm": {"accounting": {
        "enabled": True, "second_availability_zone": "us-east-1b"}}}}),
    "default-self-hosted": ("default", {"observability": {"metrics": "self_hosted", "alert_email": "ops@example.com"}}),
    "default-bake": ("default", {"software": {"image": {"mode": "bake"}}}),
    "default-containers": ("default", {"software": {"containers": [
        {"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:26.08-py3"}]}}),
    "default-spot-two-groups": ("default", {"compute": [
        {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "capacity": {"type": "spot"}},
        {"name": "gpu2", "instance_type": "p4d.24xlarge", "count": 2, "capacity": {"type": "on_demand"}}]}),
    "default-no-lustre": ("default", {"storage": {"lustre": DROP}}),
    "pcs-accounting-self-hosted": ("pcs-p5en", {"orchestrator": {"slurm": {"accounting": {"enabled": True}}},
                                                "observability": {"metrics": "self_hosted"}}),
    "pcs-managed": ("pcs-p5en", {"observability": {"metrics": "managed"}}),
    "hyperpod-self-hosted": ("hyperpod-p5", {"observability": {"metrics": "self_hosted"}}),
    "hyperpod-bake": ("hyperpod-p5", {"software": {"image": {"mode": "bake", "parent_ami_id": "ami-0123456789abcdef0"}}}),
    "hyperpod-eks-lustre": ("hyperpod-eks", {"storage": {"lustre": {
        "deployment_type": "PERSISTENT_2", "storage_capacity_gib": 4800, "per_unit_storage_throughput": 250,
        "mount_point": "/fsx"}}}),
    "hyperpod-eks-managed": ("hyperpod-eks", {"observability": {"metrics": "managed"}}),
    "gb200-pcs": ("p6e-gb200", {"orchestrator": {"kind": "pcs", "parallelcluster": DROP,
                                                 "pcs": {"slurm_version": "25.05"}}}),
    "bad-typo": ("default", {"compute": [{"name": "gpu", "instance_type": "p5.48xlargee", "count": 4}]}),
}
#: (old, new) blueprint names whose diff is written.
DIFFS = [("default", v) for v in VARIANTS if VARIANTS[v][0] == "default"] + [
    ("pcs-p5en", "pcs-accounting-self-hosted"), ("hyperpod-p5", "hyperpod-self-hosted"),
    ("hyperpod-eks", "hyperpod-eks-lustre")]


def blueprint_files(work: Path) -> dict[str, Path]:
    files = {p.stem: p for p in EXAMPLES}
    for name, (base, patch) in VARIANTS.items():
        path = work / "blueprints" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(merge(yaml.safe_load(files[base].read_text()), patch), sort_keys=False))
        files[name] = path
    return files


def scrub(text: str, *tmps: Path) -> str:
    text = text.replace(str(ROOT), "<root>")
    for t in tmps:
        text = text.replace(str(t), "<tmp>")
    return re.sub(r"/tmp/[A-Za-z0-9_.-]+", "<tmp>", text)


def run(args: list[str]) -> tuple[int, str]:
    from typer.testing import CliRunner

    from fmcluster.cli import app

    res = CliRunner().invoke(app, args, env={"COLUMNS": "160", "NO_COLOR": "1", "TERM": "dumb"})
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


def synth(path: Path, out: Path) -> None:
    import aws_cdk as cdk

    from fmcluster.review.synth import project_context
    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint

    bp = load_blueprint(path)
    # no lookup context: a bake's parent AMI is found at deploy time, synthesis reads none (docs/decisions.md 44)
    ctx = project_context(ROOT / "blueprints" / "default.yaml")
    app = cdk.App(outdir=str(out), context=ctx)
    build_app(app, bp)
    app.synth()
    for meta in [*out.glob("*.metadata.json"), *out.glob("validation-report.json")]:  # stack traces: jsii's temp folders
        meta.write_text(scrub(meta.read_text()))


def snapshot_one(name: str, path: Path, out: Path, work: Path) -> bool:
    d = out / name
    d.mkdir(parents=True)
    code, text = run(["validate", "--json", str(path)])
    (d / "validate.json").write_text(f"exit {code}\n{scrub(text, work)}")
    if code != 0:
        return False
    synth(path, d / "cdk.out")
    for fmt, ext in (("text", "txt"), ("json", "json"), ("markdown", "md")):
        code, text = run(["plan", str(path), "--cdk-out", str(d / "cdk.out"), "--format", fmt])
        (d / f"plan.{ext}").write_text(f"exit {code}\n{scrub(text, work, d)}")
    code, text = run(["render", str(path), "--out", str(d / "render")])
    (d / "render.txt").write_text(f"exit {code}\n{scrub(text, work, d)}")
    return True


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="fmc-snap-") as tmp:
        work = Path(tmp)
        files = blueprint_files(work)
        valid = {name for name, path in files.items() if snapshot_one(name, path, out, work)}
        (out / "diff").mkdir()
        for old, new in DIFFS:
            if old not in valid or new not in valid:
                continue
            for fmt, ext in (("text", "txt"), ("json", "json"), ("markdown", "md")):
                code, text = run(["diff", str(out / old / "cdk.out"), str(out / new / "cdk.out"), "--format", fmt,
                                  "--old-label", old, "--new-label", new])
                (out / "diff" / f"{old}--{new}.{ext}").write_text(f"exit {code}\n{scrub(text, work, out)}")
    (out / "schema.json").write_text(run(["schema"])[1])
    (out / "org-schema.json").write_text(run(["schema", "--org"])[1])
    print(json.dumps(sorted(valid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
