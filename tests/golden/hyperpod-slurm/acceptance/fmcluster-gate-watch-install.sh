#!/bin/bash
# fmcluster: install the acceptance gate's watcher on the controller node of hp-train (hyperpod-slurm).
# Writes the gate job of every EFA group to /opt/fmcluster/acceptance/, the watcher to /opt/fmcluster/bin/fmcluster-gate-watch and
# fmcluster-gate-watch.timer, which runs it every 60 seconds (docs/acceptance.md "When it runs"): the gate
# then runs by itself at the cluster's first start, after a node is replaced, rebooted or resumed, and on
# `/opt/fmcluster/bin/fmcluster-gate-watch request <group>` (a Capacity Block or training plan window start).
# Idempotent: a second run rewrites the same files. FMC_ROOT and FMC_SYSTEMCTL (tests only) prefix the paths and
# replace systemctl.
set -euo pipefail

root="${FMC_ROOT:-}"
systemctl="${FMC_SYSTEMCTL:-systemctl}"
units="${root}/etc/systemd/system"
log() { echo "fmcluster-gate-watch-install: $*" >&2; }

mkdir -p "${root}/opt/fmcluster/acceptance" "${root}/opt/fmcluster/bin" "${units}"
cat >"${root}/opt/fmcluster/acceptance/fmcluster-acceptance-gpu.sbatch" <<'FMCLUSTER_GATE_WATCH_EOF'
#!/usr/bin/env bash
#SBATCH --job-name=fmcluster-acceptance-gpu
#SBATCH --partition=gpu
#SBATCH --exclusive
#SBATCH --ntasks-per-node=8
#SBATCH --output=fmcluster-acceptance-%j.out
# fmcluster fleet acceptance gate for hp-train/gpu (p5.48xlarge, hyperpod-slurm).
# Rendered by fmcluster; do not edit by hand. docs/acceptance.md explains floors, rounds and verdicts.
# GPUs (hyperpod-slurm, OrchestratorProfile.slurm_gpus):
#   GPU nodes declare no gres/gpu, so the job asks for none (Slurm refuses --gpus-per-node)
#   devices not confined (no ConstrainDevices): an --exclusive job sees every GPU
#   unverified: no AWS page states HyperPod's gres.conf in the API-driven (Managed) mode fmcluster uses; a newer HyperPod image may declare gres/gpu
# (its steps get the GPUs the job asked for, not those an --exclusive job holds without asking: "By default, a job step
# is allocated all of the generic resources that have been requested by the job, except those implicitly requested
# when a job is exclusive", SchedMD/slurm doc/man/man1/srun.1 --gres)
#
# Usage (as root, the SlurmUser or a Slurm AdminLevel=Admin user: draining needs a super user,
# SchedMD/slurm src/slurmctld/proc_req.c _slurm_rpc_update_node -> validate_super_user):
#   sudo "$(command -v sbatch)" --nodes=<N> [--nodelist=<nodes>] fmcluster-acceptance-gpu.sbatch
# (sudo looks commands up in its secure_path, which has no Slurm directory on ParallelCluster: sudoers(5))
# It runs, inside its allocation:
#   1. fmcluster-node-check --no-nccl on every node (a failing node fails the gate and is not paired);
#   2. rounds of 2-node all_reduce_perf runs (srun --mpi=pmix, one rank per GPU) so that every node is
#      measured at least FMC_MIN_PARTNERS times with different partners (python3 -m fmcluster_acceptance plan);
#   3. broadcast_perf on pairs that cover every node once, under FMC_BROADCAST_TIMEOUT: a collective that has hung
#      alone (aws-ofi-nccl 1.18.0 hung on NCCL broadcast while all_reduce passed: aws/deep-learning-containers
#      PR #6551; fixed in aws-ofi-nccl 1.20.0, PR #6668); judged on finishing, not on bandwidth;
#      optionally (FMC_ALL_NODE_RUN=1) one all-node all_reduce run, reported, not judged;
#   4. the judge (python3 -m fmcluster_acceptance judge, the code behind `fmcluster acceptance judge`);
#   5. scontrol update NodeName=<node> State=FAIL Reason="Action:Replace" for every failed node
#      (hyperpod-slurm: HyperPod replaces the instance behind the node and returns it to service);
#   6. verdict.json, failed.txt, drained.txt under FMC_ACCEPTANCE_DIR/<job id>/ (and latest.json;
#      the node lists are what fmcluster-gate-watch reads back), and node_exporter textfile
#      metrics (fmcluster_acceptance_<group>.prom) on the batch node.
# Every exit path writes a verdict and the metrics (trap EXIT): when the gate could not run, verdict.json has
# status "could-not-run" with the reason, and the metrics say fmcluster_acceptance_gate_passed 0,
# fmcluster_acceptance_gate_could_not_run 1, so "never ran" never looks like "passed".
# Exit: 0 every node passed (suspects are reported), 1 a node failed (drained), 2 the gate could not run.
#
# Settings (environment, passed through sbatch --export or set before sbatch):
#   FMC_ACCEPTANCE_DIR  results root, on shared storage (default /fsx/fmcluster/acceptance)
#   FMC_MIN_PARTNERS    measurements per node, each with another partner (default 2)
#   FMC_MEDIAN_FRACTION a pair this fraction below the median of the pairs without node n is low for n (default 0.07)
#   FMC_DRAIN           0: report only, drain nothing (default 1)
#   FMC_MAX_DRAIN_FRACTION  drain nothing when more than this share of the nodes fail (default 0.5)
#   FMC_ALL_NODE_RUN    1: also one all_reduce_perf over every healthy node (default 0)
#   FMC_NCCL_TESTS_DIR  nccl-tests binaries, built with MPI=1 (default /opt/nccl-tests/build)
#   FMC_SRUN_MPI        srun --mpi plugin (default pmix)
#   FMC_PAIR_TIMEOUT    seconds per pair run (default 900)
#   FMC_BROADCAST_TIMEOUT  seconds per broadcast_perf pair run (default 300; one that does not finish hung)
#   FMC_NODE_CHECK_TIMEOUT  seconds per node check (default 600; a node that does not answer fails)
#   FMC_PYTHON          Python 3.8+ interpreter on the nodes (default python3)
#   FMC_NODE_CHECK, FMC_JOB_ENV, FMC_TEXTFILE_DIR  paths (defaults below)
set -uo pipefail

readonly INSTANCE_TYPE="p5.48xlarge"
readonly GPUS=8
readonly CLUSTER="hp-train"
readonly GROUP="gpu"
readonly MAX_BYTES=2147483648
# how this orchestrator takes a failed node out of service (OrchestratorProfile.gate_drain: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-replace-faulty-instance.html (scontrol update node=<node> state=fail reason="Action:Replace"))
readonly DRAIN_STATE="FAIL"
readonly DRAIN_REASON="Action:Replace"
# the cluster's Slurm client commands (OrchestratorProfile.slurm_bin_dir): `sudo sbatch` keeps sudo's secure_path,
# which lacks them (ParallelCluster: /opt/slurm/bin reaches PATH only through /etc/profile.d/slurm.sh)
PATH="/opt/slurm/bin:${PATH}"
NODE_CHECK="${FMC_NODE_CHECK:-/opt/fmcluster/bin/fmcluster-node-check}"
JOB_ENV="${FMC_JOB_ENV:-/opt/fmcluster/etc/job-env.sh}"
NCCL_TESTS_DIR="${FMC_NCCL_TESTS_DIR:-/opt/nccl-tests/build}"
OUT_ROOT="${FMC_ACCEPTANCE_DIR:-/fsx/fmcluster/acceptance}"
TEXTFILE_DIR="${FMC_TEXTFILE_DIR:-/var/lib/node_exporter/textfile}"
PYTHON="${FMC_PYTHON:-python3}"
MIN_PARTNERS="${FMC_MIN_PARTNERS:-2}"
MEDIAN_FRACTION="${FMC_MEDIAN_FRACTION:-0.07}"
DRAIN="${FMC_DRAIN:-1}"
MAX_DRAIN_FRACTION="${FMC_MAX_DRAIN_FRACTION:-0.5}"
ALL_NODE_RUN="${FMC_ALL_NODE_RUN:-0}"
SRUN_MPI="${FMC_SRUN_MPI:-pmix}"
PAIR_TIMEOUT="${FMC_PAIR_TIMEOUT:-900}"
BROADCAST_TIMEOUT="${FMC_BROADCAST_TIMEOUT:-300}"
NODE_CHECK_TIMEOUT="${FMC_NODE_CHECK_TIMEOUT:-600}"
# -b 8 -e MAX -f 2: the full table up to (at least) the floor's size; -g 1: one GPU per rank; -c 1: check
# the results (#wrong); the same arguments for every pair, so their tables are comparable.
NCCL_ARGS=(-b 8 -e "${MAX_BYTES}" -f 2 -g 1 -c 1 -n 20)

