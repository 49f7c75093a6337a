"""Support calendar: the catalog (catalog/data/support.yaml), the resolved pins, rules R-SUP-1/R-SUP-2 as tables with
explicit evaluation dates, the plan's rows, and every shipped example against the real today."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog.support import (
    SUPPORT_COMPONENTS,
    calendar_releases,
    release_of,
    status,
    support_entry,
)
from fmcluster.resolved import resolve
from fmcluster.review.plan import support_rows
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.loader import load_blueprint_with_warnings
from tests.blueprints import PINNED_STACK, blueprint_text
from tests.conftest import EXAMPLES

NV_620 = "https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html"
EKS_DOC = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"
EKS = {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks": {
    "admin_role_arn": "arn:aws:iam::123456789012:role/eks-admins", "control_plane_availability_zone": "us-east-1b"}}}}


def eks(version: str, **settings: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks": {
        **EKS["orchestrator"]["hyperpod"]["eks"], "kubernetes_version": version, **settings}}}}


# ---- catalog -------------------------------------------------------------------------------------------------------

#: (component, version, release, end as NVIDIA / AWS publish it, verified)
ENTRIES = [
    ("driver", "580.173.02", "580", dt.date(2028, 6, 30), True),      # R580 LTSB, "June 2028"
    ("driver", "595.112.07", "595", dt.date(2027, 3, 31), True),      # R595 PB, "March 2027"
    ("driver", "620.70.06", "620", dt.date(2029, 9, 30), True),       # R620 LTSB, "September 2029"
    ("driver", "535.183.01", "535", dt.date(2026, 6, 30), True),      # R535 LTSB, "June 2026"
    ("driver", "570.172.08", "570", dt.date(2026, 9, 9), False),      # no longer listed: an upper bound
    ("parallelcluster", "3.5.1", "3.5", dt.date(2024, 8, 31), True),
    ("parallelcluster", "3.16.3", "3.16", None, False),
    ("slurm", "25.05", "25.05", None, False),
    ("kubernetes", "1.33", "1.33", dt.date(2027, 7, 29), True),
]


@pytest.mark.parametrize(("component", "version", "release", "end", "verified"), ENTRIES)
def test_calendar_entries(component: str, version: str, release: str, end: dt.date | None, verified: bool) -> None:
    e = support_entry(component, version)
    assert e is not None
    assert (e.release, e.end, e.verified) == (release, end, verified)


def test_driver_dates_cite_nvidias_table() -> None:
    assert {r: support_entry("driver", r + ".0").source.split()[0] for r in ("580", "595", "620")} == dict.fromkeys(  # type: ignore[union-attr]
        ("580", "595", "620"), NV_620)


@pytest.mark.parametrize(("component", "version", "release"), [
    ("driver", "595.112.07", "595"), ("slurm", "25.05", "25.05"), ("slurm", "25.11", "25.11"),
    ("efa_installer", "1.51.0", "1.51"), ("parallelcluster", "3.16.3", "3.16"), ("kubernetes", "1.33", "1.33"),
])
def test_release_of_keeps_digits_as_written(component: str, version: str, release: str) -> None:
    assert release_of(component, version) == release


@pytest.mark.parametrize("component", SUPPORT_COMPONENTS)
def test_every_release_is_sourced_and_ordered(component: str) -> None:
    for release in calendar_releases(component):
        e = support_entry(component, release)
        assert e is not None and e.source.startswith(("https://", "aws/")), (component, release)
        assert e.end is not None or e.note, f"{component} {release}: no end date and no note saying why"
        if e.standard_end is not None:
            assert e.end is not None and e.standard_end < e.end


def test_unknown_release_is_none() -> None:
    assert (support_entry("driver", "999.1.1"), support_entry("efa_installer", "1.51.0")) == (None, None)


@pytest.mark.parametrize(("today", "expected"), [
    (dt.date(2026, 11, 30), "supported"),   # 121 days before 2027-03-31
    (dt.date(2026, 12, 1), "ending"),       # 120 days before
    (dt.date(2027, 3, 31), "ending"),       # the last day
    (dt.date(2027, 4, 1), "ended"),
])
def test_status_window(today: dt.date, expected: str) -> None:
    e = support_entry("driver", "595.112.07")
    assert e is not None and status(e, today) == expected


def test_status_extended_and_unknown() -> None:
    k8s, pc = support_entry("kubernetes", "1.33"), support_entry("parallelcluster", "3.16.3")
    assert k8s is not None and pc is not None
    assert (status(k8s, dt.date(2026, 7, 29)), status(k8s, dt.date(2026, 7, 30)), status(pc, dt.date(2030, 1, 1))) == (
        "supported", "extended", "unknown")


# ---- rules ---------------------------------------------------------------------------------------------------------

def found(patch: dict[str, Any], base: dict[str, Any] | None = None) -> list[tuple[str, str, str | None, str]]:
    """(path, level, rule id, message) of every R-SUP problem, errors first."""
    text = blueprint_text(patch) if base is None else blueprint_text(patch, base=base)
    try:
        problems = load_blueprint_text(text).warnings
    except BlueprintError as exc:
        problems = list(exc.errors)
    return [(p.path, p.level, p.rule_id, p.message) for p in problems if (p.rule_id or "").startswith("R-SUP")]


R595 = "NVIDIA driver branch 595 (production branch, 595.112.07)"
NV_SRC = f"{NV_620} (R580 LTSB June 2028, R595 PB March 2027, R620 LTSB September 2029)"
EKS_SRC = f"{EKS_DOC} (14 months standard, 12 months extended support)"
ACK = {"software": {"acknowledge_end_of_support": ["driver"]}}
CUSTOM = {"software": {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}}

#: (evaluation date, patch, base (None: MINIMAL, ParallelCluster 3.16.3's image: R595), expected problems)
RULES = [
    ("2026-11-30", {}, None, []),
    ("2026-12-05", {}, None, [(
        "software.stack", "warning", "R-SUP-2",
        f"{R595} reaches the end of support on 2027-03-31, 116 days from 2026-12-05 (warning from 120 days; {NV_SRC}), "
        "got 595.112.07; allowed a release supported longer, or software.acknowledge_end_of_support: [driver]")]),
    ("2026-12-05", ACK, None, []),
    # a custom image without a stack takes the catalog default, the R580 long-term support branch (decision XX;
    # R570, the default before, warned here), which warns 120 days before its end in June 2028
    ("2026-12-05", CUSTOM, None, []),
    ("2028-03-15", CUSTOM, None, [(
        "software.stack", "warning", "R-SUP-2",
        "NVIDIA driver branch 580 (long-term support branch, 580.173.02) reaches the end of support on 2028-06-30, "
        f"107 days from 2028-03-15 (warning from 120 days; {NV_SRC}), got 580.173.02; allowed a release supported "
        "longer, or software.acknowledge_end_of_support: [driver]")]),
    ("2027-04-01", {}, None, [(
        "software.stack", "error", "R-SUP-1",
        f"{R595} is past the end of support on 2027-03-31 (as of 2027-04-01; {NV_SRC}), got 595.112.07; "
        "allowed a supported release, or software.acknowledge_end_of_support: [driver]")]),
    ("2027-04-01", ACK, None, [(
        "software.stack", "warning", "R-SUP-2",
        f"{R595} is past the end of support on 2027-03-31 (acknowledged; as of 2027-04-01; {NV_SRC}), "
        "got 595.112.07; allowed a supported release")]),
    # R570's end is an upper bound read from its absence in NVIDIA's table: past it, a warning, never an error.
    ("2026-12-05", {}, PINNED_STACK, [(
        "software.stack", "warning", "R-SUP-2",
        "NVIDIA driver branch 570 (production branch, 570.172.08) is past the end of support on 2026-09-09 (date "
        "unverified: not listed as supported in NVIDIA's table of 2026-09-09; exact end date not published there; "
        "as of 2026-12-05; https://docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-"
        "versions.html (R535 LTSB June 2026, R580, R595, R610 NFB August 2026; last updated 2026-09-09)), got "
        "570.172.08; allowed a supported release")]),
    ("2026-08-01", eks("1.33"), None, [(
        "orchestrator.hyperpod.eks.kubernetes_version", "warning", "R-SUP-2",
        "Kubernetes on Amazon EKS 1.33 (EKS standard + extended support, 1.33) is in EKS extended support since "
        f"2026-07-29 (extra cost per cluster hour; as of 2026-08-01; {EKS_SRC}), got 1.33; allowed 1.33 with "
        "software.acknowledge_end_of_support: [kubernetes] (accepting the cost: the versions HyperPod and its training "
        "operator support (training_operator: true), 1.28 to 1.33, are all past EKS standard support as of "
        "2026-08-01)")]),
    # without the training operator HyperPod's 1.34 is a choice, in standard support up to 2026-12-02 ...
    ("2026-08-01", eks("1.33", training_operator=False), None, [(
        "orchestrator.hyperpod.eks.kubernetes_version", "warning", "R-SUP-2",
        "Kubernetes on Amazon EKS 1.33 (EKS standard + extended support, 1.33) is in EKS extended support since "
        f"2026-07-29 (extra cost per cluster hour; as of 2026-08-01; {EKS_SRC}), got 1.33; allowed a version in "
        "standard support among the versions HyperPod supports (1.34), or software.acknowledge_end_of_support: "
        "[kubernetes]")]),
    # ... and no longer after it: no version HyperPod lists is in standard support
    ("2026-12-05", {**eks("1.34", training_operator=False), "software": {"acknowledge_end_of_support": ["driver"]}},
     None, [(
        "orchestrator.hyperpod.eks.kubernetes_version", "warning", "R-SUP-2",
        "Kubernetes on Amazon EKS 1.34 (EKS standard + extended support, 1.34) is in EKS extended support since "
        f"2026-12-02 (extra cost per cluster hour; as of 2026-12-05; {EKS_SRC}), got 1.34; allowed 1.34 with "
        "software.acknowledge_end_of_support: [kubernetes] (accepting the cost: the versions HyperPod supports, 1.28 "
        "to 1.34, are all past EKS standard support as of 2026-12-05)")]),
    # within the warning window of its end AND already in extended support: the message says both
    ("2026-12-05", {**eks("1.32"), "software": {"acknowledge_end_of_support": ["driver"]}}, None, [(
        "orchestrator.hyperpod.eks.kubernetes_version", "warning", "R-SUP-2",
        "Kubernetes on Amazon EKS 1.32 (EKS standard + extended support, 1.32) reaches the end of support on "
        f"2027-03-23, 108 days from 2026-12-05 (warning from 120 days; {EKS_SRC}), and is in EKS extended support "
        "since 2026-03-23 (extra cost per cluster hour), got 1.32; allowed a release supported longer, or "
        "software.acknowledge_end_of_support: [kubernetes]")]),
    ("2026-08-01", eks("1.29"), None, [(
        "orchestrator.hyperpod.eks.kubernetes_version", "error", "R-SUP-1",
        "Kubernetes on Amazon EKS 1.29 (EKS standard + extended support, 1.29) is past the end of support on "
        f"2026-03-23 (as of 2026-08-01; {EKS_SRC}), got 1.29; allowed a supported release, or "
        "software.acknowledge_end_of_support: [kubernetes]")]),
    ("someday", {}, None, [(
        "software.acknowledge_end_of_support", "error", "R-SUP-1",
        "the support calendar cannot be judged: FMCLUSTER_SUPPORT_DATE is not a date, got 'someday'; allowed "
        "YYYY-MM-DD or FMCLUSTER_SUPPORT_DATE unset (today)")]),
]


@pytest.mark.parametrize(("today", "patch", "base", "expected"), RULES)
def test_support_rules(monkeypatch: pytest.MonkeyPatch, today: str, patch: dict[str, Any],
                       base: dict[str, Any] | None, expected: list[tuple[str, str, str, str]]) -> None:
    monkeypatch.setenv("FMCLUSTER_SUPPORT_DATE", today)
    # the Kubernetes rows keep the driver out of the picture: R595 is supported on 2026-08-01
    assert found(patch, base) == expected


def test_driver_override_is_blamed_where_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FMCLUSTER_SUPPORT_DATE", "2026-12-05")
    patch = {"software": {"overrides": {"driver": "570.172.08"}}}  # the stack's own driver, set by the blueprint
    assert [(p, rid) for p, _, rid, _ in found(patch, PINNED_STACK)] == [("software.overrides.driver", "R-SUP-2")]


def test_unknown_acknowledgement_is_refused() -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text({"software": {"acknowledge_end_of_support": ["drivers"]}}))
    [p] = exc.value.errors
    assert p.path == "software.acknowledge_end_of_support[0]"
    assert "'drivers'" in p.message and "driver, efa_installer, parallelcluster, slurm" in p.message


# ---- plan and examples ---------------------------------------------------------------------------------------------

def test_plan_rows_of_the_default_example() -> None:
    rc = resolve(load_blueprint_with_warnings(EXAMPLES[0]).blueprint)
    assert EXAMPLES[0].name == "default.yaml"
    assert [(r["component"], r["release"], r["version"], r["end"]) for r in support_rows(rc)] == [
        ("NVIDIA driver branch", "595", "595.112.07", "2027-03-31"),
        ("EFA installer line", "-", "1.51.0", "AWS publishes no end-of-support date for EFA installer releases"),
        ("AWS ParallelCluster", "3.16", "3.16.3", "no date (EOSL date not read)"),
        ("Slurm release", "25.11", "25.11", "no date (end date not read)"),
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_example_pins_a_component_past_its_end(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    """Against the real today (not the suite's fixed date): this test starts failing the day an example's component
    leaves support, which is when the example must move on."""
    monkeypatch.delenv("FMCLUSTER_SUPPORT_DATE", raising=False)
    today = dt.datetime.now(dt.UTC).date()
    rc = resolve(load_blueprint_with_warnings(path).blueprint)
    ended = [(p.component, p.version, p.entry.end) for p in rc.support
             if p.entry is not None and status(p.entry, today) == "ended"]
    assert ended == []


# ---- make verify-facts (tools/verify_facts.py): offline coverage, and its verdicts against a stubbed page -------------

def test_verify_facts_covers_every_dated_release_and_every_known_bad_source() -> None:
    from fmcluster.catalog.software import known_bad_entries
    from tools.verify_facts import checks

    todo, skipped = checks()
    dated = {(c, r) for c in SUPPORT_COMPONENTS for r in calendar_releases(c)
             if (e := support_entry(c, r)) is not None and e.end is not None and e.verified}
    assert len([c for c in todo if c.kind == "text"]) == len(dated)
    assert len(skipped) == sum(len(calendar_releases(c)) for c in SUPPORT_COMPONENTS) - len(dated)
    assert {c.subject for c in todo if c.kind == "head"} == {f"known_bad.{kb.key}" for kb in known_bad_entries()}


@pytest.mark.parametrize(("component", "version", "text"), [
    ("driver", "580.173.02", "June 2028"),            # NVIDIA: month and year
    ("parallelcluster", "3.5.0", "8/31/2024"),        # ParallelCluster support policy
    ("kubernetes", "1.33", "July 29, 2027"),
    ("driver", "570.172.08", None),                   # unverified: nothing to look for
    ("parallelcluster", "3.16.3", None),              # no date
])
def test_verify_facts_looks_for_the_vendors_wording(component: str, version: str, text: str | None) -> None:
    from tools.verify_facts import expected_text

    e = support_entry(component, version)
    assert e is not None and expected_text(e) == text


@pytest.mark.parametrize(("page", "problem"), [
    ("<td>R580</td><td>June 2028</td>", ""),
    ("<td>R580</td><td>December 2028</td>", "the page no longer says 'June 2028'"),
])
def test_verify_facts_verdict(monkeypatch: pytest.MonkeyPatch, page: str, problem: str) -> None:
    import tools.verify_facts as vf

    monkeypatch.setattr(vf, "_get", lambda url, method="GET": page)
    assert vf.run(vf.Check("text", NV_620, "R580", "June 2028")) == problem


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_plan_of_every_example_shows_the_driver_branch_end(path: Any) -> None:
    rc = resolve(load_blueprint_with_warnings(path).blueprint)
    rows = {r["component"]: r for r in support_rows(rc)}
    driver = rows["NVIDIA driver branch"]
    assert rc.software is not None and driver["version"] == rc.software.driver
    assert driver["end"] == {"580": "2028-06-30", "595": "2027-03-31"}[driver["release"]]
    assert driver["source"].startswith(NV_620)
