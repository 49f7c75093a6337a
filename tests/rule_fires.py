"""Session guard: every registered rule fires on at least one blueprint of the test suite.

A rule whose condition can never be true (``if False``, a typo in a field name, a comparison the wrong
way round) reports nothing and fails no test unless some test expects its finding. This plugin records,
for the whole session, which rule ids yielded at least one problem from :meth:`Rule.check` (raw findings,
before precedence: a suppressed rule still fired), and when the whole suite ran it fails the session
with the list of registered rules that never fired and where each is defined.

Under pytest-xdist each worker records its own set and sends it in ``config.workeroutput``; the
controller joins them in ``pytest_testnodedown`` and judges at ``pytest_sessionfinish``. Rules run in a
subprocess (``npx cdk synth``, the CLI run as a program) are not seen: only in-process checks count.

``--rule-fires``: ``auto`` (default) judges only when the whole suite ran (:func:`subset_reason`),
``check`` judges whatever ran (``make rule-fires`` runs the rule tables with it), ``off`` records nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
#: What ``make rule-fires`` runs: the rule tables alone fire every rule.
RULE_TABLES = ("tests/**/test_*rules.py", "tests/features/containers/test_containers.py",
               "tests/orchestrators/hyperpod_eks/test_eks.py")


def suite_files() -> set[str]:
    """Every ``tests/**/test_*.py`` (the suite mirrors the slices: ``tests/features/<slice>/``,
    ``tests/orchestrators/<slice>/``), relative to ROOT."""
    return {p.relative_to(ROOT).as_posix() for p in TESTS.glob("**/test_*.py")}


def collected_files(paths: Iterable[Path]) -> set[str]:
    """The test files among ``paths`` (collected items' files), relative to ROOT; files outside tests/ are left out."""
    return {p.resolve().relative_to(ROOT).as_posix() for p in paths if p.resolve().is_relative_to(TESTS)}


def addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rule-fires", choices=("auto", "check", "off"), default="auto",
        help="every registered rule must fire in the session: auto (default) checks when the whole suite ran, "
             "check checks whatever ran, off records nothing (tests/rule_fires.py)",
    )


# ---- the guard's logic (tests/test_rule_fires.py) --------------------------------------------------------------

def where(fn: Any) -> str:
    """``fmcluster/validation/rules/<module>.py:<line>`` of a rule function."""
    src = Path(inspect.getsourcefile(fn) or "?")
    try:
        src = src.resolve().relative_to(ROOT)
    except ValueError:
        pass
    return f"{src}:{fn.__code__.co_firstlineno}"


def never_fired(rules: Iterable[Any], fired: set[str]) -> list[tuple[str, str]]:
    """``(rule id, where it is defined)`` of every rule in ``rules`` (registry order) whose id is not in ``fired``."""
    return [(r.id, where(r.fn)) for r in rules if r.id not in fired]


@dataclass
class Run:
    """What the session selected and ran. ``collected``, ``files`` and ``deselected`` come from the process that
    collected (each xdist worker collects the whole selection); ``ran`` counts the tests that were set up."""

    test_files: set[str]  # every tests/**/test_*.py on disk, relative to ROOT
    files: set[str] = field(default_factory=set)  # the test files that were collected
    node_args: bool = False  # a command-line argument names a test inside a file (``file.py::test``)
    deselected: int = 0  # -k, -m, --lf, --sw
    collected: int = 0
    ran: int = 0
    lost_workers: int = 0  # xdist workers that went down without sending what they recorded


def subset_reason(run: Run) -> str | None:
    """Why only part of the suite ran (the guard then judges nothing), or ``None`` when the whole suite ran."""
    if run.lost_workers:
        return f"{run.lost_workers} xdist worker(s) went down without reporting"
    missing = sorted(run.test_files - run.files)
    if missing:
        return f"{len(missing)} test file(s) not collected, e.g. {missing[0]}"
    if run.node_args:
        return "tests selected by id (file.py::test)"
    if run.deselected:
        return f"{run.deselected} test(s) deselected (-k, -m, --lf, --sw)"
    if run.ran < run.collected:
        return f"{run.ran} of {run.collected} tests ran (-x, --maxfail, interrupted)"
    return None


def report(missing: list[tuple[str, str]]) -> list[str]:
    return [
        f"{len(missing)} registered rule(s) never fired in this session: no test blueprint makes them report anything. "
        "Add a row to the rule's table (tests/README.md) that expects its finding:",
        *(f"  {rid}  ({src})" for rid, src in missing),
    ]


# ---- the plugin ---------------------------------------------------------------------------------------------

def _is_xdist_controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class RuleFires:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.mode: str = config.getoption("--rule-fires")
        self.fired: set[str] = set()
        self.run = Run(suite_files())
        self.run.node_args = any("::" in a for a in config.args)
        self.ran: set[str] = set()
        self.missing: list[tuple[str, str]] = []
        self.registered = 0
        self.skipped_because: str | None = None
        self._restore: Any = None

    # recording (every process that runs tests: a worker, or the only process without xdist)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.mode == "off" or _is_xdist_controller(self.config):
            return
        from fmcluster.validation.rules import Rule

        original = Rule.check
        fired = self.fired

        def check(rule: Rule, subject: Any) -> Iterator[Any]:
            for problem in original(rule, subject):
                fired.add(rule.id)
                yield problem

        Rule.check = check  # type: ignore[method-assign]
        self._restore = lambda: setattr(Rule, "check", original)

    def pytest_unconfigure(self) -> None:
        if self._restore is not None:
            self._restore()

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.run.deselected += len(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.run.collected = len(session.items)
        paths = {item.path for item in session.items}
        self.run.files = collected_files(paths)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup":  # on the controller too: xdist forwards every report
            self.ran.add(report.nodeid)

    # xdist: a worker sends what it saw, the controller gathers
    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        out = getattr(node, "workeroutput", None)
        if error is not None or not out or "rule_fires" not in out:
            self.run.lost_workers += 1
            return
        got = out["rule_fires"]
        self.fired.update(got["fired"])
        self.run.files |= set(got["files"])
        self.run.collected = max(self.run.collected, got["collected"])
        self.run.deselected = max(self.run.deselected, got["deselected"])

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.mode == "off":
            return
        if _is_xdist_worker(self.config):
            self.config.workeroutput["rule_fires"] = {  # type: ignore[attr-defined]
                "fired": sorted(self.fired), "files": sorted(self.run.files),
                "collected": self.run.collected, "deselected": self.run.deselected,
            }
            return
        self.run.ran = len(self.ran)
        if self.mode == "auto":
            self.skipped_because = subset_reason(self.run)
            if self.skipped_because:
                return
        from fmcluster.validation.rules import REGISTRY, _load_rule_modules

        _load_rule_modules()
        self.missing = never_fired(REGISTRY, self.fired)
        self.registered = len(REGISTRY)
        if self.missing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.mode == "off" or _is_xdist_worker(self.config):
            return
        tr = terminalreporter
        if self.skipped_because:
            if self.config.getoption("verbose") > 0:
                tr.write_line(f"rule-fires: not checked, only part of the suite ran: {self.skipped_because}")
            return
        if self.missing:
            tr.write_sep("=", "rule-fires: rules that never fired", red=True, bold=True)
            for line in report(self.missing):
                tr.write_line(line, red=True)
        else:
            tr.write_line(f"rule-fires: each of the {self.registered} registered rules fired")
