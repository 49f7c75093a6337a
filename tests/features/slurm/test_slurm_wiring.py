"""Health checks, TaskProlog and IMEX per job on AWS PCS and SageMaker HyperPod (issue 13 items 2-3), next to
ParallelCluster's (tests/features/slurm/test_slurm_settings.py): the Slurm settings each orchestrator receives for a p6e-gb200
cluster (one table), and the scripts that carry them run for real against stub ``scontrol`` / ``systemctl``.

PCS takes only the cluster keys it documents (Prolog, Epilog, SelectTypeParameters, AccountingStorageEnforce: the
AWS::PCS::Cluster schema of cfn-lint and the PCS API reference), so its health check is a node timer; HyperPod's
SlurmConfig has no such keys, so its controller's OnInitComplete edits slurm.conf.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.slurm.render_hooks import (
    HEALTH_CHECK_INTERVAL_S,
    render_health_timer,
    render_imex_prolog,
    render_slurm_conf_editor,
    slurm_conf_settings,
)
from fmcluster.orchestrators.hyperpod_slurm import construct_slurm as hyperpod
from fmcluster.orchestrators.parallelcluster.construct import TASK_PROLOG as PC_TASK_PROLOG
from fmcluster.orchestrators.pcs import construct as pcs
from fmcluster.resolved import NODE_DIR
from tests.conftest import ROOT, resources_of, synth_templates
from tests.orchestrator_support import cluster_template, matrix_blueprint, stack_for

GB200 = "gb200-580-cuda13.0"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
HEALTH = f"{NODE_DIR}/bin/fmcluster-node-check-health"


@cache
def hyperpod_scripts() -> dict[str, dict[str, str]]:
    """group -> file -> text of the HyperPod gb200 matrix cluster (constructs built, not synthesized)."""
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text
    from tests.conftest import cdk_context

    stacks = build_app(cdk.App(context=cdk_context()),
                       load_blueprint_text(matrix_blueprint("hyperpod", GB200)).blueprint)
    return stacks.cluster.orchestrator.scripts  # type: ignore[attr-defined, no-any-return]


def run(script: Path | str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                          text=True, check=False, timeout=60)


def conf_pairs(text: str) -> list[tuple[str, str]]:
    return [tuple(line.split("=", 1)) for line in text.splitlines() if "=" in line and not line.startswith("#")]  # type: ignore[misc]


def apply_editor(tmp_path: Path, script: str, conf: str) -> tuple[subprocess.CompletedProcess[str], str, list[str]]:
    """Run a slurm.conf editor on ``conf`` (stub scontrol logs its arguments): (result, new slurm.conf, calls)."""
    root = tmp_path / "root"
    path = root / "opt/slurm/etc/slurm.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(conf)
    stub = tmp_path / "scontrol"
    stub.write_text(f'#!/bin/bash\necho "$*" >> {tmp_path}/scontrol.log\nexit "${{FMC_RC:-0}}"\n')
    stub.chmod(0o755)
    f = tmp_path / "editor.sh"
    f.write_text(script)
    res = run(f, env={"FMC_ROOT": str(root), "FMC_SCONTROL": str(stub)})
    log = tmp_path / "scontrol.log"
    return res, path.read_text(), log.read_text().splitlines() if log.exists() else []


# ---- the settings each orchestrator receives --------------------------------------------------------------
def parallelcluster_settings() -> list[tuple[str, str]]:
    [res] = resources_of(cluster_template(synth_templates(matrix_blueprint("parallelcluster", GB200))),
                         "Custom::PclusterCluster").values()
    custom = res["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    return [(k, str(v)) for item in custom for k, v in item.items()]


def hyperpod_settings(tmp_path: Path) -> list[tuple[str, str]]:
    """What the controller's script leaves in a slurm.conf that had none of these keys."""
    res, conf, calls = apply_editor(tmp_path, hyperpod_scripts()["controller"][hyperpod.SLURM_CONF_SCRIPT],
                                    "ClusterName=c\nSlurmctldHost=ip-10-1-0-5\n")
    assert res.returncode == 0 and calls == ["reconfigure"], res.stderr
    return conf_pairs(conf)[2:]


HEALTH_KEYS = [("HealthCheckProgram", HEALTH), ("HealthCheckInterval", str(HEALTH_CHECK_INTERVAL_S)),
               ("HealthCheckNodeState", "ANY,CYCLE")]
