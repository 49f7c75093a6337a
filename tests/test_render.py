"""What render_blueprint produces. Every rendered node script passes `bash -n` and shellcheck: each
example blueprint in blueprints/ on each of the three operating systems, plus one blueprint per special
instance kind (Blackwell with nvlsm, GB200 with IMEX on arm64, a 1-GPU p5.4xlarge, an aws-ofi-nccl built
from source). shellcheck's data-flow analysis (``--extended-analysis``, on by default) runs on each example on its own
operating system and on every special kind, which together cover each operating system; the renderings of an example
on the other two get every other check (the analysis more than doubles shellcheck's time: bench/README.md).
And golden files of the full render for one example per orchestrator (tests/goldens.py, tests/golden/<orchestrator>/)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint.errors import BlueprintError
from fmcluster.catalog import get_instance
from fmcluster.orchestrators.registry import ORCHESTRATORS
from fmcluster.resolved import resolve
from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests import goldens
from tests.blueprints import DALLAS, DROP, example, merge, to_yaml

ROOT = Path(__file__).resolve().parent.parent
OSES = ("ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023")
EXAMPLES = sorted((ROOT / "blueprints").glob("*.yaml"))
CB = {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
SPECIAL = {
    "b200-nvlsm": ({"image": {"mode": "bake"}, "stack": "blackwell-580-cuda13.0"}, {"instance_type": "p6-b200.48xlarge"}, "ubuntu-24.04"),
    "gb200-imex-arm64": ({"image": {"mode": "bake"}, "stack": "gb200-580-cuda13.0"},
                         {"instance_type": "p6e-gb200.36xlarge", "capacity": CB, "count": 9}, "amazon-linux-2023"),
    "p5-4xlarge": ({"image": {"mode": "bake"}, "stack": "h100-570-cuda12.8"}, {"instance_type": "p5.4xlarge"}, "amazon-linux-2023"),
    "plugin-from-source": ({"image": {"mode": "bake"}, "stack": "h100-570-cuda12.8", "overrides": {"aws_ofi_nccl": "1.16.3"}},
                           {"instance_type": "p5en.48xlarge"}, "ubuntu-22.04"),
    "efa-disabled": ({"image": {"mode": "bake"}, "stack": "h100-580-cuda13.0"}, {"instance_type": "p5.48xlarge", "efa": False}, "ubuntu-24.04"),
}


def shellcheck() -> str:
    exe = Path(sys.executable).with_name("shellcheck")
    return str(exe) if exe.exists() else (shutil.which("shellcheck") or "shellcheck")


def _with(software: dict[str, Any], group: dict[str, Any], os_name: str) -> dict[str, Any]:
    """blueprints/default.yaml with another stack, OS and compute group."""
    default = example("default")
    # a stack other than the official image's is baked (issue 11: official mode runs the image's own stack)
    d = merge(default, {"software": {"image": {"mode": "bake"}, **software, "os": os_name},
                        "compute": [{**default["compute"][0], **group}]})
    if os_name == "ubuntu-24.04":  # the parent ParallelCluster image has no Lustre client there (R-IMG-8)
        d = merge(d, {"storage": {"lustre": None}})
    inst = get_instance(d["compute"][0]["instance_type"])
    if inst.cpu_architecture == "arm64":
        # ParallelCluster needs the head node in the compute nodes' architecture (R-PC-2)
        d = merge(d, {"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7g.4xlarge"}}})
    if inst.capacity_block_zones and group.get("capacity") == CB:
        d = merge(d, DALLAS)  # where its Capacity Blocks are sold (R-CAP-15)
    return d


def _valid(data: dict[str, Any]) -> bool:
    try:
        load_blueprint_text(to_yaml(data))
    except BlueprintError:
        return False
    return True


def _cases() -> list[tuple[str, dict[str, Any], bool]]:
    """``(label, blueprint data, full)``: ``full`` for an example on its own operating system and for a special kind
    (shellcheck's data-flow analysis runs on their scripts)."""
    cases = []
    for path in EXAMPLES:
        data = example(path.stem)
        own_os = load_blueprint(path).software.os
        for os_name in OSES:
            d = merge(data, {"software": {"os": os_name}})
            if not _valid(d):
                # Changed on purpose (issue 11): an OS the example's image does not exist for renders as a custom
                # image of that OS with the family's default stack.
                d = merge(d, {"software": {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"},
                                           "stack": DROP}})
                if not _valid(d):  # the image has no Lustre client on that OS
                    d = merge(d, {"storage": {"lustre": None}})
            cases.append((f"{path.stem}-{os_name}", d, os_name == own_os))
    for name, (software, group, os_name) in SPECIAL.items():
        cases.append((f"{name}-{os_name}", _with(software, group, os_name), True))
    return cases


@pytest.fixture(scope="module")
def rendered_cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], set[Path]]:
    """Every distinct rendered script, written once: ({label: path}, the paths a ``full`` case rendered)."""
    out_dir = tmp_path_factory.mktemp("rendered")
    seen: dict[str, Path] = {}
    files: dict[str, Path] = {}
    full: set[Path] = set()
    for label, data, full_case in _cases():
        bp = load_blueprint_text(to_yaml(data)).blueprint
        for group, scripts in render_blueprint(bp).items():
            for name, text in scripts.items():
                if not (name.endswith(".sh") or name == "fmcluster-node-check"):
                    continue  # versions.txt, Prometheus/Grafana configs: not shell
                digest = hashlib.sha256(text.encode()).hexdigest()
                if digest not in seen:
                    path = out_dir / f"{label}--{group.replace('/', '_')}--{name}"
                    path.write_text(text)
                    seen[digest] = path
                files[f"{label}/{group}/{name}"] = seen[digest]
                if full_case:
                    full.add(seen[digest])
    return files, full


