"""The organisation layer (fmcluster.validation.organisation): allowed Regions / instance types / orchestrators /
capacity types, required tags, defaults and ``extends``, ``x-`` anchors, overlay software stacks, the org file's
own errors and schema, and that every command gets it through the loader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog import software
from fmcluster.cli import app
from fmcluster.validation import load_blueprint, load_blueprint_with_warnings
from fmcluster.validation.organisation import ORG_ENV, org_json_schema, use_organisation
from tests.blueprints import MINIMAL, blueprint, group, to_yaml
from tests.conftest import ROOT

ORG: dict[str, Any] = {
    "name": "acme",
    "x-gpu-types": ["p5.48xlarge", "p5en.48xlarge"],
    "allowed": {
        "regions": ["us-east-1", "us-west-2"],
        "instance_types": ["p5.48xlarge", "p5e*.48xlarge"],
        "orchestrators": ["parallelcluster", "pcs"],
        "capacity_types": ["on_demand", "capacity_block"],
    },
    "required_tags": {"cost-center": r"CC-\d{4}", "owner": ".+"},
    "defaults": {"tags": {"owner": "ml-platform"}, "observability": {"metrics": "none"}},
}
#: A stack the organisation adds: the catalog's h100-570-cuda12.8 pins with NCCL 2.27.7 under its own name.
ACME_STACK: dict[str, Any] = {
    "description": "ACME's H100 stack",
    "driver": "570.172.08", "fabric_manager": "570.172.08", "kernel_modules": "open", "cuda": "12.8.1",
    "nccl": "2.27.7", "efa_installer": "1.43.2", "gdrcopy": "2.5.1",
    "families": ["p5", "p5en"], "cpu_architectures": ["x86_64"], "os": ["ubuntu-22.04", "ubuntu-24.04"],
    "sources": {c: "https://wiki.example.com/acme/h100-stack" for c in ("driver", "cuda", "nccl", "efa_installer", "gdrcopy")},
}
TAGGED = {"tags": {"cost-center": "CC-1234"}}


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no overlay stacks and no org from the environment, and leaves none behind."""
    monkeypatch.delenv(ORG_ENV, raising=False)
    saved = dict(software._OVERLAY)
    software._OVERLAY.clear()
    yield
    use_organisation(None)  # a CliRunner run with --org leaves it set for the (test) process
    software._OVERLAY.clear()
    software._OVERLAY.update(saved)


def write(tmp_path: Path, bp: dict[str, Any] | str, org: dict[str, Any] | None = ORG, name: str = "bp.yaml") -> Path:
    if org is not None:
        (tmp_path / "fmcluster.org.yaml").write_text(yaml.safe_dump(org, sort_keys=False))
    f = tmp_path / name
    f.write_text(bp if isinstance(bp, str) else to_yaml(bp))
    return f


def problems(f: Path, **kw: Any) -> list[tuple[str, int | None, str | None, str]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f, **kw)
    assert exc.value.file == str(f)
    return [(p.path, p.line, p.rule_id, p.message) for p in exc.value.problems]


# ---- the done-when: Region and tag refused, path-qualified, naming the org rule ---------------------------------
def test_region_not_allowed_and_missing_tag_are_both_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # bp.yaml and the fmcluster.org.yaml found beside it are in the working directory
    f = Path(write(tmp_path, blueprint({"region": "eu-west-1", "availability_zone": "eu-west-1a"})).name)
    got = [p for p in problems(f) if p[2] and p[2].startswith("ORG-")]
    assert got == [
        ("region", 2, "ORG-REGION", "not allowed by the organisation (fmcluster.org.yaml: allowed.regions), got 'eu-west-1'; "
                                    "allowed us-east-1, us-west-2"),
        ("tags", None, "ORG-TAG", "missing tag required by the organisation (fmcluster.org.yaml: required_tags.cost-center), "
                                  r"got no 'cost-center' tag; allowed a value matching CC-\d{4}"),
    ]


def test_rendered_error_names_the_blueprint_file_path_and_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    f = Path(write(tmp_path, blueprint({"region": "eu-west-1", "availability_zone": "eu-west-1a"}, TAGGED)).name)
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == f"{f}: 1 error"
    assert "error: region (line 2): not allowed by the organisation (fmcluster.org.yaml: allowed.regions), got " \
           "'eu-west-1'; allowed us-east-1, us-west-2 [ORG-REGION]" in r.stderr


@pytest.mark.parametrize(
    ("patch", "path", "rule_id", "fragment"),
    [
        ({"compute": [group(instance_type="p4d.24xlarge")]}, "compute[0].instance_type", "ORG-INSTANCE-TYPE",
         "(fmcluster.org.yaml: allowed.instance_types), got 'p4d.24xlarge'; allowed p5.48xlarge, p5e*.48xlarge"),
        ({"compute": [group(capacity={"type": "spot"})]}, "compute[0].capacity.type", "ORG-CAPACITY",
         "(fmcluster.org.yaml: allowed.capacity_types), got 'spot'; allowed on_demand, capacity_block"),
        ({"orchestrator": {"kind": "hyperpod"}}, "orchestrator.kind", "ORG-ORCHESTRATOR",
         "(fmcluster.org.yaml: allowed.orchestrators), got 'hyperpod'; allowed parallelcluster, pcs"),
        ({"tags": {"cost-center": "1234"}}, "tags.cost-center", "ORG-TAG",
         r"tag value not allowed by the organisation (fmcluster.org.yaml: required_tags.cost-center), got '1234'; "
         r"allowed a value matching CC-\d{4}"),
    ],
)
def test_each_allow_list_and_tag_pattern(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patch: dict[str, Any], path: str,
                                        rule_id: str, fragment: str) -> None:
    monkeypatch.chdir(tmp_path)
    f = Path(write(tmp_path, blueprint(TAGGED, patch)).name)
    got = [p for p in problems(f) if p[2] and p[2].startswith("ORG-")]
    assert len(got) == 1 and got[0][0] == path and got[0][2] == rule_id and fragment in got[0][3], got