EXPECTED = {
    "parallelcluster": [*HEALTH_KEYS, ("TaskProlog", PC_TASK_PROLOG), ("PrologFlags", "Alloc,NoHold")],
    # PCS is absent: its one key is the IMEX Prolog of a p6e-gb200 queue, and fmcluster cannot run p6e-gb200 on PCS
    # (its Capacity Blocks are sold only in a Local Zone, R-CAP-15, where the PCS control plane cannot be, R-LZ-2);
    # without an IMEX type PCS gets no custom setting (test_pcs_without_imex_types_sets_no_custom_setting).
    "hyperpod": [*HEALTH_KEYS, ("TaskProlog", f"{NODE_DIR}/slurm/fmcluster-task-prolog.sh"),
                 ("Prolog", f"{NODE_DIR}/slurm/prolog.d/*"), ("PrologFlags", "Alloc,NoHold")],
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_slurm_settings_each_orchestrator_receives(kind: str, tmp_path: Path) -> None:
    got = {"parallelcluster": parallelcluster_settings, "hyperpod": lambda: hyperpod_settings(tmp_path)}[kind]()
    assert got == EXPECTED[kind]


def test_pcs_compute_node_groups_run_the_hooks_every_boot_after_the_bootstrap() -> None:
    tpl = cluster_template(synth_templates(matrix_blueprint("pcs", stack_for("p6-b300.48xlarge"))))
    stages = {ng["Properties"]["Name"]: [(s["Name"], s["ExecutionPolicy"]) for s in
                                         ng["Properties"]["NodeLifecycleActions"]["Stages"]["NodeBootstrapped"]]
              for ng in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()}
    gpu = [("fmcluster mount Lustre", "EVERY_BOOT"), ("fmcluster bootstrap", "FIRST_BOOT_ONLY"),
           (pcs.HOOKS_SCRIPT_NAME, "EVERY_BOOT")]
    assert stages == {"login": [("fmcluster mount Lustre", "EVERY_BOOT")], "p6-b200-48xlarge": gpu, "p6-b300-48xlarge": gpu}


def test_pcs_without_imex_types_sets_no_custom_setting() -> None:
    # the PCS example (p5en; the text tests/orchestrators/pcs/test_pcs.py synthesizes): health timer only, no cluster custom setting
    tpl = cluster_template(synth_templates((ROOT / "blueprints" / "pcs-p5en.yaml").read_text()))
    [c] = resources_of(tpl, "AWS::PCS::Cluster").values()
    assert "SlurmCustomSettings" not in c["Properties"]["SlurmConfiguration"]
    names = {s["Name"] for ng in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()
             if ng["Properties"]["Name"] != "login"
             for s in ng["Properties"]["NodeLifecycleActions"]["Stages"]["NodeBootstrapped"]}
    assert pcs.HOOKS_SCRIPT_NAME in names


def test_pcs_warns_that_it_does_not_enable_network_topology_on_multi_node_efa_queues() -> None:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from fmcluster.validation import load_blueprint_text
    from tests.blueprints import blueprint_text
    from tests.conftest import cdk_context

    text = blueprint_text({"orchestrator": {"kind": "pcs"}, "software": {"os": "ubuntu-24.04"}, "compute": [
        {"name": "train", "instance_type": "p5.48xlarge", "count": 4},
        {"name": "single", "instance_type": "p5.48xlarge", "count": 1},
        {"name": "noefa", "instance_type": "p5.48xlarge", "count": 2, "efa": False}]})
    stacks = build_app(cdk.App(context=cdk_context()), load_blueprint_text(text).blueprint)
    queues = stacks.cluster.orchestrator.queues  # type: ignore[attr-defined]
    warned = {name: [m.data for m in q.node.metadata if m.type == "aws:cdk:warning"] for name, q in queues.items()}
    assert {n: len(w) for n, w in warned.items()} == {"train": 1, "single": 0, "noefa": 0}
    assert "queue train: fmcluster does not enable PCS network topology-aware scheduling" in str(warned["train"][0])


def test_hyperpod_groups_run_their_hooks_first() -> None:
    """Compute: drain, hooks, bootstrap, then resume (last, only reached when everything before succeeded);
    controller: the editor through its watch installer; login: nothing of Slurm's hooks or GPU checks."""
    scripts = hyperpod_scripts()
    assert sorted(scripts["controller"]) == sorted([hyperpod.SLURM_CONF_SCRIPT, hyperpod.SLURM_CONF_WATCH_SCRIPT,
                                                    "fmcluster-gate-watch-install.sh", "on_init_complete.sh"])
    assert sorted(scripts["login"]) == ["on_init_complete.sh"]
    assert "bash" not in scripts["login"]["on_init_complete.sh"].split("set -euo pipefail")[1]
    gpu = scripts["p6e-gb200-36xlarge"]
    runs = [line for line in gpu["on_init_complete.sh"].splitlines() if line.startswith('bash "${here}/')]
    assert runs == [f'bash "${{here}}/{f}"' for f in (hyperpod.DRAIN_SCRIPT, hyperpod.HOOKS_INSTALL_SCRIPT,
                                                       "bootstrap.sh", hyperpod.RESUME_SCRIPT)]
    controller = [line for line in scripts["controller"]["on_init_complete.sh"].splitlines()
                  if line.startswith('bash "${here}/')]
    assert controller == [f'bash "${{here}}/{f}"' for f in (hyperpod.SLURM_CONF_WATCH_SCRIPT,
                                                             "fmcluster-gate-watch-install.sh")]


SHOW_NODE = ("NodeName=gpu-1 Arch=x86_64 CoresPerSocket=48\n   NodeAddr=10.1.2.3 NodeHostName=gpu-1\n"
             "   State=IDLE+DRAIN ThreadsPerCore=1\n   Reason={reason} [root@2026-12-05T07:00:00]\n")
#: (mode, the host's short name, slurmctld knows it, its current reason, scontrol update expected or None)
NODE_STATE = [
    ("drain", "gpu-1", True, "", "update NodeName=gpu-1 State=DRAIN Reason=fmcluster: lifecycle script running"),
    ("resume", "gpu-1", True, "fmcluster: lifecycle script running", "update NodeName=gpu-1 State=RESUME"),
    ("resume", "gpu-1", True, "HyperPod deep health check", None),  # someone else's drain stays
    ("drain", "gpu-1", False, "", None),  # slurmctld does not know it: logged, never fatal
    ("resume", "gpu-1", False, "", None),
]


@pytest.mark.parametrize(("mode", "host", "known", "reason", "update"), NODE_STATE)
def test_hyperpod_node_drained_while_its_script_runs(tmp_path: Path, mode: str, host: str, known: bool, reason: str,
                                                     update: str | None) -> None:
    script = hyperpod_scripts()["p6e-gb200-36xlarge"][hyperpod.DRAIN_SCRIPT if mode == "drain" else hyperpod.RESUME_SCRIPT]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    show = SHOW_NODE.format(reason=reason) if known else ""
    stubs = {
        "scontrol": f'echo "$*" >> {tmp_path}/scontrol.log\n'
                    f'if [[ $1 == show ]]; then [[ -n "{show}" && ($3 == {host} || $2 == -o) ]] || exit 1; '
                    f'printf "{show}"; fi\nexit 0\n',
        "hostname": f'[[ $1 == -I ]] && echo "10.9.9.9 " || echo {host}\n',
        "sleep": "exit 0\n",
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    f = tmp_path / "state.sh"
    f.write_text(script)
    res = run(f, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "FMC_SCONTROL": str(bin_dir / "scontrol")})
    assert res.returncode == 0, res.stderr
    calls = (tmp_path / "scontrol.log").read_text().splitlines()
    assert [c for c in calls if c.startswith("update")] == ([update] if update else [])


def test_hyperpod_controller_reapplies_the_hooks_when_slurm_conf_changes(tmp_path: Path) -> None:
    """The watch installer puts the editor in place, runs it, and installs a path unit and a timer that re-run it;
    a run on an unchanged slurm.conf changes and reconfigures nothing (so the path unit cannot loop)."""
    scripts = hyperpod_scripts()["controller"]
    lifecycle = tmp_path / "lifecycle"
    lifecycle.mkdir()
    for name in (hyperpod.SLURM_CONF_SCRIPT, hyperpod.SLURM_CONF_WATCH_SCRIPT):
        (lifecycle / name).write_text(scripts[name])
    root = tmp_path / "root"
    conf = root / "opt/slurm/etc/slurm.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("ClusterName=c\nSlurmctldHost=ip-10-1-0-5\n")
    stub = tmp_path / "stub"
    stub.write_text(f'#!/bin/bash\necho "$*" >> {tmp_path}/calls.log\n')
    stub.chmod(0o755)
    env = {"FMC_ROOT": str(root), "FMC_SCONTROL": str(stub), "FMC_SYSTEMCTL": str(stub)}
    res = run(lifecycle / hyperpod.SLURM_CONF_WATCH_SCRIPT, env=env)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "calls.log").read_text().splitlines() == [
        "reconfigure", "daemon-reload", "enable --now fmcluster-slurm-conf.path fmcluster-slurm-conf.timer"]
    units = root / "etc/systemd/system"
    assert "PathChanged=/opt/slurm/etc/slurm.conf" in (units / "fmcluster-slurm-conf.path").read_text()
    assert "OnUnitActiveSec=5min" in (units / "fmcluster-slurm-conf.timer").read_text()
    assert f"ExecStart={hyperpod.SLURM_CONF_EDITOR}" in (units / "fmcluster-slurm-conf.service").read_text()
    installed = root / hyperpod.SLURM_CONF_EDITOR.lstrip("/")
    assert installed.read_text() == scripts[hyperpod.SLURM_CONF_SCRIPT]
    # HyperPod rewrites slurm.conf (keys gone): the unit's run puts them back; an unchanged file is left alone
    (tmp_path / "calls.log").write_text("")
    conf.write_text("ClusterName=c\nSlurmctldHost=ip-10-1-0-5\nNodeName=gpu-[1-2]\n")
    assert run(installed, env=env).returncode == 0
    assert "HealthCheckProgram=" in conf.read_text()
    before = conf.read_text()
    assert run(installed, env=env).returncode == 0
    assert conf.read_text() == before
    assert (tmp_path / "calls.log").read_text().splitlines() == ["reconfigure"]


