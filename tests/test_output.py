"""One way to do common things in the CLI: one problem printer (markup escaped once), one output
format enum, one severity vocabulary, every command declared the same way."""

from __future__ import annotations

import ast
import io
import json
import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

from fmcluster.blueprint import BlueprintError, Problem
from fmcluster.cli import app
from fmcluster.output import OutputFormat, print_problems
from fmcluster.severity import MEANING, STYLE, ChangeLevel, CheckStatus, ProblemLevel, Severity, count
from tests.blueprints import blueprint_text
from tests.conftest import ROOT
from tests.test_plan import fake_assembly

PKG = ROOT / "fmcluster"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


# ---- the problem printer ------------------------------------------------------------------------
PROBLEMS = [
    Problem("name", "invalid format, got '[bold]x'; allowed 3-32 lowercase letters", line=1),
    Problem("software.environment.LD_PRELOAD", "preloads [red]libraries[/red]", level="warning", rule_id="R-ENV-3"),
]


@pytest.mark.parametrize(("problems", "expected"), [
    (PROBLEMS, "bad.yaml: 1 error\n"
               "  error: name (line 1): invalid format, got '[bold]x'; allowed 3-32 lowercase letters\n"
               "  warning: software.environment.LD_PRELOAD: preloads [red]libraries[/red] [R-ENV-3]\n"),
    (PROBLEMS[:1] * 2, "bad.yaml: 2 errors\n"
                       + "  error: name (line 1): invalid format, got '[bold]x'; allowed 3-32 lowercase letters\n" * 2),
    # warnings alone: no header (the blueprint is valid)
    (PROBLEMS[1:], "  warning: software.environment.LD_PRELOAD: preloads [red]libraries[/red] [R-ENV-3]\n"),
    ([], ""),
])
def test_print_problems_is_blueprint_error_text_with_markup_escaped(problems: list[Problem], expected: str) -> None:
    buf = io.StringIO()
    print_problems("bad.yaml", problems, Console(file=buf, width=300, color_system=None))
    assert buf.getvalue() == expected
    if any(p.level == "error" for p in problems):
        assert buf.getvalue() == str(BlueprintError("bad.yaml", problems)) + "\n"


def _invalid(tmp_path: Path) -> Path:
    f = tmp_path / "bad.yaml"
    f.write_text(blueprint_text({"name": "[bold]x", "compute": [{"name": "gpu", "instance_type": "x1.large", "count": 1}]}))
    return f


