"""What a stack hook receives (:class:`StackContext`): the typed contract between the app builder
(:func:`fmcluster.stacks.build.build_app`) and the ``stack`` hooks of the feature registry
(:data:`fmcluster.features.registry.STACK_ORDER`) and the orchestrator registry's extra stack.

The builder calls the hooks in a declared order and records each stack they return under its role (the
:class:`fmcluster.resolved.cluster.StackNames` field and the ``fmcluster:stack`` tag value: ``network``, ``storage``,
...), so a later hook reads an earlier stack with :meth:`StackContext.stack` (a stack of a type its feature may
import: its ``USES``) without the core knowing either feature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from aws_cdk import App, Environment, Stack

from fmcluster.orchestrators.registry import ExtraStack
from fmcluster.resolved import ResolvedCluster

S = TypeVar("S", bound=Stack)


@dataclass
class StackContext:
    """The app, the resolved cluster and the stacks built so far, for the stack hooks.

    Attributes:
        app: the CDK app the stacks are added to.
        rc: the resolved cluster.
        env: the stacks' environment (the blueprint's region, no account: synthesis needs no credentials).
        allow_data_destruction: the ``fmcluster:allowDataDestruction`` context flag (docs/storage.md).
        built: role -> stack, every stack built so far in build order (filled by the builder; hooks only read it).
        extra: the orchestrator's extra stack with the ARN of the cluster it creates
            (:class:`fmcluster.orchestrators.registry.ExtraStack`), once built, else ``None``.
    """

    app: App
    rc: ResolvedCluster
    env: Environment
    allow_data_destruction: bool
    built: dict[str, Stack] = field(default_factory=dict)
    extra: ExtraStack | None = None

    def find(self, role: str, kind: type[S]) -> S | None:
        """The stack built under ``role``, or ``None`` when none was (that role's stack is optional).

        Raises:
            TypeError: the stack under ``role`` is not a ``kind`` (a wiring mistake, never bad input).
        """
        found = self.built.get(role)
        if found is not None and not isinstance(found, kind):
            raise TypeError(f"stack {role!r} is a {type(found).__name__}, not a {kind.__name__}")
        return found

    def stack(self, role: str, kind: type[S]) -> S:
        """The stack built under ``role``.

        Raises:
            LookupError: no stack was built under ``role`` (a hook ran before the one it needs: the order of
                :data:`fmcluster.features.registry.STACK_ORDER`).
            TypeError: as :meth:`find`.
        """
        found = self.find(role, kind)
        if found is None:
            raise LookupError(f"no {role!r} stack built yet (built: {', '.join(self.built) or 'none'})")
        return found
