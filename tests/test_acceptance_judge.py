# ruff: noqa: E501  (nccl-tests table lines kept verbatim)
"""The acceptance judge (fmcluster/acceptance): nccl-tests all_reduce_perf outputs in the real format
(tests/fixtures/acceptance/, written by nccl_format.py from nccl-tests' printf formats and the published
awsome-distributed-ai tables) -> pass / suspect / fail per node with the cause named; the CLI's exit codes;
the floors in the catalog; the pairing plan."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.acceptance import SHIPPED
from fmcluster.acceptance.floors import floor_for
from fmcluster.acceptance.judge import (
    FailedRun,
    JudgeInputError,
    judge,
    load_results,
    measurement_from_text,
)
from fmcluster.acceptance.nccl import NcclParseError, parse_all_reduce
from fmcluster.acceptance.pairing import PairingError, pairing_plan, plan_lines
from fmcluster.catalog import known_instance_types
from fmcluster.catalog.acceptance import acceptance_figures, acceptance_instance_types
from fmcluster.cli import app
from tests.fixtures.acceptance import nccl_format
from tests.fixtures.acceptance.nccl_format import EFA_P5, EIGHT, P4_CURVE, all_reduce_output

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "acceptance"
P5 = floor_for("p5.48xlarge")
P4D = floor_for("p4d.24xlarge")
runner = CliRunner()


def verdicts(folder: str, floor=P5) -> dict[str, tuple[str, str]]:
    v = judge(load_results(str(FIX / folder)), floor)
    return {n.node: (n.verdict, n.reason) for n in v.nodes}


# ---- the committed fixtures are what the generator writes ---------------------------------------------
def test_fixtures_are_generated_from_nccl_format() -> None:
    for rel, text in nccl_format.fixtures().items():
        assert (FIX / rel).read_text() == text, f"{rel}: regenerate with python {nccl_format.__file__}"


# ---- the parser ---------------------------------------------------------------------------------------
def test_parses_hosts_rows_and_network_lines_of_a_healthy_p5_pair() -> None:
    run = parse_all_reduce((FIX / "p5_healthy_pair/r1_p5-st-gpu-1_p5-st-gpu-2.log").read_text())
    assert run.collective == "all_reduce_perf"
    assert run.hosts == ["p5-st-gpu-1", "p5-st-gpu-2"]
    assert run.ranks_per_host == {"p5-st-gpu-1": 8, "p5-st-gpu-2": 8}
    assert run.sizes[0] == 8 and run.sizes[-1] == 17179869184 and len(run.rows) == 32
    row = run.row_at(1 << 30)
    assert row is not None
    assert (row.oop_busbw_gbps, row.ip_busbw_gbps, row.busbw_gbps) == (436.95, 440.96, 440.96)
    assert run.logs["p5-st-gpu-1"].provider == "efa" and run.logs["p5-st-gpu-1"].nics == 32
    assert run.avg_busbw_gbps == pytest.approx(124.748)


@pytest.mark.parametrize(("form", "text"), [
    # nccl-tests before the root column (aws/aws-ofi-nccl #64): 'error' instead of '#wrong', no root
    ("no root column", "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
                       "  1073741824     268435456   float     sum    79531   13.50   26.58  2e-06    79371   13.53   26.63  2e-06\n"
                       "# Avg bus bandwidth    : 26.6\n"),
    # Open MPI --tag-output prefixes (awsome-distributed-ai README, EKS example)
    ("mpirun tag-output", "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                          "[1,0]<stdout>:  1073741824     268435456     float     sum      -1   9197.5  116.74  26.58      0   9195.2  116.77  26.63      0\n"
                          "[1,0]<stdout>:# Avg bus bandwidth    : 26.6\n"),
    # -T: a timestamp column after the in-place half
    ("timestamps", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong           timestamp\n"
                   "  1073741824     268435456     float     sum      -1   9197.5  116.74  26.58      0   9195.2  116.77  26.63      0 2026-12-01 10:00:00\n"
                   "# Avg bus bandwidth    : 26.6\n"),
    # per-iteration timing: four more columns per half
    ("per-iteration", "#       size         count      type   redop    root     time   algbw   busbw #wrong   i_min   i_max   i_p99   i_cv%     time   algbw   busbw #wrong   i_min   i_max   i_p99   i_cv%\n"
                      "  1073741824     268435456     float     sum      -1   9197.5  116.74  26.58      0  9100.0  9300.0  9290.0    0.50   9195.2  116.77  26.63      0  9100.0  9300.0  9290.0    0.50\n"
                      "# Avg bus bandwidth    : 26.6\n"),
])
def test_reads_the_busbw_columns_of_every_table_form(form: str, text: str) -> None:
    row = parse_all_reduce(text, form).row_at(1073741824)
    assert row is not None
    assert (row.oop_busbw_gbps, row.ip_busbw_gbps) == (26.58, 26.63), form
    assert not row.wrong, form  # the old 'error' column (2e-06) is a relative error, not wrong elements


PARSE_ERRORS = [
    ("empty file", "", "empty file"),
    ("only blanks", "\n  \n", "empty file"),
    ("no table", "NCCL INFO something\nSegmentation fault\n", "no nccl-tests result table"),
    ("header, no rows", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n",
     "has no rows"),
    ("truncated row", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                      "  1073741824     268435456     float     sum      -1   9197.5  116.74\n", "truncated table"),
    ("size not count x width", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                               "  1073741824     268435455     float     sum      -1   9197.5  116.74  26.58      0   9195.2  116.77  26.63      0\n"
                               "# Avg bus bandwidth    : 26.6\n", "is not 268435455 x 4 B"),
    ("two tables", (FIX / "p5_healthy_pair/r1_p5-st-gpu-1_p5-st-gpu-2.log").read_text() * 2, "a second result table"),
]


@pytest.mark.parametrize(("case", "text", "message"), PARSE_ERRORS, ids=[c[0] for c in PARSE_ERRORS])
def test_unreadable_outputs_are_named(case: str, text: str, message: str) -> None:
    with pytest.raises(NcclParseError) as e:
        parse_all_reduce(text, "f.log")
    assert message in str(e.value) and str(e.value).startswith("f.log"), case


# ---- the verdicts -------------------------------------------------------------------------------------
def test_healthy_p5_pair_passes() -> None:
    v = judge(load_results(str(FIX / "p5_healthy_pair")), P5)
    assert v.status == "pass" and v.exit_code == 0
    assert {n.node: n.verdict for n in v.nodes} == {"p5-st-gpu-1": "pass", "p5-st-gpu-2": "pass"}
    assert [p.busbw_gbps for p in v.pairs] == [440.96, pytest.approx(440.96 * 0.99)]


def test_a_sockets_pair_fails_naming_sockets_on_each_host() -> None:
    got = verdicts("p5_sockets_pair")
    assert {n: vr for n, (vr, _) in got.items()} == {"p5-st-gpu-1": "fail", "p5-st-gpu-2": "fail"}
    for _, reason in got.values():
        assert reason.startswith("sockets: NCCL used sockets, not EFA:")


def test_a_p4d_pair_on_one_efa_fails_naming_the_nic_count() -> None:
    v = judge(load_results(str(FIX / "p4d_single_efa_pair")), P4D)
    for n in v.nodes:
        assert n.verdict == "fail"
        assert n.reason.startswith("efa-nics: 1 of 4 EFA devices in use (p4d.24xlarge)")
    assert any("about 1 of 4 EFA devices" in note for note in v.pairs[0].notes)


def test_a_p4d_pair_on_one_efa_without_nccl_info_fails_on_the_floor_with_the_estimate() -> None:
    v = judge(load_results(str(FIX / "p4d_single_efa_no_log")), P4D)
    assert v.status == "fail"
    for n in v.nodes:
        assert n.verdict == "fail" and "below the floor" in n.reason and "cannot be told apart" in n.reason
    assert all(p.status == "below-floor" and p.busbw_gbps < 26.0 for p in v.pairs)
    assert all(any("about 1 of 4" in note for note in p.notes) for p in v.pairs)


def test_a_healthy_p4d_pair_passes() -> None:
    assert {vr for vr, _ in verdicts("p4d_healthy_pair", P4D).values()} == {"pass"}


def test_one_slow_node_among_eight_fails_alone_across_two_rounds() -> None:
    v = judge(load_results(str(FIX / "eight_one_slow")), P5)
    got = {n.node: n for n in v.nodes}
    assert [n for n, nv in got.items() if nv.verdict == "fail"] == ["p5-st-gpu-5"]
    assert all(nv.verdict == "pass" for n, nv in got.items() if n != "p5-st-gpu-5")
    assert "2 of 2 pair(s) more than 7% below the median of the pairs without it (439.4 GB/s)" in got["p5-st-gpu-5"].reason
    # its two partners each had one low pair, explained by the failed node
    for partner in ("p5-st-gpu-4", "p5-st-gpu-2"):
        assert "explained by a failed partner" in got[partner].reason
    # the evidence names pair, size, bus bandwidth, floor and cluster median
    evidence = got["p5-st-gpu-5"].pairs[0]
    assert "with p5-st-gpu-4" in evidence and "at 1073741824 B" in evidence and "floor 250" in evidence
    assert "cluster median" in evidence and v.exit_code == 1


def test_a_node_with_one_bad_and_one_good_pair_is_suspect_not_failed() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    # n1's pair with n4 is slow, everything else healthy: nobody fails, n1 and n4 are suspect
    texts = {}
    for r, pairs in enumerate(pairing_plan(nodes), start=1):
        for a, b in pairs:
            slow = {a, b} == {"n1", "n4"}
            texts[f"r{r}_{a}_{b}.log"] = all_reduce_output([a, b], factor=0.5 if slow else 1.0)
    ms = [measurement_from_text(t, f) for f, t in texts.items()]
    got = {n.node: n.verdict for n in judge(ms, P5).nodes}
    assert got == {"n1": "suspect", "n2": "pass", "n3": "pass", "n4": "suspect"}


# ---- small clusters: leave-one-out reference, floor per pair, noise --------------------------------------
def _plan_results(nodes: list[str], factor: dict[str, float], noise: dict[tuple[str, str], float] | None = None,
                  min_partners: int = 2) -> list:
    """The gate's pairing plan over ``nodes``, every pair at the slower node's ``factor`` of the published p5 curve,
    times the pair's ``noise`` (default 1.0)."""
    ms = []
    for r, pairs in enumerate(pairing_plan(nodes, min_partners), start=1):
        for a, b in pairs:
            f = min(factor.get(a, 1.0), factor.get(b, 1.0)) * (noise or {}).get((a, b), 1.0)
            ms.append(measurement_from_text(all_reduce_output([a, b], factor=f), f"r{r}_{a}_{b}.log"))
    return ms


