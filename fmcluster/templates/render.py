"""Render Jinja templates strictly: a missing value is an error, never an empty string.

Templates live in the slices that own them, ``fmcluster/features/<slice>/templates/`` and
``fmcluster/orchestrators/<slice>/templates/``, and are named ``<slice>/<file>`` (``observability/exporters.sh.j2`` is
``fmcluster/features/observability/templates/exporters.sh.j2``; the shared shell library is the node slice's
``node/lib.sh.j2``). A template directly under ``fmcluster/templates/`` is found by its plain path after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

PACKAGE = Path(__file__).resolve().parent.parent
#: The folders that hold slices (``fmcluster/<root>/<slice>/``).
SLICE_ROOTS = ("features", "orchestrators")


def slice_template_dirs() -> dict[str, Path]:
    """Slice name -> its ``templates`` folder, for every slice that has one."""
    return {d.parent.name: d for root in SLICE_ROOTS for d in sorted((PACKAGE / root).glob("*/templates")) if d.is_dir()}


@cache
def environment() -> jinja2.Environment:
    """The one Jinja environment: slices' templates by ``<slice>/`` prefix, then ``fmcluster/templates/``."""
    slices = {name: jinja2.FileSystemLoader(str(d)) for name, d in slice_template_dirs().items()}
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.PrefixLoader(slices), jinja2.PackageLoader("fmcluster", "templates")]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, context: Mapping[str, Any]) -> str:
    """Render ``template`` (``<slice>/<file>`` of a slice's templates, else a path under ``fmcluster/templates``)
    with ``context``.

    Raises:
        jinja2.TemplateNotFound: no such template.
        jinja2.UndefinedError: the template uses a name the context does not provide.
    """
    return environment().get_template(template).render(**context)