def test_patterns_admit_matching_types_and_defaults_fill_tags(tmp_path: Path) -> None:
    f = write(tmp_path, blueprint(TAGGED, {"compute": [group(instance_type="p5en.48xlarge")]}))
    bp = load_blueprint(f)
    assert bp.tags == {"owner": "ml-platform", "cost-center": "CC-1234"}  # owner from defaults, merged under
    assert bp.compute[0].instance_type == "p5en.48xlarge"


@pytest.mark.parametrize(("own", "refused"), [(37, False), (38, True)])
def test_default_tags_count_toward_parallelclusters_tag_limit(tmp_path: Path, own: int, refused: bool) -> None:
    """The organisation's default tag (owner) and cost-center are merged in before R-PC-7 counts: 38 + 2 + the
    fmcluster tag is 41 Tags in the ParallelCluster config, one above its limit."""
    tags = {**TAGGED["tags"], **{f"k{i}": "v" for i in range(own)}}
    f = write(tmp_path, blueprint({"tags": tags}))
    if not refused:
        assert len(load_blueprint(f).tags) == own + 2
        return
    assert [(p, r, m.split(",")[0]) for p, _, r, m in problems(f)] == [
        ("tags", "R-PC-7", "too many tags for ParallelCluster: the cluster configuration gets 41 Tags (these 40 and the "
         "1 fmcluster adds: fmcluster:blueprint) and ParallelCluster refuses more than 40 per compute resource")]


def test_blueprint_value_wins_over_defaults_and_lists_replace(tmp_path: Path) -> None:
    org = {**ORG, "defaults": {**ORG["defaults"], "compute": [group(name="fromorg")]}}
    f = write(tmp_path, blueprint(TAGGED, {"tags": {"owner": "alice"}}), org)
    bp = load_blueprint(f)
    assert bp.tags["owner"] == "alice" and [g.name for g in bp.compute] == ["gpu"]


def test_shape_errors_and_org_errors_come_together(tmp_path: Path) -> None:
    f = write(tmp_path, blueprint({"region": "eu-west-1", "availability_zone": "eu-west-1a", "compute": [group(count="two")]}))
    paths = {p[0] for p in problems(f)}
    assert {"region", "tags", "compute[0].count"} <= paths


# ---- where the org file comes from -------------------------------------------------------------------------
def test_explicit_env_and_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "orgs").mkdir()
    (tmp_path / "orgs" / "strict.yaml").write_text(yaml.safe_dump({"allowed": {"regions": ["us-west-2"]}}))
    f = write(tmp_path, blueprint(TAGGED), org=None)
    assert load_blueprint(f).region == "us-east-1"  # no org file beside it: nothing applies
    assert [p[2] for p in problems(f, org=tmp_path / "orgs" / "strict.yaml")] == ["ORG-REGION"]
    monkeypatch.setenv(ORG_ENV, str(tmp_path / "orgs" / "strict.yaml"))
    assert [p[2] for p in problems(f)] == ["ORG-REGION"]
    monkeypatch.setenv(ORG_ENV, "none")
    write(tmp_path, blueprint(), ORG)  # an org file beside it, but discovery is off
    assert load_blueprint(f).name == "t-cluster"


def test_cli_org_option_applies_to_every_command(tmp_path: Path) -> None:
    (tmp_path / "strict.yaml").write_text(yaml.safe_dump({"allowed": {"regions": ["us-west-2"]}}))
    f = write(tmp_path, blueprint(), org=None)
    runner = CliRunner()
    for args in (["validate", str(f)], ["render", str(f), "--out", str(tmp_path / "r")], ["plan", str(f), "--cdk-out", str(tmp_path)]):
        r = runner.invoke(app, ["--org", str(tmp_path / "strict.yaml"), *args])
        assert r.exit_code == 1 and "[ORG-REGION]" in r.stderr, (args, r.output)
    d = runner.invoke(app, ["--org", str(tmp_path / "strict.yaml"), "diff", str(f), str(f)])
    assert d.exit_code == 2 and "[ORG-REGION]" in d.stderr
    assert runner.invoke(app, ["validate", str(f)]).exit_code == 0  # the next run without --org: discovery again


def test_app_py_takes_org_from_context() -> None:
    text = (Path(__file__).parent.parent / "app.py").read_text()
    assert 'try_get_context("org")' in text and "load_blueprint_with_warnings(path, org=" in text


# ---- extends and x- anchors ---------------------------------------------------------------------------------------
def test_extends_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(to_yaml({k: v for k, v in MINIMAL.items() if k != "compute"} | TAGGED))
    text = """extends: base.yaml
x-gpu: &gpu
  instance_type: p5.48xlarge
  count: 2
name: derived
compute:
  - <<: *gpu
    name: ga
  - <<: *gpu
    name: gb
    count: 4
"""
    f = write(tmp_path, text)
    bp = load_blueprint(f)
    assert (bp.name, bp.region, [(g.name, g.count) for g in bp.compute]) == ("derived", "us-east-1", [("ga", 2), ("gb", 4)])
    assert bp.tags["cost-center"] == "CC-1234"


@pytest.mark.parametrize(
    ("extends", "fragment"),
    [("missing.yaml", "no such base blueprint, got 'missing.yaml'"), ("bp.yaml", "the extends chain is a cycle"), (3, "must be the path")],
)
def test_bad_extends(tmp_path: Path, extends: Any, fragment: str) -> None:
    f = write(tmp_path, {"extends": extends, **blueprint(TAGGED)})
    got = problems(f)
    assert any(p[0] == "extends" and p[1] == 1 and fragment in p[3] for p in got), got