COMMANDS = {
    "validate": (lambda f, tmp: ["validate", str(f)], 1),
    "plan": (lambda f, tmp: ["plan", str(f), "--cdk-out", str(tmp / "cdk.out")], 1),
    "render": (lambda f, tmp: ["render", str(f), "--out", str(tmp / "out")], 1),
    "diff": (lambda f, tmp: ["diff", str(f), str(f)], 2),  # diff: 1 is "unsafe change", 2 bad input
    "preflight": (lambda f, tmp: ["preflight", str(f)], 2),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_prints_an_invalid_blueprint_the_same_way(tmp_path: Path, command: str) -> None:
    f = _invalid(tmp_path)
    expected = str(BlueprintError(str(f), _problems(f))) + "\n"
    assert "got '[bold]x'" in expected  # the value is shown as typed
    args, code = COMMANDS[command]
    res = invoke(*args(f, tmp_path))
    assert res.exit_code == code, res.output
    assert res.stderr.startswith(expected), res.stderr
    assert "Traceback" not in res.output


def _problems(f: Path) -> list[Problem]:
    from fmcluster.validation import load_blueprint

    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    return exc.value.problems


WARNED = {"software": {"environment": {"LD_PRELOAD": "/opt/[bold]lib.so"}}}


@pytest.mark.parametrize("command", ["validate", "plan", "render", "preflight"])
def test_every_command_that_loads_a_valid_blueprint_prints_its_warnings(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fmcluster.preflight import clients as clients_module

    def no_credentials(region: str, profile: str | None = None) -> Any:
        raise clients_module.PreflightCannotRun("no AWS credentials found")

    monkeypatch.setattr(clients_module, "make_clients", no_credentials)
    f = tmp_path / "warned.yaml"
    f.write_text(blueprint_text(WARNED))
    fake_assembly(tmp_path / "cdk.out", ("t-cluster-network", "t-cluster-storage", "t-cluster-observability",
                                         "t-cluster-cluster"))
    args, _ = COMMANDS[command]
    res = invoke(*args(f, tmp_path))
    assert res.exit_code == (2 if command == "preflight" else 0), res.output
    [line] = [x for x in res.stderr.splitlines() if "R-ENV-3" in x]
    assert line.startswith("  warning: software.environment.LD_PRELOAD (line ") and "got LD_PRELOAD='/opt/[bold]lib.so'" in line


@pytest.mark.parametrize(("args", "fragment"), [
    (["plan", str(ROOT / "blueprints/default.yaml"), "--cdk-out", "/nonexistent/[red]x"], "error: /nonexistent/[red]x: "),
    (["diff", "/nonexistent/[red]a", "/nonexistent/[red]b"], "no such file or folder, got '/nonexistent/[red]a'"),
    (["diff", str(ROOT / "blueprints/default.yaml"), str(ROOT / "blueprints/default.yaml"), "-c", "[red]oops"],
     "error: --context needs KEY=VALUE, got '[red]oops'"),
    (["preflight", str(ROOT / "blueprints/default.yaml"), "--until", "[red]soon"],
     "preflight could not run: --until must be a date, got '[red]soon'"),
])
def test_input_errors_are_printed_as_typed(args: list[str], fragment: str) -> None:
    res = invoke(*args)
    assert res.exit_code in (1, 2) and "Traceback" not in res.output
    assert fragment in " ".join(res.stderr.split()), res.stderr


# ---- one output format enum -------------------------------------------------------------------------
def _format_enums() -> list[str]:
    """``module:Class`` of every Enum in fmcluster with a json member."""
    found = []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases):
                names = {t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
                if "json" in names:
                    found.append(f"{path.relative_to(PKG)}:{node.name}")
    return found


def test_one_output_format_enum() -> None:
    assert _format_enums() == ["output.py:OutputFormat"]
    assert [f.value for f in OutputFormat] == ["text", "markdown", "json"]


@pytest.mark.parametrize("command", ["plan", "diff"])
def test_format_options_use_the_enum(command: str) -> None:
    import fmcluster.cli

    hint = get_type_hints(getattr(fmcluster.cli, command), include_extras=True)["format"]
    assert get_args(hint)[0] is OutputFormat
    res = invoke(command, "a", *(["b"] if command == "diff" else []), "--format", "xml")
    assert res.exit_code == 2 and "'text', 'markdown', 'json'" in " ".join(res.output.split()), res.output


@pytest.mark.parametrize("command", ["validate", "plan", "diff", "preflight"])
def test_every_command_with_machine_output_takes_json(command: str) -> None:
    cli = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    assert any("--json" in p.opts for p in cli.params)


def test_plan_json_is_format_json(tmp_path: Path) -> None:
    out = fake_assembly(tmp_path / "cdk.out")
    a = invoke("plan", str(ROOT / "blueprints/default.yaml"), "--cdk-out", str(out), "--json")
    b = invoke("plan", str(ROOT / "blueprints/default.yaml"), "--cdk-out", str(out), "--format", "json")
    assert (a.exit_code, b.exit_code) == (0, 0) and a.stdout == b.stdout
    assert json.loads(a.stdout)["result"]["stacks"]["llm-train-cluster"] == 2


# ---- one severity vocabulary ------------------------------------------------------------------------
def test_every_reported_level_is_a_severity_word() -> None:
    words = set(get_args(Severity))
    assert words == {"error", "warning", "info", "ok", "skipped", "unknown"}
    for subset in (ProblemLevel, ChangeLevel, CheckStatus):
        assert set(get_args(subset)) <= words
    assert set(MEANING) == set(STYLE) == words


def test_the_vocabulary_is_documented_once_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Severities", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, flags=re.M)
    assert dict(documented) == MEANING


def test_no_other_severity_words_in_the_commands() -> None:
    # preflight used pass/fail/warn/skip (and "error" for could-not-check): statuses are now Severity words
    from fmcluster.preflight.checks import CheckResult
    from fmcluster.review.diff import ResourceChange

    assert CheckResult.__dataclass_fields__["status"].type == "CheckStatus"
    assert ResourceChange.__dataclass_fields__["level"].type == "ChangeLevel"
    assert Problem.__dataclass_fields__["level"].type == "Level"
    src = (PKG / "preflight" / "checks.py").read_text() + (PKG / "preflight" / "runner.py").read_text()
    assert not re.search(r'"(pass|fail|warn|skip)"', src)


@pytest.mark.parametrize(("n", "word", "text"), [
    (0, "error", "0 errors"), (1, "error", "1 error"), (2, "error", "2 errors"), (1, "warning", "1 warning"),
    (3, "warning", "3 warnings"), (3, "ok", "3 ok"), (2, "skipped", "2 skipped"), (4, "unknown", "4 unknown"),
])
def test_count(n: int, word: str, text: str) -> None:
    assert count(n, word) == text


# ---- every command declared the same way ------------------------------------------------------------
def test_every_command_is_declared_in_cli_with_the_decorator() -> None:
    commands = dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    # one command group, declared in cli.py as well: `fmcluster image lookup` (bake mode's parent AMI lookup)
    group = commands.pop("image")
    assert sorted(group.commands) == ["lookup"]  # type: ignore[attr-defined]
    assert sorted(commands) == ["acceptance", "catalog", "diff", "grafana", "plan", "preflight", "render", "schema",
                                "topology", "validate"]
    assert {c.callback.__module__ for c in [*commands.values(), *group.commands.values()]} == {"fmcluster.cli"}  # type: ignore[attr-defined]
    tree = ast.parse((PKG / "cli.py").read_text())
    decorated = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                 and any(ast.unparse(d) == "app.command()" for d in n.decorator_list)}
    assert decorated == set(commands)
    in_group = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                and any(ast.unparse(d) == "image_app.command('lookup')" for d in n.decorator_list)}
    assert in_group == {"image_lookup"}
    # nothing else registers commands: no register_cli hooks, no app.command(...)(fn) calls
    for path in PKG.rglob("*.py"):
        text = path.read_text().replace('@image_app.command("lookup")', "")
        assert "register_cli" not in text and ".command(" not in text.replace("@app.command()", ""), path
