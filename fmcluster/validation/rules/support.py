"""Support-calendar rules: a pinned component past, or close to, the end of its vendor's support.

The calendar is ``catalog/data/support.yaml`` (a source per date; ``fmcluster.catalog.support``); what a blueprint
pins is resolved once (``ResolvedCluster.support``, ``fmcluster.resolved.support``). The evaluation date is today
(UTC) or ``FMCLUSTER_SUPPORT_DATE``.

- R-SUP-1 (error): a component past its end, with a verified date, not acknowledged in
  ``software.acknowledge_end_of_support``.
- R-SUP-2 (warning): within 120 days of the end; past an end the blueprint acknowledges or whose date is unverified;
  Kubernetes on EKS past standard support (extended support costs extra per cluster hour).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator

from fmcluster.catalog.support import DATE_ENV, evaluation_date, in_extended_support, status, support_entry, window_days
from fmcluster.resolved import ResolvedCluster
from fmcluster.resolved.support import SupportPin
from fmcluster.validation.rules import Violation, rule

CALENDAR = "fmcluster/catalog/data/support.yaml (support calendar; each date's source is in the message)"


def _today() -> dt.date | None:
    """The evaluation date, ``None`` when ``FMCLUSTER_SUPPORT_DATE`` is not a date (R-SUP-1 reports that)."""
    try:
        return evaluation_date()
    except ValueError:
        return None


def _pins(rc: ResolvedCluster) -> Iterator[tuple[SupportPin, str, dt.date]]:
    """``(pin, status, today)`` of every pin with a calendar entry (none when the evaluation date is invalid)."""
    today = _today()
    if today is None:
        return
    for pin in rc.support:
        if pin.entry is not None:
            yield pin, status(pin.entry, today), today


def _what(pin: SupportPin) -> str:
    e = pin.entry
    assert e is not None
    return f"{e.label} {e.release} ({e.designation}, {pin.version})"


def _acknowledged(rc: ResolvedCluster, pin: SupportPin) -> bool:
    return pin.component in rc.blueprint.software.acknowledge_end_of_support


@rule("R-SUP-1", scope="cluster", source=CALENDAR)
def past_end_of_support(rc: ResolvedCluster) -> Iterator[Violation]:
    """A verified end date in the past, not acknowledged: the vendor no longer fixes bugs or security issues."""
    if _today() is None:
        yield "software.acknowledge_end_of_support", (
            f"the support calendar cannot be judged: {DATE_ENV} is not a date, got {os.environ.get(DATE_ENV)!r}; "
            f"allowed YYYY-MM-DD or {DATE_ENV} unset (today)")
    for pin, st, today in _pins(rc):
        e = pin.entry
        if st == "ended" and e is not None and e.verified and not _acknowledged(rc, pin):
            yield pin.path, (
                f"{_what(pin)} is past the end of support on {e.end} (as of {today}; {e.source}), got {pin.version}; "
                f"allowed a supported release, or software.acknowledge_end_of_support: [{pin.component}]")


def _warning(rc: ResolvedCluster, pin: SupportPin, st: str, today: dt.date) -> str | None:
    """The R-SUP-2 message for one pin, ``None`` when it has nothing to say."""
    e, acked = pin.entry, _acknowledged(rc, pin)
    if e is None or e.end is None:
        return None
    if st == "ended" and (acked or not e.verified):
        why = "acknowledged" if acked else f"date unverified: {e.note or 'inferred'}"
        return (f"{_what(pin)} is past the end of support on {e.end} ({why}; as of {today}; {e.source}), "
                f"got {pin.version}; allowed a supported release")
    ack = f"or software.acknowledge_end_of_support: [{pin.component}]"
    if st == "ending" and not acked:
        extended = (f", and is in EKS extended support since {e.standard_end} (extra cost per cluster hour)"
                    if in_extended_support(e, today) else "")
        return (f"{_what(pin)} reaches the end of support on {e.end}, {(e.end - today).days} days from {today} "
                f"(warning from {window_days()} days; {e.source}){extended}, got {pin.version}; "
                f"allowed a release supported longer, {ack}")
    if st == "extended" and not acked:
        return (f"{_what(pin)} is in EKS extended support since {e.standard_end} (extra cost per cluster hour; "
                f"as of {today}; {e.source}), got {pin.version}; allowed {_standard_choices(pin, today, ack)}")
    return None


def _standard_choices(pin: SupportPin, today: dt.date, ack: str) -> str:
    """The "allowed" of a version in extended support: the pin's choices in standard support as of ``today`` (any
    such version when the pin has no closed list), or, when it has choices and none is, only the acknowledgement
    ``ack``, saying why (a version the blueprint cannot choose is no advice)."""
    if not pin.choices:
        return f"a version in standard support, {ack}"
    standard = [v for v in pin.choices if (e := support_entry(pin.component, v)) is not None
                and status(e, today) == "supported"]
    if standard:
        return f"a version in standard support among {pin.choices_why} ({', '.join(standard)}), {ack}"
    return (f"{pin.version} with {ack.removeprefix('or ')} (accepting the cost: {pin.choices_why}, "
            f"{pin.choices[0]} to {pin.choices[-1]}, are all past EKS standard support as of {today})")


@rule("R-SUP-2", level="warning", scope="cluster", source=CALENDAR)
def near_end_of_support(rc: ResolvedCluster) -> Iterator[Violation]:
    """Within the warning window of an end, past an acknowledged or unverified end, or in EKS extended support."""
    for pin, st, today in _pins(rc):
        msg = _warning(rc, pin, st, today)
        if msg:
            yield pin.path, msg
