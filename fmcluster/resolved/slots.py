"""The typed slots of the resolved cluster that features fill (docs/architecture.md "Slices"): what the core reads of
each feature's plan, as a protocol, so the core names no feature and still type-checks every read.

A feature's registry row (:data:`fmcluster.features.registry.FEATURES`) names the slot its ``plan`` hook fills
(``ResolvedCluster.subnet``, ``.accounting``, ``.containers``) or its ``group_plan`` hook fills
(``ResolvedGroup.image``); :func:`fmcluster.resolved.cluster.resolve` calls the hooks once. The feature itself reads
its own plan through its own narrowing function (``as_subnet_usage``, ``as_accounting_plan``, ``containers_of``,
``image_of``), which returns its concrete frozen dataclass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fmcluster.catalog.images import BootLimit, ImageManifest


class SubnetSlot(Protocol):
    """``ResolvedCluster.subnet``: the GPU subnet's IPv4 usage (network feature), as ``fmcluster plan`` and
    preflight read it. Addresses are counts of IPv4 addresses."""

    @property
    def required(self) -> int: ...

    @property
    def recommended(self) -> int: ...

    @property
    def aws_reserved(self) -> int: ...

    def rows(self) -> list[tuple[str, int]]: ...

    def as_dict(self) -> dict[str, object]: ...


class AccountingSlot(Protocol):
    """``ResolvedCluster.accounting``: Slurm accounting (accounting feature), as the plan reads it."""

    @property
    def creates_database(self) -> bool: ...

    @property
    def database_capacity(self) -> str: ...

    def summary(self, stack: str | None) -> dict[str, str] | None: ...


class ContainerSlot(Protocol):
    """One of ``ResolvedCluster.containers``: a ``software.containers`` entry (containers feature)."""

    @property
    def groups(self) -> tuple[str, ...]: ...


class BootPartSlot(Protocol):
    """One estimated part of a node's boot-to-ready: ``name``, ``seconds``, ``source``."""

    @property
    def name(self) -> str: ...

    @property
    def seconds(self) -> int: ...

    @property
    def source(self) -> str: ...


class ContractRowSlot(Protocol):
    """One row of the node contract: ``component``, ``kind`` (``version`` or ``function``), ``enforce``."""

    @property
    def component(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def enforce(self) -> bool: ...


class ImageSlot(Protocol):
    """``ResolvedGroup.image``: what one compute group boots (node feature), as ``fmcluster plan`` reads it. Times
    in seconds."""

    @property
    def mode(self) -> str: ...

    @property
    def manifest(self) -> ImageManifest | None: ...

    @property
    def ami_id(self) -> str | None: ...

    @property
    def source(self) -> str: ...

    @property
    def installs_at_boot(self) -> tuple[str, ...]: ...

    @property
    def limit(self) -> BootLimit: ...

    @property
    def limit_s(self) -> int | None: ...

    @property
    def boot_parts(self) -> Sequence[BootPartSlot]: ...

    @property
    def estimated_boot_s(self) -> int: ...

    @property
    def script_boot_s(self) -> int: ...

    @property
    def contract(self) -> Sequence[ContractRowSlot]: ...
