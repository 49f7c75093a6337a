"""The blueprint's shape: the pydantic model and the error type. Imports nothing above the catalog.

Loading and the cross-field rules live in :mod:`fmcluster.validation`; derived facts in
:mod:`fmcluster.resolved`.
"""

from fmcluster.blueprint.errors import BlueprintError, Problem
from fmcluster.blueprint.model import Blueprint

__all__ = ["Blueprint", "BlueprintError", "Problem"]
