"""docs/first-job.md: its commands are the README's (the same `cdk deploy` form, the CLI at `.venv/bin/`), and
it describes `fmcluster-node-check --nccl-log` as what the script does (the whole node check, GPU node only)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

DOC = ROOT / "docs" / "first-job.md"
NODE_CHECK = ROOT / "fmcluster" / "features" / "node" / "templates" / "fmcluster-node-check.sh.j2"


def bash_lines(text: str) -> list[str]:
    """The command lines of the ```bash blocks, comments cut."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [line.split("  #", 1)[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def paragraphs_with(text: str, needle: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if needle in p]


#: (what, check on the doc text)
CASES = [
    ("every cdk deploy/destroy names the blueprint like the README",
     lambda t: all("-c blueprint=" in line for line in bash_lines(t) if re.match(r"npx cdk (deploy|destroy)\b", line))),
    ("the laptop CLI runs from .venv/bin like the README",
     lambda t: not [line for line in bash_lines(t) if re.match(r"fmcluster (render|preflight|acceptance|topology)\b",
                                                                line)]),
    ("--nccl-log is said to run on a compute node",
     lambda t: all("compute node" in p for p in paragraphs_with(t, "--nccl-log"))),
    ("--nccl-log is said to need the GPU node (nvidia-smi)",
     lambda t: any("nvidia-smi not found" in p for p in paragraphs_with(t, "--nccl-log"))),
    ("the log parser that runs anywhere is named",
     lambda t: ".venv/bin/fmcluster acceptance judge --results" in t),
]


@pytest.mark.parametrize(("what", "check"), CASES, ids=[c[0] for c in CASES])
def test_first_job_doc(what: str, check: object) -> None:
    assert callable(check) and check(DOC.read_text(encoding="utf-8")), what


def test_the_facts_the_doc_states_about_node_check_hold() -> None:
    """--nccl-log replaces only the nccl-tests run: the nvidia-smi precondition comes first, for every mode."""
    script = NODE_CHECK.read_text(encoding="utf-8")
    precondition = script.index('command -v nvidia-smi >/dev/null 2>&1 || cannot_run "nvidia-smi not found')
    assert precondition < script.index("check_driver\n") < script.index("elif [[ -n ${NCCL_LOG} ]]; then")
    assert "judge this NCCL_DEBUG=INFO log instead of running nccl-tests" in script
