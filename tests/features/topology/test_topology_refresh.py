"""The topology refresh on the Slurm controller node, run for real under bash against stub commands.

Stubs model the real commands' output and exit codes:
- ``scontrol show nodes --oneliner``: one ``NodeName=... NodeAddr=...`` line per node (a powered-down cloud
  node has ``NodeAddr`` = its name), ``scontrol reconfigure`` exit 0 or 1 (scontrol(1));
- ``aws ec2 describe-instances ... --output text``: ``<PrivateIpAddress>\\t<InstanceId>`` lines for the
  query ``Reservations[].Instances[].[PrivateIpAddress,InstanceId]``; ``aws ec2 describe-instance-topology
  --instance-ids ...``: the ``{"Instances": [...]}`` of those ids (botocore ec2 ``DescribeInstanceTopology``),
  at most 100 ids a call (the stub fails above 100, as EC2 does); exit 255 on an AWS error (aws CLI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fmcluster.features.topology.render_scripts import (
    REFRESH_SCRIPT,
    TopologyRefresh,
    generator_source,
    parallelcluster_node_names,
    render_topology_installer,
    render_topology_placeholder,
)
from tests.conftest import ROOT

GENERATOR = ROOT / "fmcluster" / "topology" / "ec2_slurm.py"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"

SCONTROL = r"""#!/bin/bash
echo "scontrol $*" >> "$STUB_LOG"
case "$1" in
  show) cat "$STUB_DIR/nodes.txt" ;;
  reconfigure) exit "$(cat "$STUB_DIR/reconfigure_rc" 2>/dev/null || echo 0)" ;;
  *) echo "scontrol: invalid entity: $1" >&2; exit 1 ;;
esac
"""

AWS = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
d = os.environ["STUB_DIR"]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("aws " + " ".join(a if " " not in a else repr(a) for a in args[:2]) + "\n")
if os.path.exists(os.path.join(d, "aws_fail")):
    print("An error occurred (UnauthorizedOperation) when calling the operation", file=sys.stderr)
    sys.exit(255)
if args[:2] == ["ec2", "describe-instances"]:
    sys.stdout.write(open(os.path.join(d, "instances.txt")).read())
elif args[:2] == ["ec2", "describe-instance-topology"]:
    ids = args[args.index("--instance-ids") + 1:]
    ids = ids[:next((i for i, a in enumerate(ids) if a.startswith("--")), len(ids))]
    if len(ids) > 100:
        print("An error occurred (InvalidParameterValue): at most 100 instance IDs", file=sys.stderr)
        sys.exit(255)
    known = json.load(open(os.path.join(d, "topology.json")))["Instances"]
    print(json.dumps({"Instances": [i for i in known if i["InstanceId"] in ids]}))
else:
    sys.exit(2)
"""


def node_line(name: str, addr: str | None) -> str:
    addr = addr or name
    return (f"NodeName={name} Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 CPUTot=192 NodeAddr={addr} "
            f"NodeHostName={addr} Version=24.11.6 State=IDLE+CLOUD Partitions=gpu\n")


@pytest.fixture
def harness(tmp_path: Path) -> dict[str, Path]:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, text in (("scontrol", SCONTROL), ("aws", AWS)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    (tmp_path / "etc").mkdir()
    return {"dir": tmp_path, "bin": stubs, "topology": tmp_path / "etc" / "topology.conf", "log": tmp_path / "calls.log"}


def cluster(h: dict[str, Path], n: int, idle: int = 0) -> None:
    """``n`` running p5 nodes (two per leaf, two leaves per spine) and ``idle`` powered-down nodes."""
    d = h["dir"]
    ids = [f"i-0{k:016x}" for k in range(1, n + 1)]
    instances = [{"InstanceId": i, "InstanceType": "p5.48xlarge", "NetworkNodes": [
        "nn-top", f"nn-spine-{k // 4 % 2}", f"nn-leaf-{k // 2}"], "ZoneId": "use1-az6"} for k, i in enumerate(ids)]
    (d / "topology.json").write_text(json.dumps({"Instances": instances}))
    (d / "instances.txt").write_text("".join(f"10.0.{k // 250}.{k % 250 + 4}\t{i}\n" for k, i in enumerate(ids)))
    lines = [node_line(f"gpu-st-p5-{k + 1}", f"10.0.{k // 250}.{k % 250 + 4}") for k in range(n)]
    lines += [node_line(f"gpu-dy-p5-{k + 1}", None) for k in range(idle)]
    (d / "nodes.txt").write_text("".join(lines))


def run_refresh(h: dict[str, Path], mode: str = "write") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STUB_DIR": str(h["dir"]), "STUB_LOG": str(h["log"]), "PATH": f"{h['bin']}:{os.environ['PATH']}",
           "FMC_MODE": mode, "FMC_REGION": "us-east-1", "FMC_TAG_KEY": "parallelcluster:cluster-name",
           "FMC_TAG_VALUE": "llm-train", "FMC_SLURM_BIN": str(h["bin"]), "FMC_TOPOLOGY_FILE": str(h["topology"]),
           "FMC_FORMAT": "conf", "FMC_PLUGIN": "tree", "FMC_NVLINK_TYPES": "p6e-gb200.36xlarge",
           "FMC_GENERATOR": str(GENERATOR), "FMC_STATE_DIR": str(h["dir"] / "state"), "FMC_PYTHON": sys.executable}
    return subprocess.run(["bash", str(REFRESH_SCRIPT)], env=env, capture_output=True, text=True, check=False)


