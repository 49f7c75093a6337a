"""Golden files for blueprints/default.yaml, so any template change shows up as a reviewed diff.

Update after an intended template change with:

    FMCLUSTER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_render_golden.py

then review `git diff tests/golden/` and commit it with the template change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "default"
UPDATE = os.environ.get("FMCLUSTER_UPDATE_GOLDEN") == "1"


def _rendered() -> dict[str, str]:
    out = render_blueprint(load_blueprint(ROOT / "blueprints/default.yaml"))
    return {f"{group}/{name}": text for group, files in out.items() for name, text in files.items()}


@pytest.mark.parametrize("name", sorted(_rendered()))
def test_matches_golden(name: str) -> None:
    text = _rendered()[name]
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run FMCLUSTER_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"{name} differs from {path}; if intended, update the golden files (see module docstring)"


def test_no_stale_golden_files() -> None:
    names = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert names == set(_rendered())