def _adversarial(nodes: list[str], target: str, low: float, high: float) -> dict[tuple[str, str], float]:
    """Noise per pair of the plan: every pair of ``target`` at ``low``, every other pair at ``high``."""
    return {(a, b): (low if target in (a, b) else high) for r in pairing_plan(nodes) for a, b in r}


N3 = ["g1", "g2", "g3"]
N4 = ["g1", "g2", "g3", "g4"]
SMALL_CLUSTERS = [
    # (case, nodes, factor per node, noise per pair, nodes that fail)
    ("3 nodes, one at 90 %", N3, {"g2": 0.9}, None, ["g2"]),
    ("4 nodes, one at 90 %", N4, {"g3": 0.9}, None, ["g3"]),
    # the case: one node 32 % slow on the default 4-node cluster (about 291 against 412 GB/s)
    ("4 nodes, one 32 % slow", N4, {"g4": 0.68}, None, ["g4"]),
    # +-1.5 % noise against the slow node: its pairs high, every other pair low
    ("3 nodes, one at 90 %, noise against it", N3, {"g1": 0.9}, _adversarial(N3, "g1", 1.015, 0.985), ["g1"]),
    ("4 nodes, one at 90 %, noise against it", N4, {"g1": 0.9}, _adversarial(N4, "g1", 1.015, 0.985), ["g1"]),
    # +-3 % noise and no slow node: the worst case for one node (its pairs at -3 %, all others at +3 %)
    ("3 nodes, +-3 % noise", N3, {}, _adversarial(N3, "g1", 0.97, 1.03), []),
    ("4 nodes, +-3 % noise", N4, {}, _adversarial(N4, "g2", 0.97, 1.03), []),
    ("8 nodes, +-3 % noise", EIGHT, {}, _adversarial(EIGHT, EIGHT[0], 0.97, 1.03), []),
    # 2 nodes: no pair without the node, so the floor alone judges (250 GB/s enforced on p5.48xlarge)
    ("2 nodes above the floor, 70 % of published", ["g1", "g2"], {"g1": 0.7}, None, []),
    ("2 nodes below the floor", ["g1", "g2"], {"g1": 0.5}, None, ["g1", "g2"]),
]


