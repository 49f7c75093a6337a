"""Support calendar: the date each release of a pinned component stops being supported by its vendor.

Data lives in ``catalog/data/support.yaml`` (a source per release; ``sources`` maps keys to URLs). This module only
parses and looks up; the rules are ``fmcluster.validation.rules.support`` (R-SUP-1, R-SUP-2) and ``fmcluster plan``
shows the calendar per pinned component.

Components (:data:`SUPPORT_COMPONENTS`): ``driver`` (NVIDIA driver branch, ``"595.112.07"`` -> ``"595"``),
``parallelcluster`` (``"3.16.3"`` -> ``"3.16"``), ``slurm`` (``"25.11"``), ``efa_installer`` (``"1.51.0"`` ->
``"1.51"``), ``kubernetes`` (``"1.33"``). Release keys keep the digits as written (Slurm ``"25.05"``).

The evaluation date is today (UTC) unless ``FMCLUSTER_SUPPORT_DATE`` (``YYYY-MM-DD``) fixes it, so that a CI run or
a review can be repeated as of a given day (:func:`evaluation_date`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal, NamedTuple

import yaml

#: The dotted numeric prefix of a version, kept as written (Slurm "25.05" stays "25.05", never "25.5").
_LEADING = re.compile(r"^\d+(?:\.\d+)*")

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DATA = "data/support.yaml"

#: Components the calendar covers, in the order ``plan`` lists them.
SUPPORT_COMPONENTS = ("driver", "efa_installer", "parallelcluster", "slurm", "kubernetes")
SupportComponent = Literal["driver", "efa_installer", "parallelcluster", "slurm", "kubernetes"]
#: Environment variable that fixes the evaluation date (``YYYY-MM-DD``).
DATE_ENV = "FMCLUSTER_SUPPORT_DATE"

Status = Literal["supported", "ending", "extended", "ended", "unknown"]


class PinnedRelease(NamedTuple):
    """One release a blueprint pins that the calendar covers (an orchestrator row's ``releases`` hook returns them):
    ``component`` (a :data:`SUPPORT_COMPONENTS` name), ``version``, the YAML ``path`` that chooses it, and, where the
    blueprint chooses among a closed list, ``choices`` (the versions it may set there, oldest first; empty: any release)
    with ``choices_why`` (what bounds them, for messages). R-SUP-2 reads ``choices`` to name only a standard-support
    version the blueprint can actually choose."""

    component: str
    version: str
    path: str
    choices: tuple[str, ...] = ()
    choices_why: str = ""


@dataclass(frozen=True)
class SupportEntry:
    """One release of a component in the calendar.

    Attributes:
        component: a :data:`SUPPORT_COMPONENTS` name.
        release: the release key (``"595"``, ``"3.16"``, ``"1.33"``).
        label: the component's human name ("NVIDIA driver branch").
        end: last day of support, ``None`` when no published date was found.
        standard_end: Kubernetes on EKS: end of standard support (extended support runs to ``end``), else ``None``.
        designation: the vendor's name for the support track.
        verified: ``False`` where the date is inferred, not read in the source (rules then only warn).
        source: URL or repository path of the date.
        note: what is known about an unverified or missing date ("" when none).
    """

    component: str
    release: str
    label: str
    end: dt.date | None
    standard_end: dt.date | None
    designation: str
    verified: bool
    source: str
    note: str = ""


@cache
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(resources.files("fmcluster.catalog").joinpath(_DATA).read_text(), Loader=_YAML_LOADER)
    return data


def window_days() -> int:
    """Days before an end that R-SUP-2 starts warning (120)."""
    return int(_raw()["window_days"])


def _source(key: str) -> str:
    return str(_raw()["sources"][key])


def release_of(component: str, version: str) -> str:
    """The release key of ``version``: ``("driver", "595.112.07")`` -> ``"595"``; ``("parallelcluster", "3.16.3")``
    -> ``"3.16"``. Raises ``KeyError`` for an unknown component, ``ValueError`` for a string that is no version."""
    how = _raw()["components"][component]["release"]
    m = _LEADING.match(str(version).strip().lstrip("v"))
    if not m:
        raise ValueError(f"not a version: {version!r}")
    fields = m.group(0).split(".")
    return fields[0] if how == "branch" else ".".join((fields + ["0"])[:2])


def support_entry(component: str, version: str) -> SupportEntry | None:
    """The calendar entry of the release ``version`` belongs to, ``None`` when the calendar does not list it.

    Raises ``KeyError`` for a component not in :data:`SUPPORT_COMPONENTS`."""
    comp = _raw()["components"][component]
    try:
        release = release_of(component, version)
    except ValueError:
        return None
    d = comp["releases"].get(release)
    if d is None:
        return None
    return SupportEntry(
        component=component, release=release, label=str(comp["label"]), end=d.get("end"),
        standard_end=d.get("standard_end"), designation=str(d["designation"]), verified=bool(d["verified"]),
        source=_source(d["source"]), note=str(d.get("note", "")),
    )


def component_label(component: str) -> str:
    """The human name of a calendar component ("NVIDIA driver branch")."""
    return str(_raw()["components"][component]["label"])


def no_calendar(component: str) -> tuple[str, str] | None:
    """``(why, source URL)`` for a component whose vendor publishes no end dates at all (EFA installer), else ``None``."""
    comp = _raw()["components"][component]
    if "no_calendar" not in comp:
        return None
    return str(comp["no_calendar"]), _source(comp["no_calendar_source"])


def calendar_releases(component: str) -> list[str]:
    """Every release the calendar lists for ``component``, in file order."""
    return [str(r) for r in _raw()["components"][component]["releases"]]


def parallelcluster_slurm(version: str) -> tuple[str, str] | None:
    """``(Slurm release, source URL)`` a ParallelCluster version runs, ``None`` when not recorded."""
    try:
        d = _raw()["parallelcluster_slurm"].get(release_of("parallelcluster", version))
    except ValueError:
        return None
    return None if d is None else (str(d["slurm"]), _source(d["source"]))


def evaluation_date() -> dt.date:
    """Today in UTC, or the date in ``FMCLUSTER_SUPPORT_DATE``.

    Raises ``ValueError`` naming the variable when its value is not ``YYYY-MM-DD``."""
    raw = os.environ.get(DATE_ENV, "").strip()
    if not raw:
        return dt.datetime.now(dt.UTC).date()
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"{DATE_ENV} must be a date YYYY-MM-DD, got {raw!r}") from None


def in_extended_support(entry: SupportEntry, today: dt.date) -> bool:
    """``today`` is after the entry's end of EKS standard support (``False`` without one): the extended-support rate
    applies, whatever :func:`status` says about the end (an ``ending`` version can be in extended support too)."""
    return entry.standard_end is not None and today > entry.standard_end


def status(entry: SupportEntry, today: dt.date) -> Status:
    """Where ``today`` falls: ``ended`` (after ``end``), ``ending`` (within :func:`window_days` of ``end``),
    ``extended`` (after ``standard_end``), ``supported``, or ``unknown`` (no end date)."""
    if entry.end is None:
        return "unknown"
    if today > entry.end:
        return "ended"
    if (entry.end - today).days <= window_days():
        return "ending"
    if in_extended_support(entry, today):
        return "extended"
    return "supported"
