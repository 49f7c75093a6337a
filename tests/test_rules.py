"""The rule engine and the cross-section rules: a table of (blueprint patch, expected path, message,
rule id) across rule families with a passing case each; precedence, declared on the rule
(``@rule(..., suppressed_by=(...))``) and applied by the runner; and rule and loader messages written in
whole phrases. Each topic's full table is in test_<topic>_rules.py."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError, Problem
from fmcluster.features.node.rules_software import SPECIFIC_RULES
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules import REGISTRY, Rule, _load_rule_modules, apply_precedence, check_precedence
from tests.blueprints import blueprint, blueprint_text

P5 = {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}


def lustre(**kw: Any) -> dict[str, Any]:
    return {"storage": {"lustre": kw}}


# ---- one table across rule families: each case fails, every rule problem names its source -----------
FAILING = [
    ({"availability_zone_id": "use1-az6"}, "availability_zone_id",
     "set either availability_zone or availability_zone_id, not both, got 'us-east-1a' and 'use1-az6'; allowed one of them "
     "(prefer availability_zone_id for reservations)", "R-AZ-1"),
    ({"availability_zone": None}, "availability_zone",
     "missing; allowed an AZ name such as us-east-1a or an availability_zone_id such as use1-az6 (EFA nodes, the placement "
     "group and FSx live in one AZ)", "R-AZ-1"),
    ({"availability_zone": "us-west-2a"}, "availability_zone",
     "not in region us-east-1, got 'us-west-2a'; allowed us-east-1a, us-east-1b, ...", "R-AZ-2"),
    ({"region": "us-esat-1"}, "region",
     "unknown AWS Region, got 'us-esat-1'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1 - did you mean us-east-1?", "R-REGION-1"),
    ({"region": "us-east-9", "availability_zone": "us-east-9a"}, "region",
     "unknown AWS Region, got 'us-east-9'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1", "R-REGION-1"),  # another number is another Region: no guess
    ({"region": "zz-nowhere-1", "availability_zone": "zz-nowhere-1a"}, "region",
     "unknown AWS Region, got 'zz-nowhere-1'; allowed a Region name from botocore's endpoints data such as us-east-1, "
     "us-west-2 or eu-west-1", "R-REGION-1"),
    ({"network": {"vpc_id": "vpc-0123456789abcdef0"}}, "network.gpu_subnet_id",
     "required with vpc_id 'vpc-0123456789abcdef0', got nothing; allowed subnet-<hex> in the blueprint's AZ", "R-NET-1"),
    ({"compute": [P5, P5]}, "compute[1].name",
     "duplicate compute group name, got 'gpu'; allowed a name not used by another group", "R-COMPUTE-1"),
    ({"compute": [{**P5, "min_count": 3}]}, "compute[0].min_count", "larger than count, got 3; allowed 0..2", "R-COMPUTE-2"),
    (lustre(storage_capacity_gib=3000), "storage.lustre.storage_capacity_gib",
     "invalid capacity for PERSISTENT_2, got 3000 GiB; allowed 1200, 2400 or a multiple of 2400 GiB - did you mean 2400 or 4800?",
     "R-FSX-1"),
    (lustre(deployment_type="SCRATCH_1", storage_capacity_gib=4800, per_unit_storage_throughput=None),
     "storage.lustre.storage_capacity_gib",
     "invalid capacity for SCRATCH_1, got 4800 GiB; allowed 1200, 2400 or a multiple of 3600 GiB - did you mean 3600 or 7200?",
     "R-FSX-1"),
    (lustre(per_unit_storage_throughput=200), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_2, got 200; allowed 125, 250, 500, 1000 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=125), "storage.lustre.per_unit_storage_throughput",
     "invalid for PERSISTENT_1, got 125; allowed 50, 100, 200 MB/s/TiB", "R-FSX-2"),
    (lustre(deployment_type="SCRATCH_2", per_unit_storage_throughput=250), "storage.lustre.per_unit_storage_throughput",
     "not used by SCRATCH_2, got 250; allowed null (only PERSISTENT_1/2 take a throughput tier)", "R-FSX-2"),
    (lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=200, efa_enabled=True), "storage.lustre.efa_enabled",
     "needs deployment_type PERSISTENT_2, got PERSISTENT_1; allowed PERSISTENT_2", "R-FSX-3"),
    (lustre(metadata_iops=2000), "storage.lustre.metadata_iops",
     "invalid, got 2000; allowed 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000", "R-FSX-4"),
    (lustre(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, automatic_backup_retention_days=7),
     "storage.lustre.automatic_backup_retention_days", "scratch file systems have no backups, got 7; allowed 0", "R-FSX-5"),
    (lustre(data_repositories=[{"file_system_path": f"/d{i}"} for i in range(9)]), "storage.lustre.data_repositories",
     "too many data repository associations, got 9; allowed at most 8", "R-DRA-1"),
    (lustre(deployment_type="SCRATCH_1", storage_capacity_gib=1200, per_unit_storage_throughput=None,
            data_repositories=[{"file_system_path": "/data"}]), "storage.lustre.data_repositories",
     "SCRATCH_1 file systems do not support data repository associations, got 1; allowed SCRATCH_2, PERSISTENT_1 or PERSISTENT_2",
     "R-DRA-1"),
    (lustre(data_repositories=[{"file_system_path": "/data"}, {"file_system_path": "/data/llm"}]),
     "storage.lustre.data_repositories[1].file_system_path",
     "overlaps data_repositories[0] ('/data'), got '/data/llm'; allowed a path that is neither inside nor above another "
     "association's path", "R-DRA-2"),
    (lustre(data_repositories=[{"file_system_path": "/"}, {"file_system_path": "/x"}]),
     "storage.lustre.data_repositories[0].file_system_path",
     "'/' links the whole file system and must be the only association, got '/' with 1 other(s); allowed a subdirectory such as "
     "/datasets", "R-DRA-2"),
    (lustre(data_repositories=[{"file_system_path": "/a", "s3_uri": "s3://bkt/data/"},
                               {"file_system_path": "/b", "s3_uri": "s3://bkt/data/sub/"}]),
     "storage.lustre.data_repositories[1].s3_uri",
     "overlaps the S3 location of data_repositories[0], got 's3://bkt/data/sub/'; allowed a separate bucket or prefix", "R-DRA-3"),
    ({"orchestrator": {"kind": "parallelcluster", "pcs": {"size": "LARGE"}}}, "orchestrator.pcs",
     "settings for pcs are ignored because orchestrator.kind is 'parallelcluster'; allowed only orchestrator.parallelcluster - "
     "did you mean kind: pcs?", "R-ORCH-1"),
    ({"observability": {"scrape_interval_seconds": 15, "scrape_timeout_seconds": 20}}, "observability.scrape_timeout_seconds",
     "longer than scrape_interval_seconds (15 s), got 20; allowed 1..15 - lower the timeout or raise scrape_interval_seconds",
     "R-OBS-1"),
    ({"compute": [{**P5, "instance_type": "p6-b200.48xlarge"}],
      "software": {"image": {"mode": "bake"}, "stack": "h100-570-cuda12.8"}}, "software.stack",
     "stack is not known-good for the p6-b200 family (compute[0] is p6-b200.48xlarge), got 'h100-570-cuda12.8'; "
     "allowed blackwell-580-cuda13.0 - did you mean 'blackwell-580-cuda13.0'?", "R-SW-1"),
]


@pytest.mark.parametrize(("patch", "path", "message", "rule_id"), FAILING, ids=[f"{r[3]}-{i}" for i, r in enumerate(FAILING)])
def test_rule_rejects(patch: dict[str, Any], path: str, message: str, rule_id: str) -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    found = [(p.path, p.message, p.rule_id, p.level) for p in exc.value.problems]
    assert (path, message, rule_id, "error") in found
    assert all(p.source for p in exc.value.problems if p.rule_id)


PASSING = [
    {"availability_zone": None, "availability_zone_id": "use1-az6"},
    {"region": "eu-west-1", "availability_zone": "eu-west-1a"},
    {"region": "us-gov-west-1", "availability_zone": "us-gov-west-1a"},
    {"network": {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}},
    {"compute": [P5, {**P5, "name": "gpu2", "min_count": 0}]},
    lustre(storage_capacity_gib=2400), lustre(storage_capacity_gib=1200), lustre(storage_capacity_gib=9600),
    lustre(deployment_type="SCRATCH_1", storage_capacity_gib=3600, per_unit_storage_throughput=None),
    lustre(per_unit_storage_throughput=1000),
    lustre(deployment_type="PERSISTENT_1", per_unit_storage_throughput=200),
    lustre(efa_enabled=True, metadata_iops=12000),
    lustre(data_repositories=[{"file_system_path": f"/d{i}"} for i in range(8)]),
    lustre(data_repositories=[{"file_system_path": "/data"}, {"file_system_path": "/database"}]),
    lustre(data_repositories=[{"file_system_path": "/"}]),
    {"orchestrator": {"kind": "pcs", "pcs": {"size": "LARGE"}}},
    {"observability": {"scrape_interval_seconds": 15, "scrape_timeout_seconds": 15}},
    {"compute": [{**P5, "instance_type": "p6-b200.48xlarge"}], "software": {"image": {"mode": "bake"}, "stack": "blackwell-580-cuda13.0"}},
]


@pytest.mark.parametrize(
    "patch",
    [{"region": "us-esat-1"}, {"region": "us-esat-1", "availability_zone": None, "availability_zone_id": "use1-az6"},
     {"region": "us-east-9", "availability_zone": "us-east-9a"}],
)
def test_unknown_region_is_reported_once(patch: dict[str, Any]) -> None:
    """Only R-REGION-1: the AZ rules invent no zones (us-esat-1a, usesat1-az1) from a misspelt Region."""
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    assert [p.rule_id for p in exc.value.problems if p.rule_id and p.rule_id.startswith(("R-REGION", "R-AZ"))] == [
        "R-REGION-1"
    ]


@pytest.mark.parametrize("patch", PASSING)
def test_rule_accepts(patch: dict[str, Any]) -> None:
    load_blueprint_text(blueprint_text(patch))


# ---- precedence: declared on the rule (@rule(..., suppressed_by=(...))), applied by the runner ----
_load_rule_modules()
BY_ID = {r.id: r for r in REGISTRY}


def _rule(id: str, *suppressed_by: str) -> Rule:
    return Rule(id, "error", "test", "blueprint", lambda _bp: iter(()), suppressed_by=tuple(suppressed_by))


# A <- B <- C: B is suppressed by A, C by B; D is independent.
CHAIN = [_rule("A"), _rule("B", "A"), _rule("C", "B"), _rule("D")]


def _p(rid: str) -> Problem:
    return Problem(f"path.{rid.lower()}", f"{rid} fired", rule_id=rid)


@pytest.mark.parametrize(("fired", "reported"), [
    ((), []),
    (("B",), ["B"]),
    (("A", "B"), ["A"]),                 # B is suppressed while A reports
    (("B", "C"), ["B"]),
    (("A", "B", "C"), ["A", "C"]),       # B is suppressed, so it does not suppress C
    (("A", "C"), ["A", "C"]),            # suppression is not transitive through a silent rule
    (("C", "D"), ["C", "D"]),
    (("D", "C", "B", "A"), ["A", "C", "D"]),  # output in rule order, not in the order found
])
def test_apply_precedence_table(fired: tuple[str, ...], reported: list[str]) -> None:
    found = {rid: [_p(rid)] for rid in fired}
    found |= {r.id: [] for r in CHAIN if r.id not in found and r.id != "D"}  # ran, found nothing
    assert [p.rule_id for p in apply_precedence(found, CHAIN)] == reported


def test_a_rule_that_did_not_run_suppresses_nothing() -> None:
    # A was skipped (its section failed the shape check): absent from ``found``, B is reported.
    assert apply_precedence({"B": [_p("B")]}, CHAIN) == [_p("B")]


def test_check_precedence_refuses_unknown_ids_and_cycles() -> None:
    check_precedence()  # the real registry
    check_precedence(CHAIN)
    with pytest.raises(ValueError, match="suppressed_by names unknown rule"):
        check_precedence([_rule("A", "NOPE")])
    with pytest.raises(ValueError, match="suppressed_by cycle: A -> B -> A"):
        check_precedence([_rule("A", "B"), _rule("B", "A")])


def test_declared_precedence() -> None:
    declared = {r.id: r.suppressed_by for r in REGISTRY if r.suppressed_by}
    assert declared == {
        "R-ARN-1": ("R-REGION-1",),
        "R-ARN-2": ("R-REGION-1", "R-ARN-1"),
        "R-AZ-4": ("R-REGION-1", "R-AZ-3"),
        "R-REGION-2": ("R-REGION-1",),
        "R-REGION-3": ("R-REGION-1",),
        "R-AZ-2": ("R-REGION-1",),
        "R-AZ-3": ("R-REGION-1",),
        "R-CAP-7": ("R-CAP-9",),
        "R-PC-2": ("R-CAP-9",),
        "R-SW-1": ("R-CAP-9",),
        "R-SW-4": SPECIFIC_RULES,
        "R-SW-5": SPECIFIC_RULES,
        # without a manifest of the official image (R-IMG-2) the image's OS, architecture and Lustre client are unknown
        "R-IMG-3": ("R-IMG-2",),
        "R-IMG-4": ("R-IMG-2",),
        "R-IMG-5": ("R-IMG-2",),
        "R-IMG-8": ("R-IMG-2",),
        "R-IMG-10": ("R-IMG-2",),
        "R-IMG-11": ("R-IMG-2",),
        # a p6e-gb200 group on capacity the IMEX wiring does not take: R-CAP-6 names the capacity precisely
        "R-IMEX-1": ("R-CAP-6",),
        # the container's CUDA below its family's driver minimum: the error, not the warning that echoes it
        "R-CTR-3": ("R-CTR-2",),
        # no zone, or two: R-AZ-1's error; which zone a zone-bound Capacity Block needs is said once it is fixed
        # ... and no Capacity Block at all on HyperPod (R-CAP-4: a training plan instead)
        "R-CAP-15": ("R-AZ-1", "R-CAP-4"),
        # compute groups of two architectures: no helper type can match them all, R-CAP-9 reports the mix
        "R-HP-9": ("R-CAP-9",),
    }


def test_combination_rules_defer_to_every_specific_software_error_rule() -> None:
    specific = {r.id for r in REGISTRY if r.fn.__module__ == "fmcluster.features.node.rules_software" and r.level == "error"} - {"R-SW-4"}
    assert specific, "no software error rule found: the module name is stale"
    assert set(SPECIFIC_RULES) == specific


MIXED = {"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
                     {"name": "grace", "instance_type": "p6e-gb200.36xlarge", "count": 1}],
         "orchestrator": {"kind": "parallelcluster"}}


@pytest.mark.parametrize(("patch", "suppressed", "by"), [
    ({"region": "us-esat-1"}, "R-AZ-2", "R-REGION-1"),
    ({"region": "us-esat-1", "availability_zone": None, "availability_zone_id": "use1-az6"}, "R-AZ-3", "R-REGION-1"),
    (MIXED, "R-CAP-7", "R-CAP-9"),
    (MIXED, "R-PC-2", "R-CAP-9"),
    ({"software": {"overrides": {"driver": "570.172.08", "fabric_manager": "580.95.05"}}}, "R-SW-4", "R-FM-1"),
    ({"software": {"overrides": {"driver": "570.172.08", "fabric_manager": "580.95.05"}, "allow_untested": True}},
     "R-SW-5", "R-FM-1"),
])
def test_suppressed_rule_would_fire_but_is_not_reported(patch: dict[str, Any], suppressed: str, by: str) -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(patch))
    reported = {p.rule_id for p in exc.value.problems}
    assert by in reported and suppressed not in reported
    # the suppressed rule itself does find something on this blueprint: the runner drops it
    bp = _unchecked_blueprint(patch)
    rule = BY_ID[suppressed]
    subject = bp if rule.scope == "blueprint" else getattr(bp, rule.scope)
    assert list(rule.check(subject))


def _unchecked_blueprint(patch: dict[str, Any]) -> Any:
    """The shape-valid Blueprint of ``patch`` without running the cross-field rules."""
    from fmcluster.blueprint.model import Blueprint

    return Blueprint.model_validate(blueprint(patch))


# ---- messages are written in whole phrases (greppable in the source) -----------------------------
# A message spread over several string literals (implicit concatenation) may break only after
# punctuation (``, ; : . ? ! )`` or `` -``) or before a parenthesis, a placeholder (``{...}``) or a
# `` - did you mean`` tail, never between two words of a phrase (``"... FSx " "and " "endpoints"``).
# Rule sources (``@rule(source=...)``) and module-level source constants are not messages.
PKG = Path(__file__).resolve().parent.parent / "fmcluster"
MESSAGE_MODULES = sorted((PKG / "validation" / "rules").glob("*.py")) + [PKG / "validation" / "loader.py"]

_PREFIX = re.compile(r"^[rbfuRBFU]*('''|\"\"\"|'|\")")
_ENDS_CLAUSE = re.compile(r"([,;:.?!)]| -|\\n) ?$")
_STARTS_CLAUSE = re.compile(r"[({]|- ")


def _body(token: str) -> str:
    quote = _PREFIX.match(token)
    assert quote is not None, token
    return token[quote.end():-len(quote.group(1))]


def _skipped_lines(tree: ast.Module) -> set[int]:
    """Lines of ``@rule(...)`` decorators and of module-level string constants (sources, URLs)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                lines.update(range(d.lineno, (d.end_lineno or d.lineno) + 1))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant | ast.JoinedStr):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def split_phrases(source: str) -> list[str]:
    """``line: left ‖ right`` for every implicit concatenation that breaks inside a phrase."""
    skipped = _skipped_lines(ast.parse(source))
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.NL, tokenize.COMMENT)]
    out = []
    for a, b in zip(toks, toks[1:], strict=False):
        if a.type == b.type == tokenize.STRING and a.start[0] not in skipped:
            left, right = _body(a.string), _body(b.string)
            if not _ENDS_CLAUSE.search(left) and not _STARTS_CLAUSE.match(right):
                out.append(f"{a.start[0]}: {left[-30:]} ‖ {right[:30]}")
    return out


