"""Blueprint model, loader and rules. Imports nothing from constructs/stacks."""

from fmcluster.blueprint.errors import BlueprintError, Problem
from fmcluster.blueprint.loader import LoadResult, load_blueprint, load_blueprint_text, load_blueprint_with_warnings
from fmcluster.blueprint.model import Blueprint

__all__ = [
    "Blueprint", "BlueprintError", "LoadResult", "Problem",
    "load_blueprint", "load_blueprint_text", "load_blueprint_with_warnings",
]