def test_hyperpod_compute_installer_writes_the_task_prolog_and_the_imex_prolog(tmp_path: Path) -> None:
    f = tmp_path / "install.sh"
    f.write_text(hyperpod_scripts()["p6e-gb200-36xlarge"][hyperpod.HOOKS_INSTALL_SCRIPT])
    res = run(f, env={"FMC_ROOT": str(tmp_path / "root")})
    assert res.returncode == 0, res.stderr
    imex = (tmp_path / "root" / hyperpod.IMEX_PROLOG.lstrip("/")).read_text()
    assert imex == render_imex_prolog(NODE_DIR, "/opt/slurm/bin/scontrol", ["p6e-gb200.36xlarge"])
    assert (tmp_path / "root" / hyperpod.TASK_PROLOG.lstrip("/")).stat().st_mode & 0o111
    # the controller's Prolog glob matches the installed file
    assert Path(hyperpod.IMEX_PROLOG).match(hyperpod.PROLOG_GLOB)


# ---- the HyperPod controller's slurm.conf editor ---------------------------------------------------------------
EDITOR = render_slurm_conf_editor(
    slurm_conf="/opt/slurm/etc/slurm.conf", scontrol="/opt/slurm/bin/scontrol",
    settings=slurm_conf_settings(NODE_DIR, "/x/task-prolog.sh"), orchestrator="SageMaker HyperPod",
    node_label="controller", why="test", prolog="/x/prolog.d/*")