@pytest.mark.parametrize(("snippet", "found"), [
    ('msg = f(f"leaves {n} for FSx "\n "and "\n "endpoints")', ["1: leaves {n} for FSx  ‖ and ", "2: and  ‖ endpoints"]),
    ('msg = f("a reservation holds "\n "one instance type")', ["1: a reservation holds  ‖ one instance type"]),
    ('msg = f("too small, "\n "got 3")', []),                       # after punctuation
    ('msg = f("addresses needed "\n "(4 for nodes)")', []),           # before a parenthesis
    ('msg = f("got "\n f"{value}; allowed x")', []),                  # before a placeholder
    ('msg = f("allowed a or b "\n "- did you mean a?")', []),         # before the hint
    ('SOURCE = ("https://example.com/a "\n "(section 2)")', []),      # a module-level source constant
    ('SOURCE = "a long source that breaks " "mid phrase"', []),
    ('@rule("R-X-1", source="breaks inside "\n "a phrase")\ndef r(bp): pass', []),  # rule sources are exempt
])
def test_split_phrases_finds_breaks_inside_phrases(snippet: str, found: list[str]) -> None:
    assert split_phrases(snippet) == found


@pytest.mark.parametrize("module", MESSAGE_MODULES, ids=lambda p: p.name)
def test_messages_are_written_in_whole_phrases(module: Path) -> None:
    assert split_phrases(module.read_text()) == []
