"""CDK entry point: load -> validate -> build -> synth. Blueprint from ``-c blueprint=FILE``."""

from __future__ import annotations

import sys

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from fmcluster.blueprint import BlueprintError, load_blueprint_with_warnings
from fmcluster.review.pcluster_config import write_pcluster_configs
from fmcluster.stacks.build import build_app

app = cdk.App()
path = app.node.try_get_context("blueprint") or "blueprints/default.yaml"
try:
    result = load_blueprint_with_warnings(path)
except BlueprintError as e:
    print(str(e), file=sys.stderr)
    sys.exit(1)
for w in result.warnings:
    print(f"warning: {w.render()}", file=sys.stderr)
build_app(app, result.blueprint)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
assembly = app.synth()
write_pcluster_configs(assembly.directory)
