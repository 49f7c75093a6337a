"""Shared fixtures: example blueprints, in-process synthesis (cached per blueprint), CLI synthesis."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests import rule_fires

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "blueprints").glob("*.yaml"))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("NODE_NO_WARNINGS", "1")
# As app.py does, before the first aws_cdk import starts the jsii kernel (which reads it): no construct stack traces.
os.environ.setdefault("CDK_DISABLE_STACK_TRACE", "1")
#: The support calendar's evaluation date for the whole suite (R-SUP-1/2 judge pinned components against it): a fixed
#: day, so that no test's outcome changes with the wall clock, on which no catalog stack or orchestrator default is
#: within 120 days of its end (tests of other rules see no support warning). tests/test_support.py sets its own dates
#: and judges the shipped examples against the real today.
SUITE_SUPPORT_DATE = "2026-05-01"
os.environ.setdefault("FMCLUSTER_SUPPORT_DATE", SUITE_SUPPORT_DATE)


def shared_dir() -> Path | None:
    """A folder the xdist workers of this test run share (``PYTEST_XDIST_TESTRUNUID`` is the same in every worker of
    one run), or ``None`` when the suite runs serially (``-n 0``: the ``@cache`` of one process already shares)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    folder = Path(tempfile.gettempdir()) / f"fmcluster-tests-{run}"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def shared_once(kind: str, key: str) -> Iterator[Path | None]:
    """Under xdist, the folder of ``kind``/``key`` for this run, held under an exclusive lock: the first worker to get
    it computes and writes the result there, a later one (blocked until then) finds it. ``None`` when serial.
    The same blueprint synthesized by tests of several files on two workers is then synthesized once per run."""
    root = shared_dir()
    if root is None:
        yield None
        return
    folder = root / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"
    folder.mkdir(exist_ok=True)
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cdk_context() -> dict[str, Any]:
    """cdk.json context plus the feature flags build_app sets (for tests that build constructs directly)."""
    from fmcluster.stacks.build import FEATURE_FLAGS

    return {**FEATURE_FLAGS, **json.loads((ROOT / "cdk.json").read_text())["context"]}


def synth_templates(blueprint_text: str, extra_context: tuple[tuple[str, Any], ...] = ()) -> dict[str, dict[str, Any]]:
    """Stack name -> template JSON of :func:`synth_folder` (in-process, no nag, no lookups: a bake's ParallelCluster
    parent is found at deploy time)."""
    return synth_folder(blueprint_text, extra_context)[1]


@cache
def synth_folder(blueprint_text: str, extra_context: tuple[tuple[str, Any], ...] = ()
                 ) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Synthesize in-process (no nag) into a folder of its own; return the folder (assets are there) and stack name ->
    template JSON. An error annotation fails (:func:`assert_no_synthesis_errors`). Once per test run for every worker
    (:func:`shared_once`): tests of several files on two workers that synthesize the same text share one synthesis."""
    with shared_once("synth", repr((blueprint_text, extra_context))) as folder:
        done = folder / "synthesis.json" if folder is not None else None
        if done is not None and done.is_file():
            r = json.loads(done.read_text())
            return Path(r["out"]), r["templates"]
        out, templates = _synth_folder(blueprint_text, extra_context)
        if done is not None:
            done.write_text(json.dumps({"out": str(out), "templates": templates}))
        return out, templates


def _synth_folder(blueprint_text: str, extra_context: tuple[tuple[str, Any], ...]
                  ) -> tuple[Path, dict[str, dict[str, Any]]]:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text

    bp = load_blueprint_text(blueprint_text).blueprint
    out = Path(tempfile.mkdtemp(prefix="fmcluster-test-"))
    # Templates only, as `fmcluster plan` and `diff` synthesize (fmcluster.review.synth.synthesize): aws-cdk-lib's
    # built-in CloudFormation validation runs on the CLI-path syntheses of every example (example_synth), and
    # cfn-lint on their templates.
    app = cdk.App(outdir=str(out), context={**cdk_context(), **dict(extra_context)}, builtin_cloud_formation_validation=False)
    stacks = build_app(app, bp)
    assert_no_synthesis_errors(app.synth())
    return out, {s.stack_name: json.loads((out / f"{s.stack_name}.template.json").read_text()) for s in stacks.all()}


def assert_no_synthesis_errors(assembly: Any) -> None:
    """Fail on any error annotation in the assembly (``Annotations.add_error``, or the CDK's own such as an RDS cluster
    with one subnet): ``cdk synth``/``cdk deploy`` stop on them, in-process ``app.synth()`` does not."""
    import aws_cdk.cx_api as cx_api

    errors = [f"{m.id}: {m.entry.data}" for stack in assembly.stacks_recursively for m in stack.messages
              if m.level == cx_api.SynthesisMessageLevel.ERROR]
    assert errors == [], errors


def resources_of(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}



@cache
def cli_synth(blueprint: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``npx cdk synth`` of one blueprint into its own folder (the path users take): no context beyond the
    blueprint (no ``cdk.context.json`` exists in the repository; a bake's parent is found at deploy time). Once per
    test run for every worker (:func:`shared_once`; callers only read the folder)."""
    with shared_once("cli-synth", f"{blueprint}\n{blueprint.read_text()}") as folder:
        done = folder / "proc.json" if folder is not None else None
        if done is not None and done.is_file():
            r = json.loads(done.read_text())
            return Path(r["out"]), subprocess.CompletedProcess(r["args"], r["returncode"], r["stdout"], r["stderr"])
        out, proc = _cli_synth(blueprint)
        if done is not None:
            done.write_text(json.dumps({"out": str(out), "args": proc.args, "returncode": proc.returncode,
                                        "stdout": proc.stdout, "stderr": proc.stderr}))
        return out, proc


