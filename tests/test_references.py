"""Sources inside the project: no comment, docstring, doc or data file cites a research note that lives outside the
repository, and every repository path or relative markdown link they name exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT

TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".j2", ".sh", ".toml", ".cjs", ".txt", ".cfg", ".ini"}
#: Research notes the project was built from; they are not in the repository, so citing them leaves the reader nowhere.
NOTES = ("version-matrix", "aws-resource-rules", "style-anchors", "anchors-blueprints", "frontier-2026-12",
         "deploy-review-checklist", "tooling-notes")
NOTE = re.compile(r"\b(" + "|".join(map(re.escape, NOTES)) + r")\b")
OUTSIDE = re.compile("shared" + "/reference")
#: A path from the repository root: starts at a top-level entry, not inside a URL or another repository's path.
#: blueprints/ is left out: docs and messages name illustrative blueprints (blueprints/prod.yaml).
REPO_PATH = re.compile(r"(?<![\w./@-])((?:\.github|bench|docs|fmcluster|tests|tools)/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
SELF = Path(__file__).resolve()


def _files() -> list[Path]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in listed if Path(f).suffix in TEXT_SUFFIXES and (ROOT / f).is_file()
            and (ROOT / f).resolve() != SELF and not f.startswith("tests/fixtures/")]


def _lines(f: Path) -> list[tuple[int, str]]:
    try:
        return list(enumerate(f.read_text(encoding="utf-8").splitlines(), 1))
    except UnicodeDecodeError:
        return []


def test_nothing_cites_research_notes_outside_the_repository() -> None:
    hits = [f"{f.relative_to(ROOT)}:{n}: {line.strip()[:120]}" for f in _files() for n, line in _lines(f)
            if OUTSIDE.search(line) or NOTE.search(line)]
    assert hits == [], "cite the primary source instead (URL, repository + path, issue number):\n" + "\n".join(hits)


def test_every_repository_path_named_exists() -> None:
    missing = []
    for f in _files():
        if f.relative_to(ROOT).parts[0] == "tests" and f.suffix == ".py":
            continue  # tests build files of their own under such names
        for n, line in _lines(f):
            for m in REPO_PATH.finditer(line):
                path = m.group(1).rstrip(".")
                if any(c in line[m.start():m.end() + 2] for c in "<*{$") or path.endswith("/"):
                    continue  # a pattern or placeholder, not a path
                if not (ROOT / path).exists():
                    missing.append(f"{f.relative_to(ROOT)}:{n}: {path}")
    assert missing == [], "\n".join(missing)


def test_every_relative_markdown_link_resolves() -> None:
    broken = []
    for f in _files():
        if f.suffix != ".md":
            continue
        for n, line in _lines(f):
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target) or target.startswith("/"):
                    continue  # URLs and absolute paths are not repository files
                if not (f.parent / target).exists():
                    broken.append(f"{f.relative_to(ROOT)}:{n}: {target}")
    assert broken == [], "\n".join(broken)


def test_the_checks_can_fail(tmp_path: Path) -> None:
    line = "see docs/nope.md and " + "shared" + "/reference/x.md and version-matrix R-DRV-1"
    assert OUTSIDE.search(line) and NOTE.search(line)
    assert [m.group(1) for m in REPO_PATH.finditer(line)] == ["docs/nope.md"]
    assert not [m.group(1) for m in REPO_PATH.finditer("https://github.com/aws/x/blob/main/docs/a.md")]