@pytest.mark.parametrize(("case", "nodes", "factor", "noise", "failing"), SMALL_CLUSTERS, ids=[c[0] for c in SMALL_CLUSTERS])
def test_small_clusters(case: str, nodes: list[str], factor: dict[str, float], noise: dict | None, failing: list[str]) -> None:
    v = judge(_plan_results(nodes, factor, noise), P5)
    got = {n.node: n.verdict for n in v.nodes}
    assert sorted(n for n, vr in got.items() if vr == "fail") == failing, [n.reason for n in v.nodes]
    assert all(vr == "pass" for n, vr in got.items() if n not in failing)


def test_the_node_under_test_is_not_in_its_own_reference() -> None:
    """4 nodes, g4 at 68 %: g4's reference is the two pairs without it (about 441 GB/s at 1 GiB); against the
    cluster median (about 370) its pairs (about 300) would be only 19 % below."""
    v = judge(_plan_results(N4, {"g4": 0.68}), P5)
    [slow] = [n for n in v.nodes if n.node == "g4"]
    assert "below the median of the pairs without it (441.0 GB/s)" in slow.reason
    assert round(v.cluster_median_gbps, 1) == 370.4


def test_wrong_results_are_a_named_cause() -> None:
    v = judge(load_results(str(FIX / "wrong_results")), P5)
    assert v.pairs[0].status == "cause" and v.pairs[0].causes[0].kind == "wrong-results"
    assert {n.verdict for n in v.nodes} == {"suspect"}  # one measurement: which node is unknown


