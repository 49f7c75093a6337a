"""The capacity window (docs/capacity.md "The capacity window"): the windows and timings (plan), the rendered
``fmcluster-window-end`` and FSDP job run for real against stub Slurm (tests/fixtures/capacity_window/slurm.py) and a
stand-in torch, and the synthesized EventBridge rule, its targets, IAM and the alert topic's policy."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.capacity_window.plan import (
    CHECKPOINT_GRACE_S,
    EXPIRATION_WARNING_DETAIL_TYPES,
    TERMINATION_AFTER_WARNING_S,
    Window,
    expiration_warning_pattern,
    windows,
)
from fmcluster.review.render import render_blueprint
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text, example, group
from tests.fixtures.capacity_window.slurm import write_stubs
from tests.orchestrator_support import synth_with_nag

SHELLCHECK = str(Path(sys.executable).parent / "shellcheck")
CB = {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
EXAMPLE = blueprint_text({}, base=example("p5en-capacity-block"))
WITH_ALERTS = blueprint_text({"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"}},
                             base=example("p5en-capacity-block"))


# ---- plan: which groups have a window, the event they wait for, the grace --------------------------------------
@pytest.mark.parametrize(("capacity", "expected"), [
    ({"type": "on_demand"}, ()),
    ({"type": "spot"}, ()),
    ({"type": "odcr", "reservation_id": "cr-0123456789abcdef1"}, ()),
    (CB, (Window("gpu", "cr-0123456789abcdef0"),)),
], ids=["on_demand", "spot", "odcr", "capacity_block"])
def test_only_capacity_blocks_have_an_announced_end(capacity: dict[str, Any], expected: tuple[Window, ...]) -> None:
    bp = load_blueprint_text(blueprint_text({"compute": [group(capacity=capacity)]})).blueprint
    assert windows(bp.compute) == expected


def test_the_grace_leaves_the_requeue_margin_of_the_ten_minutes() -> None:
    # EC2 user guide capacity-blocks-monitor: warning 40 min before the end, termination begins 10 min later
    assert (TERMINATION_AFTER_WARNING_S, CHECKPOINT_GRACE_S) == (600, 420)


def test_the_pattern_matches_both_spellings_of_the_warning_and_only_its_reservations() -> None:
    pattern = expiration_warning_pattern([Window("a", "cr-0000000000000000b"), Window("b", "cr-0000000000000000a")])
    assert pattern == {"source": ["aws.ec2"],
                       "detail-type": ["Capacity Block Expiration Warning",
                                       "Capacity Block Reservation Expiration Warning"],
                       "detail": {"capacity-reservation-id": ["cr-0000000000000000a", "cr-0000000000000000b"]}}
    assert EXPIRATION_WARNING_DETAIL_TYPES == tuple(pattern["detail-type"])


# ---- the rendered end script against stub Slurm ------------------------------------------------------------------
@cache
def _rendered(text: str = EXAMPLE) -> dict[str, dict[str, str]]:
    return render_blueprint(load_blueprint_text(text).blueprint)


END = ["cr-0123456789abcdef0", "2026-12-05T11:30:00Z"]
HOLD = "fmcluster-window-end-h200"
#: the reservation the end script must make for the example's window (scontrol.1 "create reservation"; the two stub
#: nodes of partition h200)
HOLD_REQUEST = (f"scontrol create reservation ReservationName={HOLD} StartTime=now Duration=60 Users=root "
                "Flags=MAINT,IGNORE_JOBS Nodes=h200-st-p5en-1,h200-st-p5en-2")


def _window_end(tmp_path: Path, args: list[str], env: dict[str, str], *,
                script_text: str | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "fmcluster-window-end"
    script.write_text(script_text or _rendered()["capacity-window"]["fmcluster-window-end"])
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    stubs = write_stubs(tmp_path / "bin")
    full = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "STUB_NODES": "h200-st-p5en-1 h200-st-p5en-2",
            "FMC_WINDOW_POLL_S": "1", **env}
    res = subprocess.run(["bash", str(script), *args], env=full, capture_output=True, text=True, timeout=120)
    return res, log


def _lines(log: Path, name: str) -> list[str]:
    path = log / f"{name}.log"
    return path.read_text().splitlines() if path.exists() else []


def _reservations(log: Path) -> dict[str, str]:
    """name -> what ``scontrol show reservation`` prints after the name, for every reservation the stub holds now."""
    folder = log / "resv"
    return {p.name: p.read_text().strip() for p in folder.iterdir()} if folder.is_dir() else {}


def test_the_end_script_is_shellcheck_clean(tmp_path: Path) -> None:
    f = tmp_path / "s.sh"
    f.write_text(_rendered()["capacity-window"]["fmcluster-window-end"])
    res = subprocess.run([SHELLCHECK, "-s", "bash", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


def _reaped(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``proc``, waited for by a thread as soon as it exits, as slurmd reaps a job's shell (a zombie still answers
    ``kill -0``, so the stub squeue would see it running)."""
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc


#: a job's batch shell: one that checkpoints and stops on USR1, one that ignores it (runs on past the grace)
JOB = {"stops": 'trap "exit 0" USR1; while :; do /bin/sleep 0.1; done',
       "ignores": 'trap "" USR1; while :; do /bin/sleep 0.1; done'}