@pytest.fixture(scope="module")
def rendered(rendered_cases: tuple[dict[str, Path], set[Path]]) -> dict[str, Path]:
    """Every distinct rendered script, written once: {label: path}."""
    return rendered_cases[0]


def test_examples_and_special_kinds_render_for_every_os(rendered: dict[str, Path]) -> None:
    for path in EXAMPLES:
        for os_name in OSES:
            assert any(k.startswith(f"{path.stem}-{os_name}/") and k.endswith("/bootstrap.sh") for k in rendered)
    assert len(rendered) >= 3 * (3 * len(EXAMPLES) + len(SPECIAL))
    # scripts installed by other scripts are rendered on their own too, so shellcheck reads them (heredocs it does not)
    for name in ("observability/heartbeat.sh", "observability/exporters/head.sh"):
        assert any(k.endswith(f"/{name}") for k in rendered), name


def test_data_flow_analysis_covers_every_os_and_script(rendered_cases: tuple[dict[str, Path], set[Path]]) -> None:
    """Each operating system's node-check and bootstrap, and every kind of script, get shellcheck's full analysis
    in at least one case; the other-OS renderings of the examples are the only ones without it."""
    files, full = rendered_cases
    for os_name in OSES:
        for name in ("bootstrap.sh", "fmcluster-node-check"):
            assert any(f"-{os_name}/" in k and k.endswith(f"/{name}") and p in full for k, p in files.items()), (os_name, name)
    kinds = {k.rsplit("/", 1)[1] for k in files}
    assert {k.rsplit("/", 1)[1] for k, p in files.items() if p in full} == kinds
    assert len(full) < len(set(files.values()))


def test_bash_syntax(rendered: dict[str, Path]) -> None:
    """``bash -n`` once per distinct script (identical texts share one file); a failure names every label of it."""
    labels: dict[Path, list[str]] = {}
    for label, path in rendered.items():
        labels.setdefault(path, []).append(label)
    for path, names in labels.items():
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{', '.join(names)}: {proc.stderr}"


SHELLCHECK_CHUNKS = 4


#: shellcheck's time without its data-flow analysis, as a share of its time with it (0.42 on the node checks: bench/README.md).
WITHOUT_DATA_FLOW_COST = 0.45


def shellcheck_chunk(paths: list[str], chunk: int, full: frozenset[str] = frozenset()) -> list[str]:
    """The ``chunk``-th of :data:`SHELLCHECK_CHUNKS` sets of ``paths`` of about equal cost (largest first, each to the
    cheapest set): shellcheck's time grows with the text, and more than doubles with data-flow analysis (the paths in
    ``full``), so no chunk holds the suite's tail alone."""
    sets: list[list[str]] = [[] for _ in range(SHELLCHECK_CHUNKS)]
    costs = [0.0] * SHELLCHECK_CHUNKS

    def cost(p: str) -> float:
        return Path(p).stat().st_size * (1.0 if p in full else WITHOUT_DATA_FLOW_COST)

    for path in sorted(paths, key=lambda p: (-cost(p), p)):
        cheapest = costs.index(min(costs))
        sets[cheapest].append(path)
        costs[cheapest] += cost(path)
    return sets[chunk]


