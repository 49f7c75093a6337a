"""The exporter scripts run for real under bash against stub commands, in a private mount namespace whose
/opt, /usr/local, /var/lib, /var/log and /etc/{systemd/system,prometheus,alertmanager,grafana,dcgm-exporter}
are empty tmpfs mounts (nothing touches the machine).

Stubs model the real commands' interfaces: ``systemctl`` records its calls; ``curl -o`` writes a release
tarball with fake binaries; ``sha256sum -c`` passes unless the archive is listed in STUB_SHA_FAIL (a
mismatch exits 1 like coreutils); ``aws s3 cp`` of a mirror key serves such a tarball (the Slurm exporter's
with its binary at the top level, GoReleaser's layout), of ``KEY.sha256`` the recorded hash or a 404; ``iptables -S
PARALLELCLUSTER_IMDS`` prints a REJECT rule (ParallelCluster's lockdown on, Imds.Secured true);
``dpkg-query -W -f='${db:Status-Status} ${Version}'`` prints an installed package's status and version;
``useradd`` and ``chown`` only record. A package file in the mirror (``aws s3 cp`` of a ``.deb`` key) is the test's
stand-in from STUB_MIRROR_DIR (its control fields ``Package``, ``Version``), or the CLI's 404 when absent; ``dpkg
--install FILE`` installs the file's package (dpkg(1): it reads the archive's control member) into STUB_DPKG_DB, which
``dpkg-query`` reads too, or, with STUB_DPKG_MISSING_DEPENDS, leaves it unconfigured and exits 1 with dpkg's "dependency
problems" message; ``dpkg --remove`` records. ``internet=False`` (STUB_OFFLINE): a private subnet with only the S3
gateway endpoint: ``apt-get update``/``install`` fail to fetch (exit 100) and ``curl`` of anything but the instance
metadata service fails (exit 22, as the boot simulation's harness).

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

from fmcluster.catalog.images import get_image
from fmcluster.features.node.plan_mirror import mirror_objects
from fmcluster.features.observability.endpoints import MONITORING_STATE_LOG_PREFIX
from fmcluster.features.observability.pins import DCGM, DCGM_EXPORTER
from fmcluster.features.observability.render_exporters import IMDS_ACCESS_SCRIPT, exporter_context, render_exporter_script
from fmcluster.resolved import NODE_DIR, resolve
from fmcluster.resolved.mirror import mirror_bucket_suffix
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT

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
        if [[ -n "${STUB_OFFLINE:-}" && "${url}" != https://mirror.invalid/* ]]; then
          echo "curl: (22) The requested URL returned error: 404" >&2; exit 22
        fi
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
        if [[ "${src}" == *.deb ]]; then  # a package file: the test's stand-in, or absent
          if [[ ! -f "${STUB_MIRROR_DIR:-/nonexistent}/${src##*/}" ]]; then
            echo "fatal error: An error occurred (404) when calling the HeadObject operation: Not Found" >&2; exit 1
          fi
          cp "${STUB_MIRROR_DIR}/${src##*/}" "${*: -1}"; exit 0
        fi
        curl -o "${*: -1}" "https://mirror.invalid/${src##*/}"
        """
    ),
    "sinfo": 'echo "gpu-1 10.0.1.5"',
    "pgrep": "exit 1",
    "nvidia-smi": 'echo "| NVIDIA-SMI 595.71.05   Driver Version: 595.71.05   CUDA Version: 13.2 |"',
    "apt-get": textwrap.dedent(
        """\
        echo "apt-get $*" >> "$STUB_LOG"
        if [[ -n "${STUB_OFFLINE:-}" ]]; then
          echo "E: Failed to fetch https://developer.download.nvidia.com/compute/cuda/repos/  Could not connect" >&2
          exit 100
        fi
        """
    ),
    "apt-mark": 'echo "apt-mark $*" >> "$STUB_LOG"',
    "dpkg": textwrap.dedent(
        """\
        echo "dpkg $*" >> "$STUB_LOG"
        [[ "$1" == --install ]] || exit 0
        shift
        for f in "$@"; do
          pkg="$(sed -n 's/^Package: //p' "$f")"; ver="$(sed -n 's/^Version: //p' "$f")"
          if [[ -z "$pkg" || -z "$ver" ]]; then
            echo "dpkg-deb: error: '$f' is not a Debian format archive" >&2; exit 1
          fi
          if [[ -n "${STUB_DPKG_MISSING_DEPENDS:-}" ]]; then
            echo "dpkg: dependency problems prevent configuration of $pkg:" >&2
            echo " $pkg depends on ${STUB_DPKG_MISSING_DEPENDS}; however:" >&2
            echo "  Package ${STUB_DPKG_MISSING_DEPENDS%% *} is not installed." >&2
            exit 1
          fi
          echo "$pkg=$ver" >> "$STUB_DPKG_DB"
        done
        """
    ),
    "dpkg-query": textwrap.dedent(
        """\
        pkg="${*: -1}"
        for line in ${STUB_INSTALLED:-} $(cat "$STUB_DPKG_DB" 2>/dev/null); do
          [[ "${line%%=*}" == "$pkg" ]] && { printf 'installed %s' "${line#*=}"; exit 0; }
        done
        echo "dpkg-query: no packages found matching $pkg" >&2; exit 1
        """
    ),
}


