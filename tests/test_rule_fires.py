"""The rule-fires session guard (tests/rule_fires.py): which rules never fired, whether the whole suite ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules import Rule
from tests.blueprints import blueprint_text
from tests.rule_fires import ROOT, RULE_TABLES, Run, collected_files, never_fired, report, subset_reason, suite_files, where


def _fn(_bp: Any) -> Any:
    return iter(())


def _rule(id: str) -> Rule:
    return Rule(id, "error", "test", "blueprint", _fn)


HERE = where(_fn)
RULES = [_rule("R-A-1"), _rule("R-A-2"), _rule("R-B-1")]


@pytest.mark.parametrize(("fired", "missing"), [
    (set(), ["R-A-1", "R-A-2", "R-B-1"]),                  # in registry order
    ({"R-A-2"}, ["R-A-1", "R-B-1"]),
    ({"R-A-1", "R-A-2", "R-B-1"}, []),
    ({"R-A-1", "R-A-2", "R-B-1", "A", "R-X-9"}, []),       # ids outside the registry (test rules) change nothing
    ({"r-a-1", "R-A-1 "}, ["R-A-1", "R-A-2", "R-B-1"]),    # ids match exactly
])
def test_never_fired_table(fired: set[str], missing: list[str]) -> None:
    assert never_fired(RULES, fired) == [(rid, HERE) for rid in missing]


def test_where_names_the_rule_module_and_the_line_of_its_id() -> None:
    from fmcluster.validation.rules import REGISTRY, _load_rule_modules

    _load_rule_modules()
    [ctr10] = [r for r in REGISTRY if r.id == "R-CTR-10"]
    path, line = where(ctr10.fn).split(":")
    assert path == "fmcluster/features/containers/rules.py"
    assert (ROOT / path).read_text().splitlines()[int(line) - 1].startswith('@rule("R-CTR-10"')  # its decorator
    assert HERE.startswith("tests/test_rule_fires.py:")


FILES = {"tests/test_a.py", "tests/test_b.py"}


def run(**kw: Any) -> Run:
    return Run(**{"test_files": FILES, "files": FILES, "collected": 10, "ran": 10, **kw})


@pytest.mark.parametrize(("facts", "reason"), [
    (run(), None),                                                          # the whole suite
    (run(deselected=0, node_args=False, lost_workers=0), None),
    (run(files={"tests/test_a.py"}), "1 test file(s) not collected, e.g. tests/test_b.py"),  # pytest tests/test_a.py
    (run(files=set()), "2 test file(s) not collected, e.g. tests/test_a.py"),                # --lf skipped files, --co
    (run(files=FILES | {"tests/test_extra.py"}), None),                     # more files than on disk: still whole
    (run(node_args=True), "tests selected by id (file.py::test)"),          # pytest tests/test_a.py::test_x ...
    (run(deselected=3), "3 test(s) deselected (-k, -m, --lf, --sw)"),
    (run(ran=9), "9 of 10 tests ran (-x, --maxfail, interrupted)"),         # stopped early
    (run(ran=0), "0 of 10 tests ran (-x, --maxfail, interrupted)"),         # --collect-only
    (run(lost_workers=1), "1 xdist worker(s) went down without reporting"),  # a crashed worker's set is lost
    (run(lost_workers=1, deselected=2), "1 xdist worker(s) went down without reporting"),  # first reason wins
])
def test_subset_reason_table(facts: Run, reason: str | None) -> None:
    assert subset_reason(facts) == reason


def test_report_lists_each_rule_with_its_source() -> None:
    lines = report([("R-A-1", "fmcluster/validation/rules/a.py:10"), ("R-B-1", "fmcluster/validation/rules/b.py:20")])
    assert lines[0].startswith("2 registered rule(s) never fired in this session")
    assert lines[1:] == ["  R-A-1  (fmcluster/validation/rules/a.py:10)", "  R-B-1  (fmcluster/validation/rules/b.py:20)"]


def test_the_guard_records_a_rule_that_reported_in_this_process(request: pytest.FixtureRequest) -> None:
    plugin = request.config.pluginmanager.get_plugin("rule_fires")
    with pytest.raises(BlueprintError):
        load_blueprint_text(blueprint_text({"storage": {"lustre": {"storage_capacity_gib": 3000}}}))
    assert plugin.mode == "off" or "R-FSX-1" in plugin.fired


def test_the_suite_is_every_test_file_under_tests_including_the_slice_folders(tmp_path: Path) -> None:
    on_disk = suite_files()
    assert "tests/test_rule_fires.py" in on_disk
    assert "tests/features/storage/test_storage_rules.py" in on_disk  # tests/ mirrors the slices
    assert "tests/orchestrators/pcs/test_pcs.py" in on_disk
    assert not {f for f in on_disk if not f.startswith("tests/") or "/test_" not in f}
    here = ROOT / "tests" / "orchestrators" / "pcs" / "test_pcs.py"
    assert collected_files([here, tmp_path / "test_elsewhere.py"]) == {"tests/orchestrators/pcs/test_pcs.py"}


def test_the_rule_tables_exist() -> None:
    tables = {p.relative_to(ROOT).as_posix() for pattern in RULE_TABLES for p in ROOT.glob(pattern)}
    assert {"tests/test_rules.py", "tests/features/storage/test_storage_rules.py",
            "tests/orchestrators/hyperpod_eks/test_eks.py"} <= tables
    assert all((ROOT / t).is_file() for t in tables)
