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

