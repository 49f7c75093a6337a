"""Problems found in a blueprint, and the exception that carries all of them at once.

Every problem renders as ``<yaml.path> (line N): <what is wrong>, got <value>; allowed <...>
[- did you mean X?] [RULE-ID]`` (README.md, "A bad blueprint never produces a traceback").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fmcluster.severity import ProblemLevel as Level
from fmcluster.severity import count


class _NotGiven:
    """The type of :data:`NOT_GIVEN`."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: :attr:`Problem.value` when the finder did not carry the value: the JSON output then reads it from the message.
NOT_GIVEN: Any = _NotGiven()


@dataclass(frozen=True)
class Problem:
    """One finding: where (YAML path, line, and ``file`` when that is not the file being loaded: a base blueprint of
    ``extends``, the organisation file), what, how bad, which rule and its source. ``value``: the offending value
    itself (as the file holds it; :data:`NOT_GIVEN` when the finder did not carry it), for ``--json``."""

    path: str
    message: str
    level: Level = "error"
    rule_id: str | None = None
    source: str | None = None
    line: int | None = None
    file: str | None = None
    value: Any = field(default=NOT_GIVEN, compare=False)

    def render(self, *, with_source: bool = False, file: str | None = None) -> str:
        """``<path> (<file>, line N): <message> [RULE]``; the file is named when it is not ``file`` (the one the
        caller's header names): after the path, or instead of it for a problem of the whole file (``org.yaml (line
        1): ...``); a problem of the whole header file says ``(top level)`` (``(blueprint)`` for the blueprint)."""
        other = self.file if self.file and self.file != file else None
        if self.path or not other:
            where, at = self.path or ("(top level)" if self.file else "(blueprint)"), [other] if other else []
        else:
            where, at = other, []
        if self.line is not None:
            at.append(f"line {self.line}")
        if at:
            where += f" ({', '.join(at)})"
        text = f"{where}: {self.message}"
        if self.rule_id:
            text += f" [{self.rule_id}]"
        if with_source and self.source:
            text += f" (source: {self.source})"
        return text

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path, "line": self.line, "level": self.level, "message": self.message,
            "rule_id": self.rule_id, "source": self.source, "file": self.file,
        }


@dataclass
class BlueprintError(Exception):
    """Raised by the loader with every problem of a blueprint (errors and warnings)."""

    file: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]

    def __str__(self) -> str:
        lines = [f"{self.file}: {count(len(self.errors), 'error')}"]
        lines += [f"  {p.level}: {p.render(file=self.file)}" for p in self.problems]
        return "\n".join(lines)


def format_path(loc: tuple[object, ...]) -> str:
    """``('compute', 0, 'capacity')`` -> ``compute[0].capacity``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
