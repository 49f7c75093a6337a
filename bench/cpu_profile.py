"""pytest plugin: CPU seconds per test file, load-independent (the machine may be busy; wall-clock durations are not).

Usage (from the repository root):
    .venv/bin/python -m pytest -q -n 2 -p bench.cpu_profile --cpu-profile=/tmp/cpu.tsv
then ``sort -t$'\\t' -k2 -nr /tmp/cpu.tsv | head``. Each worker appends ``<test file>\\t<cpu seconds>\\t<node id>`` per
test: user+system time of the worker itself, of the children it waited for (bash, shellcheck, cfn-lint, npx) and of
its live children (the jsii kernel, which runs every in-process synthesis and is reaped only at exit), read from
/proc (Linux only).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-profile", default=None, help="append per-test CPU seconds (TSV) to this file")


def _live_children_cpu() -> float:
    me, total = str(os.getpid()), 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # ppid
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / _TICKS
    return total


def _cpu() -> float:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime + _live_children_cpu()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    path = item.config.getoption("--cpu-profile")
    start = _cpu() if path else 0.0
    yield
    if path:
        with open(path, "a") as f:
            f.write(f"{item.nodeid.split('::')[0]}\t{_cpu() - start:.2f}\t{item.nodeid}\n")
