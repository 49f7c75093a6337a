"""The boot simulation's stub server (tests/fixtures/boot_sim/stub_server.py) answers every stubbed command exactly as
the one-shot stub (a new Python interpreter running sim.py per call) does: the same script of calls, run once through
each, gives the same output, exit codes, recorded actions and final state. The calls cover every handler, arguments
with spaces, quotes, glob characters, an empty argument and a newline, stdout and stderr merged (``2>&1``), a relative
path resolved in the caller's working directory, and a handler that raises (its traceback, exit code 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fmcluster.features.node.render_context import node_context
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint
from tests.conftest import ROOT
from tests.fixtures.boot_sim import harness

CALLS = r"""
run() { "$@" >"$HOME/o" 2>"$HOME/e"; local rc=$?; printf '== %s rc=%s\n' "$*" "$rc"; cat "$HOME/o"; echo '-- err'; cat "$HOME/e"; }
merged() { local rc; printf '== merged %s\n' "$*"; "$@" 2>&1; rc=$?; echo "rc=${rc}"; }
run dpkg-query -W -f='${Package} ${Version}\n' efa-config
run dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' no-such-package 'a b' ''
run dpkg-query -W
run dpkg -S /usr/lib/nothing
run apt-get -o Dpkg::Options::=--force-confold install -y no-such-package
run apt-get update
merged apt-mark hold efa-config no-such-package
run rpm -q efa-config
run rpm -qa
run dnf install -y 'no-such-*'
run systemctl is-active nvidia-persistenced
run systemctl is-active "no such
unit"
run systemctl enable no-such-unit
run systemctl start no-such-unit
run systemctl stop nvidia-persistenced
run systemctl is-active nvidia-persistenced
run nvidia-smi --query-gpu=driver_version --format=csv,noheader
run nvidia-smi -q
run modinfo -F version nvidia
run modinfo -F license nvidia
run modprobe -r nvidia_uvm
run modprobe kefalnd
run lsmod
run fi_info --version
run fi_info -p efa
run mountpoint -q /fsx
run mountpoint -q /no/such/dir
run findmnt -rn -o TARGET,SOURCE
run findmnt -no FSTYPE /fsx
run findmnt -no SOURCE /no/such/dir
run mount --bind /no/such/dir /x
run mount -t lustre -o relatime,flock 10.0.0.9@tcp:/x /mnt/x
run umount /no/such/dir
run lsblk -dpno NAME,MODEL
run lsblk /dev/nvme9n1
run blkid -o value -s TYPE /dev/nvme1n1
run lnetctl net show
run lnetctl net add --net efa --if rdmap79s0
run lnetctl lnet configure
run lnetctl net add --net efa --if rdmap79s0
run lnetctl net show --net efa
run ip -br -4 addr show
run id -u
run uname -r
run uname -m
run hostname -I
run nproc
run sleep 5
run curl -fsSL http://169.254.169.254/latest/api/token -X PUT
run curl -fsSL -o "$HOME/a b.tar" https://example.com/no-such-file
run aws s3 cp s3://bucket/no/such/key "$HOME/k"
cd "$HOME" && echo ABCDEF0123456789ABCDEF0123456789ABCDEF01 >key.asc
run gpg --with-colons --show-keys key.asc
run gpg --dearmor -o keys/key.gpg key.asc
cat keys/key.gpg
run make all
"""

_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\n(?:[ ^].*\n)+")


def _normal(text: str, sandbox: Path) -> str:
    """The sandbox path and a traceback's frames (which name the file that ran: bin/sim-stub or the server) removed."""
    return _TRACEBACK.sub("Traceback\n", text.replace(str(sandbox), "<sandbox>"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[int, str, list[str], dict]]:
    rc = resolve(load_blueprint(ROOT / "blueprints" / "default.yaml"))
    g = rc.groups[0]
    ctx = harness.sim_context(node_context(rc, g, exporters_script="x"))
    out = {}
    for one_shot in (True, False):
        tmp = tmp_path_factory.mktemp(f"one-shot-{one_shot}")
        r = harness.boot(tmp, ctx, harness.image_state(ctx, g.image.manifest), script=CALLS, one_shot=one_shot)
        sandbox = tmp / "boot"
        out[one_shot] = (r.returncode, _normal(r.output, sandbox), [_normal(a, sandbox) for a in r.actions],
                         json.loads(_normal(json.dumps(r.state), sandbox)))
    return out


def test_the_reference_run_exercises_the_handlers(runs: dict[bool, tuple[int, str, list[str], dict]]) -> None:
    """The one-shot run really answered: exit codes and messages of the real tools, and a handler that raised."""
    _, output, actions, state = runs[True]
    for expected in ("== apt-get -o Dpkg::Options::=--force-confold install -y no-such-package rc=100",
                     "E: Unable to locate package no-such-package",
                     "dpkg-query: no packages found matching a b", "== systemctl enable no-such-unit rc=1",
                     "Failed to enable unit: Unit file no-such-unit.service does not exist.",
                     "== mountpoint -q /no/such/dir rc=32", "curl: (22) The requested URL returned error: 404",
                     "fpr:::::::::ABCDEF0123456789ABCDEF0123456789ABCDEF01:", "== make all rc=1",
                     "Traceback\nValueError: '-C' is not in list"):
        assert expected in output, expected
    # merged streams: Python writes stderr at once (line-buffered) and stdout at exit
    assert ("== merged apt-mark hold efa-config no-such-package\nE: Unable to locate package no-such-package\n"
            "efa-config set on hold.\nrc=100\n") in output
    assert "apt-mark hold efa-config no-such-package" in actions and "nvidia_uvm" not in state["modules"]
    assert state["lnet"]["nets"]["efa"][0]["if"] == "rdmap79s0" and "/mnt/x" in state["mounts"]


def test_stub_server_answers_as_the_one_shot_stub(runs: dict[bool, tuple[int, str, list[str], dict]]) -> None:
    one_shot, server = runs[True], runs[False]
    assert server[0] == one_shot[0]
    assert server[1].splitlines() == one_shot[1].splitlines()
    assert server[2] == one_shot[2]
    assert server[3] == one_shot[3]