# ---- overlay software stacks -------------------------------------------------------------------------------------
def test_org_adds_a_software_stack_used_by_a_blueprint(tmp_path: Path) -> None:
    custom = {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}
    f = write(tmp_path, blueprint(TAGGED, {"software": {**custom, "stack": "acme-h100"}}),
              {**ORG, "software_stacks": {"acme-h100": ACME_STACK}})
    res = load_blueprint_with_warnings(f)
    assert res.blueprint.software.stack == "acme-h100"
    assert software.get_stack("acme-h100").nccl == "2.27.7"
    assert software.get_stack("acme-h100").sources["nccl"] == "https://wiki.example.com/acme/h100-stack"
    # documented from the data: fmcluster catalog stacks lists it, no docs edit
    r = CliRunner().invoke(app, ["--org", str(tmp_path / "fmcluster.org.yaml"), "catalog", "stacks"])
    assert r.exit_code == 0, r.output
    row = next(line for line in r.stdout.splitlines() if line.startswith("| `acme-h100` |"))
    assert row.endswith("| 2.5.1 | organisation |") and "| 1.43.2 | 2.1.0amzn5.0 | 1.16.3 |" in row


def test_overlay_stack_goes_through_the_software_rules(tmp_path: Path) -> None:
    """A family the stack does not list: the same software rule as for a catalog stack refuses it. (Its NCCL differs
    from every catalog stack's: a stack with exactly a catalog stack's versions is known-good on that stack's
    families too.)"""
    stack = {**ACME_STACK, "families": ["p5en"], "nccl": "2.27.6"}
    custom = {"image": {"mode": "custom", "ami_id": "ami-0123456789abcdef0"}}
    f = write(tmp_path, blueprint(TAGGED, {"software": {**custom, "stack": "acme-h100"}}),
              {**ORG, "software_stacks": {"acme-h100": stack}})
    got = problems(f)
    assert any(p[0] == "software.stack" and p[2] and p[2].startswith("R-SW") for p in got), got


@pytest.mark.parametrize(
    ("change", "path", "fragment"),
    [
        ({"driver": "999.1.1"}, "software_stacks.bad.driver", "no pinned NVIDIA driver installer"),
        ({"gdrcopy": "9.9"}, "software_stacks.bad.gdrcopy", "no pinned GDRCopy archive"),
        ({"efa_installer": "0.1.0"}, "software_stacks.bad.efa_installer", "unknown EFA installer bundle"),
        ({"families": ["p5", "p9"]}, "software_stacks.bad.families[1]", "unknown instance family, got 'p9'"),
        ({"sources": {}}, "software_stacks.bad.sources", "missing driver, cuda, nccl, efa_installer, gdrcopy"),
        ({"cuda": "twelve"}, "software_stacks.bad.cuda", "not a version"),
    ],
)
def test_bad_overlay_stack_is_an_org_file_error(tmp_path: Path, change: dict[str, Any], path: str, fragment: str) -> None:
    org = {**ORG, "software_stacks": {"bad": {**ACME_STACK, **change}}}
    f = write(tmp_path, blueprint(TAGGED), org)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert exc.value.file == str(tmp_path / "fmcluster.org.yaml")
    assert any(p.path == path and fragment in p.message for p in exc.value.problems), exc.value.problems


def test_overlay_cannot_redefine_a_catalog_stack(tmp_path: Path) -> None:
    f = write(tmp_path, blueprint(TAGGED), {**ORG, "software_stacks": {"h100-570-cuda12.8": ACME_STACK}})
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [p.path for p in exc.value.problems] == ["software_stacks.h100-570-cuda12.8"]


# ---- the org file's own errors and schema ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("org", "path", "line", "fragment"),
    [
        ({"allowd": {}}, "allowd", 1,
         "unknown key 'allowd'; allowed allowed, defaults, name, required_tags, software_stacks - did you mean 'allowed'?"),
        ({"name": "acme", "allowed": {"region": ["us-east-1"]}}, "allowed.region", 3, "did you mean 'regions'?"),
        ({"allowed": {"regions": ["us-east-1"], "orchestrators": ["pcs", "slurm"]}}, "allowed.orchestrators[1]", 6,
         "invalid value, got 'slurm'"),
        ({"name": "acme", "required_tags": {"team": "(unclosed"}}, "required_tags.team", 3,
         "not a regular expression, got '(unclosed' (missing ), unterminated subpattern at position 0)"),
        # a pattern Python compiles with a literal brace: CC-\d{4 matches the text 'CC-1{4', never CC-1234
        ({"name": "acme", "required_tags": {"owner": ".+", "cost-center": "CC-\\d{4"}}, "required_tags.cost-center", 4,
         "Python reads the '{' at position 5 as a literal brace, not part of a repetition, got 'CC-\\d{4'"),
        ({"required_tags": {"cost-center": "CC-\\d4}"}}, "required_tags.cost-center", 2, "the '}' at position 6"),
        ({"required_tags": {"cost-center": "CC-\\d{}"}}, "required_tags.cost-center", 2, "the '{' at position 5"),
        ({"required_tags": {"n": "a{99999999999}"}}, "required_tags.n", 2, "not a regular expression"),
        # an unclosed [ in a glob matches a literal [ (fnmatch), so the entry allows nothing
        ({"allowed": {"instance_types": ["p5.48xlarge", "p5e[.48xlarge"]}}, "allowed.instance_types[1]", 4,
         "the '[' at position 3 is never closed, so it matches a literal '[' (fnmatch), got 'p5e[.48xlarge'"),
    ],
)
def test_bad_org_file(tmp_path: Path, org: dict[str, Any], path: str, line: int, fragment: str) -> None:
    """Problems of the organisation file are reported against that file, at their line in it."""
    f = write(tmp_path, blueprint(TAGGED), org)
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.splitlines()[0].startswith(str(tmp_path / "fmcluster.org.yaml"))
    assert f"{path} (line {line})" in r.stderr
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert any(p.path == path and p.line == line and fragment in p.message for p in exc.value.problems), exc.value.problems


def test_org_schema() -> None:
    schema = org_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"name", "allowed", "required_tags", "defaults", "software_stacks"}
    r = CliRunner().invoke(app, ["schema", "--org"])
    assert r.exit_code == 0 and json.loads(r.stdout) == schema