# number of arguments (the array-length expansion would open a Jinja comment in this template)
count() { echo "$#"; }
log() { printf '%s fmcluster-acceptance: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }
CANNOT_RUN=""
GATE_DONE=0
RUN_DIR=""
die() { CANNOT_RUN="$*"; printf 'fmcluster-acceptance: cannot run: %s\n' "$*" >&2; exit 2; }

# shellcheck disable=SC2329  # json_text, could_not_run and on_exit run from the EXIT trap
# JSON string body of $1 (backslash, quote and control characters dropped or escaped)
json_text() { printf '%s' "$1" | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }

# verdict.json and metrics when the gate stops before its verdict (shell only: python3 may be what is missing)
# shellcheck disable=SC2329
could_not_run() {
  local reason=$1 dir="${RUN_DIR:-${OUT_ROOT}/${SLURM_JOB_ID:-no-job}}" now labels prom
  now="$(date +%s)"
  labels="cluster=\"${CLUSTER}\",group=\"${GROUP}\",instance_type=\"${INSTANCE_TYPE}\""
  prom="fmcluster_acceptance_${GROUP}.prom"
  mkdir -p "${dir}" 2>/dev/null || dir=""
  if [[ -n ${dir} ]]; then
    printf '{"instance_type": "%s", "status": "could-not-run", "reason": "%s", "nodes": [], "pairs": []}\n' \
      "${INSTANCE_TYPE}" "$(json_text "${reason}")" >"${dir}/verdict.json" \
      && cp "${dir}/verdict.json" "${OUT_ROOT}/latest.json" 2>/dev/null
  fi
  for out in ${dir:+"${dir}/${prom}"} "${TEXTFILE_DIR}/${prom}"; do
    [[ -d ${out%/*} && -w ${out%/*} ]] || continue
    {
      echo "# HELP fmcluster_acceptance_gate_passed 1 when no node failed the last fleet acceptance gate."
      echo "# TYPE fmcluster_acceptance_gate_passed gauge"
      echo "fmcluster_acceptance_gate_passed{${labels}} 0"
      echo "# HELP fmcluster_acceptance_gate_could_not_run 1 when the last gate could not run (no verdict on the nodes)."
      echo "# TYPE fmcluster_acceptance_gate_could_not_run gauge"
      echo "fmcluster_acceptance_gate_could_not_run{${labels}} 1"
      echo "# HELP fmcluster_acceptance_last_run_timestamp_seconds When the last gate finished (Unix time)."
      echo "# TYPE fmcluster_acceptance_last_run_timestamp_seconds gauge"
      echo "fmcluster_acceptance_last_run_timestamp_seconds{${labels}} ${now}"
    } >"${out}.tmp.$$" && mv -f "${out}.tmp.$$" "${out}"
  done
}
# shellcheck disable=SC2329
on_exit() {
  local rc=$?
  [[ ${GATE_DONE} == 1 ]] || could_not_run "${CANNOT_RUN:-the gate stopped (exit ${rc}) before its verdict}"
}
trap on_exit EXIT

[[ -n ${SLURM_JOB_ID:-} && -n ${SLURM_JOB_NODELIST:-} ]] || die "not inside a Slurm job; submit this file with sbatch"
command -v "${PYTHON}" >/dev/null 2>&1 || die "${PYTHON} not found (set FMC_PYTHON to a Python 3.8+ interpreter)"
"${PYTHON}" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)' || die "${PYTHON} is older than Python 3.8"
[[ -x ${NCCL_TESTS_DIR}/all_reduce_perf ]] || die "no ${NCCL_TESTS_DIR}/all_reduce_perf (set FMC_NCCL_TESTS_DIR)"
[[ ${MIN_PARTNERS} =~ ^[1-9][0-9]*$ ]] || die "FMC_MIN_PARTNERS must be a positive integer, got '${MIN_PARTNERS}'"

RUN_DIR="${OUT_ROOT}/${SLURM_JOB_ID}"
RESULTS="${RUN_DIR}/results"
BUNDLE="${RUN_DIR}/bundle"
BROADCAST="${RUN_DIR}/broadcast"
mkdir -p "${RESULTS}" "${BROADCAST}" "${RUN_DIR}/node-check" "${RUN_DIR}/failed-runs" "${BUNDLE}/fmcluster_acceptance" \
  || die "cannot create ${RUN_DIR} (set FMC_ACCEPTANCE_DIR to a writable shared folder)"

# ---- the judge, shipped inside this file (fmcluster/acceptance: standard library only) ----------------
cat >"${BUNDLE}/fmcluster_acceptance/__init__.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""Fleet acceptance gate: pairwise NCCL all_reduce bandwidth of the nodes, judged per node against the
instance type's floor and the cluster median (docs/acceptance.md).

Layer: right after ``catalog`` (tests/test_layering.py). The modules ``nccl``, ``pairing``, ``judge``,
``metrics`` and ``__main__`` use the standard library only and relative imports, so the gate job ships them
as the ``fmcluster_acceptance`` package and runs them with the node's ``python3`` (:data:`SHIPPED`);
``floors`` reads the catalog and stays on the operator's side.
"""

#: Files of this package the gate bundle carries (standard library only; tests/features/acceptance/test_acceptance_gate.py).
SHIPPED = ("__init__.py", "nccl.py", "pairing.py", "judge.py", "metrics.py", "__main__.py")
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/fmcluster_acceptance/nccl.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""Parse one nccl-tests ``all_reduce_perf`` output (stdout, optionally with NCCL_DEBUG=INFO lines).

Standard library only: this module is shipped to the cluster with the gate job (docs/acceptance.md) and
runs on the node's system ``python3`` (3.8 or later).

The format is the one NVIDIA/nccl-tests prints (src/util.cu of v2.14-v2.19, src/common.cu before):

- device report, one line per rank: ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [<pci>] <name>``
  (writeDeviceReport) - the host names of the run;
- the table header ``#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw
  #wrong`` (writeResultHeader; ``cputime`` with -C, eight per-iteration columns per half with
  per-iteration timing, a trailing ``timestamp`` with -T; releases before ``root`` existed print no
  ``root`` column and an ``error`` column (maximum relative error, not a count) instead of ``#wrong``);
- one row per size: ``%12li  %12li  %8s  %6s  %6s`` then out-of-place and in-place ``time algbw busbw
  #wrong`` (``N/A`` when not checked) (writeBenchmarkLinePreamble / writeBenchmarkLineBody);
- the footer ``# Out of bounds values : %d OK|FAILED`` and ``# Avg bus bandwidth    : %g``
  (writeResultFooter).

Launcher prefixes are stripped: ``srun -l`` (``0: ``) and Open MPI ``--tag-output`` (``[1,0]<stdout>:``).
NCCL log lines (``<host>:<pid>:<tid> [<dev>] NCCL INFO <message>``) are kept per host: the network NCCL
chose (``Using network Socket`` / ``NET/Socket`` / ``via NET/Socket``), the libfabric provider and NIC
count aws-ofi-nccl prints (``NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)``;
``Selected Provider is efa (found 4 nics)`` before 1.14; aws/aws-ofi-nccl src/nccl_ofi_net.cpp) and
plugin initialisation failures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Bytes per element of the nccl-tests data types (src/common.cu test_typenames / wordSize).
TYPE_BYTES = {
    "int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
    "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1,
}

_PREFIX = re.compile(r"^(?:\s*\d+:\s?|\[\d+,\d+\]<std(?:out|err)>:)")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)\s+Group\s+(?P<group>\d+)\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+device\s+(?P<dev>\d+)")
_NCCL_LINE = re.compile(r"^(?P<host>[^\s:]+):\d+:\d+ \[\d+\] NCCL (?P<level>INFO|WARN) (?P<msg>.*)$")
_COLLECTIVE = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<word>OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_SOCKETS = re.compile(r"Using network Socket|NET/Socket : Using|via NET/Socket")
_PROVIDER = re.compile(r"Selected [Pp]rovider is (?P<prov>[^\s,()]+)(?:, fabric is [^()]*)? \(found (?P<nics>\d+) nics?\)")
_PLUGIN_FAILED = re.compile(
    r"NET/OFI aws-ofi-nccl initialization failed|NET/OFI No eligible providers|Failed to initialize (?:any )?NET plugin"
)


class NcclParseError(ValueError):
    """The text is not a complete all_reduce_perf output; ``str()`` says what is wrong and where."""


@dataclass(frozen=True)
class Row:
    """One table row: ``size_bytes``, element ``count`` and ``dtype``, and per half (out-of-place, in-place)
    the time (us), algbw and busbw (GB/s) and the wrong-element count (``None``: not checked, ``N/A``)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    oop_busbw_gbps: float
    ip_busbw_gbps: float
    oop_wrong: float | None
    ip_wrong: float | None
    line: int

    @property
    def busbw_gbps(self) -> float:
        """The better of the two halves: a node is judged on its best showing at a size."""
        return max(self.oop_busbw_gbps, self.ip_busbw_gbps)

    @property
    def wrong(self) -> bool:
        return bool(self.oop_wrong) or bool(self.ip_wrong)


@dataclass
class HostLog:
    """What the NCCL INFO lines of one host say (all empty when NCCL_DEBUG was not INFO)."""

    sockets: str = ""
    provider: str = ""
    nics: int | None = None
    provider_line: str = ""
    plugin_failure: str = ""


@dataclass
class NcclRun:
    """One parsed all_reduce_perf output.

    ``hosts``: host names in rank order (first appearance), from the ``# Rank`` lines; ``ranks_per_host``;
    ``rows`` by size; ``avg_busbw_gbps`` from the footer; ``out_of_bounds`` (``# Out of bounds values``);
    ``logs``: per host (``""`` for lines without a host prefix) what NCCL INFO said.
    """

    collective: str
    hosts: list[str]
    ranks_per_host: dict[str, int]
    rows: list[Row]
    avg_busbw_gbps: float
    out_of_bounds: int
    logs: dict[str, HostLog] = field(default_factory=dict)

    def row_at(self, size_bytes: int) -> Row | None:
        for r in self.rows:
            if r.size_bytes == size_bytes:
                return r
        return None

    @property
    def sizes(self) -> list[int]:
        return [r.size_bytes for r in self.rows]


def _number(text: str) -> float | None:
    if text == "N/A":
        return None
    return float(text)


def _header_columns(tokens: list[str]) -> dict[str, list[int]] | None:
    """Column indices of a result-table header line's tokens (without the leading ``#``)."""
    if len(tokens) < 8 or tokens[0] != "size" or tokens[1] != "count" or "busbw" not in tokens:
        return None
    cols: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        # "#wrong" counts wrong elements; the older "error" column is the maximum relative error of a float
        # reduction (2e-06 is normal), so it is kept apart and never read as wrong results
        name = "time" if t in ("time", "cputime") else t
        cols.setdefault(name, []).append(i)
    return cols


def _log_message(hostlog: HostLog, msg: str) -> None:
    if not hostlog.sockets and _SOCKETS.search(msg):
        hostlog.sockets = msg.strip()
    m = _PROVIDER.search(msg)
    if m:
        nics = int(m.group("nics"))
        # several ranks print it; keep the smallest count (the worst a rank of this host saw)
        if hostlog.nics is None or nics < hostlog.nics or m.group("prov") != "efa":
            hostlog.provider = m.group("prov")
            hostlog.nics = nics
            hostlog.provider_line = m.group(0)
    if not hostlog.plugin_failure and _PLUGIN_FAILED.search(msg):
        hostlog.plugin_failure = msg.strip()


def parse_all_reduce(text: str, name: str = "<output>") -> NcclRun:
    """Parse ``text`` (one all_reduce_perf run). ``name`` prefixes error messages.

    Raises:
        NcclParseError: empty text; no result table; a row that does not fit the header (truncated,
            wrong column count, a size that is not count x element size); no ``# Avg bus bandwidth`` footer
            (the run did not finish); a table without rows; more than one table.
    """
    if not text.strip():
        raise NcclParseError(f"{name}: empty file; expected an nccl-tests all_reduce_perf output")
    collective = ""
    hosts: list[str] = []
    ranks: dict[str, int] = {}
    rows: list[Row] = []
    logs: dict[str, HostLog] = {}
    cols: dict[str, list[int]] | None = None
    avg: float | None = None
    oob = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw, count=1).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        m = _NCCL_LINE.match(stripped)
        if m:
            _log_message(logs.setdefault(m.group("host"), HostLog()), m.group("msg"))
            continue
        if "NCCL INFO" in stripped or "NCCL WARN" in stripped:
            _log_message(logs.setdefault("", HostLog()), stripped)
            continue
        if stripped.startswith("#"):
            body = stripped[1:].strip()
            m = _RANK.match(stripped)
            if m:
                host = m.group("host")
                if host not in ranks:
                    hosts.append(host)
                    ranks[host] = 0
                ranks[host] += 1
                continue
            m = _COLLECTIVE.match(stripped)
            if m:
                collective = m.group("name")
                continue
            header = _header_columns(body.split())
            if header is not None:
                if cols is not None:
                    raise NcclParseError(f"{name}:{lineno}: a second result table; expected one all_reduce_perf run per file")
                cols = header
                continue
            m = _OOB.match(stripped)
            if m:
                oob = int(m.group("n"))
                continue
            m = _AVG.match(stripped)
            if m:
                try:
                    avg = float(m.group("bw"))
                except ValueError:
                    raise NcclParseError(f"{name}:{lineno}: unreadable average bus bandwidth {m.group('bw')!r}") from None
                continue
            continue
        tokens = stripped.split()
        if cols is None or avg is not None or not tokens[0].isdigit():
            continue  # program output outside the table (launcher banners, warnings)
        busbw = cols["busbw"]
        wrong = cols.get("#wrong", [])
        need = max(busbw + wrong + cols.get("error", [])) + 1
        if len(busbw) < 2 or len(tokens) < need:
            raise NcclParseError(
                f"{name}:{lineno}: row has {len(tokens)} column(s), the header needs {need}: truncated table? ({stripped[:80]!r})")
        try:
            size = int(tokens[0])
            count = int(tokens[1])
            dtype = tokens[cols["type"][0]] if "type" in cols else ""
            redop = tokens[cols["redop"][0]] if "redop" in cols else ""
            oop_bw = float(tokens[busbw[0]])
            ip_bw = float(tokens[busbw[1]])
            oop_wrong = _number(tokens[wrong[0]]) if wrong else None
            ip_wrong = _number(tokens[wrong[1]]) if len(wrong) > 1 else None
        except (ValueError, IndexError):
            raise NcclParseError(f"{name}:{lineno}: unreadable row {stripped[:80]!r}") from None
        width = TYPE_BYTES.get(dtype)
        if width is not None and size != count * width:
            raise NcclParseError(
                f"{name}:{lineno}: size {size} B is not {count} x {width} B ({dtype}): a corrupted or hand-edited table")
        rows.append(Row(size, count, dtype, redop, oop_bw, ip_bw, oop_wrong, ip_wrong, lineno))
    if cols is None:
        raise NcclParseError(f"{name}: no nccl-tests result table (no '#  size  count  type ...' header line)")
    if not rows:
        raise NcclParseError(f"{name}: the result table has no rows: truncated output or the run failed before the first size")
    if avg is None:
        raise NcclParseError(
            f"{name}: no '# Avg bus bandwidth' footer after the last row ({rows[-1].size_bytes} B): truncated output, "
            "the run did not finish")
    sizes = [r.size_bytes for r in rows]
    if len(set(sizes)) != len(sizes):
        dup = sorted({s for s in sizes if sizes.count(s) > 1})
        raise NcclParseError(f"{name}: size(s) {', '.join(map(str, dup))} appear more than once in the table")
    return NcclRun(collective, hosts, ranks, rows, avg, oob, logs)
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/fmcluster_acceptance/pairing.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""The pairing plan of the acceptance gate: which two nodes run all_reduce_perf together, round by round.

Standard library only (shipped to the cluster with the gate job). Pure: the same node list gives the same
plan.

Every node is measured at least ``min_partners`` times (default 2), each time with a different partner, so
a slow node shows up in every one of its pairs while each of its partners also has a healthy pair
(docs/acceptance.md "Rounds"). Pairs of one round share no node, so a round's pairs run at the same time.

- even count: the circle method (one node fixed, the others rotate): ``min_partners`` rounds, every pair
  new;
- odd count: the circle method with a bye; one node sits out each round, so ``min_partners + 1`` rounds
  (capped at the count) give everyone ``min_partners`` partners;
- two nodes: one possible partner: the same pair ``min_partners`` times (the nodes cannot be told apart;
  only the floor judges them);
- one node (or none): no rounds (only the single-node check runs).
"""

from __future__ import annotations

from collections import Counter
from typing import List, Sequence, Tuple  # noqa: UP035  (runtime aliases on the node's Python 3.8)

Pair = Tuple[str, str]  # noqa: UP006
Round = List[Pair]  # noqa: UP006


class PairingError(ValueError):
    """Bad input to :func:`pairing_plan` (duplicate or empty node names, fewer than one round)."""


def _circle_rounds(nodes: Sequence[str]) -> list[Round]:
    """All rounds of the circle method for ``nodes`` (padded with a bye when odd): every pair once."""
    ring: list[str | None] = list(nodes)
    if len(ring) % 2:
        ring.append(None)
    n = len(ring)
    rounds: list[Round] = []
    for _ in range(n - 1):
        pairs: Round = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def pairing_plan(nodes: Sequence[str], min_partners: int = 2) -> list[Round]:
    """Rounds of disjoint pairs so that every node has at least ``min_partners`` measurements with as many
    different partners as the node count allows (``len(nodes) - 1``).

    Args:
        nodes: Slurm node names, in the order ``scontrol show hostnames`` gives them.
        min_partners: measurements per node (>= 1).

    Returns:
        ``[[(a, b), ...], ...]``: one list of pairs per round; ``[]`` for fewer than two nodes.

    Raises:
        PairingError: a duplicate or empty node name, or ``min_partners`` below 1.
    """
    if min_partners < 1:
        raise PairingError(f"min_partners must be at least 1, got {min_partners}")
    names = list(nodes)
    bad = [repr(n) for n in names if not n or not n.strip() or any(c.isspace() for c in n)]
    if bad:
        raise PairingError(f"node names must be non-empty without spaces, got {', '.join(bad)}")
    dup = sorted(n for n, c in Counter(names).items() if c > 1)
    if dup:
        raise PairingError(f"node names must be unique, got {', '.join(dup)} more than once")
    if len(names) < 2:
        return []
    if len(names) == 2:
        return [[(names[0], names[1])] for _ in range(min_partners)]
    rounds: list[Round] = []
    measured: Counter[str] = Counter()
    all_rounds = _circle_rounds(names)
    # cycle through the full round-robin again when more measurements than partners are asked for
    i = 0
    while min(measured[n] for n in names) < min_partners:
        r = all_rounds[i % len(all_rounds)]
        rounds.append(r)
        for a, b in r:
            measured[a] += 1
            measured[b] += 1
        i += 1
    return rounds


def plan_lines(rounds: list[Round]) -> str:
    """The plan as text for the gate job: one ``<round> <node-a> <node-b>`` line per pair, rounds from 1."""
    return "".join(f"{i} {a} {b}\n" for i, r in enumerate(rounds, start=1) for a, b in r)
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/fmcluster_acceptance/judge.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""The acceptance judge: nccl-tests all_reduce_perf outputs of node pairs -> pass / suspect / fail per node.

Standard library only (shipped to the cluster with the gate job; the ``fmcluster acceptance judge``
command and the job call the same :func:`judge`). Rules (docs/acceptance.md "Verdicts"):

- Each pair is judged at the reference size (the floor's message size, 1 GiB by default) on its bus
  bandwidth (the better of out-of-place and in-place ``busbw``).
- A pair is *bad* for both its nodes when NCCL ran on sockets, on another libfabric provider, on fewer EFA NICs
  than the type has or without its network plugin (NCCL INFO lines, attributed to the host that printed them),
  when the data check found wrong elements, or when it is below the enforced floor (judged per pair, so a
  2-node cluster is judged against the floor alone).
- Relative judgement, leave-one-out: a pair is *low* for node n when it is more than ``median_fraction``
  below n's reference, the median of the measured pairs that do not include n (pairs with a named cause left
  out). The node under test never drags its own reference down, so one slow node is found in 3- and 4-node
  clusters, where it is in half the pairs; a node with no pair outside its own (2 nodes) has no reference.
- A node *fails* when a cause is attributed to it, or when it has bad or low pairs with at least two different
  partners (or with its only possible partner, twice) and no good pair. A bad pair whose partner failed is
  explained; a node left with an unexplained bad pair is *suspect*; every other node *passes*.
- An unverified floor is reported with every pair below it, never failed on.

Exit codes of the command: 0 no node fails (suspects are reported), 1 a node fails, 2 unreadable or
inconsistent input (``JudgeInputError``: every problem listed, each naming its file).
"""

from __future__ import annotations

import json
import os
import re
import statistics
from dataclasses import asdict, dataclass, field

from .nccl import NcclParseError, NcclRun, parse_all_reduce

#: A pair below (1 - MEDIAN_FRACTION) x the median of the pairs without node n is low for n (leave-one-out).
#: 0.07: a node at 90 % of its peers is found (its pairs 10 % below the reference); run-to-run noise of +-3 % per
#: pair (at worst 0.97 / 1.03 = 5.8 % below) is not (tests/test_acceptance_judge.py, the noise table).
MEDIAN_FRACTION = 0.07
#: File names the gate writes: ``r<round>_<host-a>_<host-b>.log`` (host names never contain ``_``:
#: RFC 952/1123; Slurm node names of ParallelCluster, HyperPod and PCS neither), ``all.log`` for the
#: optional all-node run. Any other name is accepted; hosts then come from the ``# Rank`` lines.
RESULT_FILE = re.compile(r"^r(?P<round>\d+)_(?P<hosts>[^_]+(?:_[^_]+)+?)\.(?:log|out|txt)$")
RESULT_SUFFIXES = (".log", ".out", ".txt")


def read_aliases(path: str) -> dict[str, str]:
    """``<slurm-node> <hostname>`` lines (the gate's ``hostnames`` file) as hostname -> node name."""
    aliases: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                aliases[parts[1]] = parts[0]
    return aliases

PASS, SUSPECT, FAIL = "pass", "suspect", "fail"


class JudgeInputError(ValueError):
    """The results cannot be judged. ``problems``: one message per problem, each naming its file."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Floor:
    """What a pair of ``instance_type`` must reach at ``reference_size_bytes``.

    ``floor_busbw_gbps`` (GB/s, ``None``: no figure) fails a pair only when ``enforced``; ``expected_busbw_gbps``
    is a published healthy-pair figure (evidence and the EFA-count estimate); ``efa_devices`` and ``gpus`` per
    node from the instance catalog.
    """

    instance_type: str
    reference_size_bytes: int
    floor_busbw_gbps: float | None
    enforced: bool
    expected_busbw_gbps: float | None
    efa_devices: int
    gpus: int
    source: str = ""
    note: str = ""

    @classmethod
    def from_dict(cls, d: dict) -> Floor:
        """From the ``floors.json`` the gate bundle carries (the fields of this class)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Measurement:
    """One result file: ``hosts`` in rank order, ``round`` from the file name (``None``: not named)."""

    file: str
    round: int | None
    hosts: tuple[str, ...]
    run: NcclRun


@dataclass
class Cause:
    """A named reason a pair is bad: ``kind`` (sockets, provider, efa-nics, net-plugin, wrong-results),
    the ``host`` it is attributed to (``""``: the pair) and the NCCL line or figure behind it."""

    kind: str
    host: str
    detail: str


@dataclass
class PairResult:
    file: str
    round: int | None
    nodes: tuple[str, str]
    size_bytes: int
    busbw_gbps: float
    floor_gbps: float | None
    floor_enforced: bool
    cluster_median_gbps: float
    status: str  # ok | below-floor | cause
    causes: list[Cause] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: node -> its leave-one-out reference (GB/s) for the nodes this pair is low for
    low_for: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class NodeVerdict:
    node: str
    verdict: str
    reason: str
    busbw_gbps: float | None
    pairs: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    """The judge's answer. ``status`` fail when any node fails; ``nodes`` sorted by name."""

    instance_type: str
    status: str
    floor: Floor
    median_fraction: float
    cluster_median_gbps: float
    nodes: list[NodeVerdict]
    pairs: list[PairResult]
    all_node_runs: list[dict]

    @property
    def exit_code(self) -> int:
        return 1 if self.status == FAIL else 0

    def failed_nodes(self) -> list[NodeVerdict]:
        return [n for n in self.nodes if n.verdict == FAIL]

    def as_dict(self) -> dict:
        return {
            "instance_type": self.instance_type,
            "status": self.status,
            "floor": asdict(self.floor),
            "median_fraction": self.median_fraction,
            "cluster_median_busbw_gbps": round(self.cluster_median_gbps, 2),
            "nodes": [asdict(n) for n in self.nodes],
            "pairs": [{**asdict(p), "nodes": list(p.nodes)} for p in self.pairs],
            "all_node_runs": self.all_node_runs,
        }


# ---- reading -----------------------------------------------------------------------------------------
def measurement_from_text(text: str, file: str, aliases: dict[str, str] | None = None) -> Measurement:
    """Parse one result file's ``text``; hosts from the ``# Rank`` lines, else from the file name.

    ``aliases`` maps a host name as the node prints it (``gethostname``, in the rank and NCCL lines) to the
    Slurm node name (what the gate names files by and drains); the gate records it while running the node
    check.

    Raises:
        JudgeInputError: unparseable output, no host names, or file-name hosts that disagree with the
            rank lines.
    """
    try:
        run = parse_all_reduce(text, file)
    except NcclParseError as e:
        raise JudgeInputError([str(e)]) from None
    if aliases:
        run.hosts = [aliases.get(h, h) for h in run.hosts]
        run.ranks_per_host = {aliases.get(h, h): n for h, n in run.ranks_per_host.items()}
        run.logs = {aliases.get(h, h): log for h, log in run.logs.items()}
    m = RESULT_FILE.match(os.path.basename(file))
    named = tuple(m.group("hosts").split("_")) if m else ()
    rnd = int(m.group("round")) if m else None
    hosts = tuple(run.hosts) or named
    if not hosts:
        raise JudgeInputError([f"{file}: no '#  Rank N Group N Pid N on <host>' lines and no r<round>_<host>_<host>.log "
                               "file name: cannot tell which nodes ran"])
    if named and run.hosts and set(named) != set(run.hosts):
        raise JudgeInputError([f"{file}: the file name names {', '.join(named)} but the rank lines say "
                               f"{', '.join(run.hosts)}"])
    return Measurement(file, rnd, hosts, run)


def load_results(directory: str, aliases: dict[str, str] | None = None) -> list[Measurement]:
    """Every result file (``*.log``, ``*.out``, ``*.txt``) in ``directory``, sorted by name (``aliases``: see
    :func:`measurement_from_text`).

    Raises:
        JudgeInputError: the folder is missing or holds no result file, or files are unreadable (every
            problem at once).
    """
    if not os.path.isdir(directory):
        raise JudgeInputError([f"{directory}: not a folder; expected the folder of all_reduce_perf outputs"])
    names = sorted(n for n in os.listdir(directory) if n.endswith(RESULT_SUFFIXES)
                   and os.path.isfile(os.path.join(directory, n)))
    if not names:
        raise JudgeInputError([f"{directory}: no result files (*.log, *.out, *.txt)"])
    out: list[Measurement] = []
    problems: list[str] = []
    for n in names:
        path = os.path.join(directory, n)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            problems.append(f"{path}: cannot read: {e.strerror or e}")
            continue
        try:
            out.append(measurement_from_text(text, path, aliases))
        except JudgeInputError as e:
            problems.extend(e.problems)
    if problems:
        raise JudgeInputError(problems)
    return out


# ---- judging -----------------------------------------------------------------------------------------
def _check_consistency(ms: list[Measurement], floor: Floor, has_failed_runs: bool = False) -> list[str]:
    problems = []
    pairs = [m for m in ms if len(m.hosts) == 2]
    for m in ms:
        if len(m.hosts) < 2:
            problems.append(f"{m.file}: ran on one host ({m.hosts[0]}); the gate judges runs of two nodes")
        if m.run.collective and m.run.collective != "all_reduce_perf":
            problems.append(f"{m.file}: is a {m.run.collective} run; the floors are for all_reduce_perf")
        if m.run.ranks_per_host and floor.gpus:
            off = {h: n for h, n in m.run.ranks_per_host.items() if n != floor.gpus}
            if off:
                problems.append(f"{m.file}: {', '.join(f'{h} ran {n} rank(s)' for h, n in sorted(off.items()))}; "
                                f"{floor.instance_type} has {floor.gpus} GPUs: one rank per GPU is needed to compare with the floor")
    for m in pairs:
        if m.run.row_at(floor.reference_size_bytes) is None:
            problems.append(f"{m.file}: no row at the reference size {floor.reference_size_bytes} B (table has "
                            f"{m.run.sizes[0]}..{m.run.sizes[-1]} B); run all_reduce_perf with "
                            f"{_sizes_fix(m.run.sizes, floor.reference_size_bytes)}")
    size_sets = {tuple(m.run.sizes) for m in pairs}
    if len(size_sets) > 1:
        first = pairs[0]
        for m in pairs[1:]:
            if m.run.sizes != first.run.sizes:
                problems.append(f"{m.file}: message sizes {m.run.sizes[0]}..{m.run.sizes[-1]} B ({len(m.run.sizes)} rows) "
                                f"differ from {first.file} ({first.run.sizes[0]}..{first.run.sizes[-1]} B, "
                                f"{len(first.run.sizes)} rows): mismatched sizes, the pairs are not comparable")
    dtypes = {r.dtype for m in pairs for r in m.run.rows}
    if len(dtypes) > 1:
        problems.append(f"pairs ran with different data types ({', '.join(sorted(dtypes))}); not comparable")
    if not pairs and not problems and not has_failed_runs:
        problems.append("no two-node run among the results; the gate judges pairs")
    return problems


def _host_causes(m: Measurement, floor: Floor) -> list[Cause]:
    causes = []
    for host, log in sorted(m.run.logs.items()):
        if log.sockets:
            causes.append(Cause("sockets", host, f"NCCL used sockets, not EFA: {log.sockets}"))
        if log.provider and log.provider != "efa":
            causes.append(Cause("provider", host, f"libfabric provider {log.provider}, not efa: {log.provider_line}"))
        elif log.nics is not None and floor.efa_devices and log.nics < floor.efa_devices:
            causes.append(Cause("efa-nics", host, f"{log.nics} of {floor.efa_devices} EFA devices in use "
                                                  f"({floor.instance_type}): {log.provider_line}"))
        if log.plugin_failure:
            causes.append(Cause("net-plugin", host, f"network plugin failed: {log.plugin_failure}"))
    return causes


def _efa_estimate(busbw: float, floor: Floor) -> str:
    """'bandwidth fits about k of M EFA devices' when a published figure allows the estimate."""
    if not floor.expected_busbw_gbps or floor.efa_devices < 2:
        return ""
    k = round(busbw / floor.expected_busbw_gbps * floor.efa_devices)
    if 0 < k < floor.efa_devices:
        return (f"{busbw:.1f} GB/s is about {k} of {floor.efa_devices} EFA devices' worth of the published "
                f"{floor.expected_busbw_gbps:g} GB/s")
    return ""


@dataclass(frozen=True)
class FailedRun:
    """A pair run that did not finish (the gate's ``failed-runs.txt`` line ``<round> <a> <b> <reason>``)."""

    round: int | None
    nodes: tuple[str, str]
    reason: str


def read_failed_runs(path: str) -> list[FailedRun]:
    """``<round> <node-a> <node-b> <reason...>`` lines (``-`` for no round)."""
    runs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split(None, 3)
            if len(parts) >= 3:
                rnd = int(parts[0]) if parts[0].isdigit() else None
                runs.append(FailedRun(rnd, (parts[1], parts[2]), parts[3].strip() if len(parts) > 3 else "run failed"))
    return runs


#: More than this share of pair runs failing to run means the gate itself is broken (MPI, nccl-tests,
#: the job environment), not the nodes: nothing is judged (and so nothing drained).
MAX_FAILED_RUN_SHARE = 0.5


def judge(measurements: list[Measurement], floor: Floor, median_fraction: float = MEDIAN_FRACTION,
          failed_runs: list[FailedRun] | None = None) -> Verdict:
    """Judge ``measurements`` against ``floor``; see the module docstring for the rules. ``failed_runs``:
    pair runs that did not finish; each is a bad pair (cause ``run-failed``).

    Raises:
        JudgeInputError: inconsistent input (single-host runs, another collective, ranks per node that are
            not the type's GPU count, no row at the reference size, mismatched message sizes or data types,
            no pair at all, more than half of the pair runs failed), every problem listed.
    """
    if not 0 < median_fraction < 1:
        raise JudgeInputError([f"median fraction must be between 0 and 1, got {median_fraction}"])
    failed_runs = list(failed_runs or [])
    problems = _check_consistency(measurements, floor, bool(failed_runs))
    pair_ms = [m for m in measurements if len(m.hosts) == 2]
    total = len(pair_ms) + len(failed_runs)
    if failed_runs and len(failed_runs) > MAX_FAILED_RUN_SHARE * total:
        problems.append(f"{len(failed_runs)} of {total} pair runs did not finish: the gate itself is broken (srun "
                        "--mpi, nccl-tests, the job environment), not the nodes; nothing judged")
    if problems:
        raise JudgeInputError(problems)
    size = floor.reference_size_bytes
    values = []
    for m in pair_ms:
        row = m.run.row_at(size)
        assert row is not None  # checked above
        values.append(row.busbw_gbps)
    median = statistics.median(values) if values else 0.0
    pairs: list[PairResult] = []
    for m, value in zip(pair_ms, values):  # noqa: B905  (same length; strict= needs Python 3.10, the node may have 3.8)
        row = m.run.row_at(size)
        assert row is not None
        causes = _host_causes(m, floor)
        if row.wrong or m.run.out_of_bounds:
            causes.append(Cause("wrong-results", "", f"nccl-tests found wrong elements (#wrong {row.oop_wrong:g}/"
                                f"{row.ip_wrong:g} at {size} B, out of bounds {m.run.out_of_bounds})"
                                if row.oop_wrong is not None and row.ip_wrong is not None
                                else f"nccl-tests reported {m.run.out_of_bounds} out-of-bounds value(s)"))
        notes = []
        if causes:
            status = "cause"
        elif floor.enforced and floor.floor_busbw_gbps is not None and value < floor.floor_busbw_gbps:
            status = "below-floor"
        else:
            status = "ok"
        if not floor.enforced and floor.floor_busbw_gbps is not None and value < floor.floor_busbw_gbps:
            notes.append(f"below the unverified floor {floor.floor_busbw_gbps:g} GB/s (reported, not enforced)")
        if status in ("below-floor", "cause"):
            est = _efa_estimate(value, floor)
            if est:
                notes.append(est)
        a, b = m.hosts
        pairs.append(PairResult(m.file, m.round, (a, b), size, value, floor.floor_busbw_gbps, floor.enforced,
                                median, status, causes, notes))
    for fr in failed_runs:
        pairs.append(PairResult("", fr.round, fr.nodes, size, 0.0, floor.floor_busbw_gbps, floor.enforced, median,
                                "cause", [Cause("run-failed", "", fr.reason)], []))
    _mark_low(pairs, median_fraction)
    nodes = _node_verdicts(pairs, median_fraction)
    all_node = [
        {"file": m.file, "hosts": list(m.hosts), "avg_busbw_gbps": m.run.avg_busbw_gbps,
         "busbw_gbps": None if m.run.row_at(size) is None else m.run.row_at(size).busbw_gbps}  # type: ignore[union-attr]
        for m in measurements if len(m.hosts) > 2
    ]
    status = FAIL if any(n.verdict == FAIL for n in nodes) else PASS
    return Verdict(floor.instance_type, status, floor, median_fraction, median, nodes, pairs, all_node)


def leave_one_out_reference(pairs: list[PairResult], node: str) -> float | None:
    """Median bus bandwidth (GB/s) of the measured pairs without ``node`` and without a named cause; ``None`` when
    there is none (a 2-node cluster: the floor alone judges it)."""
    values = [p.busbw_gbps for p in pairs if node not in p.nodes and p.status != "cause"]
    return statistics.median(values) if values else None


def _mark_low(pairs: list[PairResult], median_fraction: float) -> None:
    """Fill ``PairResult.low_for``: each node's pairs against its leave-one-out reference."""
    nodes = sorted({n for p in pairs for n in p.nodes})
    for n in nodes:
        ref = leave_one_out_reference(pairs, n)
        if ref is None:
            continue
        for p in pairs:
            if n in p.nodes and p.status != "cause" and p.busbw_gbps < (1 - median_fraction) * ref:
                p.low_for[n] = ref


def _status_for(p: PairResult, node: str) -> str:
    """The pair's status as ``node`` sees it: ``low`` when it is low against the node's reference."""
    return "low" if p.status == "ok" and node in p.low_for else p.status


def _describe(p: PairResult, node: str) -> str:
    partner = p.nodes[1] if p.nodes[0] == node else p.nodes[0]
    rnd = f"round {p.round}, " if p.round is not None else ""
    text = f"{rnd}with {partner}: {p.busbw_gbps:.1f} GB/s at {p.size_bytes} B ({_status_for(p, node)}; "
    floor = "none" if p.floor_gbps is None else f"{p.floor_gbps:g}{'' if p.floor_enforced else ' unverified'}"
    where = os.path.basename(p.file) if p.file else "; ".join(c.detail for c in p.causes)
    ref = f", pairs without {node} {p.low_for[node]:.1f}" if node in p.low_for else ""
    return text + f"floor {floor}, cluster median {p.cluster_median_gbps:.1f}{ref}) [{where}]"


def _node_verdicts(pairs: list[PairResult], median_fraction: float) -> list[NodeVerdict]:
    by_node: dict[str, list[PairResult]] = {}
    for p in pairs:
        for n in p.nodes:
            by_node.setdefault(n, []).append(p)

    def partner(p: PairResult, n: str) -> str:
        return p.nodes[1] if p.nodes[0] == n else p.nodes[0]

    def good_for(p: PairResult, n: str) -> bool:
        return p.ok and n not in p.low_for

    def blamed(n: str) -> list[Cause]:
        return [c for p in by_node[n] for c in p.causes if c.host == n]

    failed: dict[str, str] = {}
    for n, ps in by_node.items():
        own = blamed(n)
        if own:
            failed[n] = f"{own[0].kind}: {own[0].detail}"
            continue
        # bad pairs not explained by a cause the partner printed
        bad = [p for p in ps if not good_for(p, n) and not any(c.host == partner(p, n) for c in p.causes)]
        good = [p for p in ps if good_for(p, n)]
        partners = {partner(p, n) for p in bad}
        only_one_partner = len({partner(p, n) for p in ps}) == 1
        if not good and (len(partners) >= 2 or (only_one_partner and len(bad) >= 2)):
            worst = min(bad, key=lambda p: p.busbw_gbps)
            why = {"below-floor": "below the floor",
                   "low": f"more than {median_fraction:.0%} below the median of the pairs without it "
                          f"({worst.low_for.get(n, 0.0):.1f} GB/s)",
                   "cause": "bad pair"}[_status_for(worst, n)]
            pair_causes = [c for p in bad for c in p.causes if not c.host]
            lead = f"{pair_causes[0].kind}: {pair_causes[0].detail}; " if pair_causes else ""
            alone = " (only one possible partner: the pair cannot be told apart)" if only_one_partner else ""
            failed[n] = (f"{lead}{len(bad)} of {len(ps)} pair(s) {why}{alone}, no good pair; worst "
                         f"{worst.busbw_gbps:.1f} GB/s with {partner(worst, n)}")
    out = []
    for n in sorted(by_node):
        ps = by_node[n]
        value = statistics.median([p.busbw_gbps for p in ps])
        evidence = [_describe(p, n) for p in ps]
        if n in failed:
            out.append(NodeVerdict(n, FAIL, failed[n], value, evidence))
            continue
        unexplained = [p for p in ps if not good_for(p, n) and partner(p, n) not in failed
                       and not any(c.host == partner(p, n) for c in p.causes)]
        if unexplained:
            p = unexplained[0]
            once = " (measured once)" if len(ps) == 1 else ""
            out.append(NodeVerdict(n, SUSPECT, f"{len(unexplained)} bad pair(s) not explained by a failed partner{once}: "
                                               f"{p.busbw_gbps:.1f} GB/s with {partner(p, n)} ({_status_for(p, n)})", value, evidence))
        else:
            explained = [p for p in ps if not good_for(p, n)]
            why = f"; {len(explained)} bad pair(s) explained by a failed partner" if explained else ""
            out.append(NodeVerdict(n, PASS, f"{len(ps) - len(explained)} good pair(s){why}", value, evidence))
    return out


# ---- broadcast: judged on finishing ---------------------------------------------------------------------
#: The collective the gate runs besides all_reduce: aws-ofi-nccl 1.18.0 hung on NCCL broadcast while all_reduce
#: passed (aws/deep-learning-containers PR #6551, whose EFA test asserts the ``# Avg bus bandwidth`` footer of
#: broadcast_perf, printed only when the run finished; fixed in aws-ofi-nccl 1.20.0, PR #6668).
BROADCAST = "broadcast_perf"


def judge_broadcast(directory: str, failed_path: str) -> dict:
    """The broadcast section of a verdict from the gate's ``broadcast/`` folder (``b<round>_<a>_<b>.log``) and its
    ``broadcast-failed.txt`` (lines as :func:`read_failed_runs`): ``{"collective", "pairs", "failed": [{"nodes",
    "reason"}], "blueprint_wide": bool, "not_run": reason or ""}``. A log without the footer did not finish.
    Every pair failing is ``blueprint_wide``: a software cause (plugin, NCCL) no node replacement fixes."""
    failed = {fr.nodes: fr.reason for fr in (read_failed_runs(failed_path) if os.path.isfile(failed_path) else [])}
    names = sorted(n for n in os.listdir(directory) if n.endswith(".log")) if os.path.isdir(directory) else []
    pairs: list[tuple[str, str]] = []
    for name in names:
        m = re.match(r"^b\d+_([^_]+)_([^_]+)\.log$", name)
        if not m:
            continue
        nodes = (m.group(1), m.group(2))
        pairs.append(nodes)
        if nodes in failed:
            continue
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        try:
            parse_all_reduce(text, name)
        except NcclParseError as e:
            failed[nodes] = f"{BROADCAST} did not finish: {e}"
    pairs += [n for n in failed if n not in pairs]
    if not pairs:
        return {"collective": BROADCAST, "pairs": 0, "failed": [], "blueprint_wide": False,
                "not_run": f"no {BROADCAST} run (nccl-tests without {BROADCAST}, or fewer than two healthy nodes)"}
    out = [{"nodes": list(n), "reason": failed[n]} for n in pairs if n in failed]
    return {"collective": BROADCAST, "pairs": len(pairs), "failed": out,
            "blueprint_wide": len(out) == len(pairs) and len(pairs) > 1, "not_run": ""}


def apply_broadcast(verdict: dict, broadcast: dict) -> None:
    """Merge :func:`judge_broadcast` into a verdict dict: a pair that did not finish fails the gate; its nodes become
    suspect (one run each: which node is unknown), never drained; every pair failing is reported as blueprint-wide."""
    verdict["broadcast"] = broadcast
    if not broadcast["failed"]:
        return
    verdict["status"] = FAIL
    wide = broadcast["blueprint_wide"]
    for entry in broadcast["failed"]:
        for node in entry["nodes"]:
            for n in verdict["nodes"]:
                if n["node"] == node and n["verdict"] == PASS:
                    n["verdict"] = SUSPECT
                    n["reason"] = (f"{BROADCAST} with {[x for x in entry['nodes'] if x != node][0]}: {entry['reason']}"
                                   + ("; every pair failed the same way: a blueprint-wide cause, not this node" if wide else ""))


# ---- output ------------------------------------------------------------------------------------------
def render_text(v: Verdict) -> str:
    """Human-readable verdict: floor line, one line per node with its reason, then the evidence."""
    f = v.floor
    if f.floor_busbw_gbps is None:
        floor = f"no published floor for {f.instance_type} (unverified): nodes compared with each other only"
    elif f.enforced:
        floor = f"floor {f.floor_busbw_gbps:g} GB/s at {f.reference_size_bytes} B (enforced; {f.source.split(' ')[0]})"
    else:
        floor = (f"floor {f.floor_busbw_gbps:g} GB/s at {f.reference_size_bytes} B (unverified: reported, not enforced"
                 f"{'; ' + f.note if f.note else ''})")
    lines = [
        f"acceptance {v.status.upper()}: {v.instance_type}, {len(v.nodes)} node(s), {len(v.pairs)} pair run(s)",
        f"  {floor}",
        f"  cluster median {v.cluster_median_gbps:.1f} GB/s; a pair more than {v.median_fraction:.0%} below the median of "
        "the pairs without a node is low for that node",
    ]
    for n in v.nodes:
        lines.append(f"{n.verdict.upper():8s}{n.node}: {n.reason}")
        for e in n.pairs:
            lines.append(f"          {e}")
    for p in v.pairs:
        for c in p.causes:
            lines.append(f"  cause {c.kind} on {c.host or ' and '.join(p.nodes)}: {c.detail}")
        for note in p.notes:
            lines.append(f"  note {' + '.join(p.nodes)}: {note}")
    for r in v.all_node_runs:
        bw = "n/a" if r["busbw_gbps"] is None else f"{r['busbw_gbps']:.1f}"
        lines.append(f"  all-node run {os.path.basename(r['file'])}: {len(r['hosts'])} nodes, {bw} GB/s at the reference size, "
                     f"avg bus bandwidth {r['avg_busbw_gbps']:g} (reported, not judged)")
    return "\n".join(lines) + "\n"


def render_markdown(v: Verdict) -> str:
    """The verdict as a Markdown table (for PR comments and run books)."""
    f = v.floor
    floor = ("no published floor" if f.floor_busbw_gbps is None
             else f"floor {f.floor_busbw_gbps:g} GB/s at {f.reference_size_bytes} B ({'enforced' if f.enforced else 'unverified'})")
    lines = [
        f"**acceptance {v.status}**: {v.instance_type}, {len(v.nodes)} node(s), {len(v.pairs)} pair run(s); {floor}; "
        f"cluster median {v.cluster_median_gbps:.1f} GB/s",
        "",
        "| node | verdict | bus bandwidth (GB/s) | reason |",
        "|---|---|---|---|",
    ]
    for n in v.nodes:
        bw = "" if n.busbw_gbps is None else f"{n.busbw_gbps:.1f}"
        lines.append(f"| {n.node} | {n.verdict} | {bw} | {n.reason.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def render_json(v: Verdict) -> str:
    return json.dumps(v.as_dict(), indent=2) + "\n"


def _sizes_fix(sizes: list[int], reference: int) -> str:
    """The all_reduce_perf size options (nccl-tests: -b smallest, -e largest, -f factor) whose table has a row at
    ``reference`` bytes, given the ``sizes`` of a table that has none."""
    if sizes[0] > reference:
        return f"-b {reference} or less"
    if sizes[-1] < reference:
        return f"-e {reference} or more"
    return f"-b and -f that step onto {reference} (-f 2 from a power of two)"
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/fmcluster_acceptance/metrics.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""The gate's verdict as Prometheus metrics in the text exposition format, for node_exporter's textfile
collector (https://github.com/prometheus/node_exporter#textfile-collector: ``*.prom`` files in the
``--collector.textfile.directory``, written atomically: a temporary file, then a rename), one file per
compute group (:func:`prom_file`). Every series carries ``cluster`` and ``group`` labels.

Standard library only (shipped with the gate job). Metric names (docs/acceptance.md "Metrics"; the alert
rules in fmcluster/features/observability/render_acceptance.py read them):

- ``fmcluster_acceptance_gate_passed`` 1/0, ``fmcluster_acceptance_last_run_timestamp_seconds``;
- ``fmcluster_acceptance_gate_could_not_run`` 1 when the verdict's status is ``could-not-run`` (the gate job
  writes that verdict and these series itself, in shell, on every exit path before its verdict), else 0;
- ``fmcluster_acceptance_node_verdict{node, verdict}`` 1 for the node's verdict (pass, suspect, fail);
- ``fmcluster_acceptance_node_busbw_gbps{node}`` the median bus bandwidth of the node's pairs;
- ``fmcluster_acceptance_node_drained{node}`` 1 when the gate drained the node;
- ``fmcluster_acceptance_cluster_median_busbw_gbps``, ``fmcluster_acceptance_floor_busbw_gbps`` (absent
  when the type has no figure) with ``enforced`` "true"/"false".
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

VERDICTS = ("pass", "suspect", "fail")
#: Every metric name :func:`render_metrics` writes (the observability layer's known-metric list includes them).
METRIC_NAMES = (
    "fmcluster_acceptance_gate_passed",
    "fmcluster_acceptance_gate_could_not_run",
    "fmcluster_acceptance_last_run_timestamp_seconds",
    "fmcluster_acceptance_cluster_median_busbw_gbps",
    "fmcluster_acceptance_floor_busbw_gbps",
    "fmcluster_acceptance_node_verdict",
    "fmcluster_acceptance_node_busbw_gbps",
    "fmcluster_acceptance_node_drained",
)
#: What the gate's watcher writes (fmcluster-gate-watch, rendered with these names): 1 when it stopped draining a group,
#: the nodes it holds without a drain, when it last looked.
WATCH_BLOCKED = "fmcluster_acceptance_watch_blocked"
WATCH_HELD_NODES = "fmcluster_acceptance_watch_held_nodes"
WATCH_LAST_PASS = "fmcluster_acceptance_watch_last_pass_timestamp_seconds"
WATCH_METRIC_NAMES = (WATCH_BLOCKED, WATCH_HELD_NODES, WATCH_LAST_PASS)
def prom_file(group: str) -> str:
    """The textfile name of a group's gate: ``fmcluster_acceptance_<group>.prom``."""
    return f"fmcluster_acceptance_{group}.prom" if group else "fmcluster_acceptance.prom"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render_metrics(verdict: dict, timestamp_s: float, drained: Iterable[str] = (), cluster: str = "",
                   group: str = "") -> str:
    """The exposition text for ``verdict`` (:meth:`fmcluster.acceptance.judge.Verdict.as_dict`, as the gate
    writes it); ``drained``: nodes the gate drained; ``cluster`` and ``group`` (the compute group) label every
    series when given."""
    base = (f'cluster="{_label(cluster)}",' if cluster else "") + (f'group="{_label(group)}",' if group else "")
    it = f'instance_type="{_label(verdict["instance_type"])}"'
    drained_set = set(drained)
    floor = verdict.get("floor") or {"floor_busbw_gbps": None}
    nodes = verdict["nodes"]
    out = [
        "# HELP fmcluster_acceptance_gate_passed 1 when no node failed the last fleet acceptance gate.",
        "# TYPE fmcluster_acceptance_gate_passed gauge",
        f"fmcluster_acceptance_gate_passed{{{base}{it}}} {1 if verdict['status'] == 'pass' else 0}",
        "# HELP fmcluster_acceptance_gate_could_not_run 1 when the last gate could not run (no verdict on the nodes).",
        "# TYPE fmcluster_acceptance_gate_could_not_run gauge",
        f"fmcluster_acceptance_gate_could_not_run{{{base}{it}}} {1 if verdict['status'] == 'could-not-run' else 0}",
        "# HELP fmcluster_acceptance_last_run_timestamp_seconds When the last gate finished (Unix time).",
        "# TYPE fmcluster_acceptance_last_run_timestamp_seconds gauge",
        f"fmcluster_acceptance_last_run_timestamp_seconds{{{base}{it}}} {timestamp_s:.0f}",
    ]
    if verdict.get("cluster_median_busbw_gbps") is not None:
        out += [
            "# HELP fmcluster_acceptance_cluster_median_busbw_gbps Median all_reduce bus bandwidth of the gate's node pairs (GB/s).",
            "# TYPE fmcluster_acceptance_cluster_median_busbw_gbps gauge",
            f"fmcluster_acceptance_cluster_median_busbw_gbps{{{base}{it}}} {verdict['cluster_median_busbw_gbps']:.2f}",
        ]
    if floor["floor_busbw_gbps"] is not None:
        enforced = str(floor["enforced"]).lower()
        out += [
            "# HELP fmcluster_acceptance_floor_busbw_gbps The instance type's 2-node bus bandwidth floor (GB/s).",
            "# TYPE fmcluster_acceptance_floor_busbw_gbps gauge",
            f'fmcluster_acceptance_floor_busbw_gbps{{{base}{it},enforced="{enforced}"}} {floor["floor_busbw_gbps"]:g}',
        ]
    out += ["# HELP fmcluster_acceptance_node_verdict 1 for the node's verdict in the last gate (pass, suspect, fail).",
            "# TYPE fmcluster_acceptance_node_verdict gauge"]
    for n in nodes:
        name = _label(n["node"])
        for v in VERDICTS:
            out.append(f'fmcluster_acceptance_node_verdict{{{base}node="{name}",verdict="{v}"}} {1 if n["verdict"] == v else 0}')
    out += ["# HELP fmcluster_acceptance_node_busbw_gbps Median bus bandwidth of the node's pairs in the last gate (GB/s).",
            "# TYPE fmcluster_acceptance_node_busbw_gbps gauge"]
    for n in nodes:
        if n["busbw_gbps"] is not None:
            out.append(f'fmcluster_acceptance_node_busbw_gbps{{{base}node="{_label(n["node"])}"}} {n["busbw_gbps"]:.2f}')
    out += ["# HELP fmcluster_acceptance_node_drained 1 when the last gate drained the node in Slurm.",
            "# TYPE fmcluster_acceptance_node_drained gauge"]
    for n in nodes:
        out.append(f'fmcluster_acceptance_node_drained{{{base}node="{_label(n["node"])}"}} {1 if n["node"] in drained_set else 0}')
    return "\n".join(out) + "\n"


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename, so the
    collector never reads half a file."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fmcluster_acceptance.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/fmcluster_acceptance/__main__.py" <<'FMCLUSTER_ACCEPTANCE_EOF'
"""The gate's own command line, run on the cluster with the system ``python3`` (3.8+, standard library only):
``python3 -m fmcluster_acceptance <command>`` from the staged bundle (docs/acceptance.md "The gate job").

Commands (exit 0 ok / 1 a node fails / 2 bad input, never a traceback):

- ``plan [--min-partners N] NODE...``: the pairing plan, one ``<round> <a> <b>`` line per pair;
- ``judge --results DIR --floors FILE [--nodes A,B,...] [--node-check-failed FILE] [--format text|json]
  [--json-out FILE] [--median-fraction F] [--broadcast DIR --broadcast-failed FILE]``: the verdict (with
  ``--broadcast``: a broadcast_perf pair that did not finish fails the gate and makes its nodes suspect);
  nodes listed in ``--node-check-failed`` (lines
  ``<node><TAB><reason>``) fail with that reason, nodes of ``--nodes`` without a measurement are reported;
- ``failed --verdict FILE``: ``<node><TAB><reason>`` per failed node (what the gate drains);
- ``passed --verdict FILE``: one passed node per line (what the gate may resume);
- ``metrics --verdict FILE --out FILE [--drained A,B] [--cluster NAME] [--group NAME]``: the node_exporter textfile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict

from .judge import (
    FAIL,
    MEDIAN_FRACTION,
    PASS,
    SUSPECT,
    Floor,
    JudgeInputError,
    apply_broadcast,
    judge,
    judge_broadcast,
    load_results,
    read_aliases,
    read_failed_runs,
    render_json,
    render_text,
)
from .metrics import render_metrics, write_atomically
from .pairing import PairingError, pairing_plan, plan_lines


def _node_check_failures(path: str) -> dict[str, str]:
    failed: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                node, _, reason = line.rstrip("\n").partition("\t")
                failed[node.strip()] = reason.strip() or "node check failed"
    return failed


def _verdict_dict(args: argparse.Namespace, floor: Floor) -> dict:
    failed = _node_check_failures(args.node_check_failed) if args.node_check_failed else {}
    nodes = [n for n in (args.nodes or "").split(",") if n]
    measured_needed = [n for n in nodes if n not in failed]
    if len(measured_needed) < 2 and not _has_results(args.results) and not _has_lines(args.failed_runs):
        # nothing to pair: a single node, or every other node failed its node check
        verdict = {"instance_type": floor.instance_type, "status": PASS, "floor": asdict(floor),
                   "median_fraction": args.median_fraction, "cluster_median_busbw_gbps": None, "nodes": [],
                   "pairs": [], "all_node_runs": []}
    else:
        aliases = read_aliases(args.hostnames) if args.hostnames else None
        failed_runs = read_failed_runs(args.failed_runs) if args.failed_runs else []
        results = load_results(args.results, aliases) if _has_results(args.results) else []
        v = judge(results, floor, args.median_fraction, failed_runs)
        verdict = v.as_dict()
    seen = {n["node"] for n in verdict["nodes"]}
    for node, reason in sorted(failed.items()):
        entry: dict[str, object] = {"node": node, "verdict": FAIL, "reason": f"node check: {reason}", "busbw_gbps": None, "pairs": []}
        verdict["nodes"] = [n for n in verdict["nodes"] if n["node"] != node] + [entry]
        seen.add(node)
    for node in nodes:
        if node not in seen:
            alone = len(nodes) == 1
            verdict["nodes"].append({
                "node": node, "verdict": PASS if alone else SUSPECT,
                "reason": "single node: no pair to measure" if alone else "not measured: no partner passed the node check",
                "busbw_gbps": None, "pairs": []})
    verdict["nodes"].sort(key=lambda n: n["node"])
    verdict["status"] = FAIL if any(n["verdict"] == FAIL for n in verdict["nodes"]) else PASS
    if args.broadcast:
        apply_broadcast(verdict, judge_broadcast(args.broadcast, args.broadcast_failed))
    return verdict


def _has_lines(path: str) -> bool:
    return bool(path) and os.path.isfile(path) and os.path.getsize(path) > 0


def _has_results(directory: str) -> bool:
    return os.path.isdir(directory) and any(n.endswith((".log", ".out", ".txt")) for n in os.listdir(directory))


def _text(verdict: dict) -> str:
    """The merged verdict (node check + pairs) as text, in the layout of :func:`render_text`."""
    floor = verdict["floor"]
    lines = [f"acceptance {verdict['status'].upper()}: {verdict['instance_type']}, {len(verdict['nodes'])} node(s), "
             f"{len(verdict['pairs'])} pair run(s)"]
    if floor["floor_busbw_gbps"] is None:
        lines.append("  no published floor (unverified): nodes compared with each other only")
    else:
        how = "enforced" if floor["enforced"] else "unverified: reported, not enforced"
        lines.append(f"  floor {floor['floor_busbw_gbps']:g} GB/s at {floor['reference_size_bytes']} B ({how})")
    if verdict["cluster_median_busbw_gbps"] is not None:
        lines.append(f"  cluster median {verdict['cluster_median_busbw_gbps']:.1f} GB/s; a pair more than "
                     f"{verdict['median_fraction']:.0%} below the median of the pairs without a node is low for that node")
    for n in verdict["nodes"]:
        lines.append(f"{n['verdict'].upper():8s}{n['node']}: {n['reason']}")
        lines += [f"          {e}" for e in n["pairs"]]
    bc = verdict.get("broadcast")
    if bc and bc["not_run"]:
        lines.append(f"  {bc['collective']}: not run ({bc['not_run']})")
    elif bc:
        lines.append(f"  {bc['collective']}: {bc['pairs'] - len(bc['failed'])} of {bc['pairs']} pair run(s) finished"
                     + ("; EVERY pair failed: a blueprint-wide cause (plugin, NCCL), no node drained" if bc["blueprint_wide"] else ""))
        lines += [f"  {bc['collective']} {' + '.join(f['nodes'])}: {f['reason']}" for f in bc["failed"]]
    for p in verdict["pairs"]:
        for c in p["causes"]:
            lines.append(f"  cause {c['kind']} on {c['host'] or ' and '.join(p['nodes'])}: {c['detail']}")
        for note in p["notes"]:
            lines.append(f"  note {' + '.join(p['nodes'])}: {note}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m fmcluster_acceptance", description="fmcluster fleet acceptance gate")
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("plan", help="pairing plan: '<round> <a> <b>' per pair")
    pp.add_argument("--min-partners", type=int, default=2)
    pp.add_argument("nodes", nargs="*")
    pj = sub.add_parser("judge", help="judge the results folder")
    pj.add_argument("--results", required=True)
    pj.add_argument("--floors", required=True, help="floors.json of the bundle")
    pj.add_argument("--nodes", default="")
    pj.add_argument("--hostnames", default="", help="'<node> <hostname>' lines: host names the nodes print")
    pj.add_argument("--node-check-failed", default="")
    pj.add_argument("--failed-runs", default="", help="'<round> <a> <b> <reason>' lines: pair runs that did not finish")
    pj.add_argument("--broadcast", default="", help="folder of the gate's broadcast_perf logs (b<round>_<a>_<b>.log)")
    pj.add_argument("--broadcast-failed", default="", help="'<round> <a> <b> <reason>' lines: broadcast runs that did not finish")
    pj.add_argument("--format", choices=("text", "json"), default="text")
    pj.add_argument("--json-out", default="")
    pj.add_argument("--median-fraction", type=float, default=MEDIAN_FRACTION)
    pf = sub.add_parser("failed", help="failed nodes of a verdict")
    pf.add_argument("--verdict", required=True)
    pp2 = sub.add_parser("passed", help="passed nodes of a verdict, one per line")
    pp2.add_argument("--verdict", required=True)
    pm = sub.add_parser("metrics", help="node_exporter textfile of a verdict")
    pm.add_argument("--verdict", required=True)
    pm.add_argument("--out", required=True)
    pm.add_argument("--drained", default="")
    pm.add_argument("--cluster", default="")
    pm.add_argument("--group", default="")
    args = p.parse_args(argv)
    try:
        if args.command == "plan":
            sys.stdout.write(plan_lines(pairing_plan(args.nodes, args.min_partners)))
            return 0
        if args.command == "judge":
            with open(args.floors, encoding="utf-8") as f:
                floor = Floor.from_dict(json.load(f))
            if args.nodes or args.node_check_failed or args.failed_runs:
                verdict = _verdict_dict(args, floor)
                text = _text(verdict)
            else:
                aliases = read_aliases(args.hostnames) if args.hostnames else None
                v = judge(load_results(args.results, aliases), floor, args.median_fraction)
                verdict = v.as_dict()
                text = render_text(v) if args.format == "text" else render_json(v)
            if args.json_out:
                write_atomically(args.json_out, json.dumps(verdict, indent=2) + "\n")
            sys.stdout.write(text if args.format == "text" else json.dumps(verdict, indent=2) + "\n")
            return 1 if verdict["status"] == FAIL else 0
        with open(args.verdict, encoding="utf-8") as f:
            verdict = json.load(f)
        if args.command == "passed":
            sys.stdout.write("".join(f"{n['node']}\n" for n in verdict["nodes"] if n["verdict"] == PASS))
            return 0
        if args.command == "failed":
            for n in verdict["nodes"]:
                if n["verdict"] == FAIL:
                    sys.stdout.write(f"{n['node']}\t{' '.join(n['reason'].split())}\n")
            return 0
        drained = [n for n in args.drained.split(",") if n]
        write_atomically(args.out, render_metrics(verdict, time.time(), drained, args.cluster, args.group))
        return 0
    except JudgeInputError as e:
        for problem in e.problems:
            sys.stderr.write(f"error: {problem}\n")
        return 2
    except PairingError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write(f"error: {type(e).__name__}: {e}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
FMCLUSTER_ACCEPTANCE_EOF
cat >"${BUNDLE}/floors.json" <<'FMCLUSTER_ACCEPTANCE_EOF'
{
  "instance_type": "p5.48xlarge",
  "reference_size_bytes": 1073741824,
  "floor_busbw_gbps": 250.0,
  "enforced": true,
  "expected_busbw_gbps": 436.95,
  "efa_devices": 32,
  "gpus": 8,
  "source": "https://github.com/aws/aws-parallelcluster/blob/e647dc13c8075782449d9bc05537be67398f9280/tests/integration-tests/tests/efa/test_efa.py (_test_nccl_benchmarks: 2 nodes x 8 tasks, in-place busbw at 1073741824 B must exceed 26.0 on p4d.24xlarge and 250.0 on p5.48xlarge; p4d figure since b5bb1922, 2021-08-19; p5 figure added in b99e3edd, 2023-12-21)",
  "note": ""
}
FMCLUSTER_ACCEPTANCE_EOF
accept() { PYTHONPATH="${BUNDLE}" "${PYTHON}" -m fmcluster_acceptance "$@"; }

mapfile -t NODES < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
N_NODES="$(count "${NODES[@]}")"
[[ ${N_NODES} -gt 0 ]] || die "scontrol show hostnames '${SLURM_JOB_NODELIST}' gave no node"
log "job ${SLURM_JOB_ID}: ${N_NODES} node(s) of ${INSTANCE_TYPE}; results in ${RUN_DIR}"

# ---- 1. node check on every node -----------------------------------------------------------------------
check_node() {
  local node=$1 out="${RUN_DIR}/node-check/$1"
  timeout "${NODE_CHECK_TIMEOUT}" srun --nodes=1 --ntasks=1 --nodelist="${node}" hostname -s \
    </dev/null >"${out}.hostname" 2>/dev/null
  timeout "${NODE_CHECK_TIMEOUT}" srun --nodes=1 --ntasks=1 --nodelist="${node}" "${NODE_CHECK}" --no-nccl \
    </dev/null >"${out}.txt" 2>&1
  echo $? >"${out}.rc"
}
for node in "${NODES[@]}"; do
  check_node "${node}" &
done
wait

: >"${RUN_DIR}/node-check-failed.tsv"
: >"${RUN_DIR}/hostnames"
HEALTHY=()
for node in "${NODES[@]}"; do
  out="${RUN_DIR}/node-check/${node}"
  rc="$(cat "${out}.rc" 2>/dev/null || echo 2)"
  host="$(head -n 1 "${out}.hostname" 2>/dev/null)"
  [[ -z ${host} ]] || printf '%s %s\n' "${node}" "${host}" >>"${RUN_DIR}/hostnames"
  if [[ ${rc} == 0 ]]; then
    HEALTHY+=("${node}")
  else
    reason="$(grep -m 1 '^FAIL ' "${out}.txt" | cut -c 6-)"
    if [[ -z ${reason} && ${rc} == 124 ]]; then
      reason="fmcluster-node-check did not finish in ${NODE_CHECK_TIMEOUT} s (node not answering?)"
    elif [[ -z ${reason} ]]; then
      reason="fmcluster-node-check exited ${rc}: $(tail -n 1 "${out}.txt" 2>/dev/null)"
    fi
    printf '%s\t%s\n' "${node}" "${reason}" >>"${RUN_DIR}/node-check-failed.tsv"
    log "node check failed on ${node}: ${reason}"
  fi
done
N_HEALTHY="$(count "${HEALTHY[@]}")"
log "node check: ${N_HEALTHY} of ${N_NODES} node(s) passed"

# ---- 2. pairing rounds ---------------------------------------------------------------------------------
# run_collective BINARY TIMEOUT ROUND A B LOG FAILED: one 2-node nccl-tests run; a run that does not finish adds
# '<round> <a> <b> <reason>' to FAILED (exit 124 of timeout: it hung)
run_collective() {
  local bin=$1 limit=$2 round=$3 a=$4 b=$5 out=$6 failed=$7 rc
  (
    if [[ -r ${JOB_ENV} ]]; then
      # shellcheck disable=SC1090
      . "${JOB_ENV}"
    fi
    # INIT,NET: the network NCCL chose, the provider and its NIC count, in the output the judge reads
    exec env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout "${limit}" srun --nodes=2 \
      --ntasks-per-node="${GPUS}" --nodelist="${a},${b}" --mpi="${SRUN_MPI}" --cpu-bind=none \
      "${NCCL_TESTS_DIR}/${bin}" "${NCCL_ARGS[@]}"
  ) </dev/null >"${out}" 2>&1
  rc=$?
  if [[ ${rc} -eq 124 ]]; then
    printf '%s %s %s %s did not finish in %s s (hung) (log: %s)\n' "${round}" "${a}" "${b}" "${bin}" "${limit}" \
      "${out##*/}" >>"${failed}"
  elif [[ ${rc} -ne 0 ]]; then
    printf '%s %s %s srun/%s exited %s (log: %s)\n' "${round}" "${a}" "${b}" "${bin}" "${rc}" "${out##*/}" >>"${failed}"
  fi
  return "${rc}"
}
run_pair() {
  local out="${RESULTS}/r$1_$2_$3.log"
  run_collective all_reduce_perf "${PAIR_TIMEOUT}" "$1" "$2" "$3" "${out}" "${RUN_DIR}/failed-runs.txt" \
    || mv "${out}" "${RUN_DIR}/failed-runs/"
}

: >"${RUN_DIR}/failed-runs.txt"
: >"${RUN_DIR}/broadcast-failed.txt"
if [[ ${N_HEALTHY} -ge 2 ]]; then
  accept plan --min-partners "${MIN_PARTNERS}" "${HEALTHY[@]}" >"${RUN_DIR}/plan.txt" || die "no pairing plan"
  mapfile -t ROUNDS < <(cut -d ' ' -f 1 "${RUN_DIR}/plan.txt" | sort -n -u)
  for round in "${ROUNDS[@]}"; do
    log "round ${round}: $(awk -v r="${round}" '$1 == r {printf "%s+%s ", $2, $3}' "${RUN_DIR}/plan.txt")"
    while read -r r a b; do
      [[ ${r} == "${round}" ]] || continue
      run_pair "${r}" "${a}" "${b}" &
    done <"${RUN_DIR}/plan.txt"
    wait
  done
  if [[ -x ${NCCL_TESTS_DIR}/broadcast_perf ]]; then
    accept plan --min-partners 1 "${HEALTHY[@]}" >"${RUN_DIR}/broadcast-plan.txt" || die "no broadcast plan"
    mapfile -t BROUNDS < <(cut -d ' ' -f 1 "${RUN_DIR}/broadcast-plan.txt" | sort -n -u)
    for round in "${BROUNDS[@]}"; do
      while read -r r a b; do
        [[ ${r} == "${round}" ]] || continue
        run_collective broadcast_perf "${BROADCAST_TIMEOUT}" "${r}" "${a}" "${b}" "${BROADCAST}/b${r}_${a}_${b}.log" \
          "${RUN_DIR}/broadcast-failed.txt" &
      done <"${RUN_DIR}/broadcast-plan.txt"
      wait
    done
    log "broadcast: $(wc -l <"${RUN_DIR}/broadcast-plan.txt") pair run(s), $(wc -l <"${RUN_DIR}/broadcast-failed.txt") did not finish"
  else
    log "no ${NCCL_TESTS_DIR}/broadcast_perf: broadcast not run (reported in the verdict)"
  fi
  if [[ ${ALL_NODE_RUN} == 1 && ${N_HEALTHY} -gt 2 ]]; then
    log "all-node run over ${N_HEALTHY} node(s)"
    env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout "${PAIR_TIMEOUT}" srun --nodes="${N_HEALTHY}" \
      --ntasks-per-node="${GPUS}" --nodelist="$(IFS=,; echo "${HEALTHY[*]}")" --mpi="${SRUN_MPI}" --cpu-bind=none \
      "${NCCL_TESTS_DIR}/all_reduce_perf" "${NCCL_ARGS[@]}" </dev/null >"${RESULTS}/all.log" 2>&1 \
      || mv "${RESULTS}/all.log" "${RUN_DIR}/failed-runs/"
  fi
else
  log "fewer than two healthy nodes: no pair to measure"
fi

# ---- 3. the judge --------------------------------------------------------------------------------------
accept judge --results "${RESULTS}" --floors "${BUNDLE}/floors.json" \
  --nodes "$(IFS=,; echo "${NODES[*]}")" --node-check-failed "${RUN_DIR}/node-check-failed.tsv" \
  --hostnames "${RUN_DIR}/hostnames" --failed-runs "${RUN_DIR}/failed-runs.txt" \
  --broadcast "${BROADCAST}" --broadcast-failed "${RUN_DIR}/broadcast-failed.txt" \
  --median-fraction "${MEDIAN_FRACTION}" --json-out "${RUN_DIR}/verdict.json"
verdict_rc=$?
if [[ ${verdict_rc} -eq 2 || ! -s ${RUN_DIR}/verdict.json ]]; then
  die "the judge could not read the results in ${RESULTS} (see above); nothing drained"
fi

# ---- 4. drain the failed nodes -------------------------------------------------------------------------
mapfile -t FAILED < <(accept failed --verdict "${RUN_DIR}/verdict.json")
N_FAILED="$(count "${FAILED[@]}")"
if [[ ${DRAIN} == 1 ]] && ! awk -v f="${N_FAILED}" -v n="${N_NODES}" -v m="${MAX_DRAIN_FRACTION}" 'BEGIN { exit !(f <= m * n) }'; then
  # a fleet-wide cause (a wrong image, a broken job environment) is likelier than that many bad nodes
  log "${N_FAILED} of ${N_NODES} node(s) failed, more than FMC_MAX_DRAIN_FRACTION=${MAX_DRAIN_FRACTION}: draining none; fix the common cause and re-run"
  DRAIN=0
fi
DRAINED=()
for line in "${FAILED[@]}"; do
  node="${line%%$'\t'*}"
  reason="${line#*$'\t'}"
  [[ -n ${node} ]] || continue
  if [[ ${DRAIN} != 1 ]]; then
    log "FMC_DRAIN=${DRAIN}: not draining ${node} (${reason})"
  elif scontrol update NodeName="${node}" State="${DRAIN_STATE}" Reason="${DRAIN_REASON//\{reason\}/${reason:0:180}}"; then
    DRAINED+=("${node}")
    log "took ${node} out of service (State=${DRAIN_STATE}; then HyperPod replaces the instance behind the node and returns it to service): ${reason}"
  else
    log "could not drain ${node} (run the gate as root or a Slurm admin): ${reason}"
  fi
done


# ---- 4c. the node lists fmcluster-gate-watch reads back (one node a line; failed: node<TAB>reason) ---------
for line in "${FAILED[@]}"; do [[ -z ${line} ]] || printf '%s\n' "${line}"; done >"${RUN_DIR}/failed.txt"
for node in "${DRAINED[@]}"; do printf '%s\n' "${node}"; done >"${RUN_DIR}/drained.txt"

# ---- 5. verdict and metrics ----------------------------------------------------------------------------
cp "${RUN_DIR}/verdict.json" "${OUT_ROOT}/latest.json" 2>/dev/null || true
drained_list="$(IFS=,; echo "${DRAINED[*]}")"
PROM="fmcluster_acceptance_${GROUP}.prom"
accept metrics --verdict "${RUN_DIR}/verdict.json" --out "${RUN_DIR}/${PROM}" --drained "${drained_list}" \
  --cluster "${CLUSTER}" --group "${GROUP}" || log "could not write ${RUN_DIR}/${PROM}"
if [[ -d ${TEXTFILE_DIR} && -w ${TEXTFILE_DIR} ]]; then
  accept metrics --verdict "${RUN_DIR}/verdict.json" --out "${TEXTFILE_DIR}/${PROM}" --drained "${drained_list}" \
    --cluster "${CLUSTER}" --group "${GROUP}" || log "could not write the textfile metrics"
else
  log "${TEXTFILE_DIR} is not writable here: metrics only in ${RUN_DIR}/${PROM}"
fi
log "verdict: ${RUN_DIR}/verdict.json; drained: ${drained_list:-none}"
GATE_DONE=1
exit "${verdict_rc}"
FMCLUSTER_GATE_WATCH_EOF
chmod 0755 "${root}/opt/fmcluster/acceptance/fmcluster-acceptance-gpu.sbatch"
cat >"${root}/opt/fmcluster/bin/fmcluster-gate-watch" <<'FMCLUSTER_GATE_WATCH_EOF'
#!/usr/bin/env bash
# fmcluster-gate-watch: runs the fleet acceptance gate by itself on hp-train (hyperpod-slurm), from a
# systemd timer on the controller node (docs/acceptance.md "When it runs"). Rendered by fmcluster; do not edit.
#
#   fmcluster-gate-watch [tick]          one pass over every gated group (what the timer runs every minute)
#   fmcluster-gate-watch request GROUP   test every idle in-service node of GROUP on the next pass, then pass once
#                                        (the entry point for a Capacity Block or training plan window start)
#   fmcluster-gate-watch release GROUP   forget GROUP's drain history and hold: its held nodes are tested again
#   fmcluster-gate-watch status          the state: accepted nodes, pending gate jobs, holds
#
# One pass, per group (Slurm partition = group name):
#   1. a gate job it submitted earlier that has left the queue is read back: passed nodes are accepted for the boot
#      they were tested in; nodes the gate drained are recorded; failed nodes it did not drain are held.
#   2. nodes to test: a node never accepted (the cluster's first start, a new node), one whose BootTime changed
#      since it was accepted (a replacement or a reboot behind the node name), one back in service after a drain or
#      DOWN (resumed), every idle node after `request`, and#      no drained node: HyperPod replaces the instance behind the node and returns it to service. Only idle nodes are tested; a busy one waits.
#   3. those nodes and up to two accepted idle partners go into a Slurm reservation (only jobs that name it use its
#      nodes: SchedMD slurm doc/html/reservations.shtml), the drained ones are resumed inside it, and the gate job
#      runs there (sbatch --reservation).
# Loops: a replacement cannot fix a blueprint-wide cause (a broken plugin or image on every new node). When a node
# was drained FMC_GATE_MAX_REPEAT times, or more than FMC_MAX_DRAIN_FRACTION of the group, within
# FMC_GATE_WINDOW_S seconds, the group is blocked: later gates run with FMC_DRAIN=0 and the nodes that fail are held
# in the reservation fmcluster-gate-hold-<group> (no jobs, no drain, so no replacement) and the textfile metric
# fmcluster_acceptance_watch_blocked is 1 (alert AcceptanceGateBlocked). The same when a gate fails nodes but
# drains none (its own blueprint-wide guard) or could not run. `release GROUP` after the fix.
# Needs root (reservations and scontrol update: SlurmUser or root, SchedMD slurm doc/man/man1/scontrol.1).
# FMC_GATE_STATE_DIR, FMC_GATE_DIR, FMC_ACCEPTANCE_DIR, FMC_TEXTFILE_DIR override the paths (tests).
set -uo pipefail

readonly CLUSTER="hp-train"
readonly GROUPS_GATED=("gpu")
# the gate takes a failed node out of service with State=FAIL (hyperpod-slurm: HyperPod replaces the instance behind the node and returns it to service)
readonly RESUME_OWN=0
readonly OWN_REASON="fmcluster-acceptance:"
PATH="/opt/slurm/bin:${PATH}"
STATE="${FMC_GATE_STATE_DIR:-/var/lib/fmcluster/gate}"
GATE_DIR="${FMC_GATE_DIR:-/opt/fmcluster/acceptance}"
OUT_ROOT="${FMC_ACCEPTANCE_DIR:-/fsx/fmcluster/acceptance}"
TEXTFILE_DIR="${FMC_TEXTFILE_DIR:-/var/lib/node_exporter/textfile}"
MAX_REPEAT="${FMC_GATE_MAX_REPEAT:-2}"
MAX_DRAIN_FRACTION="${FMC_MAX_DRAIN_FRACTION:-0.5}"
WINDOW_S="${FMC_GATE_WINDOW_S:-86400}"
# A gate job still queued this long (a node of it went DOWN, a user job holds one) is cancelled and its reservation
# deleted, so that the reservation never keeps nodes from jobs for good; the nodes are tried again on a later pass.
PENDING_MAX_S="${FMC_GATE_PENDING_MAX_S:-3600}"
# The gate reservation ends by itself after this many minutes (the hold reservation lasts until `release`).
GATE_RESERVATION_MIN="${FMC_GATE_RESERVATION_MIN:-180}"
# times as scontrol prints them without SLURM_TIME_FORMAT (ISO 8601, "standard"): comparable as text
export SLURM_TIME_FORMAT=standard

log() { printf 'fmcluster-gate-watch: %s\n' "$*" >&2; }
join() { local IFS=,; echo "$*"; }
count() { echo "$#"; }

# NODES: "name<TAB>state<TAB>boot<TAB>reason<TAB>reason_time" for every node of partition $1
list_nodes() {
  local line name state parts boot reason rtime
  while IFS= read -r line; do
    [[ ${line} =~ NodeName=([^ ]+) ]] || continue
    name=${BASH_REMATCH[1]}
    [[ ${line} =~ \ State=([^ ]+) ]] && state=${BASH_REMATCH[1]} || state=UNKNOWN
    [[ ${line} =~ \ Partitions=([^ ]+) ]] && parts=",${BASH_REMATCH[1]}," || parts=",,"
    [[ ${parts} == *",$1,"* ]] || continue
    [[ ${line} =~ \ BootTime=([^ ]+) ]] && boot=${BASH_REMATCH[1]} || boot=None
    reason="" rtime=""
    if [[ ${line} =~ \ Reason=(.*)\ \[[^@]*@([^]]+)\] ]]; then
      reason=${BASH_REMATCH[1]} rtime=${BASH_REMATCH[2]}
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "${name}" "${state}" "${boot}" "${reason}" "${rtime}"
  done < <(scontrol show nodes --oneliner 2>/dev/null)
}

is_up() {  # $1 state, $2 boot: slurmd registered and the node not powered down or marked DOWN/FAIL
  [[ $2 != None && $2 != Unknown && -n $2 ]] || return 1
  [[ +$1+ =~ \+(DOWN|FAIL|FAILING|POWERED_DOWN|POWERING_UP|POWERING_DOWN|POWER_DOWN|NOT_RESPONDING|REBOOT_ISSUED|REBOOT_REQUESTED|FUTURE|UNKNOWN)\+ ]] && return 1
  [[ $1 != *'*'* && $1 != *'#'* && $1 != *'~'* ]]
}
is_idle() { [[ $1 == IDLE || $1 == IDLE+* ]] && [[ +$1+ != *+COMPLETING+* ]]; }
out_of_service() { [[ +$1+ =~ \+(DRAIN|DRAINED|DRAINING|DOWN|FAIL|FAILING|MAINTENANCE)\+ ]]; }

held() { grep -qxF "$2" "${STATE}/hold-$1" 2>/dev/null; }
accepted_boot() { cat "${STATE}/accepted/$1" 2>/dev/null; }
forget() { rm -f "${STATE}/accepted/$1"; }

reservation() {  # reservation NAME DURATION NODES...: create it (DURATION: minutes or infinite), or set its nodes
  local name=$1 duration=$2; shift 2
  if scontrol show reservation "${name}" >/dev/null 2>&1; then
    scontrol update ReservationName="${name}" Nodes="$(join "$@")"
  else
    scontrol create reservation ReservationName="${name}" StartTime=now Duration="${duration}" Users=root \
      Flags=MAINT,IGNORE_JOBS Nodes="$(join "$@")"
  fi
}

hold() {  # hold GROUP CAUSE NODES...: keep NODES out of service without a drain (no replacement) and block GROUP
  local group=$1 cause=$2 node; shift 2
  local -a all=()
  for node in "$@"; do held "${group}" "${node}" || echo "${node}" >>"${STATE}/hold-${group}"; done
  echo "${cause}" >"${STATE}/blocked-${group}"
  mapfile -t all <"${STATE}/hold-${group}"
  reservation "fmcluster-gate-hold-${group}" infinite "${all[@]}" || log "${group}: could not reserve held nodes $(join "${all[@]}")"
  log "${group}: BLOCKED (${cause}); held without a drain: $(join "$@"); fix the cause, then: fmcluster-gate-watch release ${group}"
}

drained_boot() {  # drained_boot GROUP NODE: the BootTime of NODE when the gate last drained it, or nothing
  awk -F '\t' -v g="$1" -v n="$2" '$2 == g && $3 == n {b = $4} END {print b}' "${STATE}/drains.tsv" 2>/dev/null
}

drains_in_window() {  # drains_in_window GROUP [NODE]: drains recorded within WINDOW_S
  local now; now="$(date +%s)"
  awk -F '\t' -v g="$1" -v n="${2:-}" -v since="$((now - WINDOW_S))" \
    '$2 == g && $1 >= since && (n == "" || $3 == n) {c++} END {print c + 0}' "${STATE}/drains.tsv" 2>/dev/null || echo 0
}

# ---- 1. read back a finished gate job ----------------------------------------------------------------------------
finish() {  # finish GROUP: 0 when no gate job of GROUP is still queued
  local group=$1 job nodes tested submitted node boot run queued
  local -a tested_nodes=() undrained=() job_nodes=()
  [[ -s ${STATE}/pending-${group} ]] || return 0
  IFS=$'\t' read -r job nodes tested submitted <"${STATE}/pending-${group}"
  # the queue's unfinished jobs (squeue.1 --states); a failing squeue (controller away) means: look again later
  queued="$(squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED -o %i 2>/dev/null)" || return 1
  if grep -qxF "${job}" <<<"${queued}"; then
    (( $(date +%s) - ${submitted:-0} < PENDING_MAX_S )) && return 1
    log "${group}: gate job ${job} still queued after ${PENDING_MAX_S} s: cancelled, its nodes are tried again later"
    scancel "${job}" 2>/dev/null
    scontrol delete ReservationName="fmcluster-gate-${group}" >/dev/null 2>&1
    rm -f "${STATE}/pending-${group}"
    return 0
  fi
  run="${OUT_ROOT}/${job}"
  declare -A boot_of=()
  while IFS=$'\t' read -r node _ boot _; do boot_of[${node}]=${boot}; done < <(list_nodes "${group}")
  IFS=, read -r -a tested_nodes <<<"${tested}"
  if [[ ! -f ${run}/failed.txt ]]; then
    log "${group}: gate job ${job} left no verdict (${run}/failed.txt): it could not run"
    hold "${group}" "could-not-run" "${tested_nodes[@]}"
  else
    # every node of the job that did not fail is accepted for the boot it was tested in (a suspect too: it stays
    # in service, as the gate leaves it, and is not tested again and again)
    IFS=, read -r -a job_nodes <<<"${nodes}"
    for node in "${job_nodes[@]}"; do
      [[ -n ${boot_of[${node}]:-} ]] || continue
      cut -f 1 "${run}/failed.txt" | grep -qxF "${node}" && continue
      printf '%s\n' "${boot_of[${node}]}" >"${STATE}/accepted/${node}"
      log "${group}: ${node} passed (gate job ${job}): in service"
    done
    while IFS= read -r node; do
      # the boot the gate drained: a later BootTime of that name is a new instance (drained_boot)
      printf '%s\t%s\t%s\t%s\n' "$(date +%s)" "${group}" "${node}" "${boot_of[${node}]:-}" >>"${STATE}/drains.tsv"
      forget "${node}"
      log "${group}: gate job ${job} drained ${node}"
    done < <(grep -v '^$' "${run}/drained.txt" 2>/dev/null)
    mapfile -t undrained < <(awk -F '\t' -v drained="$(paste -sd, "${run}/drained.txt" 2>/dev/null)" \
      'BEGIN { n = split(drained, d, ","); for (i = 1; i <= n; i++) gone[d[i]] = 1 } $1 != "" && !($1 in gone) { print $1 }' \
      "${run}/failed.txt")
    if [[ $(count "${undrained[@]}") -gt 0 ]]; then
      hold "${group}" "failed-not-drained" "${undrained[@]}"
    fi
  fi
  scontrol delete ReservationName="fmcluster-gate-${group}" >/dev/null 2>&1
  rm -f "${STATE}/pending-${group}"
  return 0
}

# ---- 2. which nodes to test --------------------------------------------------------------------------------------
blocked_reason() {  # the reason GROUP's gates must not drain, or nothing
  local group=$1 size=$2 node n
  if [[ -s ${STATE}/blocked-${group} ]]; then cat "${STATE}/blocked-${group}"; return; fi
  n="$(drains_in_window "${group}")"
  if awk -v n="${n}" -v s="${size}" -v m="${MAX_DRAIN_FRACTION}" 'BEGIN { exit !(n > m * s) }'; then
    echo "blueprint-wide: ${n} drains of ${size} node(s) in ${WINDOW_S} s"; return
  fi
  while IFS= read -r node; do
    if [[ $(drains_in_window "${group}" "${node}") -ge ${MAX_REPEAT} ]]; then
      echo "replacement loop: ${node} drained ${MAX_REPEAT} times in ${WINDOW_S} s"; return
    fi
  done < <(awk -F '\t' -v g="${group}" '$2 == g {print $3}' "${STATE}/drains.tsv" 2>/dev/null | sort -u)
}

tick_group() {
  local group=$1 name state boot reason rtime gate_boot size=0 blocked drain=1 coming=0
  local -a test=() resume=() partners=() candidates=()
  finish "${group}" || { log "${group}: gate job $(cut -f 1 "${STATE}/pending-${group}") still queued"; return; }
  local requested=0
  [[ -e ${STATE}/request-${group} ]] && requested=1
  while IFS=$'\t' read -r name state boot reason rtime; do
    size=$((size + 1))
    held "${group}" "${name}" && continue
    [[ +${state}+ == *+POWERING_UP+* || ${state} == *'#'* ]] && coming=1
    if ! is_up "${state}" "${boot}"; then
      forget "${name}"
      continue
    fi
    # A name the gate drained: by the gate's reason, or by the watcher's own record when the orchestrator rewrote the
    # reason while replacing the instance (clustermgtd sets "Static node maintenance: unhealthy node is being
    # replaced", aws-parallelcluster-node clustermgtd.py _handle_unhealthy_static_nodes). A BootTime other than the
    # drained one (or after the gate's drain) is a new instance behind the name: tested, and resumed when it passes.
    gate_boot="$(drained_boot "${group}" "${name}")"
    if [[ +${state}+ == *+DRAIN+* && ${RESUME_OWN} == 1 ]] \
        && { [[ ${reason} == "${OWN_REASON}"* ]] || [[ -n ${gate_boot} ]]; }; then
      forget "${name}"
      if is_idle "${state}" && { [[ -n ${gate_boot} && ${boot} != "${gate_boot}" ]] \
          || [[ ${reason} == "${OWN_REASON}"* && ${boot} > ${rtime} ]]; }; then
        test+=("${name}") resume+=("${name}")   # a new instance behind a name the gate drained
      fi
      continue
    fi
    if out_of_service "${state}"; then
      forget "${name}"   # tested again when it comes back (resumed)
      continue
    fi
    is_idle "${state}" || { [[ $(accepted_boot "${name}") == "${boot}" ]] || log "${group}: ${name} not tested yet: busy"; continue; }
    if [[ ${requested} == 1 || $(accepted_boot "${name}") != "${boot}" ]]; then
      test+=("${name}")
    else
      partners+=("${name}")
    fi
  done < <(list_nodes "${group}")
  [[ $(count "${test[@]}") -gt 0 ]] || return 0
  if [[ ${coming} == 1 && ${requested} == 0 ]]; then
    log "${group}: nodes still powering up: the gate waits for them"
    return 0
  fi
  candidates=("${test[@]}")
  while [[ $(count "${test[@]}") -lt 3 && $(count "${partners[@]}") -gt 0 ]]; do
    test+=("${partners[0]}") partners=("${partners[@]:1}")
  done
  blocked="$(blocked_reason "${group}" "${size}")"
  if [[ -n ${blocked} ]]; then
    drain=0
    echo "${blocked}" >"${STATE}/blocked-${group}"
    log "${group}: ${blocked}: the gate reports and holds, it drains nothing"
  fi
  reservation "fmcluster-gate-${group}" "${GATE_RESERVATION_MIN}" "${test[@]}" \
    || { log "${group}: could not create the gate reservation"; return; }
  local job
  # Submitted before any node is resumed: the job waits in the reservation for them, and a submission that fails
  # resumes nothing (a replacement is never put back in service untested); the next pass tries again.
  if ! job="$(sbatch --parsable --reservation="fmcluster-gate-${group}" --nodelist="$(join "${test[@]}")" \
      --nodes="$(count "${test[@]}")" --output="${OUT_ROOT}/fmcluster-acceptance-%j.out" \
      --export="ALL,FMC_ACCEPTANCE_DIR=${OUT_ROOT},FMC_DRAIN=${drain}" "${GATE_DIR}/fmcluster-acceptance-${group}.sbatch")"; then
    log "${group}: could not submit the gate job: tried again on the next pass"
    scontrol delete ReservationName="fmcluster-gate-${group}" >/dev/null 2>&1
    return 0
  fi
  job="${job%%;*}"
  printf '%s\t%s\t%s\t%s\n' "${job}" "$(join "${test[@]}")" "$(join "${candidates[@]}")" "$(date +%s)" \
    >"${STATE}/pending-${group}"
  for name in "${resume[@]}"; do
    scontrol update NodeName="${name}" State=RESUME && log "${group}: resumed ${name} inside the gate reservation"
  done
  rm -f "${STATE}/request-${group}"
  log "${group}: gate job ${job} on $(join "${test[@]}") (FMC_DRAIN=${drain})"
}

metrics() {  # fmcluster_acceptance_watch_* for every group, on the node_exporter textfile collector
  local out="${TEXTFILE_DIR}/fmcluster_acceptance_watch.prom" group labels
  [[ -d ${TEXTFILE_DIR} && -w ${TEXTFILE_DIR} ]] || return 0
  {
    echo "# HELP fmcluster_acceptance_watch_blocked 1 when the gate watcher stopped draining a group (a loop or a blueprint-wide cause)."
    echo "# TYPE fmcluster_acceptance_watch_blocked gauge"
    for group in "${GROUPS_GATED[@]}"; do
      labels="cluster=\"${CLUSTER}\",group=\"${group}\""
      echo "fmcluster_acceptance_watch_blocked{${labels}} $([[ -s ${STATE}/blocked-${group} ]] && echo 1 || echo 0)"
    done
    echo "# HELP fmcluster_acceptance_watch_held_nodes Nodes the gate watcher holds out of service without a drain."
    echo "# TYPE fmcluster_acceptance_watch_held_nodes gauge"
    for group in "${GROUPS_GATED[@]}"; do
      labels="cluster=\"${CLUSTER}\",group=\"${group}\""
      echo "fmcluster_acceptance_watch_held_nodes{${labels}} $(awk 'NF' "${STATE}/hold-${group}" 2>/dev/null | wc -l)"
    done
    echo "# HELP fmcluster_acceptance_watch_last_pass_timestamp_seconds When the gate watcher last looked (Unix time)."
    echo "# TYPE fmcluster_acceptance_watch_last_pass_timestamp_seconds gauge"
    echo "fmcluster_acceptance_watch_last_pass_timestamp_seconds{cluster=\"${CLUSTER}\"} $(date +%s)"
  } >"${out}.tmp.$$" && mv -f "${out}.tmp.$$" "${out}"
}

known_group() { local g; for g in "${GROUPS_GATED[@]}"; do [[ ${g} == "$1" ]] && return 0; done; return 1; }

main() {
  mkdir -p "${STATE}/accepted" || { log "cannot create ${STATE}"; exit 2; }
  mkdir -p "${OUT_ROOT}" 2>/dev/null || log "cannot create ${OUT_ROOT}: the gate jobs will say so"
  local cmd=${1:-tick} group
  exec 9>"${STATE}/.lock"
  if [[ ${cmd} == tick ]]; then
    flock -n 9 || { log "another pass is running"; exit 0; }
  else  # a request (the window-start schedule's) or release waits for a running pass instead of being lost
    flock -w 300 9 || { log "${cmd}: a pass still holds ${STATE}/.lock after 300 s; try again"; exit 2; }
  fi
  case ${cmd} in
    request|release)
      group=${2:-}
      known_group "${group}" || { log "${cmd}: unknown group '${group}'; gated groups: ${GROUPS_GATED[*]}"; exit 2; }
      if [[ ${cmd} == request ]]; then
        : >"${STATE}/request-${group}"
      else
        scontrol delete ReservationName="fmcluster-gate-hold-${group}" >/dev/null 2>&1
        rm -f "${STATE}/hold-${group}" "${STATE}/blocked-${group}"
        awk -F '\t' -v g="${group}" '$2 != g' "${STATE}/drains.tsv" >"${STATE}/drains.tsv.new" 2>/dev/null
        mv -f "${STATE}/drains.tsv.new" "${STATE}/drains.tsv"
        log "${group}: released; its held nodes are tested on the next pass"
      fi ;;
    tick) ;;
    status)
      for group in "${GROUPS_GATED[@]}"; do
        echo "${group}: pending=$(cut -f 1 "${STATE}/pending-${group}" 2>/dev/null) blocked=$(cat "${STATE}/blocked-${group}" 2>/dev/null) held=$(paste -sd, "${STATE}/hold-${group}" 2>/dev/null)"
      done
      for f in "${STATE}"/accepted/*; do [[ -e ${f} ]] && echo "accepted ${f##*/} boot $(cat "${f}")"; done
      exit 0 ;;
    *) log "usage: fmcluster-gate-watch [tick | request GROUP | release GROUP | status]"; exit 2 ;;
  esac
  for group in "${GROUPS_GATED[@]}"; do tick_group "${group}"; done
  metrics
}

main "$@"
FMCLUSTER_GATE_WATCH_EOF
chmod 0755 "${root}/opt/fmcluster/bin/fmcluster-gate-watch"
cat >"${units}/fmcluster-gate-watch.service" <<'UNIT'
[Unit]
Description=fmcluster: run the fleet acceptance gate on nodes that need it
After=network-online.target

[Service]
Type=oneshot
ExecStart=/opt/fmcluster/bin/fmcluster-gate-watch tick
UNIT
cat >"${units}/fmcluster-gate-watch.timer" <<'UNIT'
[Unit]
Description=fmcluster: look for nodes the acceptance gate has not passed, every 60 s

[Timer]
OnBootSec=60s
OnUnitInactiveSec=60s
Unit=fmcluster-gate-watch.service

[Install]
WantedBy=timers.target
UNIT
"${systemctl}" daemon-reload
"${systemctl}" enable --now fmcluster-gate-watch.timer
log "installed: fmcluster-gate-watch.timer gates new, replaced and resumed nodes of gpu"
