"""The acceptance gate's watcher (fmcluster-gate-watch, issue 24 item 3) run for real under bash against a simulated
Slurm controller (tests/fixtures/acceptance/slurm_sim.py: stub scontrol / sbatch / squeue that follow Slurm's
documented behaviour). The gate runs by itself at the first start, on a replacement that kept the gate's DRAIN
(ParallelCluster) and on one HyperPod returned to service, on a resumed node and on request; a blueprint-wide failure
or a replacement that fails again is held and alerted, never drained in a loop."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from fmcluster.acceptance.metrics import WATCH_BLOCKED, WATCH_HELD_NODES
from fmcluster.features.acceptance.render_watch import (
    GATE_DIR,
    WATCH_INSTALLER_FILE,
    render_files,
    render_gate_watch,
    render_gate_watch_installer,
    watch_path,
)
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint
from tests.conftest import ROOT
from tests.fixtures.acceptance.slurm_sim import SlurmSim
from tests.test_render import shellcheck

FOUR = [f"gpu-st-p5-48xlarge-{i}" for i in range(1, 5)]
OWN = "fmcluster-acceptance:"


def _watcher(tmp: Path, example: str) -> Path:
    path = tmp / f"watch-{example}.sh"
    path.write_text(render_gate_watch(resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))))
    return path


@pytest.fixture
def sim(tmp_path: Path) -> SlurmSim:
    """blueprints/default.yaml (ParallelCluster, group gpu): four booted nodes, nothing accepted yet."""
    s = SlurmSim(tmp_path / "sim", _watcher(tmp_path, "default"))
    s.add_nodes(FOUR)
    return s


def accept_all(sim: SlurmSim) -> None:
    """The first start: one gate over the group, passed, read back."""
    sim.watch()
    sim.run_jobs()
    sim.watch()
    assert all(sim.in_service(n) for n in FOUR), sim.log


def drain_calls(sim: SlurmSim) -> list[list[str]]:
    return [c for c in sim.calls if c[0] == "update-node" and c[2] in ("DRAIN", "FAIL")]


# ---- rendering -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("example", ["default", "hyperpod-p5", "pcs-p5en", "p6e-gb200"])
def test_watcher_and_installer_are_shellcheck_clean(tmp_path: Path, example: str) -> None:
    rc = resolve(load_blueprint(ROOT / "blueprints" / f"{example}.yaml"))
    installer = render_gate_watch_installer(rc)
    assert installer is not None
    paths = [tmp_path / "watch.sh", tmp_path / "install.sh"]
    paths[0].write_text(render_gate_watch(rc))
    paths[1].write_text(installer)
    result = subprocess.run([shellcheck(), "-S", "style", *map(str, paths)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_no_watcher_without_slurm() -> None:
    rc = resolve(load_blueprint(ROOT / "blueprints/hyperpod-eks.yaml"))
    assert render_gate_watch_installer(rc) is None
    assert render_files(rc) == {}


def test_installer_writes_the_gates_and_the_watcher_and_enables_the_timer(tmp_path: Path) -> None:
    rc = resolve(load_blueprint(ROOT / "blueprints/default.yaml"))
    script = tmp_path / WATCH_INSTALLER_FILE
    script.write_text(render_files(rc)[f"acceptance/{WATCH_INSTALLER_FILE}"])
    systemctl = tmp_path / "systemctl"
    systemctl.write_text(f'#!/bin/bash\necho "$*" >>{tmp_path}/systemctl.log\n')
    systemctl.chmod(0o755)
    root = tmp_path / "root"
    for _ in range(2):  # idempotent
        r = subprocess.run(["bash", str(script)], env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(root),
                                                       "FMC_SYSTEMCTL": str(systemctl)}, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert (root / GATE_DIR.lstrip("/") / "fmcluster-acceptance-gpu.sbatch").read_text().startswith("#!/usr/bin/env bash")
    assert (root / watch_path(rc).lstrip("/")).read_text() == render_gate_watch(rc).strip() + "\n"
    timer = (root / "etc/systemd/system/fmcluster-gate-watch.timer").read_text()
    assert "OnUnitInactiveSec=60s" in timer
    assert "enable --now fmcluster-gate-watch.timer" in (tmp_path / "systemctl.log").read_text()


# ---- runs by itself ----------------------------------------------------------------------------------------------
def test_first_start_gates_every_node_inside_a_reservation(sim: SlurmSim) -> None:
    sim.watch()
    [job] = sim.jobs
    assert sorted(job["nodes"]) == FOUR and job["reservation"] == "fmcluster-gate-gpu"
    assert job["env"]["FMC_DRAIN"] == "1" and job["script"].endswith("/fmcluster-acceptance-gpu.sbatch")
    assert not any(sim.in_service(n) for n in FOUR)  # held for the gate: no training job lands on an untested node
    sim.watch()  # the gate is still queued: nothing new
    assert len(sim.jobs) == 1
    sim.run_jobs()
    sim.watch()
    assert all(sim.in_service(n) for n in FOUR) and sim.reservations == {}
    sim.watch()
    assert len(sim.jobs) == 1  # accepted nodes are not tested again


def test_nodes_powering_up_are_waited_for(sim: SlurmSim) -> None:
    sim.set_node(FOUR[3], flags=["CLOUD", "POWERING_UP"])
    sim.watch()
    assert sim.jobs == []
    sim.set_node(FOUR[3], flags=["CLOUD"])
    sim.watch()
    assert sorted(sim.jobs[0]["nodes"]) == FOUR


@pytest.mark.parametrize("reason", [None, "Static node maintenance: unhealthy node is being replaced"],
                         ids=["reason-kept", "reason-rewritten-by-clustermgtd"])
def test_parallelcluster_replacement_in_drain_is_tested_and_resumed(sim: SlurmSim, reason: str | None) -> None:
    """Whether clustermgtd keeps the gate's reason or writes its own, the watcher knows the name it drained (its own
    record of the drained boot) and tests the new instance (deploy review)."""
    accept_all(sim)
    bad = FOUR[2]
    sim.watch("request", "gpu")
    sim.run_jobs(fail={bad: "low: 300.0 GB/s"})
    sim.watch()
    assert sim.node(bad)["reason"].startswith(OWN) and not sim.in_service(bad)
    sim.watch()
    assert len(sim.jobs) == 2, "a drained node that was not replaced yet is not tested again"
    sim.clustermgtd_replace(bad, reason)  # a new instance; the Slurm record keeps DRAIN
    assert "DRAIN" in sim.node(bad)["flags"]
    sim.watch()
    job = sim.jobs[-1]
    assert bad in job["nodes"] and len(job["nodes"]) == 3  # the replacement and two accepted partners
    assert "DRAIN" not in sim.node(bad)["flags"] and not sim.in_service(bad)  # resumed inside the reservation only
    assert [j["id"] for j in sim.run_jobs()] == [job["id"]]  # Slurm can start it: nothing drained in the job
    sim.watch()
    assert all(sim.in_service(n) for n in FOUR)
    assert (sim.root / "state/accepted" / bad).read_text().strip() == "2026-12-05T08:05:00"


def test_a_replacement_that_fails_again_is_held_not_drained_in_a_loop(sim: SlurmSim) -> None:
    accept_all(sim)
    bad = FOUR[0]
    sim.watch("request", "gpu")
    sim.run_jobs(fail={bad: "efa-nics: found 16 nics"})
    sim.watch()
    sim.clustermgtd_replace(bad)
    sim.watch()
    sim.run_jobs(fail={bad: "efa-nics: found 16 nics"})  # the replacement fails the same way: drained again
    sim.watch()
    assert len(drain_calls(sim)) == 0 and sim.node(bad)["flags"] == ["DRAIN"]  # the stub gate drained it twice
    sim.clustermgtd_replace(bad)
    sim.watch()
    third = sim.jobs[-1]
    assert third["env"]["FMC_DRAIN"] == "0", "after two drains of one node, the gate reports and holds"
    sim.run_jobs(fail={bad: "efa-nics: found 16 nics"})
    sim.watch()
    assert "DRAIN" not in sim.node(bad)["flags"] and not sim.in_service(bad)
    assert sim.reservations["fmcluster-gate-hold-gpu"]["nodes"] == [bad]
    assert sim.metric(WATCH_BLOCKED) == 1
    assert sim.metric(WATCH_HELD_NODES) == 1
    for _ in range(3):
        sim.watch()
        sim.run_jobs()
    assert len(sim.jobs) == 4, "a held node is not tested, drained or replaced again"
    sim.watch("release", "gpu")
    assert sim.metric(WATCH_BLOCKED) == 0
    assert bad in sim.jobs[-1]["nodes"] and sim.jobs[-1]["env"]["FMC_DRAIN"] == "1"


def test_blueprint_wide_failure_drains_nothing_and_alerts(sim: SlurmSim) -> None:
    sim.watch()
    sim.run_jobs(fail={n: "net-plugin: NET/OFI aws-ofi-nccl initialization failed" for n in FOUR})
    for _ in range(5):
        sim.watch()
        sim.run_jobs(fail={n: "net-plugin" for n in FOUR})
    assert not any("DRAIN" in sim.node(n)["flags"] for n in FOUR)
    assert len(sim.jobs) == 1, "no gate after gate on a blueprint-wide cause"
    assert sorted(sim.reservations["fmcluster-gate-hold-gpu"]["nodes"]) == FOUR
    assert sim.metric(WATCH_BLOCKED) == 1
    assert "failed-not-drained" in (sim.root / "state/blocked-gpu").read_text()


def test_drains_of_most_of_the_group_block_it(sim: SlurmSim) -> None:
    accept_all(sim)
    for bad in FOUR[:3]:  # one at a time, each gate drains one node of four: no single gate sees a fleet cause
        sim.watch("request", "gpu")
        sim.run_jobs(fail={bad: "low"})
        sim.watch()
        sim.clustermgtd_replace(bad)
    sim.watch()
    assert sim.jobs[-1]["env"]["FMC_DRAIN"] == "0"
    assert "blueprint-wide: 3 drains of 4 node(s)" in (sim.root / "state/blocked-gpu").read_text()


def test_a_gate_that_could_not_run_holds_its_nodes(sim: SlurmSim) -> None:
    sim.watch()
    sim.run_jobs(could_not_run=True)
    sim.watch()
    assert sorted(sim.reservations["fmcluster-gate-hold-gpu"]["nodes"]) == FOUR
    assert drain_calls(sim) == [] and (sim.root / "state/blocked-gpu").read_text().strip() == "could-not-run"


def test_a_submission_that_fails_holds_nothing_resumes_nothing_and_is_retried(sim: SlurmSim) -> None:
    """slurmctld away for one pass: the gate reservation is deleted, no node is held or resumed, and the next pass
    submits the gate (deploy review: a failed sbatch used to hold the whole group until someone ran release)."""
    sim.set_controller_down(True)
    sim.watch()
    assert sim.jobs == [] and sim.reservations == {}
    assert not (sim.root / "state/blocked-gpu").exists()
    sim.set_controller_down(False)
    sim.watch()
    assert len(sim.jobs) == 1 and "fmcluster-gate-gpu" in sim.reservations


def test_a_gate_job_queued_too_long_is_cancelled_and_its_reservation_deleted(sim: SlurmSim) -> None:
    """A gate job that never starts (a node of it went DOWN) does not keep its reservation's nodes from jobs: after
    FMC_GATE_PENDING_MAX_S it is cancelled and its reservation deleted; the same pass gates the idle nodes anew."""
    sim.watch()
    [job] = sim.jobs
    assert job["state"] == "PENDING" and "fmcluster-gate-gpu" in sim.reservations
    sim.watch(FMC_GATE_PENDING_MAX_S="3600")  # still within the limit: waits
    assert sim.jobs[0]["state"] == "PENDING" and "fmcluster-gate-gpu" in sim.reservations
    sim.watch(FMC_GATE_PENDING_MAX_S="0")
    assert ["scancel", job["id"]] in sim.calls and sim.jobs[0]["state"] == "CANCELLED"
    assert ["delete-reservation", "fmcluster-gate-gpu"] in sim.calls
    new = (sim.root / "state/pending-gpu").read_text().split("\t")[0]
    assert new != job["id"] and [j["state"] for j in sim.jobs] == ["CANCELLED", "PENDING"]


def test_the_gate_reservation_ends_by_itself_and_a_hold_lasts_until_release(sim: SlurmSim) -> None:
    sim.watch()
    sim.run_jobs(could_not_run=True)
    sim.watch()
    durations = {c[1]: c[3] for c in sim.calls if c[0] == "create-reservation"}
    assert durations == {"fmcluster-gate-gpu": "180", "fmcluster-gate-hold-gpu": "infinite"}


def test_a_resumed_node_is_tested_again(sim: SlurmSim) -> None:
    accept_all(sim)
    node = FOUR[1]
    sim.set_node(node, flags=["DRAIN"], reason="fmcluster-node-check: gpu-count 7", reason_time=60)
    sim.watch()
    assert len(sim.jobs) == 1, "someone else's drain is left alone"
    sim.set_node(node, flags=[], reason="")  # an operator resumed it
    sim.watch()
    assert node in sim.jobs[-1]["nodes"]


def test_busy_nodes_wait_and_request_tests_every_idle_node(sim: SlurmSim) -> None:
    accept_all(sim)
    sim.set_node(FOUR[3], base="ALLOCATED")
    r = sim.watch("request", "gpu")
    assert r.returncode == 0, r.stderr
    assert sorted(sim.jobs[-1]["nodes"]) == FOUR[:3]
    assert sim.watch("request", "nope").returncode == 2


def test_a_request_waits_for_a_running_pass_and_a_tick_skips(sim: SlurmSim) -> None:
    """A request (the window-start schedule's) arriving while a timer pass holds the lock is carried out when the pass
    ends, not dropped with exit 0; a second tick during a pass skips (the next one comes in 60 s)."""
    accept_all(sim)
    state = sim.root / "state"
    holder = subprocess.Popen(["flock", str(state / ".lock"), "sleep", "3"])
    try:
        time.sleep(0.5)  # the holder has the lock
        tick = sim.watch()
        assert tick.returncode == 0 and "another pass is running" in tick.stderr
        jobs = len(sim.jobs)
        r = sim.watch("request", "gpu")
    finally:
        holder.wait(timeout=30)
    assert r.returncode == 0, r.stderr
    assert len(sim.jobs) == jobs + 1 and sorted(sim.jobs[-1]["nodes"]) == FOUR


def test_hyperpod_replacement_back_in_service_is_tested(tmp_path: Path) -> None:
    nodes = [f"ip-10-1-0-{i}" for i in range(1, 5)]
    sim = SlurmSim(tmp_path / "sim", _watcher(tmp_path, "hyperpod-p5"), orchestrator="hyperpod")
    sim.add_nodes(nodes)
    sim.watch()
    sim.run_jobs(fail={nodes[0]: "low"})
    sim.watch()
    assert sim.node(nodes[0])["reason"] == "Action:Replace"
    sim.watch()
    assert len(sim.jobs) == 1, "FAIL with Action:Replace is HyperPod's to act on"
    sim.hyperpod_replace(nodes[0])
    sim.watch()
    assert nodes[0] in sim.jobs[-1]["nodes"] and len(sim.jobs[-1]["nodes"]) == 3


# ---- wired where Slurm is administered -------------------------------------------------------------------------
def _installer(text: str) -> str:
    from fmcluster.validation import load_blueprint_text

    installer = render_gate_watch_installer(resolve(load_blueprint_text(text).blueprint))
    assert installer is not None
    return installer


def test_parallelcluster_head_node_installs_the_watcher_after_the_slurm_hooks() -> None:
    from tests.orchestrator_support import cluster_template, head_node_steps, synth_to_folder

    text = (ROOT / "blueprints/default.yaml").read_text()
    out, templates = synth_to_folder(text)
    steps = head_node_steps(cluster_template(templates), "OnNodeConfigured")
    contents = [(out / f"asset.{step['Script'].rsplit('/', 1)[1]}").read_text() for step in steps]
    watch = contents.index(_installer(text))
    hooks = next(i for i, c in enumerate(contents) if "TaskProlog" in c and "fmcluster-task-prolog" in c)
    assert hooks < watch


def test_hyperpod_controller_installs_the_watcher_after_the_slurm_conf_watch() -> None:
    from tests.orchestrator_support import synth_to_folder

    text = (ROOT / "blueprints/hyperpod-p5.yaml").read_text()
    out, _ = synth_to_folder(text)
    (root,) = {p.parent.parent for p in out.glob("asset.*/*/on_init_complete.sh")}
    assert (root / "controller" / WATCH_INSTALLER_FILE).read_text() == _installer(text)
    on_init = (root / "controller/on_init_complete.sh").read_text()
    assert on_init.index("fmcluster-slurm-conf-watch.sh") < on_init.index(WATCH_INSTALLER_FILE)
    assert not (root / "gpu" / WATCH_INSTALLER_FILE).exists()


def test_pcs_login_node_installs_the_watcher() -> None:
    from tests.orchestrator_support import Resolver, cluster_template, pcs_launch_templates, synth_to_folder

    text = (ROOT / "blueprints/pcs-p5en.yaml").read_text()
    out, templates = synth_to_folder(text)
    tpl = cluster_template(templates)
    [(_, data)] = [v for k, v in pcs_launch_templates(tpl).items() if k == "login"]
    login = Resolver(tpl, "us-east-2")(data["UserData"]["Fn::Base64"])
    # the user data runs the admin-steps launcher on the SSM parameter that lists the installer (not its S3 URL)
    parameter = "/fmcluster/pcs-h200/login/admin-steps"
    assert f"bash /opt/fmcluster/fmcluster-admin-steps.sh {parameter} us-east-2" in login
    (param,) = [r["Properties"] for r in tpl["Resources"].values()
                if r["Type"] == "AWS::SSM::Parameter" and r["Properties"]["Name"] == parameter]
    [url] = [step["Script"] for step in json.loads(Resolver(tpl, "us-east-2")(param["Value"]))]
    assert (out / f"asset.{url.rsplit('/', 1)[1]}").read_text() == _installer(text)


def test_a_blocked_group_raises_a_critical_alert(tmp_path: Path) -> None:
    """promtool unit test: the watcher's blocked metric fires AcceptanceGateBlocked for that group only."""
    import shutil

    import yaml

    from fmcluster.features.observability.render_acceptance import acceptance_alert_rules
    from fmcluster.review.render import render_blueprint

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("no promtool")
    files = render_blueprint(load_blueprint(ROOT / "blueprints/default.yaml"))
    (tmp_path / "rules.yml").write_text(files["observability/rules"]["llm-train-alerts.yml"])
    [rule] = [r for r in acceptance_alert_rules() if r.alert == "AcceptanceGateBlocked"]
    base = 'cluster="llm-train",job="node",instance="head:9100"'
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": f'{WATCH_BLOCKED}{{{base},group="gpu"}}', "values": "0 0 1x5"},
            {"series": f'{WATCH_BLOCKED}{{{base},group="cpu"}}', "values": "0x7"},
        ],
        "alert_rule_test": [
            {"eval_time": "1m", "alertname": "AcceptanceGateBlocked", "exp_alerts": []},
            {"eval_time": "3m", "alertname": "AcceptanceGateBlocked", "exp_alerts": [{
                "exp_labels": {"severity": "critical", "cluster": "llm-train", "group": "gpu"},
                "exp_annotations": {"summary": rule.summary.replace("{{ $labels.cluster }}", "llm-train")
                                    .replace("{{ $labels.group }}", "gpu"), "description": rule.description}}]},
        ],
    }]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = subprocess.run([promtool, "test", "rules", "test.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_parallelcluster_dynamic_nodes_are_gated_on_request_only(sim: SlurmSim) -> None:
    dynamic = "gpu-dy-p5-48xlarge-1"
    sim.add_nodes([dynamic])
    accept_all(sim)
    assert dynamic not in sim.jobs[0]["nodes"]
    sim.watch("request", "gpu")
    assert dynamic in sim.jobs[-1]["nodes"]