def test_unverified_floor_is_reported_not_enforced() -> None:
    floor = floor_for("p5e.48xlarge")
    assert not floor.enforced and floor.floor_busbw_gbps == 250.0
    ms = [measurement_from_text(all_reduce_output(["a", "b"], factor=0.5), f"r{r}_a_b.log") for r in (1, 2)]
    v = judge(ms, floor)
    assert v.status == "pass" and {n.verdict for n in v.nodes} == {"pass"}
    assert all("unverified floor" in p.notes[0] for p in v.pairs)


def test_no_published_figure_compares_nodes_with_each_other_only() -> None:
    floor = floor_for("p6-b200.48xlarge")
    assert floor.floor_busbw_gbps is None and not floor.enforced
    nodes = [f"b{i}" for i in range(1, 7)]
    ms = [measurement_from_text(all_reduce_output([a, b], factor=0.5 if "b3" in (a, b) else 1.0), f"r{r}_{a}_{b}.log")
          for r, pairs in enumerate(pairing_plan(nodes), start=1) for a, b in pairs]
    got = {n.node: n.verdict for n in judge(ms, floor).nodes}
    assert [n for n, vr in got.items() if vr == "fail"] == ["b3"]


def test_hostnames_map_to_slurm_node_names() -> None:
    text = all_reduce_output(["ip-10-0-0-1", "ip-10-0-0-2"], info={"ip-10-0-0-1": nccl_format.SOCKETS, "ip-10-0-0-2": EFA_P5})
    m = measurement_from_text(text, "r1_gpu-1_gpu-2.log", {"ip-10-0-0-1": "gpu-1", "ip-10-0-0-2": "gpu-2"})
    assert m.hosts == ("gpu-1", "gpu-2")
    got = {n.node: n.verdict for n in judge([m], P5).nodes}
    assert got == {"gpu-1": "fail", "gpu-2": "pass"}  # the sockets cause is gpu-1's; gpu-2's pair is explained


