"""Everything a blueprint renders, for review: per compute group, the node scripts and the
resolved versions (``fmcluster render FILE --out DIR`` writes them as DIR/<group>/<file>).

The output folder: a new or empty folder is used as is. A folder fmcluster rendered into before
(it holds :data:`MANIFEST`, the list of files written) first loses the files listed there, so no
stale file of an earlier render survives; files fmcluster did not write are kept. Any other
non-empty folder, or a path that is not a folder, is refused (:class:`RenderOutError`).
"""

from __future__ import annotations

import json
from pathlib import Path

from fmcluster.blueprint import Blueprint
from fmcluster.features.registry import FEATURES
from fmcluster.orchestrators.registry import row_for
from fmcluster.resolved import resolve

EXECUTABLE = ("bootstrap.sh", "fmcluster-node-check")
#: Written into the output folder: the files of the last render (relative paths), removed by the next one.
MANIFEST = ".fmcluster-render.json"


class RenderOutError(Exception):
    """The output folder cannot be used (not a folder, someone else's files, unreadable manifest)."""


def render_blueprint(bp: Blueprint) -> dict[str, dict[str, str]]:
    """``{folder: {file name: text}}``: the render hooks of every feature (:data:`fmcluster.features.registry.FEATURES`,
    in that order), then the orchestrator's own (its registry row's ``render_files``), each relative path split at its
    last ``/``: one folder per compute group (node scripts, resolved versions and, on Slurm clusters, a ready
    ``nccl-tests.sbatch`` and the example FSDP job ``fsdp-train.sbatch`` + ``fsdp-train.py``), when metrics are on,
    ``observability/`` (Prometheus config, alert rules, dashboards, exporter scripts), on Slurm clusters
    ``acceptance/`` (the fleet acceptance gate job per EFA group) and on HyperPod EKS ``kubernetes/`` (Kueue queues,
    job templates, the EFA admission policy, the node-check DaemonSet, the Helm install)."""
    rc = resolve(bp)
    out: dict[str, dict[str, str]] = {}
    # each feature's files (fmcluster.features.registry.FEATURES, in order), then the orchestrator's own
    sources = [*(f.render_files for f in FEATURES.values()), row_for(bp.orchestrator).render_files]
    for files in sources:
        for rel, text in files(rc).items():
            folder, _, name = rel.rpartition("/")
            out.setdefault(folder, {})[name] = text
    return out


def _previous_render(out: Path) -> list[Path]:
    """Files listed in ``out``'s manifest (only paths inside ``out``)."""
    manifest = out / MANIFEST
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # ValueError: not JSON, or a number longer than Python reads
        raise RenderOutError(f"{manifest}: unreadable render manifest ({e}); remove the folder or choose another --out") from None
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        raise RenderOutError(f"{manifest}: not a render manifest (a JSON list of file names); remove the folder or choose another --out")
    root = out.resolve()
    paths = []
    for rel in listed:
        p = (out / rel).resolve()
        if root in p.parents:
            paths.append(out / rel)
    return paths


def prepare_out_dir(out: Path) -> None:
    """Make ``out`` ready for a render: refuse a non-folder or a foreign non-empty folder; remove the
    files an earlier render wrote (listed in :data:`MANIFEST`), and the folders that become empty."""
    if out.exists() and not out.is_dir():
        raise RenderOutError(f"{out}: exists and is not a folder; allowed a new or empty folder, or one fmcluster render wrote")
    if not out.exists():
        return
    if not (out / MANIFEST).is_file():
        if any(out.iterdir()):
            raise RenderOutError(f"{out}: folder is not empty and was not written by fmcluster render (no {MANIFEST}); "
                                 "allowed a new or empty folder, or one fmcluster render wrote")
        return
    for path in _previous_render(out):
        if path.is_file() or path.is_symlink():
            path.unlink()
        parent = path.parent
        while parent != out and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    (out / MANIFEST).unlink()


def write_rendered(files: dict[str, dict[str, str]], out: Path) -> list[Path]:
    """Write ``{folder: {name: text}}`` under ``out`` (see :func:`prepare_out_dir`) and the manifest
    :data:`MANIFEST` listing them; scripts are made executable. Raises :class:`RenderOutError` for an
    unusable folder and ``OSError`` when writing fails."""
    prepare_out_dir(out)
    written = []
    for folder, entries in files.items():
        for name, text in entries.items():
            path = out / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name in EXECUTABLE or name.endswith(".sh"):
                path.chmod(0o755)
            written.append(path)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(json.dumps([p.relative_to(out).as_posix() for p in written], indent=1) + "\n", encoding="utf-8")
    return written
