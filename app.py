"""CDK entry point: load -> validate -> build -> synth. Blueprint from ``-c blueprint=FILE``.

There is no default blueprint: ``cdk deploy`` or ``cdk destroy`` without ``-c blueprint=FILE`` (or with
an empty value) must not act on some example blueprint, so the app stops with exit 1 and says how to
name one. The CDK CLI does not tell the app which command runs, so this holds for ``cdk synth`` too;
``make synth`` passes ``-c blueprint=$(BLUEPRINT)``.
"""

from __future__ import annotations

import gc
import os
import sys

# jsii prints a Node 20 end-of-life banner on every run; the CLI and the Makefile run on Node 20.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# Construct stack traces in the cloud assembly name the jsii kernel's temporary folder: the CDK CLI printed a bare
# "<tmp>/lib/program.js:1:5591" line with every annotation, and *.metadata.json changed on every synth (noise in a
# reviewed diff). aws-cdk-lib reads CDK_DISABLE_STACK_TRACE (the "aws:cdk:disable-stack-trace" context key, which
# user context may not set).
os.environ.setdefault("CDK_DISABLE_STACK_TRACE", "1")

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from fmcluster.orchestrators.parallelcluster.review import write_pcluster_configs  # noqa: E402
from fmcluster.stacks.build import build_app  # noqa: E402
from fmcluster.validation import BlueprintError, load_blueprint_with_warnings  # noqa: E402

NO_BLUEPRINT = (
    "error: no blueprint named, got blueprint context {got}; allowed -c blueprint=<path to a blueprint YAML>, "
    "e.g. npx cdk deploy --all -c blueprint=blueprints/default.yaml "
    "(the same for cdk synth, diff and destroy; make synth BLUEPRINT=<file> passes it). "
    "fmcluster never falls back to a default blueprint, so deploy and destroy act only on the one you name."
)


def synthesize(app: cdk.App) -> int:
    """Load the blueprint named by the ``blueprint`` context of ``app`` (and the ``org`` context: the organisation
    file, default ``fmcluster.org.yaml`` beside the blueprint, ``none`` for none), build every stack, run cdk-nag's
    AwsSolutions pack as a validation plugin, synthesize into ``app``'s outdir and write each ParallelCluster cluster's
    ``<stack>.pcluster-config.yaml`` beside its template. Errors and warnings go to stderr.

    Returns the process exit code: 0 synthesized, 1 no blueprint named or the blueprint is refused (nothing is
    written). The tests call this function in-process with the context the CDK CLI passes (tests/conftest.py
    ``example_synth``), so the CLI path and the tested path are one code path."""
    raw = app.node.try_get_context("blueprint")
    path = raw.strip() if isinstance(raw, str) else ""
    if not path:
        print(NO_BLUEPRINT.format(got="not set" if raw is None else repr(raw)), file=sys.stderr)
        return 1
    org = app.node.try_get_context("org")
    try:
        result = load_blueprint_with_warnings(path, org=org if isinstance(org, str) else None)
    except BlueprintError as e:
        print(str(e), file=sys.stderr)
        return 1
    for w in result.warnings:
        print(f"warning: {w.render()}", file=sys.stderr)
    build_app(app, result.blueprint)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    write_pcluster_configs(assembly.directory)
    return 0


if __name__ == "__main__":
    # A short-lived process that allocates a large, long-lived object graph (the aws_cdk bindings, pydantic models)
    # and frees little: the cyclic collector would only re-scan it (~0.1-0.2 s of a synth, and a last full
    # collection at exit). Reference counting still frees everything else.
    gc.disable()
    sys.exit(synthesize(cdk.App()))
