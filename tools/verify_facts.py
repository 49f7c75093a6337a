"""Re-read the catalog's dated facts from their sources on the internet (``make verify-facts``; not part of CI).

For every release of the support calendar (fmcluster/catalog/data/support.yaml) with a verified end date, the source
page is fetched and must still state that date in the vendor's own wording: NVIDIA's driver table a month and year
("June 2028"), ParallelCluster's support policy ``M/D/YYYY``, the EKS calendar "Month D, YYYY" (the EKS page's
date format was not read: a failure there may be the format, not the date). Every source of the
known-bad matrix (``known_bad`` in fmcluster/catalog/data/software.yaml) must still resolve. Unverified and undated
entries are listed as not checkable, never guessed.

Exit 0 when every check passes, 1 otherwise, 2 on bad usage. Uses only the standard library.
"""

from __future__ import annotations

import datetime as dt
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

from fmcluster.catalog.software import known_bad_entries
from fmcluster.catalog.support import SUPPORT_COMPONENTS, SupportEntry, calendar_releases, support_entry

TIMEOUT_S = 30
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@dataclass(frozen=True)
class Check:
    """One thing to re-read: ``kind`` ``text`` (the page at ``url`` must contain ``expect``) or ``head`` (``url`` must
    resolve); ``subject`` names the fact."""

    kind: str
    url: str
    subject: str
    expect: str = ""


def expected_text(entry: SupportEntry) -> str | None:
    """How the source states ``entry.end``, ``None`` when the entry has no verified date to look for."""
    end = entry.end
    if end is None or not entry.verified:
        return None
    if entry.component == "driver":
        return f"{MONTHS[end.month - 1]} {end.year}"
    if entry.component == "parallelcluster":
        return f"{end.month}/{end.day}/{end.year}"
    return f"{MONTHS[end.month - 1]} {end.day}, {end.year}"


def _url(source: str) -> str:
    return source.split()[0]


def checks() -> tuple[list[Check], list[str]]:
    """Every check, offline, and what cannot be checked (tests/test_support.py asserts the coverage)."""
    out: list[Check] = []
    skipped: list[str] = []
    for component in SUPPORT_COMPONENTS:
        for release in calendar_releases(component):
            e = support_entry(component, release)
            assert e is not None
            text = expected_text(e)
            if text is None:
                skipped.append(f"{e.label} {release}: {'unverified' if e.end else 'no end date'}")
            else:
                out.append(Check("text", _url(e.source), f"{e.label} {release} ends {e.end}", text))
    for kb in known_bad_entries():
        for src in kb.sources:
            for part in src.split("; "):
                out.append(Check("head", _url(part), f"known_bad.{kb.key}"))
    return out, skipped


def _get(url: str, method: str = "GET") -> str:
    req = urllib.request.Request(url, method=method, headers={"User-Agent": "fmcluster-verify-facts"})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:  # noqa: S310 (https URLs from the catalog)
        return resp.read().decode("utf-8", "replace") if method == "GET" else ""


def run(check: Check) -> str:
    """"" when the check passes, else what is wrong."""
    try:
        if check.kind == "head":
            _get(check.url, "HEAD")
            return ""
        if check.kind == "text":
            return "" if check.expect in _get(check.url) else f"the page no longer says {check.expect!r}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return f"unknown check kind {check.kind!r}"


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m tools.verify_facts   (no arguments; needs internet)", file=sys.stderr)
        return 2
    todo, skipped = checks()
    failures = 0
    for check in todo:
        problem = run(check)
        print(("FAIL " if problem else "ok   ") + f"{check.subject} ({check.url})" + (f": {problem}" if problem else ""))
        failures += bool(problem)
    for s in skipped:
        print(f"skip {s}")
    print(f"{failures} of {len(todo)} checks failed" if failures else f"all {len(todo)} checks passed",
          f"({len(skipped)} not checkable, as of {dt.date.today()})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
