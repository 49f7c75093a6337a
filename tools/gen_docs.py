"""Regenerate docs/blueprint.md from the model: python tools/gen_docs.py"""

from pathlib import Path

from fmcluster.blueprint.reference import markdown_reference

Path(__file__).resolve().parent.parent.joinpath("docs", "blueprint.md").write_text(markdown_reference())