def _cli_synth(blueprint: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = Path(tempfile.mkdtemp(prefix=f"cdkout-{blueprint.stem}-"))
    proc = subprocess.run(
        ["npx", "cdk", "synth", "--quiet", "-c", f"blueprint={blueprint}", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},  # no credentials
             "PATH": f"{ROOT / '.venv' / 'bin'}:{ROOT / 'node_modules' / '.bin'}:{os.environ['PATH']}"},
    )
    return out, proc


#: What the CDK CLI adds to cdk.json's context for ``cdk synth`` (CDK CLI 2.1148: read from the ``CDK_CONTEXT_JSON``
#: it hands the app); with it an in-process synthesis writes what ``npx cdk synth`` writes
#: (test_examples.py::test_in_process_synthesis_writes_what_the_cdk_cli_writes).
CLI_CONTEXT: dict[str, Any] = {"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True,
                               "aws:cdk:version-reporting": True, "aws:cdk:bundling-stacks": ["**"],
                               "@aws-cdk/core:failSynthOnValidationErrors": False}


@cache
def _app_module() -> Any:
    """app.py (the CDK entry point) as a module: importing it runs nothing (``synthesize`` runs under ``__main__``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fmcluster_cdk_app", ROOT / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def example_synth(blueprint: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """app.py's ``synthesize`` run in-process on ``blueprint`` with cdk.json's context plus :data:`CLI_CONTEXT` into a
    folder of its own: the cloud assembly ``npx cdk synth`` writes (templates, assets, cdk-nag's validation report,
    ParallelCluster configs), without the CLI's and a second jsii kernel's start-up (about 10 s per blueprint).
    Returns the folder and a process-like result (exit code, what the app printed on stderr). Once per test run for
    every worker (:func:`shared_once`). :func:`cli_synth` is the real CLI, kept for what only the CLI can show."""
    with shared_once("app-synth", f"{blueprint}\n{blueprint.read_text()}") as folder:
        done = folder / "proc.json" if folder is not None else None
        if done is not None and done.is_file():
            r = json.loads(done.read_text())
            return Path(r["out"]), subprocess.CompletedProcess(r["args"], r["returncode"], "", r["stderr"])
        out, proc = _example_synth(blueprint)
        if done is not None:
            done.write_text(json.dumps({"out": str(out), "args": proc.args, "returncode": proc.returncode,
                                        "stderr": proc.stderr}))
        return out, proc


def _example_synth(blueprint: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    import io

    import aws_cdk as cdk

    out = Path(tempfile.mkdtemp(prefix=f"appout-{blueprint.stem}-"))
    context = {**json.loads((ROOT / "cdk.json").read_text())["context"], "blueprint": str(blueprint), **CLI_CONTEXT}
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        returncode = _app_module().synthesize(cdk.App(outdir=str(out), context=context))
    return out, subprocess.CompletedProcess(["app.py", str(blueprint)], returncode, "", err.getvalue())


@pytest.fixture(scope="session")
def default_templates() -> dict[str, dict[str, Any]]:
    return synth_templates((ROOT / "blueprints" / "default.yaml").read_text())


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist (``--dist loadgroup``, pyproject addopts) a file's tests run on one worker, so its module
    fixtures and ``@cache``'d syntheses are built once; tests marked ``spread`` (independent cases that share
    nothing, such as the CLI round trips of test_no_traceback.py) are handed out one by one instead; in a file marked
    ``group_by(param)`` (the boot simulation: one boot per case, read by several tests) the tests of one value of
    ``param`` form a group and the others are spread."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None or item.get_closest_marker("spread") is not None:
            continue
        by = item.get_closest_marker("group_by")
        if by is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if by.args[0] in params:  # the tests sharing one case's (cached) work run together, cases spread
            item.add_marker(pytest.mark.xdist_group(f"{item.nodeid.split('::')[0]}::{params[by.args[0]]!r}"))


def pytest_addoption(parser: pytest.Parser) -> None:
    rule_fires.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    """The session guard of tests/rule_fires.py: every registered rule fires on some test blueprint. In the main
    process (not an xdist worker): one temporary folder for the whole run (``TMPDIR``, inherited by the workers and by
    every script and CLI the tests start), removed when the run ends, so the thousands of syntheses, boots and
    ``cdk.out`` folders of a run leave nothing in the system's temporary folder."""
    config.pluginmanager.register(rule_fires.RuleFires(config), "rule_fires")
    if not hasattr(config, "workerinput"):
        root = tempfile.mkdtemp(prefix="fmcluster-run-")
        config.stash[_RUN_TMP] = root
        os.environ["TMPDIR"] = tempfile.tempdir = root


def pytest_unconfigure(config: pytest.Config) -> None:
    root = config.stash.get(_RUN_TMP, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


_RUN_TMP = pytest.StashKey[str]()