@pytest.mark.parametrize(("conf", "expected_tail", "log"), [
    pytest.param("ClusterName=c\n",
                 [("ClusterName", "c"), *HEALTH_KEYS, ("TaskProlog", "/x/task-prolog.sh"), ("Prolog", "/x/prolog.d/*"),
                  ("PrologFlags", "Alloc,NoHold")], "", id="no flags yet"),
    # slurmctld: fatal("PrologFlags invalid combination: NoHold cannot be combined with Contain and/or X11")
    # (SchedMD/slurm src/common/read_config.c); Contain, X11 and RunInJob set Alloc and Contain (prolog_str2flags).
    pytest.param("ClusterName=c\nPrologFlags=Contain\n",
                 [("ClusterName", "c"), ("PrologFlags", "Contain"), *HEALTH_KEYS, ("TaskProlog", "/x/task-prolog.sh"),
                  ("Prolog", "/x/prolog.d/*")], "NoHold not added", id="Contain kept alone (HyperPod samples set it)"),
    pytest.param("ClusterName=c\nPrologFlags=X11,Serial\n",
                 [("ClusterName", "c"), ("PrologFlags", "X11,Serial"), *HEALTH_KEYS,
                  ("TaskProlog", "/x/task-prolog.sh"), ("Prolog", "/x/prolog.d/*")], "NoHold not added", id="X11"),
    pytest.param("ClusterName=c\nPrologFlags=runinjob\n",
                 [("ClusterName", "c"), ("PrologFlags", "runinjob"), *HEALTH_KEYS,
                  ("TaskProlog", "/x/task-prolog.sh"), ("Prolog", "/x/prolog.d/*")], "NoHold not added", id="RunInJob"),
    pytest.param("ClusterName=c\nPrologFlags=DeferBatch\n",
                 [("ClusterName", "c"), *HEALTH_KEYS, ("TaskProlog", "/x/task-prolog.sh"), ("Prolog", "/x/prolog.d/*"),
                  ("PrologFlags", "DeferBatch,NoHold")], "", id="DeferBatch sets Alloc"),
    pytest.param("ClusterName=c\nhealthcheckinterval=60  # ours\nPrologFlags=alloc", [
        ("ClusterName", "c"), ("HealthCheckProgram", HEALTH), ("HealthCheckNodeState", "ANY,CYCLE"),
        ("TaskProlog", "/x/task-prolog.sh"), ("Prolog", "/x/prolog.d/*"), ("HealthCheckInterval", "300"),
        ("PrologFlags", "alloc,NoHold")], "HealthCheckInterval: replacing 60 with 300",
        id="other value replaced, case-insensitive, no trailing newline"),
])
def test_editor_sets_every_key_and_reconfigures_once(tmp_path: Path, conf: str, expected_tail: list[tuple[str, str]],
                                                     log: str) -> None:
    res, new, calls = apply_editor(tmp_path, EDITOR, conf)
    assert res.returncode == 0, res.stderr
    assert sorted(conf_pairs(new)) == sorted(expected_tail) and calls == ["reconfigure"]
    assert log in res.stderr
    again = subprocess.run(["bash", str(tmp_path / "editor.sh")], capture_output=True, text=True, check=False,
                           env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(tmp_path / "root"),
                                "FMC_SCONTROL": str(tmp_path / "scontrol")})
    assert again.returncode == 0 and "unchanged" in again.stderr
    assert (tmp_path / "root/opt/slurm/etc/slurm.conf").read_text() == new
    assert (tmp_path / "scontrol.log").read_text().splitlines() == ["reconfigure"]  # not reconfigured again