def test_failed_runs_count_as_bad_pairs_and_too_many_mean_a_broken_gate() -> None:
    nodes = [f"n{i}" for i in range(1, 9)]
    ms, failed = [], []
    for r, pairs in enumerate(pairing_plan(nodes), start=1):
        for a, b in pairs:
            if "n3" in (a, b):
                failed.append(FailedRun(r, (a, b), "srun/all_reduce_perf exited 1"))
            else:
                ms.append(measurement_from_text(all_reduce_output([a, b]), f"r{r}_{a}_{b}.log"))
    got = {n.node: n.verdict for n in judge(ms, P5, failed_runs=failed).nodes}
    assert [n for n, vr in got.items() if vr == "fail"] == ["n3"]
    with pytest.raises(JudgeInputError, match="the gate itself is broken"):
        judge(ms[:1], P5, failed_runs=failed)  # 2 of 3 runs failed


INPUT_ERRORS = [
    ("mismatched_sizes", "mismatched sizes"),
    ("truncated", "truncated output, the run did not finish"),
    ("empty", "empty file"),
]


@pytest.mark.parametrize(("folder", "message"), INPUT_ERRORS)
def test_inconsistent_input_is_rejected(folder: str, message: str) -> None:
    with pytest.raises(JudgeInputError) as e:
        judge(load_results(str(FIX / folder)), P5)
    assert any(message in p and str(FIX / folder) in p for p in e.value.problems)


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    (tmp_path / "r1_a_b.log").write_text("")
    (tmp_path / "r1_c_d.log").write_text(all_reduce_output(["c", "d"], truncate_after=3))
    with pytest.raises(JudgeInputError) as e:
        load_results(str(tmp_path))
    assert len(e.value.problems) == 2


@pytest.mark.parametrize(("case", "texts", "message"), [
    ("no reference size", {"r1_a_b.log": all_reduce_output(["a", "b"], max_bytes=1 << 20)},
     "no row at the reference size 1073741824 B (table has 8..1048576 B); run all_reduce_perf with -e 1073741824 or more"),
    ("single host", {"r1_a.log": all_reduce_output(["a"])}, "ran on one host"),
    ("ranks per node", {"r1_a_b.log": all_reduce_output(["a", "b"], gpus=4)}, "ran 4 rank(s)"),
    ("file name disagrees", {"r1_a_c.log": all_reduce_output(["a", "b"])}, "the file name names a, c"),
    ("another collective", {"r1_a_b.log": all_reduce_output(["a", "b"]).replace("starting: all_reduce_perf", "starting: all_gather_perf")},
     "is a all_gather_perf run"),
])
def test_input_that_cannot_be_compared_is_rejected(case: str, texts: dict[str, str], message: str) -> None:
    with pytest.raises(JudgeInputError) as e:
        judge([measurement_from_text(t, f) for f, t in texts.items()], P5)
    assert any(message in p for p in e.value.problems), (case, e.value.problems)


@pytest.mark.parametrize(("sizes", "fix"), [
    ([8, 1 << 20], "-e 1073741824 or more"),                       # the table stops below the reference size
    ([1 << 31, 1 << 33], "-b 1073741824 or less"),                 # it starts above it
    ([1000, 1000 * 3, 1000 * 9 << 20], "-b and -f that step onto 1073741824 (-f 2 from a power of two)"),  # steps over it
])
def test_a_table_without_the_reference_size_names_the_option_that_adds_it(sizes: list[int], fix: str) -> None:
    from fmcluster.acceptance.judge import _sizes_fix

    assert _sizes_fix(sizes, 1 << 30) == fix


# ---- the command --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("folder", "instance_type", "code"), [
    ("p5_healthy_pair", "p5.48xlarge", 0),
    ("eight_one_slow", "p5.48xlarge", 1),
    ("p5_sockets_pair", "p5.48xlarge", 1),
    ("p4d_single_efa_pair", "ml.p4d.24xlarge", 1),
    ("truncated", "p5.48xlarge", 2),
    ("empty", "p5.48xlarge", 2),
    ("mismatched_sizes", "p5.48xlarge", 2),
    ("does-not-exist", "p5.48xlarge", 2),
])
def test_cli_exit_codes(folder: str, instance_type: str, code: int) -> None:
    r = runner.invoke(app, ["acceptance", "judge", "--results", str(FIX / folder), "--instance-type", instance_type])
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output


