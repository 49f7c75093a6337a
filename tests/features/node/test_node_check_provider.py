"""The node check's libfabric provider line (S6), for the whole kind of lines aws-ofi-nccl prints.

aws-ofi-nccl logs ``Selected provider is %s, fabric is %s (found %d nics)`` with fi_info's provider
name and fabric name (src/nccl_ofi_net.cpp, nccl_net_ofi_query_provider_capabilities); the fabric of
the tcp provider is an address or CIDR, of the sockets provider an interface or address. Any provider
but ``efa`` is reported as the wrong provider, naming it; an efa line is checked for its NIC count.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from fmcluster.features.node.render_context import node_context
from fmcluster.features.node.render_scripts import render_node_scripts
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, example
from tests.conftest import ROOT
from tests.features.node.test_node_check import PINNED

_spec = importlib.util.spec_from_file_location("node_check_harness", ROOT / "tests/fixtures/node_check/harness.py")
assert _spec and _spec.loader
harness = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("node_check_harness", harness)
_spec.loader.exec_module(harness)

HAPPY_LOG = harness.HAPPY_LOG.read_text()
HAPPY_LINE = "Selected provider is efa, fabric is efa-direct (found 32 nics)"


@pytest.fixture(scope="module")
def p5() -> tuple[object, str]:
    # the happy log's NCCL 2.27.7 / aws-ofi-nccl 1.16.3 are h100-570-cuda12.8's; default.yaml now boots the official
    # ParallelCluster image (another stack), so the stack is pinned through a custom image (issue 11)
    rc = resolve(load_blueprint_text(blueprint_text(PINNED, base=example("default"))).blueprint)
    ctx = node_context(rc, rc.groups[0])
    return ctx, render_node_scripts(ctx)["fmcluster-node-check"]


# (id, provider line as logged, expected (status, detail) of the efa-provider check)
CASES = [
    ("tcp-cidr", "Selected provider is tcp, fabric is 10.1.0.0/16 (found 1 nics)",
     ("FAIL", "wrong libfabric provider tcp (expected efa): Selected provider is tcp, fabric is 10.1.0.0/16 (found 1 nics)")),
    ("tcp-address", "Selected provider is tcp, fabric is 172.31.16.0 (found 2 nics)",
     ("FAIL", "wrong libfabric provider tcp (expected efa): Selected provider is tcp, fabric is 172.31.16.0 (found 2 nics)")),
    ("tcp-ipv6", "Selected provider is tcp, fabric is fe80::/64 (found 1 nics)",
     ("FAIL", "wrong libfabric provider tcp (expected efa): Selected provider is tcp, fabric is fe80::/64 (found 1 nics)")),
    ("tcp-rxm", "Selected provider is tcp;ofi_rxm, fabric is 10.0.0.0/8 (found 4 nics)",
     ("FAIL", "wrong libfabric provider tcp;ofi_rxm (expected efa): Selected provider is tcp;ofi_rxm, fabric is 10.0.0.0/8 (found 4 nics)")),
    ("sockets-interface", "Selected provider is sockets, fabric is ens5 (found 1 nics)",
     ("FAIL", "wrong libfabric provider sockets (expected efa): Selected provider is sockets, fabric is ens5 (found 1 nics)")),
    ("shm-no-fabric", "Selected Provider is shm (found 1 nics)",
     ("FAIL", "wrong libfabric provider shm (expected efa): Selected Provider is shm (found 1 nics)")),
    ("verbs-name", "Selected provider is verbs;ofi_rxm, fabric is IB-0xfe80000000000000 (found 2 nics)",
     ("FAIL", "wrong libfabric provider verbs;ofi_rxm (expected efa): "
              "Selected provider is verbs;ofi_rxm, fabric is IB-0xfe80000000000000 (found 2 nics)")),
    ("efa-plain-fabric", "Selected provider is efa, fabric is efa (found 32 nics)",
     ("PASS", "Selected provider is efa, fabric is efa (found 32 nics)")),
    ("efa-direct", HAPPY_LINE, ("PASS", HAPPY_LINE)),
    ("efa-old-format", "Selected Provider is efa (found 32 nics)", ("PASS", "Selected Provider is efa (found 32 nics)")),
    ("efa-few-nics", "Selected provider is efa, fabric is efa-direct (found 8 nics)",
     ("WARN", "efa selected with 8 NIC(s); 32 EFA device(s) on p5.48xlarge (reported; judged by the acceptance gate)")),
    ("unrecognised", "Selected provider is efa, fabric is (null) (found 32 nics)",
     ("WARN", "unrecognised provider line (expected efa): Selected provider is efa, fabric is (null) (found 32 nics)"
              " (reported; judged by the acceptance gate)")),
]


@pytest.mark.parametrize(("case", "line", "expected"), CASES, ids=[c[0] for c in CASES])
def test_provider_line(tmp_path: Path, p5: tuple[object, str], case: str, line: str, expected: tuple[str, str]) -> None:
    ctx, script = p5
    log = tmp_path / "nccl.log"
    log.write_text(HAPPY_LOG.replace(HAPPY_LINE, line))
    r = harness.run_check(tmp_path, script, harness.happy_node(ctx), "--nccl-log", str(log))
    assert r.lines["efa-provider"] == expected, r.stdout
    assert (r.returncode == 0) == (expected[0] != "FAIL"), r.stdout


def test_no_provider_line(tmp_path: Path, p5: tuple[object, str]) -> None:
    ctx, script = p5
    log = tmp_path / "nccl.log"
    log.write_text("\n".join(x for x in HAPPY_LOG.splitlines() if "Selected provider" not in x) + "\n")
    r = harness.run_check(tmp_path, script, harness.happy_node(ctx), "--nccl-log", str(log))
    assert r.lines["efa-provider"] == ("WARN", "no 'Selected provider is efa' line (reported; judged by the acceptance gate)")
