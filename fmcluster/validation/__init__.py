"""Load and check a blueprint: the YAML loader and the cross-field rules.

Sits above the resolved layer (rules check resolved facts) and below templates, constructs,
stacks, review and the CLI.
"""

from fmcluster.blueprint.errors import BlueprintError, Problem
from fmcluster.validation.loader import LoadResult, load_blueprint, load_blueprint_text, load_blueprint_with_warnings

__all__ = [
    "BlueprintError", "LoadResult", "Problem",
    "load_blueprint", "load_blueprint_text", "load_blueprint_with_warnings",
]