@pytest.mark.spread
@pytest.mark.parametrize("chunk", range(SHELLCHECK_CHUNKS))
def test_shellcheck_clean(rendered_cases: tuple[dict[str, Path], set[Path]], chunk: int) -> None:
    """Every distinct rendered script, in chunks that xdist runs on different workers; data-flow analysis on the
    scripts of the ``full`` cases (module docstring)."""
    files, full_paths = rendered_cases
    full = frozenset(str(p) for p in full_paths)
    paths = shellcheck_chunk(sorted({str(p) for p in files.values()}), chunk, full)
    assert paths
    for group, extra in (([p for p in paths if p in full], []),
                         ([p for p in paths if p not in full], ["--extended-analysis=false"])):
        if not group:
            continue
        proc = subprocess.run([shellcheck(), "--shell=bash", "--format=gcc", *extra, *group], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bootstrap_embeds_the_node_check_and_job_env(rendered: dict[str, Path]) -> None:
    for label, path in rendered.items():
        if not label.endswith("/bootstrap.sh"):
            continue
        text = path.read_text()
        check = rendered[label.replace("bootstrap.sh", "fmcluster-node-check")].read_text()
        env = rendered[label.replace("bootstrap.sh", "job-env.sh")].read_text()
        assert f"<<'FMCLUSTER_NODE_CHECK_EOF'\n{check.strip()}\nFMCLUSTER_NODE_CHECK_EOF\n" in text
        assert f"<<'FMCLUSTER_JOB_ENV_EOF'\n{env.strip()}\nFMCLUSTER_JOB_ENV_EOF\n" in text


def test_os_specific_package_tools(rendered: dict[str, Path]) -> None:
    for label, path in rendered.items():
        if not label.endswith("/bootstrap.sh"):
            continue
        text = path.read_text()
        if "FMCLUSTER_EXPORTERS_SH" in text:  # the embedded exporter script picks its package tool at run time
            head, _, rest = text.partition("<<'FMCLUSTER_EXPORTERS_SH'")
            text = head + rest.split("\nFMCLUSTER_EXPORTERS_SH\n", 1)[1]
        if "amazon-linux-2023" in label:
            assert "dnf versionlock add" in text and "apt-get" not in text
        else:
            assert "apt-mark hold" in text and "Unattended-Upgrade::Package-Blacklist" in text and "dnf " not in text


# ---- golden files, one example per orchestrator (tests/goldens.py): any template change shows up as a reviewed diff ----
# After an intended template change:
#     FMCLUSTER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -n 0 tests/test_render.py -k golden
# then review `git diff tests/golden/` and commit it with the template change.
GOLDEN_CASES = [(key, name) for key in goldens.EXAMPLES for name in sorted(goldens.rendered(key))]


@pytest.mark.parametrize(("key", "name"), GOLDEN_CASES, ids=[f"{k}/{n}" for k, n in GOLDEN_CASES])
def test_matches_golden(key: str, name: str) -> None:
    text = goldens.rendered(key)[name]
    path = goldens.golden_dir(key) / name
    if goldens.UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run FMCLUSTER_UPDATE_GOLDEN=1 pytest {__file__} -k golden"
    assert text == path.read_text(), f"{key}: {name} differs from {path}; if intended, update the golden files (see the comment above)"


@pytest.mark.parametrize("key", list(goldens.EXAMPLES))
def test_no_stale_golden_files(key: str) -> None:
    folder = goldens.golden_dir(key)
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    if goldens.UPDATE:  # a file the render no longer writes goes with the update
        for name in names - set(goldens.rendered(key)):
            (folder / name).unlink()
        names &= set(goldens.rendered(key))
    assert names == set(goldens.rendered(key)), f"{folder}: {sorted(names ^ set(goldens.rendered(key)))}"


def test_one_golden_example_per_orchestrator() -> None:
    """Each folder's example runs on the orchestrator the folder is named for, and every orchestrator has one."""
    keys = {key: resolve(load_blueprint(goldens.ROOT / "blueprints" / f"{example}.yaml")).profile.key
            for key, example in goldens.EXAMPLES.items()}
    assert keys == {key: key for key in goldens.EXAMPLES}
    assert set(keys) == set(ORCHESTRATORS)