@pytest.mark.parametrize("name", ["default", "hyperpod-p5", "pcs-p5en"])
def test_example_org_file_validates_the_examples_it_allows(name: str) -> None:
    """docs/organisation.md's example file is real: an example of each orchestrator passes it once tagged (its
    per-orchestrator defaults give each only its own section)."""
    root = Path(__file__).parent.parent
    example_org = root / "docs" / "examples" / "fmcluster.org.yaml"
    data = yaml.safe_load((root / "blueprints" / f"{name}.yaml").read_text())
    data["tags"] = {**data.get("tags", {}), "cost-center": "CC-0042"}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "default.yaml"
        f.write_text(to_yaml(data))
        assert load_blueprint(f, org=example_org).tags["cost-center"] == "CC-0042"
        f.write_text(to_yaml({**data, "tags": {}}))
        with pytest.raises(BlueprintError) as exc:
            load_blueprint(f, org=example_org)
        assert [p.rule_id for p in exc.value.problems if p.level == "error"] == ["ORG-TAG"]


# ---- fmcluster schema: a blueprint file with extends and x- keys (issue 25 item 5) -------------------------------
def _file_schema_errors(data: dict[str, Any]) -> list[str]:
    import jsonschema

    r = CliRunner().invoke(app, ["schema"])
    assert r.exit_code == 0
    validator = jsonschema.Draft202012Validator(json.loads(r.stdout))
    return sorted(e.message for e in validator.iter_errors(data))


@pytest.mark.parametrize(("data", "errors"), [
    (yaml.safe_load((ROOT / "blueprints" / "default.yaml").read_text()), []),
    ({**MINIMAL, "x-gpu": {"instance_type": "p5.48xlarge"}}, []),
    ({"extends": "base.yaml", "compute": [group(count=8)]}, []),
    ({"extends": "base.yaml", "x-common": {"team": "research"}}, []),
    ({**MINIMAL, "xgpu": 1}, ["'xgpu' does not match any of the regexes: '^x-'"]),
    ({"compute": [group()]}, ["'name' is a required property", "'region' is a required property"]),
    ({**MINIMAL, "extends": ""}, ["'' should be non-empty"]),
], ids=["example", "x-key", "extends-partial", "extends-and-x-key", "unknown-key", "no-extends-needs-required",
        "blank-extends"])
def test_the_schema_accepts_what_the_loader_accepts(data: dict[str, Any], errors: list[str]) -> None:
    assert _file_schema_errors(data) == errors


# ---- defaults per orchestrator: only the chosen one's section applies (issue 25 item 5) ---------------------------
PER_ORCHESTRATOR = {"name": "acme", "defaults": {"orchestrator": {
    "parallelcluster": {"scaledown_idletime_minutes": 30},
    "hyperpod": {"login_instance_type": "ml.m5.2xlarge"},
    "pcs": {"scaledown_idle_seconds": 900}}}}


def _example_without(name: str, *path: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "blueprints" / f"{name}.yaml").read_text())
    section = data
    for key in path[:-1]:
        section = section[key]
    section.pop(path[-1], None)
    return dict(data)


@pytest.mark.parametrize(("name", "drop", "applied"), [
    ("default", ("orchestrator", "parallelcluster", "scaledown_idletime_minutes"),
     ("parallelcluster", "scaledown_idletime_minutes", 30)),
    ("hyperpod-p5", ("orchestrator", "hyperpod", "login_instance_type"), ("hyperpod", "login_instance_type", "ml.m5.2xlarge")),
    ("pcs-p5en", ("orchestrator", "pcs", "scaledown_idle_seconds"), ("pcs", "scaledown_idle_seconds", 900)),
], ids=["parallelcluster", "hyperpod", "pcs"])
def test_defaults_per_orchestrator_apply_only_to_the_chosen_one(tmp_path: Path, name: str, drop: tuple[str, ...],
                                                                 applied: tuple[str, str, Any]) -> None:
    f = write(tmp_path, _example_without(name, *drop), PER_ORCHESTRATOR)
    bp = load_blueprint(f)  # no R-ORCH-1 for the other orchestrators' sections
    section, key, value = applied
    assert getattr(getattr(bp.orchestrator, section), key) == value
    assert {k for k in ("parallelcluster", "hyperpod", "pcs") if k in bp.orchestrator.model_fields_set} == {section}


def test_bad_org_file_messages_have_no_pydantic_wording(tmp_path: Path) -> None:
    f = write(tmp_path, blueprint(TAGGED), {"name": "acme", "required_tags": {"team": "(unclosed"}})
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    [problem] = exc.value.problems
    assert (problem.path, problem.line) == ("required_tags.team", 3)
    assert problem.message.startswith("not a regular expression, got '(unclosed'")
    assert "Value error" not in problem.message


def test_an_org_path_that_is_a_folder_says_so(tmp_path: Path) -> None:
    f = write(tmp_path, blueprint(TAGGED), None)
    folder = tmp_path / "orgs"
    folder.mkdir()
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f, org=str(folder))
    [problem] = exc.value.problems
    assert problem.message.startswith(f"a folder, not an organisation file, got '{folder}'")


@pytest.mark.parametrize(("org_text", "line", "fragment"), [
    ("- a\n- b\n", 1, "the organisation file must be a mapping, got a list; allowed keys name, allowed"),
    ("name: acme\nallowed:\n  capacity_typs: [spot]\n", 3, "did you mean 'capacity_types'?"),
    ("allowed: [oops\n", 2, "not valid YAML"),
    ("name: \xe9\n", None, None),  # written as Latin-1 below: not UTF-8
    ("name: a\nname: b\n", 2, "duplicate key, got 'name' again (first on line 1)"),  # never silently the last one
], ids=["a-list", "unknown-key", "not-yaml", "not-utf8", "duplicate-key"])
def test_org_file_problems_name_the_org_file_not_the_blueprint(tmp_path: Path, org_text: str, line: int | None,
                                                              fragment: str | None) -> None:
    """A problem of the organisation file names that file (``file`` in --json, in the text after the path) and its
    line, never ``(blueprint)``."""
    org = tmp_path / "fmcluster.org.yaml"
    org.write_bytes(org_text.encode("latin-1"))
    f = write(tmp_path, blueprint(TAGGED), org=None)
    r = CliRunner().invoke(app, ["validate", "--json", str(f)])
    assert r.exit_code == 1, r.output
    [p] = json.loads(r.stdout)["problems"]
    assert p["file"] == str(org)
    if fragment is None:
        assert p["message"].startswith("the organisation file is not UTF-8 text, got byte 0xe9"), p
    else:
        assert (p["line"], fragment in p["message"]) == (line, True), p
    text = CliRunner().invoke(app, ["validate", str(f)])
    assert "(blueprint)" not in text.stderr and text.stderr.startswith(str(org)), text.stderr


