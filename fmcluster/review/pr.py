"""Pull-request review: GitHub annotations from ``fmcluster validate --json`` and the one comment the review
workflow (``.github/workflows/fmcluster-review.yml``, driven by ``tools/pr_review.py``) posts.

Annotations are GitHub workflow commands, ``::error file=F,line=N,title=T::message``
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#setting-an-error-message):
``%``, CR and LF are escaped in the message, and also ``:`` and ``,`` in the properties, as the Actions toolkit's
``toCommandValue``/``escapeProperty`` do (actions/toolkit ``packages/core/src/command.ts``).

The comment, per changed blueprint: before (base branch) and after (the pull request) side by side from
``fmcluster plan --json`` (GPUs, nodes, P-instance vCPUs for the L-417A185B quota, FSx throughput, the boot
estimate when the plan has one, cost per hour with the price table's date), then ``fmcluster diff --format
markdown`` and the synth / lint verdicts. A hidden marker (:data:`MARKER`) lets the workflow update its one
comment instead of adding another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MARKER = "<!-- fmcluster-review -->"
#: Exit code of ``fmcluster diff`` for an unsafe change (data loss or an update CloudFormation cannot apply).
DIFF_UNSAFE = 1


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: Mapping[str, Any]) -> list[str]:
    """One workflow command per problem of a ``fmcluster validate --json`` envelope (errors ``::error``,
    warnings ``::warning``), at the file the problem is in (the blueprint, a base of ``extends`` or the organisation
    file) and its YAML line (line 1 when the problem has none); a problem of no file (a usage error) has no place."""
    out = []
    for p in report.get("problems", []):
        level = "error" if p.get("severity") == "error" else "warning"
        rule = p.get("rule_id") or "shape"
        where = p.get("path") or "(blueprint)"
        title = _escape_property(f"fmcluster {rule}")
        place = f"file={_escape_property(str(p['file']))},line={p.get('line') or 1}," if p.get("file") else ""
        props = f"{place}title={title}"
        message = f"{where}: {p.get('message')}"
        out.append(f"::{level} {props}::{_escape_data(message)}")
    return out


def invalid_files(report: Mapping[str, Any]) -> set[str]:
    """The files a ``fmcluster validate --json`` envelope refused."""
    return {r["file"] for r in report.get("result") or [] if not r["valid"]}


@dataclass
class BlueprintReview:
    """What the workflow collected for one changed blueprint (files in one folder, see :func:`load_review`)."""

    path: str
    base_ref: str
    base_plan: dict[str, Any] | None = None   # None: the blueprint is new in this pull request
    head_plan: dict[str, Any] | None = None   # None: it did not synthesize
    diff_markdown: str = ""
    diff_exit: int | None = None   # None: fmcluster diff did not run
    synth_ok: bool = True          # the pull request's version synthesized
    base_synth_ok: bool = True     # the base branch's version synthesized (or there is none)
    valid: bool = True             # fmcluster validate accepted the pull request's version
    lint: str = ""
    notes: list[str] = field(default_factory=list)


def load_review(folder: Path) -> BlueprintReview:
    """Read one blueprint's folder: ``path``, ``base_ref``, ``base.json``, ``head.json``, ``diff.md``, ``diff.rc``,
    ``synth.rc``, ``base.synth.rc``, ``lint.txt`` (each optional but ``path``)."""
    def text(name: str) -> str | None:
        f = folder / name
        return f.read_text(encoding="utf-8") if f.is_file() else None

    def plan(name: str) -> dict[str, Any] | None:
        """The plan of a ``fmcluster plan --json`` envelope (``result``), ``None`` when there is none."""
        raw = text(name)
        try:
            envelope = json.loads(raw) if raw else None
        except ValueError:  # not JSON, or a number longer than Python reads
            return None
        return envelope.get("result") if isinstance(envelope, dict) else None

    rc = (text("diff.rc") or "").strip()
    return BlueprintReview(
        path=(text("path") or folder.name).strip(), base_ref=(text("base_ref") or "base").strip(),
        base_plan=plan("base.json"), head_plan=plan("head.json"), diff_markdown=text("diff.md") or "",
        diff_exit=int(rc) if rc.lstrip("-").isdigit() else None,
        synth_ok=(text("synth.rc") or "0").strip() == "0", base_synth_ok=(text("base.synth.rc") or "0").strip() == "0",
        lint=(text("lint.txt") or "").strip(),
    )


def _vcpus(plan: Mapping[str, Any]) -> int | None:
    from fmcluster.catalog.instances import get_instance

    try:
        return sum(get_instance(c["instance_type"]).vcpus * c["count"] for c in plan["compute"])
    except (KeyError, ValueError, LookupError):
        return None


def _boot(plan: Mapping[str, Any]) -> str:
    """Each compute group's boot estimate from the plan (``boot.estimated_boot_s``), e.g. ``gpu: 229 s``; ``-`` when
    the plan has none."""
    parts = []
    for c in plan.get("compute", []):
        boot = c.get("boot")
        seconds = boot.get("estimated_boot_s") if isinstance(boot, Mapping) else None
        if isinstance(seconds, (int, float)):
            parts.append(f"{c['group']}: {seconds:g} s")
    return ", ".join(parts) or "-"


def _cost(plan: Mapping[str, Any]) -> str:
    from fmcluster.review.cost import money

    cost = plan.get("cost") or {}
    if not cost:
        return "-"
    total = cost.get("total_usd_per_hour")
    if total is not None:
        return f"{money(total)}/h"
    return f"≥ {money(cost.get('known_usd_per_hour'))}/h + unknown ({', '.join(cost.get('unknown', []))})"


def facts(plan: Mapping[str, Any] | None) -> dict[str, str]:
    """The before/after rows of one plan (``-`` for a side that does not exist)."""
    if plan is None:
        return dict.fromkeys(ROWS, "-")
    storage = plan.get("storage") or {}
    vcpus = _vcpus(plan)
    return {
        "GPUs": str(plan.get("gpus_total", "-")),
        "nodes": str(sum(c["count"] for c in plan.get("compute", []))),
        "P-instance vCPUs (quota L-417A185B)": "-" if vcpus is None else f"{vcpus:,}",
        "FSx throughput MB/s": str(storage.get("throughput_mbps", "-")) if storage else "no FSx",
        "boot estimate": _boot(plan),
        "cost per hour": _cost(plan),
    }


ROWS = ("GPUs", "nodes", "P-instance vCPUs (quota L-417A185B)", "FSx throughput MB/s", "boot estimate", "cost per hour")


def _cost_delta(base: Mapping[str, Any] | None, head: Mapping[str, Any] | None) -> str:
    from fmcluster.review.cost import delta

    return delta(dict(base["cost"]) if base and base.get("cost") else None,
                 dict(head["cost"]) if head and head.get("cost") else None)[1]


def verdict_of(r: BlueprintReview) -> tuple[bool, str]:
    """(safe, words) of one blueprint. Only a valid blueprint whose two versions both synthesized and whose diff ran
    and found nothing unsafe is safe; anything unknown is not (a comment is never wrong in the green direction)."""
    if not r.valid:
        return False, "invalid (see the annotations on the file): not synthesized, not compared"
    if not r.synth_ok:
        return False, "did not synthesize: not compared"
    if r.base_plan is not None and not r.base_synth_ok:
        return False, "the base version did not synthesize: not compared"
    if r.diff_exit == DIFF_UNSAFE:
        return False, "data loss or a failing update (fmcluster diff exit 1)"
    if r.diff_exit == 2:
        return False, "fmcluster diff could not compare (exit 2)"
    if r.base_plan is None and r.head_plan is not None:
        return True, "new blueprint: nothing to compare"
    if r.diff_exit != 0:
        return False, "not compared (fmcluster diff did not run)"
    return True, "safe"


def blueprint_section(r: BlueprintReview) -> str:
    """The comment section of one blueprint: its verdict (:func:`verdict_of`), the before/after facts, and the diff
    only when both versions synthesized (never a diff of partial output)."""
    safe, verdict = verdict_of(r)
    icon = ":white_check_mark:" if safe else ":x:"
    lines = [f"### {icon} `{r.path}`: {verdict}", ""]
    before, after = facts(r.base_plan), facts(r.head_plan if r.valid and r.synth_ok else None)
    lines += [f"| | before (`{r.base_ref}`) | after |", "|---|---|---|"]
    lines += [f"| {k} | {before[k]} | {after[k]} |" for k in ROWS]
    if r.valid and r.synth_ok:
        lines += ["", _cost_delta(r.base_plan, r.head_plan), ""]
    else:
        lines += [""]
    if r.base_plan is None and r.valid and r.synth_ok:
        lines += [f"`{r.path}` is new in this pull request: nothing to compare.", ""]
    if r.diff_markdown.strip() and r.valid and r.synth_ok and r.base_synth_ok:
        lines += ["<details open><summary>fmcluster diff</summary>", "", r.diff_markdown.strip(), "", "</details>", ""]
    if r.lint:
        lines += ["<details><summary>cfn-lint</summary>", "", "```", r.lint, "```", "", "</details>", ""]
    return "\n".join(lines)


def comment(reviews: Sequence[BlueprintReview], *, invalid: Sequence[str] = ()) -> str:
    """The whole comment: marker, summary line, invalid blueprints, one section per reviewed blueprint (a blueprint in
    ``invalid`` is marked invalid in its section too)."""
    reviews = [r if r.path not in invalid else replace(r, valid=False) for r in reviews]
    unsafe = [r.path for r in reviews if r.diff_exit == DIFF_UNSAFE and r.valid and r.synth_ok]
    unknown = [r.path for r in reviews if not verdict_of(r)[0] and r.path not in unsafe]
    head = ["## fmcluster review", ""]
    if invalid:
        head += [f":x: invalid: {', '.join(f'`{p}`' for p in invalid)} (see the annotations on the files)", ""]
    if unsafe:
        head += [f":x: **data loss or failing update** in {', '.join(f'`{p}`' for p in unsafe)}: this check fails.", ""]
    if unknown:
        head += [f":x: not reviewed (invalid, not synthesized or not compared): "
                 f"{', '.join(f'`{p}`' for p in unknown)}: this check fails.", ""]
    if not unsafe and not unknown:
        head += [f"{len(reviews)} blueprint(s) reviewed; no stateful resource is replaced or moved.", ""]
    return "\n".join([MARKER, *head, *(blueprint_section(r) for r in reviews)]).rstrip() + "\n"
