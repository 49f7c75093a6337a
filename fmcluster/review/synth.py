"""In-process synthesis for the review commands (``fmcluster diff`` of blueprints, ``fmcluster plan``): the same
context ``cdk synth`` gives the app and the same refusal of error annotations.

``cdk synth`` / ``cdk deploy`` stop when the cloud assembly carries an error annotation
(``Annotations.of(scope).addError``, e.g. a ParallelCluster bake blueprint whose parent AMI lookup is not in
``cdk.context.json``); ``app.synth()`` in-process only records them. :func:`synthesize` collects the messages of level
``error`` (``aws_cdk.cx_api.SynthesisMessageLevel.ERROR`` over ``CloudAssembly.stacks_recursively[*].messages``,
https://docs.aws.amazon.com/cdk/api/v2/python/aws_cdk.cx_api/SynthesisMessageLevel.html) and raises
:class:`SynthesisError` with every one of them (construct path + message).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fmcluster.review.assembly import read_json


class SynthesisError(Exception):
    """The app synthesized with error annotations; :attr:`messages` holds ``<construct path>: <message>`` for each,
    in assembly order. ``str()`` is one line per message after a heading naming ``source``."""

    def __init__(self, source: str, messages: list[str]) -> None:
        self.source = source
        self.messages = messages
        super().__init__(f"{source}: synthesis failed with {len(messages)} error(s) (cdk synth refuses it too):\n"
                         + "\n".join(f"  {m}" for m in messages))


def synthesis_errors(assembly: Any) -> list[str]:
    """``<construct path>: <message>`` of every error annotation in a ``cx_api.CloudAssembly``."""
    import aws_cdk.cx_api as cx_api

    return [f"{m.id}: {m.entry.data}" for stack in assembly.stacks_recursively for m in stack.messages
            if m.level == cx_api.SynthesisMessageLevel.ERROR]


#: The context key that makes aws-cdk-lib's built-in "CloudFormation Validate" plugin (a WASM CloudFormation linter
#: that every CDK app runs at synthesis since aws-cdk-lib 2.262) fail synthesis on its errors; without it every finding
#: is a warning and synthesis never fails on one (aws/aws-cdk pull request #38135).
STRICT_DEFAULT_RULES = "@aws-cdk/core:validateAgainstDefaultRules"


#: How aws-cdk-lib's in-process synthesis starts the error it raises when a validation plugin fails (the report
#: follows; core/lib/private/synthesis-validation, UnscopedValidationError "ValidationFailed").
VALIDATION_FAILED = "ValidationFailed:"


def cloudformation_validate_can_fail(context: Mapping[str, Any]) -> bool:
    """True when ``context`` sets :data:`STRICT_DEFAULT_RULES` as aws-cdk-lib reads a boolean context value: present
    with any value but ``false`` and ``"false"``, JSON ``null`` included (``getBooleanContext`` in aws-cdk-lib
    core/lib/private/synthesis-validation falls back to the default only for a missing key)."""
    if STRICT_DEFAULT_RULES not in context:
        return False
    raw = context[STRICT_DEFAULT_RULES]
    return raw is not False and raw != "false"


def synthesize(bp: Any, outdir: str, context: Mapping[str, Any], source: str) -> None:
    """Build ``bp``'s app (:func:`fmcluster.stacks.build.build_app`) with ``context`` and synthesize it into
    ``outdir``. Raises :class:`SynthesisError` (naming ``source``) when the assembly has error annotations or a
    validation plugin failed it.

    The built-in "CloudFormation Validate" plugin runs only when its errors can fail synthesis
    (:func:`cloudformation_validate_can_fail`): otherwise it reports warnings, which ``cdk synth`` prints and plan and
    diff (which read the templates) would not, and its engine costs about 6 s of CPU per process to start
    (bench/README.md). cfn-lint checks the same templates in CI and in the pull-request review."""
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app

    app = cdk.App(outdir=outdir, context=dict(context),
                  builtin_cloud_formation_validation=cloudformation_validate_can_fail(context))
    build_app(app, bp)
    try:
        assembly = app.synth()
    except RuntimeError as e:  # a validation plugin's errors: aws-cdk-lib raises "ValidationFailed: <its report>"
        if not str(e).startswith(VALIDATION_FAILED):
            raise
        raise SynthesisError(source, [str(e).removeprefix(VALIDATION_FAILED).strip()]) from None
    errors = synthesis_errors(assembly)
    if errors:
        raise SynthesisError(source, errors)


def find_cdk_json(*starts: Path) -> Path | None:
    """The nearest ``cdk.json`` at or above any of ``starts`` (first one found wins)."""
    for start in starts:
        for d in [start, *start.parents]:
            if (d / "cdk.json").is_file():
                return d / "cdk.json"
    return None


def project_context(blueprint: str | Path) -> dict[str, Any]:
    """The context ``cdk synth`` would give the app for ``blueprint``: the ``context`` of the ``cdk.json`` next to
    (or above) the blueprint, else the one above the working directory, without its ``blueprint`` key, updated with
    the ``cdk.context.json`` beside it, as the CDK CLI reads it (fmcluster itself needs none: a bake's ParallelCluster
    parent is found at deploy time). Raises :class:`fmcluster.review.assembly.AssemblyError` for a file that is not JSON."""
    cdk_json = find_cdk_json(Path(blueprint).resolve().parent, Path.cwd())
    raw = read_json(cdk_json, "CDK settings file") if cdk_json else {}
    base = dict(raw.get("context") or {}) if isinstance(raw, dict) else {}
    base.pop("blueprint", None)
    cached = cdk_json.parent / "cdk.context.json" if cdk_json else None
    if cached is not None and cached.is_file():
        extra = read_json(cached, "CDK context file")
        base.update(extra if isinstance(extra, dict) else {})
    return base
