"""The bootstrap scripts that synthesis stages as S3 assets are the rendered, pinned scripts and
pass shellcheck and ``bash -n``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fmcluster.catalog.software import get_stack
from fmcluster.validation import load_blueprint
from tests.conftest import EXAMPLES, ROOT, cli_synth


@pytest.mark.parametrize("blueprint", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_staged_bootstrap_assets_are_pinned_and_shellcheck_clean(blueprint: Path) -> None:
    out, proc = cli_synth(blueprint)
    assert proc.returncode == 0
    # ParallelCluster and PCS stage bootstrap.sh (and the head-node script) as file assets; HyperPod stages a
    # folder of lifecycle scripts (the head-node script in the controller's folder).
    staged = sorted([*out.glob("asset.*.sh"), *out.glob("asset.*/*/bootstrap.sh"), *out.glob("asset.*/*/head-node.sh")])
    scripts = [p for p in staged if "# fmcluster bootstrap for" in p.read_text()]
    bp = load_blueprint(blueprint)
    assert len(scripts) == len({g.name for g in bp.compute})
    stack = get_stack(bp.software.stack)
    for script in scripts:
        text = script.read_text()
        assert text.startswith("#!/usr/bin/env bash")
        for version in (stack.driver, stack.cuda, stack.nccl, stack.efa_installer, stack.gdrcopy):
            assert version in text
    for script in staged:  # node bootstraps and the head node's observability script
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
        check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout
    # PCS also stages its Lustre mount lifecycle script (issue 12 item 3; checked above, not a head-node script)
    head = [p for p in staged if p not in scripts and "fmcluster: mount FSx for Lustre" not in p.read_text()]
    eks = bp.orchestrator.kind == "hyperpod" and bp.orchestrator.hyperpod.orchestration == "eks"
    assert len(head) == (1 if bp.observability.enabled and not eks else 0)
    assert all("metrics exporters for" in p.read_text() and "head node." in p.read_text() for p in head)