@pytest.mark.parametrize("which", ["folder", "missing"])
def test_an_unusable_org_option_names_it(tmp_path: Path, which: str) -> None:
    f = write(tmp_path, blueprint(TAGGED), org=None)
    org = tmp_path if which == "folder" else tmp_path / "nope.yaml"
    r = CliRunner().invoke(app, ["--org", str(org), "validate", "--json", str(f)])
    [p] = json.loads(r.stdout)["problems"]
    assert (r.exit_code, p["file"], p["value"], p["rule_id"]) == (2, str(org), str(org), "usage")  # could not run
    assert "(blueprint)" not in CliRunner().invoke(app, ["--org", str(org), "validate", str(f)]).stderr


@pytest.mark.parametrize(("org", "path", "says"), [
    ({"allowed": {"regions": "us-east-1"}}, "allowed.regions", "must be a list, got a string"),
    ({"allowed": {"capacity_types": ["spott"]}}, "allowed.capacity_types[0]",
     "invalid value, got 'spott'; allowed on_demand, spot, odcr, capacity_block, training_plan - did you mean 'spot'?"),
    ({"required_tags": ["a"]}, "required_tags", "must be a mapping, got a list"),
    ({"software_stacks": {"x": {"driver": "580.1"}}}, "software_stacks.x.cuda",
     "required key 'cuda' is missing, got nothing; allowed the key with a value (docs/blueprint.md)"),
], ids=["list", "literal", "mapping", "missing"])
def test_org_file_shape_messages_are_the_blueprints(tmp_path: Path, org: dict[str, Any], path: str, says: str) -> None:
    """The organisation file's shape problems read like a blueprint's (got X; allowed Y; did-you-mean), not pydantic's."""
    f = write(tmp_path, blueprint(TAGGED), org)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [p.message for p in exc.value.problems if p.path == path] == [says]


# ---- a value the defaults gave is named at its path in the organisation file (deploy review item 2) -----------------
#: The organisation file of each case: its defaults give one bad value, on the line named.
_DEFAULTS_CASES = [
    ("defaults:\n  tags: {team: ml}\n  regoin: us-east-1\n", {}, "defaults.regoin", 3, None,
     "unknown key 'regoin'"),
    ("defaults:\n  network:\n    vpc_cidr: 10.0.0.0/33\n", {}, "defaults.network.vpc_cidr", 3, "10.0.0.0/33", ""),
    ("defaults:\n  storage:\n    checkpoints: {bucket: create, bogus: 1}\n", {}, "defaults.storage.checkpoints.bogus", 3,
     None, "unknown key 'bogus'"),
    ("defaults:\n  orchestrator:\n    pcs: {}\n    parallelcluster:\n      version: 9.9.9\n", {},
     "defaults.orchestrator.parallelcluster.version", 5, "9.9.9", ""),
    # the blueprint writes the value: its own path and file, though the defaults hold one too
    ("defaults:\n  network:\n    vpc_cidr: 10.0.0.0/16\n", {"network": {"vpc_cidr": "10.0.0.0/33"}},
     "network.vpc_cidr", None, "10.0.0.0/33", ""),
    # an organisation rule's finding is the blueprint's to fix, even for a value the defaults gave
    ("allowed: {regions: [us-west-2]}\ndefaults:\n  tags: {team: ml}\n", {}, "region", 2, "us-east-1",
     "not allowed by the organisation"),
]


@pytest.mark.parametrize(("org_text", "patch", "path", "org_line", "value", "fragment"), _DEFAULTS_CASES,
                         ids=["unknown-key", "bad-value", "nested-unknown-key", "own-orchestrator-section",
                              "the-blueprints-own", "org-rule"])
def test_a_problem_the_org_defaults_gave_is_at_its_path_there(tmp_path: Path, org_text: str, patch: dict[str, Any],
                                                               path: str, org_line: int | None, value: str | None,
                                                               fragment: str) -> None:
    """A problem in a value the organisation's ``defaults`` wrote names that file, its line there and its path there
    (under ``defaults.``), in the library, the text and ``--json``; anything else keeps the blueprint's path."""
    org = tmp_path / "fmcluster.org.yaml"
    org.write_text(org_text)
    f = write(tmp_path, blueprint(TAGGED, patch), org=None)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    [p] = [p for p in exc.value.problems if p.path.endswith(path.removeprefix("defaults."))]
    in_org = path.startswith("defaults.")
    assert (p.path, p.file, p.line if in_org else None, fragment in p.message) == (
        path, str(org) if in_org else None, org_line if in_org else None, True), p
    r = CliRunner().invoke(app, ["validate", "--json", str(f)])
    [j] = [j for j in json.loads(r.stdout)["problems"] if j["path"] == path]
    assert (j["file"], j["value"]) == (str(org) if in_org else str(f), value), j
    shown = f"{path} ({org}, line {org_line})" if in_org else f"{path} (line "
    assert shown in CliRunner().invoke(app, ["validate", str(f)]).stderr