def test_editor_keeps_the_sites_prolog_lines_and_adds_ours_once(tmp_path: Path) -> None:
    # slurm.conf(5) Prolog: "It is possible to configure multiple prolog scripts by including this option on
    # multiple lines."
    conf = "ClusterName=c\nProlog=/opt/site/prolog.sh\nprolog = /opt/site/prolog.d/*  # site\n"
    res, new, calls = apply_editor(tmp_path, EDITOR, conf)
    assert res.returncode == 0, res.stderr
    assert [v for k, v in conf_pairs(new) if k.strip().lower() == "prolog"] == [
        "/opt/site/prolog.sh", " /opt/site/prolog.d/*  # site", "/x/prolog.d/*"]
    assert new.startswith(conf) and calls == ["reconfigure"]
    assert "keeping the Prolog line(s) already there (/opt/site/prolog.sh /opt/site/prolog.d/*)" in res.stderr
    again = run(tmp_path / "editor.sh", env={"FMC_ROOT": str(tmp_path / "root"), "FMC_SCONTROL": str(tmp_path / "scontrol")})
    assert again.returncode == 0 and "unchanged" in again.stderr
    assert (tmp_path / "root/opt/slurm/etc/slurm.conf").read_text() == new


def test_editor_puts_the_previous_file_back_when_slurmctld_refuses(tmp_path: Path) -> None:
    conf = "ClusterName=c\n"
    root = tmp_path / "root"
    (root / "opt/slurm/etc").mkdir(parents=True)
    (root / "opt/slurm/etc/slurm.conf").write_text(conf)
    stub = tmp_path / "scontrol"
    stub.write_text("#!/bin/bash\necho 'slurm_reconfigure error: Zero Bytes were transmitted or received' >&2\nexit 1\n")
    stub.chmod(0o755)
    (tmp_path / "e.sh").write_text(EDITOR)
    res = run(tmp_path / "e.sh", env={"FMC_ROOT": str(root), "FMC_SCONTROL": str(stub)})
    assert res.returncode == 1 and "previous" in res.stderr
    assert (root / "opt/slurm/etc/slurm.conf").read_text() == conf


