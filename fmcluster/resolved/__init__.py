"""The resolved cluster: a blueprint's derived facts, computed once (:func:`resolve`), and the
per-orchestrator profiles. Sits above the blueprint model and the catalog, below the rules,
templates, constructs, stacks, review and the CLI."""

from fmcluster.orchestrators.profile import OrchestratorProfile
from fmcluster.orchestrators.registry import profile_for
from fmcluster.resolved.cluster import (
    BLUEPRINT_TAG,
    NODE_DIR,
    ResolvedCluster,
    ResolvedGroup,
    StackNames,
    resolve,
)

__all__ = [
    "BLUEPRINT_TAG", "NODE_DIR", "OrchestratorProfile", "ResolvedCluster", "ResolvedGroup", "StackNames",
    "profile_for", "resolve",
]
