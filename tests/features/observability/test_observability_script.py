"""The exporter scripts run for real under bash against stub commands, in a private mount namespace whose
/opt, /usr/local, /var/lib, /var/log and /etc/{systemd/system,prometheus,alertmanager,grafana,dcgm-exporter}
are empty tmpfs mounts (nothing touches the machine).

Stubs model the real commands' interfaces: ``systemctl`` records its calls; ``curl -o`` writes a release
tarball with fake binaries; ``sha256sum -c`` passes unless the archive is listed in STUB_SHA_FAIL (a
mismatch exits 1 like coreutils); ``aws s3 cp`` of a mirror key serves such a tarball (the Slurm exporter's
with its binary at the top level, GoReleaser's layout), of ``KEY.sha256`` the recorded hash or a 404; ``iptables -S
PARALLELCLUSTER_IMDS`` prints a REJECT rule (ParallelCluster's lockdown on, Imds.Secured true);
``dpkg-query -W -f='${db:Status-Status} ${Version}'`` prints an installed package's status and version;
``apt-cache madison`` prints ``pkg | version | repo`` lines; ``useradd`` and ``chown`` only record.

Needs root (or user namespaces) for ``unshare --mount``; without it the tests skip, and fail when CI is set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from fmcluster.features.observability.endpoints import MONITORING_STATE_LOG_PREFIX
from fmcluster.features.observability.pins import DCGM_EXPORTER
from fmcluster.features.observability.render_exporters import IMDS_ACCESS_SCRIPT, exporter_context, render_exporter_script
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text

MOUNTS = (
    "/opt", "/usr/local", "/var/lib", "/var/log", "/etc/systemd/system", "/etc/prometheus", "/etc/alertmanager",
    "/etc/grafana", "/etc/dcgm-exporter",
)


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def sandbox() -> None:
    if not _unshare_works():
        if os.environ.get("CI"):
            pytest.fail("unshare --mount is not permitted but CI is set: the exporter harness cannot run")
        pytest.skip("unshare --mount not permitted (needs root or user namespaces); set CI=1 to make this a failure")


STUBS = {
    "systemctl": 'echo "systemctl $*" >> "$STUB_LOG"',
    "logger": "exit 0",
    "useradd": 'echo "useradd $*" >> "$STUB_LOG"',
    "chown": 'echo "chown $*" >> "$STUB_LOG"',  # the stub useradd creates no user
    "curl": textwrap.dedent(
        """\
        out=""
        while [[ $# -gt 0 ]]; do case "$1" in -o) out="$2"; shift 2 ;; *) url="$1"; shift ;; esac; done
        case "${url}" in  # IMDSv2: the token, then the identity document (the mirror bucket's account)
          */api/token) echo TOKEN; exit 0 ;;
          */instance-identity/document) printf '{\n  "accountId" : "123456789012"\n}\n'; exit 0 ;;
        esac
        echo "curl ${url}" >> "$STUB_LOG"
        name="${url##*/}"; base="${name%.tar.gz}"
        d="$(mktemp -d)"
        if [[ "${name}" == prometheus-slurm-exporter_* ]]; then  # GoReleaser's layout: the binary at the top level
          printf '#!/bin/sh\n' > "$d/prometheus-slurm-exporter"; chmod +x "$d/prometheus-slurm-exporter"
          tar -czf "$out" -C "$d" prometheus-slurm-exporter; exit 0
        fi
        mkdir -p "$d/$base/bin"
        for b in prometheus promtool node_exporter alertmanager amtool go; do
          printf '#!/bin/sh\\necho "%s $*" >> "$STUB_LOG"\\n' "$b" > "$d/$base/$b"; chmod +x "$d/$base/$b"
          cp "$d/$base/$b" "$d/$base/bin/$b"
        done
        tar -czf "$out" -C "$d" "$base"
        """
    ),
    "sha256sum": textwrap.dedent(
        """\
        read -r want file
        for bad in ${STUB_SHA_FAIL:-}; do
          if [[ "$file" == *"/${bad}."* ]]; then echo "${file}: FAILED" >&2; exit 1; fi
        done
        exit 0
        """
    ),
    "iptables": 'echo "iptables $*" >> "$STUB_LOG"; [[ "$*" == "-S PARALLELCLUSTER_IMDS" ]] && '
    'echo "-A PARALLELCLUSTER_IMDS -d 169.254.169.254/32 -j REJECT --reject-with icmp-port-unreachable"; exit 0',
    # aws s3 cp: a mirror object (built like the curl stub's archives); KEY.sha256 (the hash the deploy recorded for
    # an unpinned object): STUB_RECORDED, or the CLI's 404 and exit 1 when unset (the deploy skipped the object);
    # anything else: the SSM parameter
    "aws": textwrap.dedent(
        """\
        echo "aws $*" >> "$STUB_LOG"
        [[ "$1 $2" == "s3 cp" ]] || { cat "$STUB_SSM"; exit 0; }
        src="${*: -2:1}"
        if [[ "${src}" == *.sha256 ]]; then
          if [[ -z "${STUB_RECORDED:-}" ]]; then
            echo "fatal error: An error occurred (404) when calling the HeadObject operation: Not Found" >&2; exit 1
          fi
          echo "${STUB_RECORDED}" > "${*: -1}"; exit 0
        fi
        curl -o "${*: -1}" "https://mirror.invalid/${src##*/}"
        """
    ),
    "sinfo": 'echo "gpu-1 10.0.1.5"',
    "pgrep": "exit 1",
    "nvidia-smi": 'echo "| NVIDIA-SMI 595.71.05   Driver Version: 595.71.05   CUDA Version: 13.2 |"',
    "apt-get": 'echo "apt-get $*" >> "$STUB_LOG"',
    "apt-mark": 'echo "apt-mark $*" >> "$STUB_LOG"',
    "apt-cache": textwrap.dedent(
        """\
        [[ "$1" == madison ]] || exit 0
        for line in ${STUB_REPO:-}; do
          pkg="${line%%=*}"; ver="${line#*=}"
          [[ "$pkg" == "$2" ]] && echo " $pkg | $ver | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages"
        done
        exit 0
        """
    ),
    "dpkg-query": textwrap.dedent(
        """\
        pkg="${*: -1}"
        for line in ${STUB_INSTALLED:-}; do
          [[ "${line%%=*}" == "$pkg" ]] && { printf 'installed %s' "${line#*=}"; exit 0; }
        done
        echo "dpkg-query: no packages found matching $pkg" >&2; exit 1
        """
    ),
}


def _cluster(kind: str, metrics: str):
    text = blueprint_text({"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}, "orchestrator": {"kind": kind}})
    return resolve(load_blueprint_text(text).blueprint)


def _run(script: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text("#!/usr/bin/env bash\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "exporters.sh").write_text(script)
    log = tmp_path / "calls.log"
    log.touch()
    ssm = tmp_path / "ssm.json"
    ssm.write_text(
        json.dumps(
            {
                "remote_write_url": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write",
                "alert_topic_arn": "arn:aws:sns:us-east-1:123456789012:alerts",
            }
        )
    )
    mounts = " && ".join(f"mkdir -p {m} && mount -t tmpfs tmpfs {m}" for m in MOUNTS)
    imds = IMDS_ACCESS_SCRIPT
    setup = (
        f"{mounts} && mkdir -p {os.path.dirname(imds)} && "
        f"printf '#!/bin/sh\\necho \"imds-access.sh $*\" >> \"$STUB_LOG\"\\n' > {imds} && "
        "mkdir -p /usr/local/sbin && printf '#!/bin/sh\\necho save_tables >> \"$STUB_LOG\"\\n' "
        "> /usr/local/sbin/save_tables.sh && chmod +x /usr/local/sbin/save_tables.sh && "
        # Slurm's commands where ParallelCluster and HyperPod install them (OrchestratorProfile.slurm_bin_dir), not on PATH
        f"mkdir -p /opt/slurm/bin && cp {bin_dir}/sinfo /opt/slurm/bin/ && "
        f"mkdir -p /usr/local/bin && bash {tmp_path}/exporters.sh; echo \"exit=$?\"; "
        "cat /var/lib/fmcluster/monitoring-state"
    )
    full_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin",
        "STUB_LOG": str(log),
        "STUB_SSM": str(ssm),
        "HOME": str(tmp_path),
        **env,
    }
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", setup],
        capture_output=True, text=True, env=full_env, timeout=120,
    )
    return proc, log.read_text().splitlines(), proc.stdout


def _state(stdout: str) -> dict[str, str]:
    line = next(x for x in stdout.splitlines() if MONITORING_STATE_LOG_PREFIX in x)
    return dict(kv.split("=") for kv in line.split(MONITORING_STATE_LOG_PREFIX, 1)[1].split())


def test_parallelcluster_head_slurm_exporter_failure_leaves_prometheus_running(sandbox: None, tmp_path: Path) -> None:
    rc = _cluster("parallelcluster", "managed")
    proc, calls, out = _run(render_exporter_script(exporter_context(rc, role="head")), tmp_path)
    assert "exit=0" in out, proc.stdout + proc.stderr  # a monitoring problem never fails the node
    state = _state(out)
    assert state == {
        "config": "ok", "imds": "ok", "prometheus": "ok", "node_exporter": "ok", "slurm_exporter": "failed",
    }, out
    # The IMDS allow (ParallelCluster's own script, lockdown on) runs and is saved before Prometheus starts.
    allow = calls.index("imds-access.sh --allow prometheus")
    assert calls[allow + 1] == "save_tables"
    assert allow < calls.index("systemctl restart fmcluster-prometheus.service")
    assert calls.index("systemctl restart fmcluster-prometheus.service") < next(
        i for i, c in enumerate(calls) if "prometheus-slurm-exporter_1.7.0_linux_amd64.tar.gz.sha256" in c
    )
    # the deploy did not copy the exporter (no recorded hash): reported, never downloaded from anywhere else
    assert "the deploy did not copy mirror/prometheus-slurm-exporter/" in out
    assert all(c.startswith("curl https://mirror.invalid/") for c in calls if c.startswith("curl "))
    # ExecStartPre re-applies the allow at every start, after ParallelCluster restored its saved rules at boot
    script = render_exporter_script(exporter_context(rc, role="head"))
    assert "ExecStartPre=+/usr/local/sbin/fmcluster-imds-allow prometheus" in script
    assert "After=network-online.target parallelcluster-iptables.service" in script
    assert "WARNING: slurm_exporter failed" in out


@pytest.mark.parametrize("metrics", ["managed", "self_hosted"])
def test_head_node_installs_everything_from_the_mirror(sandbox: None, tmp_path: Path, metrics: str) -> None:
    """With every object in the mirror (the Slurm exporter's hash recorded by the deploy), every step succeeds and every
    archive comes from the mirror bucket: no URL outside AWS is fetched (issue 23 item 4)."""
    rc = _cluster("parallelcluster", metrics)  # Slurm's commands in /opt/slurm/bin, as the sandbox has them
    proc, calls, out = _run(render_exporter_script(exporter_context(rc, role="head")), tmp_path,
                            STUB_RECORDED="a" * 64)
    assert "exit=0" in out, proc.stdout + proc.stderr
    assert set(_state(out).values()) == {"ok"}, out + proc.stderr
    fetched = sorted(c.removeprefix("curl https://mirror.invalid/") for c in calls if c.startswith("curl "))
    archives = ["node_exporter-1.7.0.linux-amd64.tar.gz", "prometheus-3.13.2.linux-amd64.tar.gz",
                "prometheus-slurm-exporter_1.7.0_linux_amd64.tar.gz"]
    if metrics == "self_hosted":
        archives += ["alertmanager-0.28.1.linux-amd64.tar.gz", "grafana-10.4.2.linux-amd64.tar.gz"]
    assert fetched == sorted(archives)
    assert "systemctl enable --now fmcluster-slurm-exporter.service" in calls


def test_prometheus_download_failure_is_reported_not_fatal(sandbox: None, tmp_path: Path) -> None:
    rc = _cluster("pcs", "self_hosted")
    proc, calls, out = _run(
        render_exporter_script(exporter_context(rc, role="head")), tmp_path, STUB_SHA_FAIL="prometheus"
    )
    assert "exit=0" in out, proc.stdout + proc.stderr
    state = _state(out)
    assert state["prometheus"] == "failed" and state["alertmanager"] == "ok" and state["node_exporter"] == "ok"
    assert "systemctl restart fmcluster-prometheus.service" not in calls
    # self-hosted Alertmanager gets the topic from the SSM parameter (no IMDS step outside ParallelCluster)
    assert "systemctl restart fmcluster-alertmanager.service" in calls
    assert not any(c.startswith("iptables") for c in calls)


@pytest.mark.parametrize(
    ("installed", "expect_state", "expect_install"),
    [
        # ParallelCluster 3.16 image: DCGM 4.6.0 is used as is, only the exporter is installed
        ("datacenter-gpu-manager-4-core=1:4.6.0-1", "ok", ["datacenter-gpu-manager-exporter=4.7.1-1"]),
        # DCGM 3 on the image: left alone, exporter skipped with a warning
        ("datacenter-gpu-manager=1:3.3.6", "skipped", []),
        # no DCGM: the pinned pair is installed
        ("", "ok", ["datacenter-gpu-manager-4-core=1:4.4.2-1", "datacenter-gpu-manager-exporter=4.7.1-1"]),
    ],
)
def test_gpu_node_never_downgrades_dcgm(
    sandbox: None, tmp_path: Path, installed: str, expect_state: str, expect_install: list[str]
) -> None:
    rc = _cluster("parallelcluster", "managed")
    script = render_exporter_script(exporter_context(rc, role="compute", group=rc.groups[0]))
    repo = " ".join(
        [
            "datacenter-gpu-manager-4-core=1:4.4.2-1", "datacenter-gpu-manager-4-core=1:4.6.0-1",
            "datacenter-gpu-manager-4-proprietary=1:4.4.2-1",
            f"datacenter-gpu-manager-exporter={DCGM_EXPORTER.version}-1",
        ]
    )
    proc, calls, out = _run(script, tmp_path, STUB_INSTALLED=installed, STUB_REPO=repo)
    assert "exit=0" in out, proc.stdout + proc.stderr
    assert _state(out) == {"node_exporter": "ok", "dcgm_exporter": expect_state}, out
    installs = [c for c in calls if c.startswith("apt-get install")]
    installed_specs = [s for c in installs for s in c.split() if "=" in s]
    for spec in expect_install:
        assert spec in installed_specs, installs
    assert not any(s.startswith("datacenter-gpu-manager-4-core=") for s in installed_specs) or not installed
    assert not any("--allow-downgrades" in c for c in installs)


def test_throughput_hook_writes_valid_textfile(tmp_path: Path) -> None:
    from fmcluster.features.observability.render_exporters import render_throughput_script

    rc = _cluster("parallelcluster", "managed")
    script = tmp_path / "publish"
    script.write_text(render_throughput_script(exporter_context(rc, role="compute", group=rc.groups[0])))
    env = {**os.environ, "FMC_TEXTFILE_DIR": str(tmp_path), "SLURM_JOB_ID": "4242"}
    ok = subprocess.run(["bash", str(script), "1.5e5"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "training-4242.prom").read_text()
    assert 'fmcluster_training_tokens_per_second{job_id="4242"} 1.5e5' in text
    assert "# TYPE fmcluster_training_last_update_timestamp_seconds gauge" in text
    bad = subprocess.run(["bash", str(script), "fast"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "TOKENS_PER_SECOND must be a non-negative number, got 'fast'" in bad.stderr
    promtool = shutil.which("promtool")
    if promtool:  # promtool check metrics reads the exposition format from stdin
        check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    clear = subprocess.run(["bash", str(script), "--clear"], capture_output=True, text=True, env=env)
    assert clear.returncode == 0 and not (tmp_path / "training-4242.prom").exists()
