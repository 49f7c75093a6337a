"""CI (.ci/run) runs the tests and the linters, each through a make target that sets up the venv itself."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT


def _recipe(target: str) -> tuple[list[str], list[str]]:
    """(prerequisites, recipe lines) of a Makefile target."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{target}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, flags=re.M)
    assert m, f"no {target} target"
    return m.group(1).split(), [line.strip() for line in m.group(2).splitlines()]


def test_ci_runs_tests_and_lint() -> None:
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert commands == ["make test", "make lint"]


def test_lint_target_sets_up_the_venv_and_runs_ruff_and_mypy() -> None:
    prerequisites, recipe = _recipe("lint")
    assert prerequisites == ["$(VENV)/.installed"]
    assert recipe == ["$(VENV)/bin/ruff check fmcluster tests app.py", "$(VENV)/bin/mypy fmcluster"]
    _, install = _recipe(r"\$\(VENV\)/\.installed")
    assert "$(VENV)/bin/python -m pip install --quiet -e '.[dev]'" in install


def test_xdist_groups_a_files_tests(request: pytest.FixtureRequest) -> None:
    """``make test`` runs ``--dist loadgroup`` with one group per file (tests/conftest.py): pytest-xdist sends a group to
    one worker by a ``@<group>`` suffix of the node id. pytest 9.2 dropped the field xdist writes it to
    (pytest-dev/pytest-xdist issue #1386), and grouping stopped without a failure; this test sees the suffix."""
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is None:  # -n 0: one process runs every test, nothing to group
        assert request.config.getoption("numprocesses", None) in (None, 0)
        return
    assert request.config.getvalue("loadgroup")  # set on each worker by xdist from --dist loadgroup
    assert request.node.nodeid.endswith("@tests/test_ci.py"), request.node.nodeid
