"""Rule and loader messages are written in whole phrases: greppable in the source.

A message spread over several string literals (implicit concatenation) may break only after
punctuation (``, ; : . ? ! )`` or `` -``) or before a parenthesis, a placeholder (``{...}``) or a
`` - did you mean`` tail, never between two words of a phrase (``"... FSx " "and " "endpoints"``).
Rule sources (``@rule(source=...)``) and module-level source constants are not messages.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "fmcluster"
MESSAGE_MODULES = sorted((PKG / "validation" / "rules").glob("*.py")) + [PKG / "validation" / "loader.py"]

_PREFIX = re.compile(r"^[rbfuRBFU]*('''|\"\"\"|'|\")")
_ENDS_CLAUSE = re.compile(r"([,;:.?!)]| -|\\n) ?$")
_STARTS_CLAUSE = re.compile(r"[({]|- ")


def _body(token: str) -> str:
    quote = _PREFIX.match(token)
    assert quote is not None, token
    return token[quote.end():-len(quote.group(1))]


def _skipped_lines(tree: ast.Module) -> set[int]:
    """Lines of ``@rule(...)`` decorators and of module-level string constants (sources, URLs)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                lines.update(range(d.lineno, (d.end_lineno or d.lineno) + 1))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant | ast.JoinedStr):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def split_phrases(source: str) -> list[str]:
    """``line: left ‖ right`` for every implicit concatenation that breaks inside a phrase."""
    skipped = _skipped_lines(ast.parse(source))
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.NL, tokenize.COMMENT)]
    out = []
    for a, b in zip(toks, toks[1:], strict=False):
        if a.type == b.type == tokenize.STRING and a.start[0] not in skipped:
            left, right = _body(a.string), _body(b.string)
            if not _ENDS_CLAUSE.search(left) and not _STARTS_CLAUSE.match(right):
                out.append(f"{a.start[0]}: {left[-30:]} ‖ {right[:30]}")
    return out


@pytest.mark.parametrize(("snippet", "found"), [
    ('msg = f(f"leaves {n} for FSx "\n "and "\n "endpoints")', ["1: leaves {n} for FSx  ‖ and ", "2: and  ‖ endpoints"]),
    ('msg = f("a reservation holds "\n "one instance type")', ["1: a reservation holds  ‖ one instance type"]),
    ('msg = f("too small, "\n "got 3")', []),                       # after punctuation
    ('msg = f("addresses needed "\n "(4 for nodes)")', []),           # before a parenthesis
    ('msg = f("got "\n f"{value}; allowed x")', []),                  # before a placeholder
    ('msg = f("allowed a or b "\n "- did you mean a?")', []),         # before the hint
    ('SOURCE = ("https://example.com/a "\n "(section 2)")', []),      # a module-level source constant
    ('SOURCE = "a long source that breaks " "mid phrase"', []),
    ('@rule("R-X-1", source="breaks inside "\n "a phrase")\ndef r(bp): pass', []),  # rule sources are exempt
])
def test_split_phrases_finds_breaks_inside_phrases(snippet: str, found: list[str]) -> None:
    assert split_phrases(snippet) == found


@pytest.mark.parametrize("module", MESSAGE_MODULES, ids=lambda p: p.name)
def test_messages_are_written_in_whole_phrases(module: Path) -> None:
    assert split_phrases(module.read_text()) == []