def _cluster(kind: str, metrics: str):
    text = blueprint_text({"observability": {"metrics": metrics, "alert_email": "oncall@example.com"}, "orchestrator": {"kind": kind}})
    return resolve(load_blueprint_text(text).blueprint)


def _run(script: str, tmp_path: Path, *, internet: bool = True, **env: str
         ) -> tuple[subprocess.CompletedProcess[str], list[str], str]:
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
        "STUB_DPKG_DB": str(tmp_path / "dpkg.db"),
        **({} if internet else {"STUB_OFFLINE": "1"}),
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
        i for i, c in enumerate(calls) if "prometheus-slurm-exporter_linux_amd64.tar.gz.sha256" in c
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
                "prometheus-slurm-exporter_linux_amd64.tar.gz"]
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


DEFAULT = ROOT / "blueprints/default.yaml"
WORK = f"{NODE_DIR}/observability"  # the script's work folder (render_exporters._common)
#: DCGM on ParallelCluster's official image for the default example (the catalog's manifest), as dpkg lists it.
PC_DCGM = f"{DCGM.packages[0]}=1:{get_image('parallelcluster-3.16.3').components['dcgm']}-1"
#: The exporter's package file as NVIDIA's repository would carry it (the ``-1`` revision is the stand-in's).
EXPORTER_DEB = f"Package: {DCGM_EXPORTER.packages[0]}\nVersion: {DCGM_EXPORTER.version}-1\nArchitecture: amd64\n"


def _default_compute_script() -> tuple[str, str]:
    """The default example's compute exporter script and the mirror key of its dcgm-exporter package file."""
    rc = resolve(load_blueprint(DEFAULT))
    (key,) = [o.key for o in mirror_objects(rc) if o.component == "dcgm-exporter"]
    return render_exporter_script(exporter_context(rc, role="compute", group=rc.groups[0])), key


def _offline_gpu_node(tmp_path: Path, installed: str, *, copy: bool = True, **env: str
                      ) -> tuple[subprocess.CompletedProcess[str], list[str], str, str]:
    """The default example's compute exporter script on a node with ``installed`` packages, no internet, and the
    mirror holding the exporter's package file (``copy``) with the sha256 the deploy recorded for it."""
    script, key = _default_compute_script()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    if copy:
        (mirror / key.rsplit("/", 1)[1]).write_text(EXPORTER_DEB)
        env = {"STUB_RECORDED": "b" * 64, **env}
    proc, calls, out = _run(script, tmp_path, internet=False, STUB_INSTALLED=installed, STUB_MIRROR_DIR=str(mirror),
                            **env)
    return proc, calls, out, key