def test_editor_without_the_file_fails(tmp_path: Path) -> None:
    (tmp_path / "e.sh").write_text(EDITOR)
    res = run(tmp_path / "e.sh", env={"FMC_ROOT": str(tmp_path), "FMC_SCONTROL": "/bin/false"})
    assert res.returncode == 1 and "not found" in res.stderr


# ---- the PCS health timer -------------------------------------------------------------------------------------
SLURM_BIN = "/opt/aws/pcs/scheduler/slurm-25.05/bin"
#: scontrol show node --oneliner (scontrol(1)): PCS names nodes after the node group, not the host.
NODES = """NodeName=gb-1 Arch=aarch64 CoresPerSocket=72 NodeAddr=10.1.0.11 NodeHostName=ip-10-1-0-11 State=IDLE
NodeName=gb-2 Arch=aarch64 CoresPerSocket=72 NodeAddr=10.1.0.12 NodeHostName=ip-10-1-0-12 State=IDLE
"""


def install_timer(tmp_path: Path, imex: bool) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path / "root"
    systemctl = tmp_path / "systemctl"
    systemctl.write_text(f'#!/bin/bash\necho "$*" >> {tmp_path}/systemctl.log\n')
    systemctl.chmod(0o755)
    f = tmp_path / "hooks.sh"
    f.write_text(render_health_timer(
        node_dir=NODE_DIR, slurm_bin_dir=SLURM_BIN, orchestrator="AWS PCS", why="test",
        imex_prolog=pcs.IMEX_PROLOG if imex else None,
        imex_script=render_imex_prolog(NODE_DIR, f"{SLURM_BIN}/scontrol", ["p6e-gb200.36xlarge"]) if imex else ""))
    return run(f, env={"FMC_ROOT": str(root), "FMC_SYSTEMCTL": str(systemctl)}), root


@pytest.mark.parametrize("imex", [False, True])
def test_timer_installer_enables_the_timer(tmp_path: Path, imex: bool) -> None:
    res, root = install_timer(tmp_path, imex)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "systemctl.log").read_text().splitlines() == ["daemon-reload",
                                                                     "enable --now fmcluster-health.timer"]
    timer = (root / "etc/systemd/system/fmcluster-health.timer").read_text()
    assert f"OnUnitActiveSec={HEALTH_CHECK_INTERVAL_S}s" in timer and "WantedBy=timers.target" in timer
    service = (root / "etc/systemd/system/fmcluster-health.service").read_text()
    assert f"ExecStart={NODE_DIR}/bin/fmcluster-health-run" in service
    assert (root / pcs.IMEX_PROLOG.lstrip("/")).exists() is imex
    again, _ = install_timer(tmp_path, imex)  # every boot: same files
    assert again.returncode == 0 and (root / "etc/systemd/system/fmcluster-health.service").read_text() == service


@pytest.mark.parametrize(("host", "addrs", "ran_as"), [
    ("ip-10-1-0-12", "10.1.0.12", "gb-2"),          # by NodeHostName
    ("gb-1", "192.168.0.1", "gb-1"),                # the host named like the node
    ("localhost", "172.17.0.1 10.1.0.11", "gb-1"),  # by NodeAddr among the host's addresses
    ("ip-10-1-0-99", "10.1.0.99", None),            # not a Slurm node (yet): nothing run
])
def test_health_run_drains_under_the_slurm_node_name(tmp_path: Path, host: str, addrs: str, ran_as: str | None) -> None:
    res, root = install_timer(tmp_path, False)
    assert res.returncode == 0, res.stderr
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f'#!/bin/bash\n[ "$*" = "show node --oneliner" ] || exit 1\ncat <<EOF\n{NODES}EOF\n')
    scontrol.chmod(0o755)
    health = tmp_path / "health"
    health.write_text(f'#!/bin/bash\necho "$SLURMD_NODENAME" > {tmp_path}/ran\nexit 1\n')
    health.chmod(0o755)
    out = run(root / NODE_DIR.lstrip("/") / "bin/fmcluster-health-run", env={
        "FMC_SCONTROL": str(scontrol), "FMC_HEALTH": str(health), "FMC_HOSTNAME": host, "FMC_ADDRS": addrs})
    ran = tmp_path / "ran"
    assert (out.returncode, ran.read_text().strip() if ran.exists() else None) == ((1, ran_as) if ran_as else (0, None))