def _run_end(tmp_path: Path, jobs: dict[str, str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The end script of the example's window with one live batch shell per job (``JOB`` kinds), grace 3 s."""
    procs = {job: _reaped(subprocess.Popen(["bash", "-c", JOB[kind]])) for job, kind in jobs.items()}
    try:
        return _window_end(tmp_path, END, {"STUB_JOBS": ",".join(f"{job}={p.pid}" for job, p in procs.items()),
                                           "FMC_WINDOW_GRACE_S": "3", **env})
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


@pytest.mark.parametrize(("jobs", "no_requeue", "code", "waited"), [
    ({"7": "stops"}, "", 0, r"waited [0-2] s of 3 s"),
    ({"7": "ignores"}, "", 0, r"waited 3 s of 3 s"),
    ({"7": "stops", "8": "stops"}, "8", 1, r"waited [0-2] s of 3 s"),
    ({}, "", 0, None),
], ids=["stops-and-is-requeued", "ignores-and-is-requeued-after-the-grace", "one-cannot-be-requeued", "no-job"])
def test_the_end_script_holds_signals_and_requeues(tmp_path: Path, jobs: dict[str, str], no_requeue: str, code: int,
                                                   waited: str | None) -> None:
    res, log = _run_end(tmp_path, jobs, {"STUB_NO_REQUEUE": no_requeue})
    assert res.returncode == code, res.stdout + res.stderr
    scontrol = _lines(log, "scontrol")
    # the hold is looked for, then made: no drain (ParallelCluster would replace drained idle nodes)
    assert scontrol[:2] == [f"scontrol show reservation {HOLD}", HOLD_REQUEST]
    assert scontrol[2:] == [f"scontrol requeue {job}" for job in sorted(jobs)]
    assert _reservations(log) == {HOLD: HOLD_REQUEST.split(f"ReservationName={HOLD} ")[1]}
    assert _lines(log, "scancel") == [f"scancel --signal=USR1 --full {job}" for job in sorted(jobs)]
    found = re.search(r"waited \d+ s of \d+ s", res.stdout)
    assert (found is None) if waited is None else (found is not None and re.fullmatch(waited, found.group(0)))
    if no_requeue:
        assert f"job {no_requeue}: could not be requeued" in res.stdout


def _examples_with_a_window() -> list[str]:
    names = []
    for path in sorted((Path(__file__).resolve().parents[3] / "blueprints").glob("*.yaml")):
        bp = load_blueprint_text(path.read_text()).blueprint
        if windows(bp.compute):
            names.append(path.stem)
    return names


def test_every_orchestrator_with_a_window_holds_and_never_drains(tmp_path: Path) -> None:
    """One mechanism everywhere: the end script of every example with a window (ParallelCluster and PCS; HyperPod
    has no Capacity Block group, R-CAP-4) holds the window's nodes in the reservation and renders no drain."""
    kinds = set()
    for name in _examples_with_a_window():
        bp = load_blueprint_text(blueprint_text({}, base=example(name))).blueprint
        kinds.add(bp.orchestrator.kind)
        files = _rendered(blueprint_text({}, base=example(name)))["capacity-window"]
        assert "State=DRAIN" not in files["fmcluster-window-end"], name
        commands = [line for text in files.values() for line in text.splitlines() if not line.lstrip().startswith("#")]
        assert not any("State=DRAIN" in line for line in commands), name
        for w in windows(bp.compute):
            res, log = _window_end(tmp_path / name / w.group, [w.reservation_id, "2026-12-05T11:30:00Z"],
                                   {"STUB_JOBS": ""}, script_text=files["fmcluster-window-end"])
            assert res.returncode == 0, res.stdout + res.stderr
            assert _reservations(log) == {
                f"fmcluster-window-end-{w.group}": "StartTime=now Duration=60 Users=root Flags=MAINT,IGNORE_JOBS "
                                                   "Nodes=h200-st-p5en-1,h200-st-p5en-2"}, name
            assert not any("State=" in line for line in _lines(log, "scontrol")), name
    assert kinds == {"parallelcluster", "pcs"}


def test_every_window_command_fits_an_eventbridge_input_template() -> None:
    """The scripts travel base64 in the rules' input templates, at most 8192 characters (EventBridge API
    InputTransformer): checked here without a synthesis, for every example with a window."""
    from fmcluster.features.capacity_window.construct import INPUT_TEMPLATE_MAX, run_command, start_command

    for name in _examples_with_a_window():
        files = _rendered(blueprint_text({}, base=example(name)))["capacity-window"]
        end = json.dumps({"commands": [run_command(files["fmcluster-window-end"])]})
        start = json.dumps({"commands": [start_command(files["fmcluster-window-start"], "<reservation>")]})
        assert max(len(end), len(start)) <= INPUT_TEMPLATE_MAX, (name, len(end), len(start))


@pytest.mark.parametrize(("hold_min", "duration", "said"), [
    ("90", "90", None),
    ("0", "60", "FMC_WINDOW_HOLD_MIN '0' is not a whole number of minutes >= 1: holding for 60"),
    ("1h", "60", "FMC_WINDOW_HOLD_MIN '1h' is not a whole number of minutes >= 1: holding for 60"),
], ids=["longer", "zero", "not-minutes"])
def test_the_hold_lasts_fmc_window_hold_min(tmp_path: Path, hold_min: str, duration: str, said: str | None) -> None:
    res, log = _window_end(tmp_path, END, {"STUB_JOBS": "", "FMC_WINDOW_HOLD_MIN": hold_min})
    assert res.returncode == 0, res.stdout + res.stderr
    assert f" Duration={duration} " in _reservations(log)[HOLD]
    assert said is None or f"fmcluster-window-end: {said}" in res.stdout.splitlines()


def test_a_second_warning_finds_the_hold_in_place_and_still_requeues(tmp_path: Path) -> None:
    """A second warning or a rerun: the reservation exists (scontrol create would fail, "Duplicate reservation
    name"), so it is left as it is and the script goes on with the jobs."""
    first, log = _run_end(tmp_path, {}, {})
    assert first.returncode == 0, first.stdout + first.stderr
    again, log = _run_end(tmp_path, {"9": "stops"}, {})
    assert again.returncode == 0, again.stdout + again.stderr
    assert (f"fmcluster-window-end: {HOLD} already holds the window's nodes (a second warning or a rerun): left as it "
            "is") in again.stdout.splitlines()
    assert [line for line in _lines(log, "scontrol") if line.startswith("scontrol create")] == [HOLD_REQUEST]
    assert _lines(log, "scontrol")[-1] == "scontrol requeue 9"


def test_a_hold_made_by_someone_else_is_not_an_error(tmp_path: Path) -> None:
    res, log = _run_end(tmp_path, {"7": "stops"}, {"STUB_RESERVATIONS": HOLD})
    assert res.returncode == 0, res.stdout + res.stderr
    assert not any(line.startswith("scontrol create") for line in _lines(log, "scontrol"))
    assert _lines(log, "scontrol")[-1] == "scontrol requeue 7"


@pytest.mark.parametrize("down", ["2", "2 3 4 5 6"], ids=["the-first-look-fails", "every-look-fails"])
def test_a_failed_squeue_look_requeues_nothing(tmp_path: Path, down: str) -> None:
    """The controller not answering says nothing about the jobs: a look whose squeue fails is skipped (deploy review:
    it was taken for "every job stopped", and the jobs were requeued, killed, before their checkpoint). The job, still
    running, is requeued only when the grace ends."""
    res, log = _run_end(tmp_path, {"7": "ignores"}, {"STUB_SQUEUE_DOWN": down})
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert ("fmcluster-window-end: squeue failed after 0 s (the controller did not answer): this look skipped, no job "
            "requeued on it") in out.splitlines()
    assert out.index("waited 3 s of 3 s") < out.index("job 7: requeued")
    assert [line for line in _lines(log, "scontrol") if "requeue" in line] == ["scontrol requeue 7"]


@pytest.mark.parametrize(("down", "code", "signalled"), [
    ("1", 0, True),
    ("1 2 3", 1, False),
], ids=["asked-again", "gives-up-after-three"])
def test_a_failed_squeue_listing_is_asked_again(tmp_path: Path, down: str, code: int, signalled: bool) -> None:
    res, log = _run_end(tmp_path, {"7": "stops"}, {"STUB_SQUEUE_DOWN": down})
    assert res.returncode == code, res.stdout + res.stderr
    assert (_lines(log, "scancel") == ["scancel --signal=USR1 --full 7"]) is signalled
    assert ([line for line in _lines(log, "scontrol") if "requeue" in line] == ["scontrol requeue 7"]) is signalled
    if not signalled:
        assert ("fmcluster-window-end: squeue failed 3 times (the controller did not answer): the jobs on "
                "h200-st-p5en-1,h200-st-p5en-2 are neither signalled nor requeued") in res.stdout.splitlines()


def test_a_failed_sinfo_is_not_an_empty_partition(tmp_path: Path) -> None:
    res, log = _run_end(tmp_path, {"7": "stops"}, {"STUB_SINFO_DOWN": "1"})
    assert res.returncode == 1, res.stdout + res.stderr
    assert ("fmcluster-window-end: sinfo failed (the controller did not answer): nothing held, signalled or requeued; "
            "run me again") in res.stdout.splitlines()
    assert _lines(log, "scontrol") == [] and _lines(log, "scancel") == []


def test_a_job_that_stops_early_is_requeued_at_once_not_after_the_grace(tmp_path: Path) -> None:
    """slurmctld forgets a finished job after MinJobAge (300 s by default): a job that checkpointed and stopped is
    requeued as soon as it stops, while another job still runs out the grace (deploy review)."""
    res, log = _run_end(tmp_path, {"7": "stops", "8": "ignores"}, {})
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert out.index("job 7: requeued") < out.index("waited 3 s of 3 s") < out.index("job 8: requeued")
    assert _lines(log, "scontrol")[2:] == ["scontrol requeue 7", "scontrol requeue 8"]


def test_the_end_script_refuses_a_reservation_it_does_not_know(tmp_path: Path) -> None:
    res, log = _window_end(tmp_path, ["cr-00000000000000000", "2026-12-05T11:30:00Z"], {"STUB_JOBS": "7=0"})
    assert res.returncode == 2
    assert "not a capacity window of h200-cb; allowed cr-0123456789abcdef0" in res.stdout
    assert _lines(log, "scontrol") == [] and _lines(log, "scancel") == []


# ---- the next window's start deletes the end's hold, and resumes the old end's drains and only those ------------
def _window_start(tmp_path: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "fmcluster-window-start"
    script.write_text(_rendered()["capacity-window"]["fmcluster-window-start"])
    stubs = write_stubs(tmp_path / "bin")
    full = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(tmp_path / "log"),
            "STUB_NODES": "h200-st-p5en-1 h200-st-p5en-2 h200-st-p5en-3", **env}
    return subprocess.run(["bash", str(script), *args], env=full, capture_output=True, text=True, timeout=60)


def _drained(tmp_path: Path) -> dict[str, str]:
    """node -> reason of every drained node, as the stub scontrol shows them now."""
    res = subprocess.run([str(tmp_path / "bin" / "scontrol"), "show", "nodes", "--oneliner"], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", "STUB_LOG": str(tmp_path / "log"),
                                         "STUB_NODES": "h200-st-p5en-1 h200-st-p5en-2 h200-st-p5en-3",
                                         "STUB_OTHER_NODES": "cpu-1"}, check=True)
    found = (re.search(r"NodeName=(\S+) .* Reason=(.*) \[", line) for line in res.stdout.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


#: the drain reason of earlier versions of the end script (before the hold), which the start still undoes
OLD_REASON = "fmcluster: capacity block cr-0123456789abcdef0 ends 2026-12-05T11:30:00Z"


def test_the_next_window_start_deletes_the_hold_and_resumes_only_the_old_ends_drains(tmp_path: Path) -> None:
    """The end of one window holds its nodes; the start of the next deletes the hold if it is still there, and
    resumes nodes an older end script drained, while a node drained for another reason (the gate, an operator) or
    in another partition keeps its drain (issue 29)."""
    others = {"STUB_DRAINED": f"h200-st-p5en-2={OLD_REASON};h200-st-p5en-3=gate: nccl busbw below 300 GB/s;"
                              "cpu-1=fmcluster: capacity block cr-0000000000000000a ends 2026-11-01T11:30:00Z",
              "STUB_OTHER_NODES": "cpu-1"}
    res, log = _window_end(tmp_path, END, {"STUB_JOBS": "", **others})
    assert res.returncode == 0, res.stdout + res.stderr
    assert list(_reservations(log)) == [HOLD]
    assert _drained(tmp_path) == {"h200-st-p5en-2": OLD_REASON, "h200-st-p5en-3": "gate: nccl busbw below 300 GB/s",
                                  "cpu-1": others["STUB_DRAINED"].split(";")[2].split("=", 1)[1]}

    res = _window_start(tmp_path, ["h200"], others)
    assert res.returncode == 0, res.stdout + res.stderr
    assert _reservations(log) == {}
    assert (f"fmcluster-window-start: deleted {HOLD}, the hold of the last window's end: jobs may start on partition "
            "h200 again") in res.stdout.splitlines()
    assert [line for line in _lines(log, "scontrol") if "State=RESUME" in line or "delete" in line] == [
        f"scontrol delete ReservationName={HOLD}", "scontrol update NodeName=h200-st-p5en-2 State=RESUME"]
    assert set(_drained(tmp_path)) == {"h200-st-p5en-3", "cpu-1"}


@pytest.mark.parametrize(("env", "code", "said", "resumes"), [
    ({}, 0, "no node of partition h200 is drained by a window end: nothing to resume", []),
    ({}, 0, f"no hold {HOLD} left from a window end: nothing to delete", []),
    ({"STUB_DRAINED": "h200-st-p5en-1=fmcluster: capacity block cr-0123456789abcdef0 ends unknown;"
                      "h200-st-p5en-2=fmcluster: capacity block cr-0123456789abcdef0 ends unknown",
      "STUB_NO_RESUME": "h200-st-p5en-1"}, 1,
     "h200-st-p5en-1: could not be resumed; it stays drained (scontrol update NodeName=h200-st-p5en-1 State=RESUME)",
     ["h200-st-p5en-1", "h200-st-p5en-2"]),
    ({"STUB_DRAINED": "h200-st-p5en-1=operator: fmcluster: capacity block cr-1 ends soon"}, 0,
     "no node of partition h200 is drained by a window end: nothing to resume", []),
    ({"STUB_RESERVATIONS": f"fmcluster-window-end-cpu pcluster-cr-0123456789abcdef0 {HOLD}"}, 0,
     f"deleted {HOLD}, the hold of the last window's end: jobs may start on partition h200 again", []),
], ids=["nothing-drained", "no-hold", "one-cannot-be-resumed", "a-reason-that-only-contains-ours", "hold-left"])
def test_the_window_start_cases(tmp_path: Path, env: dict[str, str], code: int, said: str,
                                resumes: list[str]) -> None:
    res = _window_start(tmp_path, ["h200"], env)
    assert res.returncode == code, res.stdout + res.stderr
    assert f"fmcluster-window-start: {said}" in res.stdout.splitlines()
    assert [line.split()[2].removeprefix("NodeName=") for line in _lines(tmp_path / "log", "scontrol")
            if "State=RESUME" in line] == resumes
    # only the group's own hold is ever deleted: another group's, ParallelCluster's and the gate's stay
    left = set(env.get("STUB_RESERVATIONS", "").split()) - {HOLD}
    assert set(_reservations(tmp_path / "log")) == left


def test_the_window_start_takes_the_reservation_id_of_the_delivered_event(tmp_path: Path) -> None:
    res = _window_start(tmp_path, ["cr-0123456789abcdef0"], {
        "STUB_DRAINED": "h200-st-p5en-2=fmcluster: capacity block cr-0123456789abcdef0 ends unknown",
        "STUB_RESERVATIONS": HOLD})
    assert res.returncode == 0, res.stdout + res.stderr
    assert _reservations(tmp_path / "log") == {}
    assert _lines(tmp_path / "log", "scontrol")[-1] == "scontrol update NodeName=h200-st-p5en-2 State=RESUME"


def test_the_window_start_refuses_a_group_without_a_window(tmp_path: Path) -> None:
    res = _window_start(tmp_path, ["cpu"], {})
    assert res.returncode == 2
    assert "group 'cpu' has no capacity window in h200-cb; allowed h200 or cr-0123456789abcdef0" in res.stdout
    assert _lines(tmp_path / "log", "scontrol") == []


def test_the_start_script_is_shellcheck_clean(tmp_path: Path) -> None:
    f = tmp_path / "s.sh"
    f.write_text(_rendered()["capacity-window"]["fmcluster-window-start"])
    res = subprocess.run([SHELLCHECK, "-s", "bash", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


# ---- the day-2 simulation of the end: the FSDP job checkpoints on the warning and resumes when requeued ---------
def _start_job(tmp_path: Path, work: Path, stubs: Path, *, restart: int, step_s: str) -> subprocess.Popen[str]:
    files = _rendered()["h200"]
    job_env = tmp_path / "job-env.sh"
    job_env.write_text(files["job-env.sh"])
    (work / "fsdp-train.py").write_text(files["fsdp-train.py"])
    sbatch = tmp_path / "fsdp-train.sbatch"
    sbatch.write_text(files["fsdp-train.sbatch"].replace('source "/opt/fmcluster/etc/job-env.sh"', f'source "{job_env}"'))
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(tmp_path / "log"), "SLURM_JOB_ID": "41",
           "SLURM_RESTART_COUNT": str(restart), "SLURM_JOB_NODELIST": "node-1", "SLURM_SUBMIT_DIR": str(work),
           "FSDP_STEPS": "200", "FAKE_TORCH_STEP_S": step_s, "FAKE_TORCH_PROGRESS": str(tmp_path / "progress.json")}
    out = open(work / "fsdp-train-41.out", "a")  # --open-mode=append
    return _reaped(subprocess.Popen(["bash", str(sbatch)], env=env, stdout=out, stderr=subprocess.STDOUT, text=True))


def _progress(tmp_path: Path) -> int:
    try:
        return int(json.loads((tmp_path / "progress.json").read_text())["step"])
    except (FileNotFoundError, ValueError):
        return 0


def test_the_fsdp_job_checkpoints_on_the_warning_and_resumes_when_requeued(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "log").mkdir()
    stubs = write_stubs(tmp_path / "bin")
    job = _start_job(tmp_path, work, stubs, restart=0, step_s="0.05")
    deadline = time.monotonic() + 60
    while _progress(tmp_path) < 5 and time.monotonic() < deadline and job.returncode is None:
        time.sleep(0.05)
    assert _progress(tmp_path) >= 5, (work / "fsdp-train-41.out").read_text()

    res, log = _window_end(tmp_path, ["cr-0123456789abcdef0", "2026-12-05T11:30:00Z"], {"STUB_JOBS": f"41={job.pid}"})
    assert job.wait(timeout=60) == 0
    assert res.returncode == 0, res.stdout + res.stderr
    output = (work / "fsdp-train-41.out").read_text()
    [stopped] = re.findall(r"stopped after step (\d+) on request", output)
    assert 5 <= int(stopped) < 200
    ckpt = work / "checkpoints" / "fsdp-train-41"
    assert (ckpt / "latest").read_text().strip() == stopped
    assert json.loads((ckpt / f"step-{stopped}" / "state.json").read_text())["optim"] == {"steps": int(stopped)}
    assert "USR1: the tasks write a checkpoint" in output
    assert _lines(log, "scontrol")[-1] == "scontrol requeue 41"
    assert re.search(r"waited \d+ s of 420 s", res.stdout)

    # Slurm starts the requeued job again with the same id: it resumes and finishes the remaining steps
    again = _start_job(tmp_path, work, stubs, restart=1, step_s="0")
    assert again.wait(timeout=60) == 0
    output = (work / "fsdp-train-41.out").read_text()
    assert f"resumed from the checkpoint of step {stopped}" in output
    assert "done: 200 steps" in output
    # the optimizer's state came from the checkpoint: its step counter ends at 200, not at 200 - stopped
    assert _progress(tmp_path) == 200


# ---- synthesized: the rule, its targets, its role, the topic's policy; cdk-nag and cfn-lint --------------------
@cache
def _templates(text: str) -> tuple[Path, dict[str, dict[str, Any]]]:
    out = synth_with_nag(text)
    return out, {p.name.removesuffix(".template.json"): json.loads(p.read_text()) for p in out.glob("*.template.json")}


def _of_type(tpl: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in tpl["Resources"].values() if r["Type"] == type_]


@pytest.mark.synth
def test_the_cluster_stack_has_the_window_end_rule_with_head_node_and_alert_targets() -> None:
    _, templates = _templates(WITH_ALERTS)
    rules = {r["Properties"]["Name"]: r for r in _of_type(templates["h200-cb-cluster"], "AWS::Events::Rule")}
    assert sorted(rules) == ["fmcluster-h200-cb-window-end", "fmcluster-h200-cb-window-start"]
    props = rules["fmcluster-h200-cb-window-end"]["Properties"]
    assert props["Name"] == "fmcluster-h200-cb-window-end"
    assert props["EventPattern"] == expiration_warning_pattern(windows(load_blueprint_text(EXAMPLE).blueprint.compute))
    head, alert = props["Targets"]
    assert head["Id"] == "HeadNode" and alert["Id"] == "AlertTopic"
    assert head["RunCommandParameters"]["RunCommandTargets"] == [
        {"Key": "InstanceIds", "Values": [{"Fn::GetAtt": [head["RunCommandParameters"]["RunCommandTargets"][0]
                                                          ["Values"][0]["Fn::GetAtt"][0], "headNode.instanceId"]}]}]
    assert head["InputTransformer"]["InputPathsMap"] == {"reservation": "$.detail.capacity-reservation-id",
                                                         "end": "$.detail.end-date"}
    [command] = json.loads(head["InputTransformer"]["InputTemplate"])["commands"]
    encoded = re.fullmatch(r'bash -c "\$\(echo (\S+) \| base64 -d\)" fmcluster-window-end <reservation> <end>',
                           command)
    assert encoded is not None
    assert base64.b64decode(encoded.group(1)).decode() == _rendered(WITH_ALERTS)["capacity-window"]["fmcluster-window-end"]
    assert "<reservation> ends at <end>" in json.loads(alert["InputTransformer"]["InputTemplate"])
    # four roles may send commands (the two rules' and the preload and start schedules'), each only
    # AWS-RunShellScript to the head node
    senders = [p["Properties"]["PolicyDocument"]["Statement"] for p in _of_type(templates["h200-cb-cluster"], "AWS::IAM::Policy")
               if any(st["Action"] == "ssm:SendCommand" for st in p["Properties"]["PolicyDocument"]["Statement"])]
    assert len(senders) == 4
    for statements in senders:
        [stmt] = statements
        resources = json.dumps(stmt["Resource"])
        assert "document/AWS-RunShellScript" in resources and "headNode.instanceId" in resources
        assert len(stmt["Resource"]) == 2


@pytest.mark.synth
def test_only_each_window_rule_may_assume_its_run_command_role() -> None:
    _, templates = _templates(WITH_ALERTS)
    trusts = [st for r in _of_type(templates["h200-cb-cluster"], "AWS::IAM::Role")
              for st in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
              if st["Principal"] == {"Service": "events.amazonaws.com"}]
    names = sorted(re.search(r"rule/(fmcluster-[a-z0-9-]+)", json.dumps(t["Condition"]["ArnEquals"]["aws:SourceArn"]))
                   .group(1) for t in trusts)
    assert names == ["fmcluster-h200-cb-window-end", "fmcluster-h200-cb-window-start"]


@pytest.mark.synth
def test_only_this_accounts_default_schedule_group_may_assume_the_schedule_roles() -> None:
    """Scheduler's confused-deputy guard: aws:SourceAccount and aws:SourceArn of the schedule group (the default group,
    where fmcluster's schedules live), never a schedule ARN (Scheduler user guide, confused deputy prevention)."""
    _, templates = _templates(WITH_ALERTS)
    trusts = [st for r in _of_type(templates["h200-cb-cluster"], "AWS::IAM::Role")
              for st in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
              if st["Principal"] == {"Service": "scheduler.amazonaws.com"}]
    schedules = _of_type(templates["h200-cb-cluster"], "AWS::Scheduler::Schedule")
    assert len(trusts) == 2 and schedules  # the preload's role and the start's role
    assert all("GroupName" not in s["Properties"] for s in schedules)
    for t in trusts:
        assert t["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        group = json.dumps(t["Condition"]["ArnEquals"]["aws:SourceArn"])
        assert ":scheduler:" in group and ":schedule-group/default" in group


@pytest.mark.synth
def test_the_capacity_block_delivered_event_resumes_the_windows_nodes() -> None:
    """EC2's Capacity Block Delivered event (both spellings of the EC2 user guide, capacity-blocks-monitor) runs
    fmcluster-window-start with the event's reservation id on the head node (issue 29 item 3)."""
    from fmcluster.features.capacity_window.plan import DELIVERED_DETAIL_TYPES

    _, templates = _templates(WITH_ALERTS)
    [rule] = [r for r in _of_type(templates["h200-cb-cluster"], "AWS::Events::Rule")
              if r["Properties"]["Name"] == "fmcluster-h200-cb-window-start"]
    props = rule["Properties"]
    assert props["EventPattern"] == {"source": ["aws.ec2"], "detail-type": list(DELIVERED_DETAIL_TYPES),
                                     "detail": {"capacity-reservation-id": ["cr-0123456789abcdef0"]}}
    assert DELIVERED_DETAIL_TYPES == ("Capacity Block Delivered", "Capacity Block Reservation Delivered")
    [head] = props["Targets"]
    assert head["InputTransformer"]["InputPathsMap"] == {"reservation": "$.detail.capacity-reservation-id"}
    [command] = json.loads(head["InputTransformer"]["InputTemplate"])["commands"]
    encoded = re.fullmatch(r'bash -c "\$\(echo (\S+) \| base64 -d\)" fmcluster-window-start <reservation>', command)
    assert encoded is not None
    assert base64.b64decode(encoded.group(1)).decode() == _rendered(WITH_ALERTS)["capacity-window"][
        "fmcluster-window-start"]


@pytest.mark.synth
def test_the_alert_topic_lets_only_the_window_rule_publish() -> None:
    _, templates = _templates(WITH_ALERTS)
    [topic_policy] = _of_type(templates["h200-cb-observability"], "AWS::SNS::TopicPolicy")
    [stmt] = [s for s in topic_policy["Properties"]["PolicyDocument"]["Statement"]
              if s.get("Sid") == "AllowTheWindowRuleToPublish"]
    assert stmt["Principal"] == {"Service": "events.amazonaws.com"} and stmt["Action"] == "sns:Publish"
    arn = json.dumps(stmt["Condition"]["ArnEquals"]["aws:SourceArn"])
    assert "rule/fmcluster-h200-cb-window-end" in arn
    [key] = _of_type(templates["h200-cb-observability"], "AWS::KMS::Key")
    assert any(s.get("Sid") == "AllowTheWindowRuleToUseTheAlertTopicKey"
               for s in key["Properties"]["KeyPolicy"]["Statement"])


@pytest.mark.synth
def test_the_window_stacks_pass_cfn_lint() -> None:
    from tests.features.storage.test_storage_construct import cfn_lint_errors

    out, _ = _templates(WITH_ALERTS)
    paths = [out / "h200-cb-cluster.template.json", out / "h200-cb-observability.template.json"]
    assert cfn_lint_errors(paths, "us-east-2") == []


def test_a_cluster_without_a_window_renders_no_end_script() -> None:
    assert "capacity-window" not in _rendered(blueprint_text({}))


# ---- before the start: the preload script against stub lfs, the schedule, the plan ------------------------------
def _preload(tmp_path: Path, env: dict[str, str], *, with_data: bool = True) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "fsx" / "datasets"
    if with_data:
        (data / "shard").mkdir(parents=True)
        for name in ("a.bin", "shard/b.bin", "shard/c.bin"):
            (data / name).write_bytes(b"x" * 1024)
    text = _rendered()["capacity-window"]["fmcluster-window-preload-h200"]
    script = tmp_path / "preload.sh"
    script.write_text(text.replace('"/fsx/datasets"', f'"{data}"'))
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    stubs = write_stubs(tmp_path / "bin")
    full = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "FMC_PRELOAD_POLL_S": "1", **env}
    return subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("env", "code", "last"), [
    ({}, 0, "preload done after 0 s"),
    ({"STUB_LOAD_AFTER_POLLS": "2"}, 0, "preload done after 2 s"),
    ({"STUB_LOAD_AFTER_POLLS": "never", "FMC_PRELOAD_DEADLINE_S": "3"}, 1,
     "the window starts with 3 files still loading: they load on first read"),
], ids=["loaded-at-once", "loaded-after-two-polls", "still-loading-at-the-start"])
def test_the_preload_restores_every_file_and_reports_progress(tmp_path: Path, env: dict[str, str], code: int,
                                                              last: str) -> None:
    res = _preload(tmp_path, env)
    assert res.returncode == code, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == f"fmcluster-window-preload: {last}"
    restored = sorted(Path(p).relative_to(tmp_path / "fsx/datasets").as_posix()
                      for p in (tmp_path / "log" / "restored").read_text().split())
    assert restored == ["a.bin", "shard/b.bin", "shard/c.bin"]
    assert any(re.fullmatch(r"fmcluster-window-preload: loaded \d+ of 800 GiB, [0-3] files still loading", x)
               for x in lines)


def test_the_preload_refuses_a_missing_path(tmp_path: Path) -> None:
    res = _preload(tmp_path, {}, with_data=False)
    assert res.returncode == 2 and "is not a directory" in res.stdout
    assert not (tmp_path / "log" / "restored").exists()


def test_the_preload_script_is_shellcheck_clean(tmp_path: Path) -> None:
    f = tmp_path / "p.sh"
    f.write_text(_rendered()["capacity-window"]["fmcluster-window-preload-h200"])
    res = subprocess.run([SHELLCHECK, "-s", "bash", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize(("lustre", "lead_minutes", "expected"), [
    # SCRATCH_2 2400 GiB = 480 MB/s: 800 GiB in 1789.6 s; lead = 1789.6 * 1.5 + 900 s = 3584.4 s -> 60 min
    ({}, None, (800, 1789.6, 3600, True)),
    ({}, 30, (800, 1789.6, 1800, False)),
    # no repository marked: no preload, no lead
    ({"data_repositories": [{"file_system_path": "/datasets"}]}, None, (0, None, None, False)),
], ids=["default-lead", "blueprint-lead", "no-preload"])
def test_preload_size_estimate_and_lead(lustre: dict[str, Any], lead_minutes: int | None,
                                        expected: tuple[int, float | None, int | None, bool]) -> None:
    data = example("p5en-capacity-block")
    data["storage"]["lustre"].update(lustre)
    if lead_minutes:
        data["compute"][0]["capacity"]["preload_lead_minutes"] = lead_minutes
    bp = load_blueprint_text(blueprint_text({}, base=data)).blueprint
    [w] = windows(bp.compute, bp.storage.lustre)
    assert (w.preload_gib, w.preload_estimate_s, w.lead_s, w.lead_is_default) == expected


def test_the_plan_shows_the_window() -> None:
    from fmcluster.resolved import resolve
    from fmcluster.review.plan import build_plan, render_markdown

    plan = build_plan(resolve(load_blueprint_text(EXAMPLE).blueprint))
    assert plan.windows == [{
        "group": "h200", "reservation": "cr-0123456789abcdef0", "starts": "2026-12-14 11:30 UTC",
        "ends": "2026-12-16 11:30 UTC", "preload": "800 GiB: /fsx/datasets", "preload time": "29.8 min",
        "lead": "60 min (estimate)", "preload starts": "2026-12-14 10:30 UTC", "end warning": "40 min before the end",
        "checkpoint grace": "420 s (requeue 180 s before termination)",
        "instance-hours": "48 h x 2 = 96 (price quoted at purchase)", "budget": "none"}]
    assert "## Capacity windows" in render_markdown(plan)
    assert "windows" not in build_plan(resolve(load_blueprint_text(blueprint_text({})).blueprint)).as_dict()


@pytest.mark.synth
def test_the_cluster_stack_schedules_the_preload_on_the_head_node() -> None:
    _, templates = _templates(WITH_ALERTS)
    schedules = {r["Properties"]["Name"]: r for r in _of_type(templates["h200-cb-cluster"], "AWS::Scheduler::Schedule")}
    props = schedules["fmcluster-h200-cb-preload-0"]["Properties"]
    assert (props["ScheduleExpression"], props["ScheduleExpressionTimezone"]) == ("at(2026-12-14T10:30:00)", "UTC")
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert props["Target"]["Arn"] == {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
                                                         ":scheduler:::aws-sdk:ssm:sendCommand"]]}
    text = json.dumps(props["Target"]["Input"])
    script = _rendered(WITH_ALERTS)["capacity-window"]["fmcluster-window-preload-h200"]
    assert "AWS-RunShellScript" in text and base64.b64encode(script.encode()).decode() in text
    assert "headNode.instanceId" in text


@pytest.mark.synth
def test_the_window_start_asks_the_gate_watcher_to_gate_the_windows_nodes() -> None:
    """At starts_at a schedule resumes the window's nodes the previous end drained, then runs the watcher's request for
    the window's group on the head node (issue 29: the gate at the start); the watcher's request path itself runs
    against stub Slurm in test_gate_watch.py."""
    _, templates = _templates(WITH_ALERTS)
    schedules = {r["Properties"]["Name"]: r for r in _of_type(templates["h200-cb-cluster"], "AWS::Scheduler::Schedule")}
    assert sorted(schedules) == ["fmcluster-h200-cb-preload-0", "fmcluster-h200-cb-start-0"]
    props = schedules["fmcluster-h200-cb-start-0"]["Properties"]
    assert props["ScheduleExpression"] == "at(2026-12-14T11:30:00)"  # the window's starts_at, in UTC
    parts = props["Target"]["Input"]["Fn::Join"][1]
    assert "headNode.instanceId" in json.dumps([p for p in parts if not isinstance(p, str)])
    sent = json.loads("".join(p if isinstance(p, str) else "<head node>" for p in parts))
    # first the previous window's drains are resumed (the watcher skips drained nodes), then the gate is asked for
    [command] = sent["Parameters"]["commands"]
    resume, request = command.split("; ")
    encoded = re.fullmatch(r'bash -c "\$\(echo (\S+) \| base64 -d\)" fmcluster-window-start h200', resume)
    assert encoded is not None
    assert base64.b64decode(encoded.group(1)).decode() == _rendered(WITH_ALERTS)["capacity-window"][
        "fmcluster-window-start"]
    assert request == "/opt/fmcluster/bin/fmcluster-gate-watch request h200"
    assert sent == {"DocumentName": "AWS-RunShellScript", "InstanceIds": ["<head node>"],
                    "Parameters": {"commands": [command], "executionTimeout": ["300"]},
                    "Comment": "fmcluster h200-cb window start h200"}


# ---- the budget guard ---------------------------------------------------------------------------------------------
WITH_BUDGET = blueprint_text({"observability": {"metrics": "self_hosted", "alert_email": "oncall@example.com"},
                              "budget": {"monthly_usd": 250000, "thresholds_percent": [50, 90, 100]}},
                             base=example("p5en-capacity-block"))


@pytest.mark.synth
def test_the_budget_filters_on_the_tag_every_resource_carries_and_notifies_the_alert_topic() -> None:
    from fmcluster.resolved import BLUEPRINT_TAG

    _, templates = _templates(WITH_BUDGET)
    obs = templates["h200-cb-observability"]
    [budget] = _of_type(obs, "AWS::Budgets::Budget")
    data = budget["Properties"]["Budget"]
    assert (data["BudgetType"], data["TimeUnit"], data["BudgetLimit"]) == ("COST", "MONTHLY",
                                                                           {"Amount": 250000, "Unit": "USD"})
    assert data["CostFilters"] == {"TagKeyValue": [f"user:{BLUEPRINT_TAG}$h200-cb"], "Region": ["us-east-2"]}
    assert data["BudgetName"] == "fmcluster-h200-cb-us-east-2"
    notes = budget["Properties"]["NotificationsWithSubscribers"]
    assert [n["Notification"]["Threshold"] for n in notes] == [50, 90, 100]
    [topic] = [k for k, r in obs["Resources"].items() if r["Type"] == "AWS::SNS::Topic"]
    assert all(n["Subscribers"] == [{"SubscriptionType": "SNS", "Address": {"Ref": topic}}] for n in notes)
    # the tag the filter names is on the cluster's resources (here every taggable resource of every stack)
    for name, tpl in templates.items():
        for rid, r in tpl["Resources"].items():
            tags = r.get("Properties", {}).get("Tags")
            if isinstance(tags, list) and tags and isinstance(tags[0], dict) and "Key" in tags[0]:
                assert {"Key": BLUEPRINT_TAG, "Value": "h200-cb"} in tags, f"{name} {rid}"
    [policy] = _of_type(obs, "AWS::SNS::TopicPolicy")
    [stmt] = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "AllowTheBudgetToPublish"]
    assert stmt["Principal"] == {"Service": "budgets.amazonaws.com"}
    assert "budgets::" in json.dumps(stmt["Condition"]["ArnLike"]["aws:SourceArn"])
    # without budget.stop_compute_at_percent there is no stop topic, no function and nothing subscribed
    assert [k for tpl in templates.values() for k in tpl["Resources"] if "BudgetStop" in k] == []
    assert len(_of_type(obs, "AWS::SNS::Topic")) == 1


def _budget_in(region: str) -> dict[str, Any]:
    """The budget data of a bare stack in ``region`` (a cheap synthesis of the construct alone)."""
    from aws_cdk import App, Environment, Stack
    from aws_cdk.assertions import Template

    from fmcluster.features.capacity_window.construct import ClusterBudget

    stack = Stack(App(), "S", env=Environment(account="111122223333", region=region))
    ClusterBudget(stack, "Budget", monthly_usd=1000, thresholds_percent=[80], tag_key="fmcluster:blueprint",
                  tag_value="same-name", topic_arn="arn:aws:sns:us-east-1:111122223333:t", cluster_name="same-name",
                  region=stack.region)
    [budget] = Template.from_stack(stack).find_resources("AWS::Budgets::Budget").values()
    return dict(budget["Properties"]["Budget"])


def test_two_clusters_of_one_name_in_two_regions_get_two_budget_names_each_counting_its_region() -> None:
    """Budget names are unique within an account (API Budget BudgetName), and both clusters carry the same tag."""
    east, west, east_again = _budget_in("us-east-2"), _budget_in("us-west-2"), _budget_in("us-east-2")
    assert (east["BudgetName"], west["BudgetName"]) == ("fmcluster-same-name-us-east-2", "fmcluster-same-name-us-west-2")
    assert east_again["BudgetName"] == east["BudgetName"]  # stable: an update keeps the budget
    assert (east["CostFilters"]["Region"], west["CostFilters"]["Region"]) == (["us-east-2"], ["us-west-2"])


def test_a_budget_needs_the_alert_topic() -> None:
    from fmcluster.validation.loader import BlueprintError

    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text({"budget": {"monthly_usd": 1000}}, base=example("p5en-capacity-block")))
    [problem] = [p for p in e.value.errors]
    assert (problem.path, problem.rule_id) == ("budget", "R-BUDGET-1")
    assert "got observability.metrics 'none' on orchestrator 'parallelcluster'" in problem.message


