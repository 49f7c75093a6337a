"""Everything a blueprint renders, for review: per compute group, the node scripts and the
resolved versions (``fmcluster render FILE --out DIR`` writes them as DIR/<group>/<file>)."""

from __future__ import annotations

from pathlib import Path

from fmcluster.blueprint import Blueprint
from fmcluster.templates.context import blueprint_node_contexts
from fmcluster.templates.node_scripts import render_node_scripts
from fmcluster.templates.observability import render_observability_files

EXECUTABLE = ("bootstrap.sh", "fmcluster-node-check")


def render_blueprint(bp: Blueprint) -> dict[str, dict[str, str]]:
    """``{folder: {file name: text}}``: one folder per compute group (node scripts, resolved
    versions) and, when metrics are on, ``observability/`` (Prometheus config, alert rules,
    dashboards, exporter scripts)."""
    out: dict[str, dict[str, str]] = {}
    for group in bp.compute:
        ctx = blueprint_node_contexts(bp)[group.name]
        files = render_node_scripts(ctx)
        versions = "".join(f"{k}: {v if v is not None else 'unknown'}\n" for k, v in ctx.versions.items())
        files["versions.txt"] = (
            f"# resolved versions for {bp.name}/{group.name} ({ctx.instance_type}, {ctx.os}), stack {ctx.stack_name}\n"
            f"{versions}kernel_modules: {ctx.kernel_modules}\n"
        )
        out[group.name] = files
    for rel, text in render_observability_files(bp).items():
        folder, _, name = rel.rpartition("/")
        out.setdefault(folder or "observability", {})[name] = text
    return out


def write_rendered(files: dict[str, dict[str, str]], out: Path) -> list[Path]:
    """Write ``{folder: {name: text}}`` under ``out``; scripts are made executable."""
    written = []
    for folder, entries in files.items():
        for name, text in entries.items():
            path = out / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name in EXECUTABLE or name.endswith(".sh"):
                path.chmod(0o755)
            written.append(path)
    return written