# ---- shellcheck ---------------------------------------------------------------------------------------------------
def _shellcheck_texts() -> dict[str, str]:
    timer = render_health_timer(node_dir=NODE_DIR, slurm_bin_dir=SLURM_BIN, orchestrator="AWS PCS", why="w",
                                imex_prolog=pcs.IMEX_PROLOG,
                                imex_script=render_imex_prolog(NODE_DIR, f"{SLURM_BIN}/scontrol", ["p6e-gb200.36xlarge"]))
    run_script = timer.split("<<'FMC_HEALTH_RUN_EOF'\n", 1)[1].split("FMC_HEALTH_RUN_EOF\n", 1)[0]
    editor_plain = render_slurm_conf_editor(slurm_conf="/opt/slurm/etc/slurm.conf", scontrol="/opt/slurm/bin/scontrol",
                                            settings=slurm_conf_settings(NODE_DIR, "/x"), orchestrator="o",
                                            node_label="controller", why="w")
    hp = hyperpod_scripts()
    return {"timer": timer, "health-run": run_script, "editor-imex": EDITOR, "editor": editor_plain,
            "hp-controller": hp["controller"]["on_init_complete.sh"],
            "hp-compute": hp["p6e-gb200-36xlarge"]["on_init_complete.sh"],
            "hp-editor": hp["controller"][hyperpod.SLURM_CONF_SCRIPT]}


def test_new_scripts_are_shellcheck_clean(tmp_path: Path) -> None:
    files = []
    for name, text in _shellcheck_texts().items():
        f = tmp_path / f"{name}.sh"
        f.write_text(text)
        files.append(str(f))
    res = subprocess.run([str(SHELLCHECK), "-s", "bash", "-S", "style", *files], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stdout


def test_pcs_cluster_keys_match_the_installed_schema() -> None:
    """The documented key list this file checks against is the one in the installed CloudFormation schema."""
    import cfnlint

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    providers = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    schema: dict[str, Any] = json.loads((schemas / "resources" / f"{providers['AWS::PCS::Cluster']}.json").read_text())
    doc = schema["definitions"]["SlurmCustomSetting"]["properties"]["ParameterName"]["description"]
    assert doc.endswith("for clusters: Prolog, Epilog, and SelectTypeParameters.")


# ---- the node check drains under the name its caller gives ------------------------------------------------------
@pytest.mark.parametrize("nodename", ["gb-7", None])
def test_node_check_drains_the_slurm_node_with_the_first_failure(tmp_path: Path, nodename: str | None) -> None:
    """The PCS timer passes SLURMD_NODENAME (PCS names nodes after the node group, not the host); without it the
    short host name. scontrol is found in /opt/slurm/bin or the PCS Slurm directory when PATH lacks it (here: the
    stub directory on PATH, as a login shell would have it)."""
    from dataclasses import replace

    from fmcluster.features.node.render_scripts import render_node_scripts
    from tests.features.node.test_node_check import _context, harness

    ctx = _context()
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "scontrol").write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/scontrol.args\n')
    (stubs / "scontrol").chmod(0o755)
    extra = {"PATH": f"{tmp_path / 'sandbox' / 'bin'}:{stubs}", **({"SLURMD_NODENAME": nodename} if nodename else {})}
    node = replace(harness.happy_node(ctx), drivers=["570.158.01"] * 8, extra_env=extra)
    r = harness.run_check(tmp_path, render_node_scripts(ctx)["fmcluster-node-check"], node, "--no-nccl", "--drain")
    assert r.returncode == 1, r.stdout
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    assert (tmp_path / "scontrol.args").read_text().splitlines() == [
        "update", f"NodeName={nodename or host}", "State=DRAIN",
        "Reason=fmcluster-node-check: driver: driver 570.158.01 does not match the pinned 570.172.08"]