def calls(h: dict[str, Path]) -> list[str]:
    return h["log"].read_text().splitlines() if h["log"].exists() else []


# ---- shellcheck -----------------------------------------------------------------------------------------
REFRESH = TopologyRefresh(region="us-east-1", tag_key="parallelcluster:cluster-name", tag_value="llm-train",
                          slurm_bin="/opt/slurm/bin", topology_file="/opt/slurm/etc/topology.conf",
                          orchestrator="ParallelCluster", node_label="head node")


@pytest.mark.parametrize("name", ["refresh", "installer", "placeholder"])
def test_scripts_are_shellcheck_clean(tmp_path: Path, name: str) -> None:
    text = {"refresh": REFRESH_SCRIPT.read_text(), "installer": render_topology_installer(REFRESH),
            "placeholder": render_topology_placeholder("/opt/slurm/etc", ["gpu-st-p5-48xlarge-[1-2]"])}[name]
    f = tmp_path / f"{name}.sh"
    f.write_text(text)
    res = subprocess.run([str(SHELLCHECK), "-s", "bash", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


# ---- the refresh ------------------------------------------------------------------------------------------
def test_writes_the_topology_and_reconfigures_once(harness: dict[str, Path]) -> None:
    cluster(harness, 4, idle=2)
    res = run_refresh(harness)
    assert res.returncode == 0, res.stderr
    assert harness["topology"].read_text().splitlines()[1:] == [
        "SwitchName=nn-leaf-0 Nodes=gpu-st-p5-1,gpu-st-p5-2",
        "SwitchName=nn-leaf-1 Nodes=gpu-st-p5-3,gpu-st-p5-4",
        "SwitchName=nn-spine-0 Switches=nn-leaf-0,nn-leaf-1",
        "SwitchName=nn-top Switches=nn-spine-0",
        "SwitchName=fmc-no-topology Nodes=gpu-dy-p5-1,gpu-dy-p5-2",  # powered-down nodes stay choosable
        "SwitchName=fmc-root Switches=fmc-no-topology,nn-top",
    ]
    assert calls(harness).count("scontrol reconfigure") == 1
    # nothing changed: no reconfigure
    again = run_refresh(harness)
    assert again.returncode == 0 and calls(harness).count("scontrol reconfigure") == 1


def test_a_node_that_comes_up_changes_the_file_and_reconfigures(harness: dict[str, Path]) -> None:
    cluster(harness, 2, idle=1)
    assert run_refresh(harness).returncode == 0
    before = harness["topology"].read_text()
    cluster(harness, 3)
    assert run_refresh(harness).returncode == 0
    after = harness["topology"].read_text()
    assert before != after and "gpu-st-p5-3" in after and "fmc-no-topology" not in after
    assert calls(harness).count("scontrol reconfigure") == 2


def test_more_than_100_instances_are_described_in_chunks(harness: dict[str, Path]) -> None:
    cluster(harness, 205)
    res = run_refresh(harness)
    assert res.returncode == 0, res.stderr
    assert calls(harness).count("aws ec2 describe-instance-topology") == 3
    text = harness["topology"].read_text()
    assert all(f"gpu-st-p5-{k}," in text or f"gpu-st-p5-{k}\n" in text for k in range(1, 206))


def test_a_refused_reconfigure_restores_the_previous_file(harness: dict[str, Path]) -> None:
    cluster(harness, 2)
    assert run_refresh(harness).returncode == 0
    good = harness["topology"].read_text()
    cluster(harness, 4)
    (harness["dir"] / "reconfigure_rc").write_text("1")
    res = run_refresh(harness)
    assert res.returncode == 1 and "restoring the previous one" in res.stderr
    assert harness["topology"].read_text() == good


def test_an_aws_error_leaves_the_file_alone(harness: dict[str, Path]) -> None:
    cluster(harness, 2)
    assert run_refresh(harness).returncode == 0
    good = harness["topology"].read_text()
    cluster(harness, 4)
    (harness["dir"] / "aws_fail").write_text("")
    res = run_refresh(harness)
    assert res.returncode == 1 and "describe-instances failed" in res.stderr
    assert harness["topology"].read_text() == good and calls(harness).count("scontrol reconfigure") == 1


def test_no_running_node_yet_changes_nothing(harness: dict[str, Path]) -> None:
    cluster(harness, 0, idle=3)
    res = run_refresh(harness)
    assert res.returncode == 0 and "no Slurm node has a running instance" in res.stderr
    assert not harness["topology"].exists() and "scontrol reconfigure" not in calls(harness)


def test_check_mode_reports_differences_and_never_writes(harness: dict[str, Path]) -> None:
    cluster(harness, 2)
    harness["topology"].write_text("SwitchName=theirs Nodes=gpu-st-p5-1,gpu-st-p5-2\n")
    res = run_refresh(harness, mode="check")
    assert res.returncode == 0
    assert "differs from EC2 topology" in res.stderr and "+SwitchName=nn-leaf-0 Nodes=gpu-st-p5-1,gpu-st-p5-2" in res.stderr
    assert harness["topology"].read_text() == "SwitchName=theirs Nodes=gpu-st-p5-1,gpu-st-p5-2\n"
    assert "scontrol reconfigure" not in calls(harness)


# ---- the installer and the placeholder --------------------------------------------------------------------
def test_installer_writes_the_generator_the_settings_and_the_timer(tmp_path: Path) -> None:
    stub = tmp_path / "systemctl"
    stub.write_text(f"#!/bin/bash\necho \"$*\" >> {tmp_path}/systemctl.log\n")
    stub.chmod(0o755)
    script = tmp_path / "install.sh"
    script.write_text(render_topology_installer(REFRESH))
    root = tmp_path / "root"
    res = subprocess.run(["bash", str(script)], env={**os.environ, "FMC_ROOT": str(root), "FMC_SYSTEMCTL": str(stub)},
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert (root / "opt/fmcluster/topology/ec2_slurm.py").read_text() == generator_source()
    assert (root / "opt/fmcluster/topology/refresh.sh").read_text() == REFRESH_SCRIPT.read_text()
    env = dict(line.split("=", 1) for line in (root / "etc/fmcluster/topology.env").read_text().splitlines())
    assert env["FMC_TAG_KEY"] == "parallelcluster:cluster-name" and env["FMC_TOPOLOGY_FILE"] == "/opt/slurm/etc/topology.conf"
    assert env["FMC_MODE"] == "write" and env["FMC_PLUGIN"] == "tree" and env["FMC_NVLINK_TYPES"] == "p6e-gb200.36xlarge"
    timer = (root / "etc/systemd/system/fmcluster-topology.timer").read_text()
    assert "OnUnitActiveSec=5min" in timer and "OnBootSec=2min" in timer
    assert "EnvironmentFile=/etc/fmcluster/topology.env" in (root / "etc/systemd/system/fmcluster-topology.service").read_text()
    assert (tmp_path / "systemctl.log").read_text().splitlines() == [
        "daemon-reload", "enable --now fmcluster-topology.timer", "start --no-block fmcluster-topology.service"]
    installed = subprocess.run([sys.executable, "-I", str(root / "opt/fmcluster/topology/ec2_slurm.py"), "--help"],
                               capture_output=True, text=True, check=False)
    assert installed.returncode == 0 and "--instances" in installed.stdout


def test_placeholder_lists_every_node_and_keeps_an_existing_file(tmp_path: Path) -> None:
    import yaml

    script = tmp_path / "placeholder.sh"
    names = parallelcluster_node_names("gpu", "p5-48xlarge", 2, 6)
    assert names == ["gpu-st-p5-48xlarge-[1-2]", "gpu-dy-p5-48xlarge-[1-4]"]
    script.write_text(render_topology_placeholder("/opt/slurm/etc", names))
    env = {**os.environ, "FMC_ROOT": str(tmp_path / "root")}
    assert subprocess.run(["bash", str(script)], env=env, check=False).returncode == 0
    etc = tmp_path / "root/opt/slurm/etc"
    assert yaml.safe_load((etc / "topology.yaml").read_text()) == [{
        "topology": "fmc-tree", "cluster_default": True, "tree": {"switches": [
            {"switch": "fmc-no-topology", "nodes": "gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-4]"}]}}]
    assert (etc / "topology.conf").read_text().splitlines()[1] == (
        "SwitchName=fmc-no-topology Nodes=gpu-st-p5-48xlarge-[1-2],gpu-dy-p5-48xlarge-[1-4]")
    (etc / "topology.yaml").write_text("# refreshed\n")
    (etc / "topology.conf").unlink()  # ParallelCluster's --cleanup on a queue update
    assert subprocess.run(["bash", str(script)], env=env, check=False).returncode == 0
    assert (etc / "topology.yaml").read_text() == "# refreshed\n"  # kept
    assert (etc / "topology.conf").exists()  # written again


@pytest.mark.parametrize(("mn", "mx", "expected"), [
    (0, 1, ["q-dy-c-1"]), (1, 1, ["q-st-c-1"]), (0, 0, []), (3, 3, ["q-st-c-[1-3]"]),
])
def test_parallelcluster_node_names(mn: int, mx: int, expected: list[str]) -> None:
    assert parallelcluster_node_names("q", "c", mn, mx) == expected
