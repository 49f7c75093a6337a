"""Golden files of the full render_blueprint output, one example per orchestrator (issue 22): tests/golden/<key>/ holds
every file `fmcluster render` writes for that example, as <folder>/<file>. Checked by tests/test_render.py; the boot
steps of tests/features/node/test_boot_simulation.py are checked against their sections of the golden bootstrap.sh.

After an intended template change:
    FMCLUSTER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -n 0 tests/test_render.py -k golden
then review `git diff tests/golden/` and commit it with the template change.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("FMCLUSTER_UPDATE_GOLDEN") == "1"
#: orchestrator key (folder under tests/golden/) -> its example in blueprints/
EXAMPLES: dict[str, str] = {
    "parallelcluster": "default",
    "pcs": "pcs-p5en",
    "hyperpod-slurm": "hyperpod-p5",
    "hyperpod-eks": "hyperpod-eks",
}


@cache
def rendered(key: str) -> dict[str, str]:
    """``{"<folder>/<file>": text}``: what ``fmcluster render`` writes for the example of orchestrator ``key``."""
    out = render_blueprint(load_blueprint(ROOT / "blueprints" / f"{EXAMPLES[key]}.yaml"))
    return {f"{group}/{name}": text for group, files in out.items() for name, text in files.items()}


def golden_dir(key: str) -> Path:
    return GOLDEN / key
