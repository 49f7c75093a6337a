"""Scratch folders for files a construct writes before CDK stages them as assets.

CDK copies an asset's source into the cloud assembly (``cdk.out/asset.<hash>``) when the asset is created, so the
source folder is only needed while the app runs. :func:`scratch_dir` makes one under the system temporary folder and
removes it when the process exits, so a synthesis (or a test session with thousands of them) leaves nothing behind.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A new empty folder ``<tmp>/<prefix><random>``, deleted (with its contents) at interpreter exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
