"""Render Jinja templates strictly: a missing value is an error, never an empty string."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import jinja2


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("fmcluster", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, context: Mapping[str, Any]) -> str:
    """Render ``template`` (path under ``fmcluster/templates``) with ``context``.

    Raises:
        jinja2.UndefinedError: the template uses a name the context does not provide.
    """
    return environment().get_template(template).render(**context)