def test_default_example_gpu_node_installs_dcgm_exporter_from_the_mirror_without_internet(sandbox: None,
                                                                                          tmp_path: Path) -> None:
    """The regression of the mirror change: on ParallelCluster's official image (DCGM, no dcgm-exporter) in a subnet
    without internet, the exporter used to be installed from the image's repositories and failed; it now comes from the
    mirror's package file, checked against the recorded sha256, installed with dpkg and no repository."""
    proc, calls, out, key = _offline_gpu_node(tmp_path, PC_DCGM)
    assert "exit=0" in out, proc.stdout + proc.stderr
    assert _state(out) == {"node_exporter": "ok", "dcgm_exporter": "ok"}, out + proc.stderr
    name = key.rsplit("/", 1)[1]
    assert f"dpkg --install {WORK}/{name}" in calls
    assert not [c for c in calls if c.startswith(("apt-get", "dnf"))]
    assert not [c for c in calls if c.startswith("curl ") and not c.startswith("curl https://mirror.invalid/")]
    bucket, region = _bucket_and_region()
    assert [c for c in calls if c.startswith("aws s3 cp") and "dcgm" in c] == [
        f"aws s3 cp --only-show-errors --region {region} s3://{bucket}/{key}.sha256 "
        f"{WORK}/{name}.sha256",
        f"aws s3 cp --only-show-errors --region {region} s3://{bucket}/{key} {WORK}/{name}.part"]
    assert f"dcgm-exporter {DCGM_EXPORTER.version} installed from the cluster's mirror" in out
    assert "systemctl restart nvidia-dcgm-exporter.service" in calls


def _bucket_and_region() -> tuple[str, str]:
    rc = resolve(load_blueprint(DEFAULT))
    return f"fmc-mirror-123456789012{mirror_bucket_suffix(rc.name, rc.blueprint.region)}", rc.blueprint.region


# (case, installed packages, mirror copy present, extra env, dcgm_exporter state, installed from the mirror, message)
DCGM_CASES = [
    ("image DCGM 4.x without exporter", PC_DCGM, True, {}, "ok", True,
     f"using the image's DCGM {get_image('parallelcluster-3.16.3').components['dcgm']}"),
    ("image has the pinned exporter", f"{DCGM.packages[0]}=1:{DCGM.version}-1 "
     f"{DCGM_EXPORTER.packages[0]}={DCGM_EXPORTER.version}-1", True, {}, "ok", False, "on :9400"),
    ("DCGM 3 on the image", "datacenter-gpu-manager=1:3.3.6", True, {}, "skipped", False,
     "DCGM 3.3.6 on the image is not DCGM 4.x: dcgm-exporter 4.7.1 is not installed"),
    ("no DCGM on the image", "", True, {}, "skipped", False, "DCGM missing on the image; GPU metrics off"),
    ("the deploy skipped the copy", PC_DCGM, False, {}, "failed", False,
     ".sha256 could not be read: the deploy did not copy mirror/dcgm-exporter/"),
    ("the copy differs from the recorded sha256", PC_DCGM, True,
     {"STUB_SHA_FAIL": f"{DCGM_EXPORTER.packages[0]}-{DCGM_EXPORTER.version}"}, "failed", False, "sha256 mismatch"),
    ("the image lacks the package's dependencies", PC_DCGM, True,
     {"STUB_DPKG_MISSING_DEPENDS": "libdcgm4"}, "failed", False,
     "could not be installed from the mirror's file (its dependencies must be on the image); GPU metrics off"),
]


@pytest.mark.parametrize(("case", "installed", "copy", "env", "state", "from_mirror", "message"), DCGM_CASES,
                         ids=[c[0] for c in DCGM_CASES])
def test_gpu_node_dcgm_exporter_is_optional_and_never_touches_dcgm(
    sandbox: None, tmp_path: Path, case: str, installed: str, copy: bool, env: dict[str, str], state: str,
    from_mirror: bool, message: str,
) -> None:
    """No internet: the exporter comes from the mirror or not at all; DCGM is never installed, replaced or downgraded;
    whatever goes wrong is this step's state and a message, and the node's other exporters run (exit 0)."""
    proc, calls, out, key = _offline_gpu_node(tmp_path, installed, copy=copy, **env)
    assert "exit=0" in out, proc.stdout + proc.stderr
    assert _state(out) == {"node_exporter": "ok", "dcgm_exporter": state}, out + proc.stderr
    assert message in out + proc.stderr  # die writes to stderr; the boot logs both streams (bootstrap.log)
    installs = [c for c in calls if c.startswith("dpkg --install")]
    assert bool(installs) == (from_mirror or "dependencies" in case)
    assert all(key.rsplit("/", 1)[1] in c and "datacenter-gpu-manager-4" not in c for c in installs)
    assert not [c for c in calls if c.startswith(("apt-get", "dnf"))]
    assert ("dpkg --remove datacenter-gpu-manager-exporter" in calls) == ("dependencies" in case)
    if state == "failed":
        assert "WARNING: dcgm_exporter failed (exit 1); the node continues without it" in out
        assert "systemctl restart nvidia-dcgm-exporter.service" not in calls


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