@pytest.mark.parametrize(("budget", "message"), [
    ({"monthly_usd": 0}, "out of range, got 0; allowed >= 1"),
    ({"monthly_usd": 10, "thresholds_percent": [80, 80]}, "each threshold once, got [80, 80]"),
    ({"monthly_usd": 10, "thresholds_percent": []}, "at least 1"),
    ({"monthly_usd": 10, "thresholds_percent": [80, 100], "stop_compute_at_percent": 100},
     "stop_compute_at_percent 100 is also in thresholds_percent [80, 100]; allowed a percentage that is not an alert "
     "threshold"),
    ({"monthly_usd": 10, "thresholds_percent": [50, 60, 70, 80, 90], "stop_compute_at_percent": 120},
     "with stop_compute_at_percent, at most 4 thresholds_percent, got 5; a budget has at most 5 notifications"),
    ({"monthly_usd": 10, "stop_compute_at_percent": 0}, "out of range, got 0; allowed >= 1"),
], ids=["zero", "twice", "none", "stop-is-an-alert-threshold", "six-notifications", "stop-at-zero"])
def test_budget_shape(budget: dict[str, Any], message: str) -> None:
    from fmcluster.validation.loader import BlueprintError

    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(blueprint_text({"budget": budget}))
    assert [p.path for p in e.value.errors if message in p.message] != [], [p.message for p in e.value.errors]