# ---- each problem at its own line: flow-style entries, keys with dots (review item: reported at the parent's line) ----
def _stack_text(name: str, style: str) -> str:
    """ACME_STACK under ``software_stacks.<name>`` with families ``[p5, p9]``, written in ``style``."""
    fields = {k: v for k, v in ACME_STACK.items() if k != "families"}
    inline = ", ".join(f"{k}: {json.dumps(v)}" for k, v in fields.items())
    if style == "block":
        return "name: acme\nsoftware_stacks:\n  " + name + ":\n    families:\n      - p5\n      - p9\n" + "".join(
            f"    {k}: {json.dumps(v)}\n" for k, v in fields.items())
    if style == "one-line-entry":
        return f"name: acme\nsoftware_stacks:\n  {name}: {{families: [p5, p9], {inline}}}\n"
    if style == "one-line-file":
        return f"name: acme\nsoftware_stacks: {{{name}: {{families: [p5, p9], {inline}}}}}\n"
    return (f"name: acme\nsoftware_stacks: {{\n  {name}: {{\n    families: [p5,\n      p9],\n    {inline}}}}}\n")


@pytest.mark.parametrize(("org_text", "path", "line"), [
    (_stack_text("acme", "block"), "software_stacks.acme.families[1]", 6),
    (_stack_text("acme-cuda12.8", "block"), "software_stacks.acme-cuda12.8.families[1]", 6),  # a name with a dot
    (_stack_text("acme-cuda12.8", "one-line-entry"), "software_stacks.acme-cuda12.8.families[1]", 3),
    (_stack_text("acme-cuda12.8", "one-line-file"), "software_stacks.acme-cuda12.8.families[1]", 2),
    (_stack_text("acme-cuda12.8", "multi-line-flow"), "software_stacks.acme-cuda12.8.families[1]", 5),
    ("name: acme\nrequired_tags:\n  owner: .+\n  app.kubernetes.io/team: 'CC-\\d{4'\n",
     "required_tags.app.kubernetes.io/team", 4),
    ("name: acme\nrequired_tags: {owner: .+,\n  app.kubernetes.io/team: 'CC-\\d{4'}\n",
     "required_tags.app.kubernetes.io/team", 3),
], ids=["block", "dotted-name", "one-line-entry", "one-line-file", "multi-line-flow", "dotted-tag-key", "flow-tags"])
def test_an_org_file_problem_is_at_its_own_line(tmp_path: Path, org_text: str, path: str, line: int) -> None:
    (tmp_path / "fmcluster.org.yaml").write_text(org_text)
    f = write(tmp_path, blueprint(TAGGED), org=None)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [(p.path, p.line) for p in exc.value.problems] == [(path, line)], exc.value.problems


def test_a_blueprint_tag_with_dots_is_at_its_line(tmp_path: Path) -> None:
    """An ORG-TAG finding on a tag key with dots is at that key's line in the blueprint, not at ``tags``."""
    (tmp_path / "fmcluster.org.yaml").write_text("name: acme\nrequired_tags: {app.kubernetes.io/team: 'ml-.+'}\n")
    f = tmp_path / "bp.yaml"
    f.write_text(to_yaml(blueprint()) + "tags:\n  owner: me\n  app.kubernetes.io/team: research\n")
    line = f.read_text().splitlines().index("  app.kubernetes.io/team: research") + 1
    [p] = [p for p in problems(f) if p[2] == "ORG-TAG"]
    assert p[:3] == ("tags.app.kubernetes.io/team", line, "ORG-TAG")