def test_cli_json_names_the_failed_node_with_evidence() -> None:
    r = runner.invoke(app, ["acceptance", "judge", "--results", str(FIX / "eight_one_slow"), "--instance-type",
                            "p5.48xlarge", "--format", "json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["status"] == "fail"
    assert [n["node"] for n in doc["nodes"] if n["verdict"] == "fail"] == ["p5-st-gpu-5"]
    assert doc["floor"]["floor_busbw_gbps"] == 250.0 and doc["cluster_median_busbw_gbps"] > 400


def test_cli_unknown_instance_type_exits_2_with_did_you_mean() -> None:
    r = runner.invoke(app, ["acceptance", "judge", "--results", str(FIX / "p5_healthy_pair"), "--instance-type", "p5.48xlarg"])
    assert r.exit_code == 2 and "did you mean 'p5.48xlarge'" in r.output


def test_cli_markdown_table() -> None:
    r = runner.invoke(app, ["acceptance", "judge", "--results", str(FIX / "eight_one_slow"), "--instance-type",
                            "p5.48xlarge", "--format", "markdown"])
    assert r.exit_code == 1
    assert "| p5-st-gpu-5 | fail | 265.6 | 2 of 2 pair(s) more than 7% below the median of the pairs without it" in r.stdout and "| node | verdict | bus bandwidth (GB/s) | reason |" in r.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["judge", "--instance-type", "p5.48xlarge"], "needs --results DIR"),
    (["judge", "--results", "x"], "needs --instance-type TYPE"),
    (["judge", "a", "--results", "x", "--instance-type", "p5.48xlarge"], "they belong to 'acceptance plan'"),
    (["judge", "--results", "x", "--instance-type", "p5.48xlarge", "--median-fraction", "1.5"], "Invalid value"),
    (["plan", "a", "--min-partners", "0"], "Invalid value"),
    (["verify"], "verify"),
])
def test_cli_bad_input_exits_2(args: list[str], message: str) -> None:
    r = runner.invoke(app, ["acceptance", *args])
    assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output
    assert "Traceback" not in r.output


def test_cli_plan() -> None:
    r = runner.invoke(app, ["acceptance", "plan", "a", "b", "c", "d"])
    assert r.exit_code == 0 and r.stdout == "1 a d\n1 b c\n2 a c\n2 d b\n"
    r = runner.invoke(app, ["acceptance", "plan", "a", "a"])
    assert r.exit_code == 2 and "a more than once" in r.output
    for nodes in ([], ["a"]):  # nothing to pair is "could not run", never an empty success
        r = runner.invoke(app, ["acceptance", "plan", *nodes])
        assert r.exit_code == 2 and f"needs at least 2 nodes, got {len(nodes)}" in " ".join(r.output.split()), r.output


def test_readme_row_names_every_option() -> None:
    readme = (ROOT / "README.md").read_text()
    [row] = [line for line in readme.splitlines() if line.startswith("| `fmcluster acceptance judge ")]
    for option in ("--results", "--instance-type", "--format", "--median-fraction", "--hostnames", "--min-partners"):
        assert option in row


# ---- the floors in the catalog ------------------------------------------------------------------------
def test_every_catalog_type_has_an_acceptance_entry() -> None:
    assert acceptance_instance_types() == known_instance_types()


@pytest.mark.parametrize("instance_type", known_instance_types())
def test_floors_carry_source_and_date_and_only_verified_ones_are_enforced(instance_type: str) -> None:
    fig = acceptance_figures(instance_type)
    if fig.floor.busbw_gbps is not None:
        assert fig.floor.source.startswith("https://") and fig.floor.date
    for e in fig.expected:
        assert e.source.startswith("https://") and e.date and e.busbw_gbps
    assert fig.enforced == (instance_type in ("p4d.24xlarge", "p5.48xlarge"))


def test_published_figures() -> None:
    p5 = acceptance_figures("p5.48xlarge")
    assert (p5.floor.size_bytes, p5.floor.busbw_gbps) == (1 << 30, 250.0)
    assert p5.expected_at(16 << 30) == 487.09 and p5.expected_at(2 << 30) == 443.72
    assert acceptance_figures("p4d.24xlarge").floor.busbw_gbps == 26.0
    assert P4_CURVE[-2] == (1073741824, 76.79, 76.86)


