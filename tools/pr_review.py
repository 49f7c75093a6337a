"""The steps of the pull-request review workflow (.github/workflows/fmcluster-review.yml), one subcommand each.

Run from the repository root with the project's venv: ``.venv/bin/python tools/pr_review.py STEP --out DIR``.
Every step reads and writes the review folder ``DIR`` (one sub-folder per changed blueprint, see
``fmcluster.review.pr.load_review``), so a step can be re-run on its own and tests run them as the workflow does.

changed  --base SHA   blueprints changed since SHA (every blueprint when the organisation file changed); the base
                      branch's blueprints/ folder is extracted to DIR/base-tree (so its `extends` and organisation
                      file resolve as they did there)
validate              fmcluster validate --json on the changed blueprints -> DIR/validate.json, GitHub annotations
synth                 npx cdk synth (cdk-nag runs in the app) of the head and base version of each valid blueprint
lint                  cfn-lint on the head templates -> DIR/<n>/lint.txt
compare               fmcluster plan --json of both sides, fmcluster diff --format markdown (repository paths as labels)
comment               the pull-request comment (markdown) on standard output
verdict               exit 1 on an invalid blueprint, a failed synth, a cfn-lint error or an unsafe diff (data loss)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

ROOT = Path.cwd()
BLUEPRINTS = "blueprints"
ORG_FILE = "fmcluster.org.yaml"
#: At most this many ``cdk synth`` at once (each is a Python and a Node process of up to ~1 GiB).
SYNTH_PARALLEL = 4


def _venv_bin(name: str) -> str:
    local = ROOT / ".venv" / "bin" / name
    return str(local) if local.exists() else name


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    print("+ " + " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, text=True, capture_output=True, **kw)  # type: ignore[call-overload,no-any-return]


def _folders(out: Path) -> list[Path]:
    return sorted((p for p in out.iterdir() if p.is_dir() and (p / "path").is_file()), key=lambda p: int(p.name))


def changed(out: Path, base: str) -> int:
    out.mkdir(parents=True, exist_ok=True)
    diff = _run(["git", "diff", "--name-only", "--diff-filter=d", f"{base}...HEAD", "--", BLUEPRINTS])
    if diff.returncode != 0:
        print(diff.stderr, file=sys.stderr)
        return 2
    names = [n for n in diff.stdout.split() if n.endswith((".yaml", ".yml"))]
    if any(Path(n).name == ORG_FILE for n in names):  # the organisation file changed: every blueprint may change
        names = sorted(str(p) for p in Path(BLUEPRINTS).glob("*.y*ml"))
    names = [n for n in names if Path(n).name != ORG_FILE]
    archive = subprocess.run(["git", "archive", "--format=tar", base, BLUEPRINTS], capture_output=True)
    tree = out / "base-tree"
    if archive.returncode == 0:
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
    ref = os.environ.get("BASE_REF") or base[:12]
    for i, name in enumerate(names):
        folder = out / str(i)
        folder.mkdir(exist_ok=True)
        (folder / "path").write_text(name)
        (folder / "base_ref").write_text(ref)
    (out / "changed.txt").write_text("".join(f"{n}\n" for n in names))
    print(f"{len(names)} changed blueprint(s): {' '.join(names) or '-'}")
    return 0


def validate(out: Path) -> int:
    from fmcluster.review.pr import github_annotations

    names = (out / "changed.txt").read_text().split()
    if not names:
        (out / "validate.json").write_text(json.dumps({"command": "validate", "ok": True, "problems": [], "result": []}))
        return 0
    res = _run([_venv_bin("fmcluster"), "validate", "--json", *names])
    try:
        report = json.loads(res.stdout)
    except json.JSONDecodeError:
        print(res.stdout + res.stderr, file=sys.stderr)
        return 2
    (out / "validate.json").write_text(json.dumps(report, indent=2))
    for line in github_annotations(report):
        print(line)
    return 0


def _invalid(out: Path) -> set[str]:
    from fmcluster.review.pr import invalid_files

    f = out / "validate.json"
    return invalid_files(json.loads(f.read_text())) if f.is_file() else set()


def _base_file(out: Path, path: str) -> Path | None:
    f = out / "base-tree" / path
    return f if f.is_file() else None


def synth(out: Path) -> int:
    """Synthesize the head and base version of every valid changed blueprint, several at once (one ``cdk synth``
    per CPU, at most :data:`SYNTH_PARALLEL`), reporting failures in blueprint order."""
    invalid = _invalid(out)
    jobs: list[tuple[Path, str, str, Path]] = []
    for folder in _folders(out):
        path = (folder / "path").read_text()
        if path in invalid:
            continue
        sides = [("head", Path(path))] + ([("base", b)] if (b := _base_file(out, path)) else [])
        jobs += [(folder, path, side, bp) for side, bp in sides]

    def one(job: tuple[Path, str, str, Path]) -> subprocess.CompletedProcess[str]:
        folder, _, side, bp = job
        return _run(["npx", "cdk", "synth", "--quiet", "-c", f"blueprint={bp}", "-o", str(folder / f"{side}.out")])

    with ThreadPoolExecutor(max_workers=max(1, min(SYNTH_PARALLEL, os.cpu_count() or 1))) as pool:
        results = list(pool.map(one, jobs))
    for (folder, path, side, _), res in zip(jobs, results, strict=True):
        # head: synth.rc, synth.log; base: base.synth.rc (compare never diffs a side that did not synthesize)
        prefix = "" if side == "head" else "base."
        (folder / f"{prefix}synth.rc").write_text(str(res.returncode))
        (folder / f"{prefix}synth.log").write_text(res.stdout + res.stderr)
        if res.returncode != 0:
            print(f"::error file={path},title=fmcluster synth::{side} version does not synthesize (cdk-nag or CDK); "
                  "see the job log", file=sys.stdout)
            print(res.stderr, file=sys.stderr)
    return 0


def lint(out: Path) -> int:
    from fmcluster.validation import BlueprintError, load_blueprint

    for folder in _folders(out):
        head_out = folder / "head.out"
        templates = sorted(t.name for t in head_out.glob("*.template.json")) if head_out.is_dir() else []
        if not templates:
            continue
        try:
            region = load_blueprint((folder / "path").read_text()).region
        except BlueprintError:
            continue
        # relative template names, so the comment shows no runner paths
        res = _run([_venv_bin("cfn-lint"), "--regions", region, "--format", "parseable", "--", *templates], cwd=head_out)
        errors = [line for line in res.stdout.splitlines() if re.search(r":E\d{4}:", line)]
        warnings = [line for line in res.stdout.splitlines() if re.search(r":W\d{4}:", line)]
        (folder / "lint.txt").write_text("\n".join(errors + ([f"({len(warnings)} warning(s), see the job log)"] if warnings else [])))
        (folder / "lint.rc").write_text(str(res.returncode))
        print(res.stdout, file=sys.stderr)
    return 0


def compare(out: Path) -> int:
    """Plan and diff every changed blueprint; blueprints run in parallel (as in :func:`synth`), each into its folder."""
    with ThreadPoolExecutor(max_workers=max(1, min(SYNTH_PARALLEL, os.cpu_count() or 1))) as pool:
        list(pool.map(lambda folder: _compare_one(out, folder), _folders(out)))
    return 0


def _compare_one(out: Path, folder: Path) -> None:
    path = (folder / "path").read_text()
    head_out, base_out = folder / "head.out", folder / "base.out"
    if not head_out.is_dir() or _rc(folder, "synth.rc"):
        return  # a failed synth leaves partial output: never plan or diff it
    plan = _run([_venv_bin("fmcluster"), "plan", path, "--cdk-out", str(head_out), "--json"])
    (folder / "head.json").write_text(plan.stdout)
    base = _base_file(out, path)
    if base is None or not base_out.is_dir() or _rc(folder, "base.synth.rc"):
        return
    plan = _run([_venv_bin("fmcluster"), "plan", str(base), "--cdk-out", str(base_out), "--json"])
    (folder / "base.json").write_text(plan.stdout)
    ref = (folder / "base_ref").read_text()
    diff = _run([_venv_bin("fmcluster"), "diff", str(base_out), str(head_out), "--format", "markdown",
                 "--old-label", f"{path}@{ref}", "--new-label", path, "--boot-from", path])
    (folder / "diff.md").write_text(diff.stdout if diff.returncode in (0, 1) else f"```\n{diff.stderr}\n```\n")
    (folder / "diff.rc").write_text(str(diff.returncode))


def comment(out: Path) -> int:
    from fmcluster.review.pr import comment as build
    from fmcluster.review.pr import load_review

    print(build([load_review(f) for f in _folders(out)], invalid=sorted(_invalid(out))), end="")
    return 0


def _rc(folder: Path, name: str) -> int:
    f = folder / name
    return int(f.read_text().strip() or 0) if f.is_file() else 0


def verdict(out: Path) -> int:
    failed = [f"invalid: {p}" for p in sorted(_invalid(out))]
    for folder in _folders(out):
        path = (folder / "path").read_text()
        if _rc(folder, "synth.rc"):
            failed.append(f"does not synthesize: {path}")
        elif _rc(folder, "base.synth.rc"):
            failed.append(f"base version does not synthesize, not compared: {path}")
        if _rc(folder, "lint.rc") & 2:  # cfn-lint exit code bit 2: an error (1 fatal, 4 warning, 8 informational)
            failed.append(f"cfn-lint errors: {path}")
        if _rc(folder, "diff.rc") == 1:
            failed.append(f"data loss or failing update: {path}")
        elif _rc(folder, "diff.rc") == 2:
            failed.append(f"fmcluster diff could not compare: {path}")
    for f in failed:
        print(f"::error title=fmcluster review::{f}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["changed", "validate", "synth", "lint", "compare", "comment", "verdict"])
    parser.add_argument("--out", type=Path, required=True, help="review folder")
    parser.add_argument("--base", help="changed: the base commit")
    args = parser.parse_args(argv)
    if args.step == "changed":
        if not args.base:
            parser.error("changed needs --base SHA")
        return changed(args.out, args.base)
    step = {"validate": validate, "synth": synth, "lint": lint, "compare": compare, "comment": comment, "verdict": verdict}
    return step[args.step](args.out)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
