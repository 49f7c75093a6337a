"""Benchmark: blueprint validation and in-process synthesis time per example blueprint.

Run: JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 .venv/bin/python bench/synth_bench.py [--repeat N]
Prints a markdown table (median and min wall-clock seconds). Results are machine-dependent;
bench/README.md records runs with the machine they came from. Not a test: no thresholds here.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    import aws_cdk as cdk

    from fmcluster.validation import load_blueprint
    from fmcluster.stacks.build import build_app

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| blueprint | validate s (median) | synth s (median) | synth s (min) | resources |")
    print("|---|---|---|---|---|")
    for path in sorted((ROOT / "blueprints").glob("*.yaml")):
        validate = [timed(lambda: load_blueprint(path)) for _ in range(args.repeat)]
        synth, resources = [], 0

        def run() -> None:
            nonlocal resources
            with tempfile.TemporaryDirectory() as out:
                app = cdk.App(outdir=out)
                stacks = build_app(app, load_blueprint(path))
                assembly = app.synth()
                resources = sum(len(s.template.get("Resources", {})) for s in assembly.stacks)
                del stacks

        for _ in range(args.repeat):
            synth.append(timed(run))
        print(f"| {path.name} | {statistics.median(validate):.3f} | {statistics.median(synth):.2f} | {min(synth):.2f} | {resources} |")


if __name__ == "__main__":
    main()
