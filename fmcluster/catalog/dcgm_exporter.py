"""Which metric names, with which units, each dcgm-exporter release publishes (``catalog/data/dcgm_exporter.yaml``).

One table keyed by the exporter version that runs: the observability feature keeps only the names of the exporter
it installs (``fmcluster.features.observability.pins.DCGM_EXPORTER``), so alert rules and dashboards can only query
series that exist. A release whose names were not verified (4.9.0 and 4.10.0 renamed fields and units) has no
schema: :func:`published_fields` returns ``None`` and :func:`schema_problems` refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import yaml

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(
        resources.files("fmcluster.catalog").joinpath("data/dcgm_exporter.yaml").read_text(), Loader=_YAML_LOADER)
    return data


def known_releases() -> list[str]:
    """Every exporter version the table lists, in file order."""
    return [str(v) for v in _raw()["releases"]]


def release_source(version: str) -> str:
    """Source URL(s) of what the table says about ``version``. Raises ``KeyError`` for an unknown version."""
    return str(_raw()["sources"][_raw()["releases"][version]["source"]])


def published_fields(version: str) -> dict[str, str] | None:
    """Field name -> unit that exporter ``version`` publishes, ``None`` when the version is not in the table or its
    names are not verified (no schema)."""
    d = _raw()["releases"].get(version)
    if d is None or d["schema"] is None:
        return None
    absent = set(d["absent"])
    return {str(n): str(u) for n, u in _raw()["schemas"][d["schema"]].items() if n not in absent}


def schema_problems(version: str, names: Iterable[str]) -> list[str]:
    """What is wrong with querying ``names`` on exporter ``version``: one sentence per name the release does not
    publish, or one for a release without verified names. Empty when every name exists."""
    fields = published_fields(version)
    if fields is None:
        return [f"dcgm-exporter {version} has no verified metric names in the catalog ({_where(version)})"]
    return [f"dcgm-exporter {version} does not publish {n} ({_where(version)})" for n in names if n not in fields]


def _where(version: str) -> str:
    return release_source(version) if version in _raw()["releases"] else "not in catalog/data/dcgm_exporter.yaml"