# ---- the organisation file is named as the user can find it (review item: a discovered file named without folder) ---
@pytest.mark.parametrize(("blueprint_arg", "org_arg", "named"), [
    ("bp.yaml", None, "fmcluster.org.yaml"),                        # beside a blueprint in the working directory
    ("team/bp.yaml", None, "team/fmcluster.org.yaml"),              # beside a blueprint in a folder: with the folder
    ("./team/../team/bp.yaml", None, "team/../team/fmcluster.org.yaml"),  # the folder as the user wrote it
    ("{tmp}/team/bp.yaml", None, "{tmp}/team/fmcluster.org.yaml"),  # an absolute blueprint: an absolute path
    ("link/bp.yaml", None, "link/fmcluster.org.yaml"),              # a linked folder: the same file through it
    ("alias.yaml", None, "{tmp}/team/fmcluster.org.yaml"),          # a linked blueprint: its real folder's file
    ("team/bp.yaml", "orgs/strict.yaml", "orgs/strict.yaml"),       # --org: as given
], ids=["cwd", "folder", "dotted", "absolute", "linked-folder", "linked-file", "explicit"])
def test_the_org_file_is_named_as_the_user_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blueprint_arg: str,
                                                     org_arg: str | None, named: str) -> None:
    """The ORG-* message, the problem's ``file`` in ``--json`` and the rule's ``source`` name one path, relative to
    the working directory as the blueprint was named (not the bare file name, not a path only the program made)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "team").mkdir()
    (tmp_path / "orgs").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "team")
    (tmp_path / "alias.yaml").symlink_to(tmp_path / "team" / "bp.yaml")
    (tmp_path / "orgs" / "strict.yaml").write_text(yaml.safe_dump(ORG))
    write(tmp_path / "team", blueprint(TAGGED, {"region": "eu-west-1", "availability_zone": "eu-west-1a"}))
    write(tmp_path, blueprint(TAGGED, {"region": "eu-west-1", "availability_zone": "eu-west-1a"}))
    bp, shown = blueprint_arg.format(tmp=tmp_path), named.format(tmp=tmp_path)
    r = CliRunner().invoke(app, [*(["--org", org_arg] if org_arg else []), "validate", "--json", bp])
    [j] = [j for j in json.loads(r.stdout)["problems"] if j["rule_id"] == "ORG-REGION"]
    assert (j["file"], j["source"]) == (str(Path(bp)), shown)  # the blueprint as the command line's Path gives it
    assert j["message"] == (f"not allowed by the organisation ({shown}: allowed.regions), got 'eu-west-1'; allowed "
                            "us-east-1, us-west-2")


# ---- a tag count names the tags the organisation file added (review item: "got 40 tags" of 39 written) --------------
def _tags(n: int) -> dict[str, str]:
    return {f"k{i}": "v" for i in range(n)}


_PC7 = ("too many tags for ParallelCluster: the cluster configuration gets 41 Tags (these 40 and the 1 fmcluster adds: "
        "fmcluster:blueprint) and ParallelCluster refuses more than 40 per compute resource, got 40 tags{}; allowed at "
        "most 39 tags (organisation default tags included)")


@pytest.mark.parametrize(("own", "org_tags", "expected", "value"), [
    # 39 written + 1 from the organisation: ParallelCluster's 40 with fmcluster:blueprint (R-PC-7)
    (39, {"team": "ml"}, ("tags", "R-PC-7", _PC7.format(
        " (39 in the blueprint, 1 from the organisation file's defaults.tags: team)")), 40),
    (38, {"team": "ml", "owner": "x"}, ("tags", "R-PC-7", _PC7.format(
        " (38 in the blueprint, 2 from the organisation file's defaults.tags: owner, team)")), 40),
    # a default the blueprint overrides is the blueprint's tag: no parts
    (40, {"k0": "org"}, ("tags", "R-PC-7", _PC7.format("")), 40),
    # 40 written + 1 from the organisation: the model's own bound of 40
    (40, {"team": "ml"}, ("tags", None, "wrong number of items, got 41 (40 in the blueprint, 1 from the organisation "
                                        "file's defaults.tags: team); allowed at most 40"), 41),
    (40, {}, ("tags", "R-PC-7", _PC7.format("")), 40),
], ids=["39+1", "38+2", "overridden-default", "model-bound", "no-org-tags"])
def test_a_tag_count_names_the_organisation_files_share(tmp_path: Path, own: int, org_tags: dict[str, str],
                                                         expected: tuple[str, str | None, str], value: int) -> None:
    org = tmp_path / "fmcluster.org.yaml"
    org.write_text(yaml.safe_dump({"defaults": {"tags": org_tags}} if org_tags else {"name": "acme"}))
    f = write(tmp_path, blueprint({"tags": _tags(own)}), org=None)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [(p.path, p.rule_id, p.message) for p in exc.value.errors] == [expected]
    r = CliRunner().invoke(app, ["validate", "--json", str(f)])
    [j] = [j for j in json.loads(r.stdout)["problems"] if j["severity"] == "error"]
    assert (j["file"], j["value"]) == (str(f), value)


def test_the_organisations_tags_are_recorded_on_the_blueprint(tmp_path: Path) -> None:
    (tmp_path / "fmcluster.org.yaml").write_text("defaults:\n  tags: {team: ml, k1: org}\n")
    bp = load_blueprint(write(tmp_path, blueprint({"tags": _tags(2)}), org=None))
    assert (bp.tags, bp.tags_from_organisation) == ({"team": "ml", "k1": "v", "k0": "v"}, ("team",))


# ---- where the org file is named: missing is "could not run", blank FMCLUSTER_ORG is unset (breaker item 6) ---------
@pytest.mark.parametrize(("option", "env", "named", "says"), [
    ("nope.yaml", None, "nope.yaml", "Invalid value for --org: no such file, got '{}'"),
    (None, "nope.yaml", "nope.yaml", "Invalid value for FMCLUSTER_ORG: no such file, got '{}'"),
    (None, "orgs", "orgs", "Invalid value for FMCLUSTER_ORG: a folder, got '{}'"),
    ("nope.yaml", "none", "nope.yaml", "Invalid value for --org: no such file"),  # --org wins over the variable
], ids=["option-missing", "env-missing", "env-folder", "option-over-env"])
def test_an_org_file_that_is_not_there_is_could_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         option: str | None, env: str | None, named: str,
                                                         says: str) -> None:
    """A missing input is exit 2 (README: exit codes), naming the organisation file and where it was named; the
    JSON envelope carries it as a usage problem whose ``file`` is that path."""
    (tmp_path / "orgs").mkdir()
    f = write(tmp_path, blueprint(TAGGED), org=None)
    if env is not None:
        monkeypatch.setenv(ORG_ENV, env if env == "none" else str(tmp_path / env))
    args = ["--org", str(tmp_path / option)] if option else []
    r = CliRunner().invoke(app, [*args, "validate", "--json", str(f)])
    [p] = json.loads(r.stdout)["problems"]
    path = str(tmp_path / named)
    assert (r.exit_code, p["file"], p["rule_id"]) == (2, path, "usage"), r.output
    assert p["message"].startswith(says.format(path)), p["message"]


@pytest.mark.parametrize("env", ["", " ", "\t"], ids=["empty", "space", "tab"])
def test_a_blank_org_variable_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str) -> None:
    """A blank FMCLUSTER_ORG is ignored: the organisation file beside the blueprint still applies (it did not turn
    discovery off, as a blank once did), in the library and on the command line."""
    monkeypatch.setenv(ORG_ENV, env)
    f = write(tmp_path, blueprint(TAGGED, {"region": "eu-west-1", "availability_zone": "eu-west-1a"}))
    assert "ORG-REGION" in [p[2] for p in problems(f)]
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 1 and "[ORG-REGION]" in r.stderr, r.output


# ---- an allow-list entry that allows nothing is a warning (deploy review item 1) -------------------------------------
@pytest.mark.parametrize(("allowed", "path", "line", "fragment"), [
    ({"regions": ["us-east-1", "us-esat-2"]}, "allowed.regions[1]", 4,
     "unknown AWS Region, so this entry allows nothing (a misspelling, or a Region newer than the installed botocore "),
    ({"regions": ["us-east-1", "xx-future-9"]}, "allowed.regions[1]", 4, "got 'xx-future-9'"),
    ({"instance_types": ["p5.48xlarge", "p5.48xlarg"]}, "allowed.instance_types[1]", 4,
     "it matches no instance type fmcluster knows, so this entry allows nothing (a misspelling, or a type of a newer "
     "fmcluster catalog), got 'p5.48xlarg'"),
    ({"instance_types": ["p9*.96xlarge", "p5.48xlarge"]}, "allowed.instance_types[0]", 3, "got 'p9*.96xlarge'"),
], ids=["misspelt-region", "newer-region", "misspelt-type", "newer-type-pattern"])
def test_an_allow_list_entry_that_allows_nothing_is_a_warning(tmp_path: Path, allowed: dict[str, Any], path: str,
                                                             line: int, fragment: str) -> None:
    """Such an entry harms no blueprint, and a file shared with an older botocore or catalog names Regions and types
    this installation does not know: the blueprint stays valid, the warning names the organisation file at its line,
    shown with the blueprint's warnings (text and --json)."""
    f = write(tmp_path, blueprint(TAGGED), {"allowed": allowed})
    org = str(tmp_path / "fmcluster.org.yaml")
    [w] = [w for w in load_blueprint_with_warnings(f).warnings if w.file == org]
    assert (w.path, w.line, w.level, fragment in w.message) == (path, line, "warning", True), w
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 0 and r.stdout.startswith(f"ok {f} ("), r.output
    assert f"warning: {path} ({org}, line {line}): " in r.stderr, r.stderr
    j = CliRunner().invoke(app, ["validate", "--json", str(f)])
    [p] = [p for p in json.loads(j.stdout)["problems"] if p["file"] == org]
    assert (j.exit_code, p["severity"], p["path"], p["value"]) == (0, "warning", path, allowed[path[8:-3]][int(path[-2])])


