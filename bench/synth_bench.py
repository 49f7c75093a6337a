"""Benchmark: blueprint validation and synthesis time.

Two modes (not a test: no thresholds here; bench/README.md records runs with the machine they came from):

* default: validation and in-process synthesis per example blueprint (median and min wall-clock seconds)::

    JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 .venv/bin/python bench/synth_bench.py [--repeat N]

* ``--cli``: ``npx cdk synth --quiet`` of a blueprint (default: blueprints/default.yaml, the app in cdk.json)
  against a bare one-bucket app (bench/bare_app.py) through the same CLI and venv, alternating so that both
  see the same machine load; prints every run, the medians and the ratio of the medians. ``--other DIR`` adds
  the same synth from another checkout of this repository (e.g. the commit before a change) to the rotation::

    .venv/bin/python bench/synth_bench.py --cli --repeat 7 [--other /tmp/before]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `python bench/synth_bench.py` puts bench/ (not the checkout) first on sys.path; import this checkout's fmcluster,
# not whichever one the venv's editable install points at.
sys.path.insert(0, str(ROOT))


def timed(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def in_process(repeat: int) -> None:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint

    print("| blueprint | validate s (median) | synth s (median) | synth s (min) | resources |")
    print("|---|---|---|---|---|")
    for path in sorted((ROOT / "blueprints").glob("*.yaml")):
        validate = [timed(lambda: load_blueprint(path)) for _ in range(repeat)]  # noqa: B023
        synth, resources = [], 0

        def run() -> None:
            nonlocal resources
            with tempfile.TemporaryDirectory() as out:
                app = cdk.App(outdir=out)
                stacks = build_app(app, load_blueprint(path))  # noqa: B023
                assembly = app.synth()
                resources = sum(len(s.template.get("Resources", {})) for s in assembly.stacks)
                del stacks

        for _ in range(repeat):
            synth.append(timed(run))
        print(f"| {path.name} | {statistics.median(validate):.3f} | {statistics.median(synth):.2f} | {min(synth):.2f} | {resources} |")


def cli(repeat: int, blueprint: str, other: Path | None) -> None:
    """Alternate CLI synths of the bare app and of ``blueprint`` (and of it in ``other``); print medians."""
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", "NODE_NO_WARNINGS": "1", "CDK_DISABLE_VERSION_CHECK": "1",
        "PATH": f"{ROOT / '.venv' / 'bin'}:{ROOT / 'node_modules' / '.bin'}:{os.environ['PATH']}",
    }
    python = ROOT / ".venv" / "bin" / "python"
    base = ["npx", "cdk", "synth", "--quiet"]  # as `make synth` runs it
    runs: dict[str, tuple[Path, list[str]]] = {
        "bare": (ROOT, [*base, "--app", f"{python} {ROOT / 'bench' / 'bare_app.py'}"]),
        "app": (ROOT, [*base, "-c", f"blueprint={blueprint}"]),
    }
    if other:
        runs["other"] = (other.resolve(), [*base, "-c", f"blueprint={blueprint}"])
    times: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}  # user+sys of the CLI and everything it waited for
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            # rotate the order each round so no variant always runs right after another
            names = list(runs)[i % len(runs):] + list(runs)[:i % len(runs)]
            for name in names:
                cwd, cmd = runs[name]
                out = Path(tmp) / f"{name}-{i}"
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                proc = subprocess.run([*cmd, "-o", str(out)], cwd=cwd, env=env, capture_output=True, text=True)
                elapsed = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if proc.returncode != 0:
                    sys.exit(f"{name}: cdk synth failed:\n{proc.stderr[-3000:]}")
                times[name].append(elapsed)
                cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                print(f"round {i + 1} {name}: {elapsed:.2f} s wall, {cpu[name][-1]:.2f} s CPU", flush=True)
    bare, bare_cpu = statistics.median(times["bare"]), statistics.median(cpu["bare"])
    print()
    print("| variant | runs | wall s (median) | wall s (min) | wall / bare | CPU s (median) | CPU / bare |")
    print("|---|---|---|---|---|---|---|")
    for name, ts in times.items():
        label = {"bare": "bare one-bucket app", "app": f"app.py, {blueprint}", "other": f"app.py in {other}"}[name]
        c = statistics.median(cpu[name])
        print(f"| {label} | {len(ts)} | {statistics.median(ts):.2f} | {min(ts):.2f} | {statistics.median(ts) / bare:.2f} "
              f"| {c:.2f} | {c / bare_cpu:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="CLI synth of --blueprint against a bare one-bucket app")
    parser.add_argument("--blueprint", default="blueprints/default.yaml")
    parser.add_argument("--other", type=Path, help="with --cli: also synth in this checkout (same CLI, its own venv)")
    args = parser.parse_args()
    if args.cli:
        cli(args.repeat, args.blueprint, args.other)
    else:
        in_process(args.repeat)


if __name__ == "__main__":
    main()