# ---- the pairing plan ---------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [3, 4, 5, 6, 7, 8, 9, 16, 31, 64])
@pytest.mark.parametrize("min_partners", [1, 2, 3])
def test_every_node_gets_distinct_partners_in_disjoint_rounds(count: int, min_partners: int) -> None:
    nodes = [f"n{i:02d}" for i in range(count)]
    rounds = pairing_plan(nodes, min_partners)
    partners: dict[str, list[str]] = {n: [] for n in nodes}
    for r in rounds:
        in_round = [n for pair in r for n in pair]
        assert len(in_round) == len(set(in_round)), "a node twice in one round"
        for a, b in r:
            partners[a].append(b)
            partners[b].append(a)
    for n, ps in partners.items():
        assert len(ps) >= min(min_partners, count - 1), n
        assert len(set(ps)) == len(ps) or len(ps) > count - 1, f"{n} meets a partner twice: {ps}"
    # even counts need exactly min_partners rounds; odd ones one more (a bye per round)
    expected = min_partners if count % 2 == 0 else min(min_partners + 1, count)
    assert len(rounds) == expected or min_partners > count - 1


@pytest.mark.parametrize(("nodes", "expected"), [
    ([], []),
    (["only"], []),
    (["a", "b"], [[("a", "b")], [("a", "b")]]),
    (["a", "b", "c"], [[("b", "c")], [("a", "c")], [("a", "b")]]),
])
def test_small_counts(nodes: list[str], expected: list) -> None:
    assert pairing_plan(nodes) == expected


@pytest.mark.parametrize(("nodes", "min_partners", "message"), [
    (["a", "a", "b"], 2, "a more than once"),
    (["a", ""], 2, "non-empty"),
    (["a b", "c"], 2, "without spaces"),
    (["a", "b"], 0, "at least 1"),
])
def test_bad_plan_input(nodes: list[str], min_partners: int, message: str) -> None:
    with pytest.raises(PairingError, match=message):
        pairing_plan(nodes, min_partners)


def test_plan_lines() -> None:
    assert plan_lines(pairing_plan(["a", "b", "c", "d"])) == "1 a d\n1 b c\n2 a c\n2 d b\n"


# ---- what ships to the cluster ------------------------------------------------------------------------
def test_shipped_modules_import_only_the_standard_library_and_each_other() -> None:
    pkg = ROOT / "fmcluster" / "acceptance"
    stdlib = set(sys.stdlib_module_names)
    for name in SHIPPED:
        tree = ast.parse((pkg / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    continue
                mods = [(node.module or "").split(".")[0]]
            else:
                continue
            bad = [m for m in mods if m not in stdlib and m != "__future__"]
            assert not bad, f"{name} imports {bad}: the gate runs it with the node's bare python3"


def test_textfile_metrics_are_the_declared_ones_in_the_exposition_format() -> None:
    from fmcluster.acceptance.metrics import METRIC_NAMES, render_metrics

    verdict = judge(load_results(str(FIX / "eight_one_slow")), P5).as_dict()
    text = render_metrics(verdict, 1796160000, drained=["p5-st-gpu-5"], cluster="c", group="gpu")
    names = {line.split("{")[0] for line in text.splitlines() if line and not line.startswith("#")}
    assert names == set(METRIC_NAMES)
    assert 'fmcluster_acceptance_node_verdict{cluster="c",group="gpu",node="p5-st-gpu-5",verdict="fail"} 1' in text
    assert 'fmcluster_acceptance_node_drained{cluster="c",group="gpu",node="p5-st-gpu-5"} 1' in text
    assert 'fmcluster_acceptance_last_run_timestamp_seconds{cluster="c",group="gpu",instance_type="p5.48xlarge"} 1796160000' in text
    for name in METRIC_NAMES:
        assert f"# TYPE {name} gauge" in text


def test_a_catalog_type_without_an_entry_gets_no_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    import fmcluster.catalog.acceptance as cat

    monkeypatch.setattr(cat, "_load", lambda: {})
    fig = cat.acceptance_figures("p5en.48xlarge")
    assert (fig.floor.busbw_gbps, fig.enforced, fig.efa_devices, fig.gpus) == (None, False, 16, 8)
    with pytest.raises(KeyError, match="did you mean 'p5en.48xlarge'"):
        cat.acceptance_figures("p5en.48xlarg")
