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
