"""Problems found in a blueprint, and the exception that carries all of them at once.

Every problem renders as ``<yaml.path> (line N): <what is wrong>, got <value>; allowed <...>
[- did you mean X?] [RULE-ID]`` (README.md, "A bad blueprint never produces a traceback").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fmcluster.severity import ProblemLevel as Level
from fmcluster.severity import count


@dataclass(frozen=True)
class Problem:
    """One finding: where (YAML path, line), what, how bad, which rule and its source."""

    path: str
    message: str
    level: Level = "error"
    rule_id: str | None = None
    source: str | None = None
    line: int | None = None

    def render(self, *, with_source: bool = False) -> str:
        where = self.path or "(blueprint)"
        if self.line is not None:
            where += f" (line {self.line})"
        text = f"{where}: {self.message}"
        if self.rule_id:
            text += f" [{self.rule_id}]"
        if with_source and self.source:
            text += f" (source: {self.source})"
        return text

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path, "line": self.line, "level": self.level, "message": self.message,
            "rule_id": self.rule_id, "source": self.source,
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
        lines += [f"  {p.level}: {p.render()}" for p in self.problems]
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
