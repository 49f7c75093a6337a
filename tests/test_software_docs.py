"""docs/software.md lists every software/environment rule with its level, and every catalog stack."""

from __future__ import annotations

from pathlib import Path

from fmcluster.catalog.software import get_stack, known_stacks
from fmcluster.validation.rules import REGISTRY, _load_rule_modules

DOC = (Path(__file__).resolve().parent.parent / "docs" / "software.md").read_text()


def test_every_rule_is_documented_with_its_level() -> None:
    _load_rule_modules()
    for r in REGISTRY:
        if r.fn.__module__.endswith((".software", ".environment")):
            assert f"| {r.id} | {r.level} |" in DOC, r.id


def test_every_stack_is_documented_with_its_versions() -> None:
    for name in known_stacks():
        s = get_stack(name)
        row = next(line for line in DOC.splitlines() if line.startswith(f"| `{name}` |"))
        for v in (s.driver, s.cuda, s.nccl, s.efa_installer, s.gdrcopy, s.libfabric, s.aws_ofi_nccl):
            assert f" {v} " in row or f" {v} (" in row, (name, v)