def test_org_warnings_come_with_the_blueprints_errors_and_the_org_files(tmp_path: Path) -> None:
    """An invalid blueprint lists the organisation file's warnings too; an organisation file with an error lists its
    warnings with it (and refuses the blueprint, for the error)."""
    org = {"allowed": {"regions": ["us-east-1", "us-esat-2"]}}
    f = write(tmp_path, blueprint(TAGGED, {"region": "eu-west-1", "availability_zone": "eu-west-1a"}), org)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    org_file = str(tmp_path / "fmcluster.org.yaml")
    assert [(p.path, p.level, p.file) for p in exc.value.problems
            if p.file or (p.rule_id or "").startswith("ORG-")] == [
        ("region", "error", None), ("allowed.regions[1]", "warning", org_file)]
    org["required_tags"] = {"cost-center": "CC-\\d{4"}
    f = write(tmp_path, blueprint(TAGGED), org)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [(p.path, p.level, p.line) for p in exc.value.problems] == [
        ("allowed.regions[1]", "warning", 4), ("required_tags.cost-center", "error", 6)]


def test_catalog_stacks_shows_the_org_files_warnings(tmp_path: Path) -> None:
    org = tmp_path / "org.yaml"
    org.write_text("allowed:\n  instance_types: [p5.48xlarg]\n")
    r = CliRunner().invoke(app, ["--org", str(org), "catalog", "stacks"])
    assert r.exit_code == 0 and "| `h100-580-cuda13.0` |" in r.stdout, r.output
    assert f"warning: allowed.instance_types[0] ({org}, line 2): it matches no instance type" in r.stderr, r.stderr


def test_org_pattern_and_shape_problems_are_reported_at_once(tmp_path: Path) -> None:
    org = {"allowed": {"instance_typs": ["p5.48xlarge"], "regions": ["us-east-1"]},
           "required_tags": {"cost-center": "CC-\\d{4"}}
    f = write(tmp_path, blueprint(TAGGED), org)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(f)
    assert [(p.path, p.line) for p in exc.value.problems] == [("allowed.instance_typs", 2), ("required_tags.cost-center", 7)]


@pytest.mark.parametrize(("pattern", "literal_at"), [
    ("CC-\\d{4}", None), ("a{,}", None), ("a{2,}", None), ("a{,3}b", None), ("\\{x\\}", None), ("[{}]", None),
    ("[]{]", None), ("\\N{DIGIT ONE}{2}", None), (".+", None),
    ("CC-\\d{4", 5), ("a{}", 1), ("a{x}", 1), ("x}", 1), ("a{2,4}b{", 7), ("[^]]{2", 4),
])
def test_literal_braces_are_found_as_python_reads_them(pattern: str, literal_at: int | None) -> None:
    """Cross-checked against Python's own parser: escaping a brace reported literal leaves the parsed pattern as it
    was (Python read it as text already); escaping the brace of a repetition changes it."""
    from re import _parser  # type: ignore[attr-defined]

    from fmcluster.validation.organisation import _literal_brace

    assert _literal_brace(pattern) == literal_at
    if literal_at is not None:
        escaped = pattern[:literal_at] + "\\" + pattern[literal_at:]
        assert repr(_parser.parse(escaped).data) == repr(_parser.parse(pattern).data)
    if pattern.startswith("a{") and literal_at is None:
        assert repr(_parser.parse("a\\" + pattern[1:]).data) != repr(_parser.parse(pattern).data)


@pytest.mark.parametrize(("args", "code"), [
    (["schema"], 0), (["acceptance", "plan", "n1", "n2"], 0), (["catalog", "stacks"], 2),
], ids=["schema", "acceptance", "catalog-stacks"])
def test_a_missing_org_variable_stops_only_commands_that_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 args: list[str], code: int) -> None:
    monkeypatch.setenv(ORG_ENV, str(tmp_path / "nope.yaml"))
    r = CliRunner().invoke(app, args)
    assert r.exit_code == code, r.output
    assert ("FMCLUSTER_ORG" in r.stderr) == (code == 2)


def test_a_required_tag_written_in_another_case_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tag keys are case-sensitive (EC2 tagging): ``Cost-Center`` does not satisfy ``required_tags.cost-center``, and
    the message names the key to rename."""
    monkeypatch.chdir(tmp_path)
    f = Path(write(tmp_path, blueprint({"tags": {"Cost-Center": "CC-1234"}})).name)
    [p] = [p for p in problems(f) if p[2] == "ORG-TAG"]
    assert p[0] == "tags" and p[3].endswith(r"allowed a value matching CC-\d{4} - tag keys are case-sensitive: rename "
                                            "'Cost-Center' to 'cost-center'"), p
