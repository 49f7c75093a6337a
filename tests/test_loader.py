"""Loader: every problem at once, with YAML path, line and did-you-mean; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmcluster.blueprint import BlueprintError
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import DROP, blueprint_text


def problems(text: str) -> list[tuple[str, str, int | None]]:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text)
    return [(p.path, p.message, p.line) for p in exc.value.problems]


def test_base_is_valid() -> None:
    bp = load_blueprint_text(blueprint_text()).blueprint
    assert bp.compute[0].count == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the blueprint is empty; expected a mapping with at least name, region, availability_zone (or availability_zone_id) and compute"),
        ("- a\n- b\n", "the blueprint must be a mapping of keys to values, got a list; allowed a mapping with name, region, compute, ..."),
        ("just a string", "the blueprint must be a mapping of keys to values, got a string; allowed a mapping with name, region, compute, ..."),
        ("name: [unclosed\n", "not valid YAML: expected ',' or ']', but got '<stream end>'"),
        ("a: b: c\n", "not valid YAML: mapping values are not allowed here"),
    ],
)
def test_not_a_blueprint(text: str, message: str) -> None:
    [(path, msg, _)] = problems(text)
    assert (path, msg) == ("", message)


def test_three_mistakes_three_errors_with_paths_lines_and_hints() -> None:
    text = (
        "name: t-cluster\nregion: us-east-1\navailability_zone: us-east-1a\n"
        "compute:\n  - name: gpu\n    instance_type: p5.48xlarg\n    count: 0\n"
        "storage:\n  lustre:\n    storage_capacity: 1200\n"
        "observability:\n  alert_email: ops@example.com\n"  # metrics are on by default: they need a receiver (R-OBS-7)
    )
    got = problems(text)
    assert [p[0] for p in got] == ["compute[0].instance_type", "compute[0].count", "storage.lustre.storage_capacity"]
    assert [p[2] for p in got] == [6, 7, 10]
    assert got[0][1].endswith("- did you mean 'p5.48xlarge'?")
    assert got[1][1] == "out of range, got 0; allowed >= 1"
    assert got[2][1].startswith("unknown key 'storage_capacity'; allowed ")
    assert got[2][1].endswith("- did you mean 'storage_capacity_gib'?")


@pytest.mark.parametrize(
    ("patch", "path", "message"),
    [
        ({"orchestrator": {"kind": "slurm"}}, "orchestrator.kind",
         "invalid value, got 'slurm'; allowed parallelcluster, hyperpod, pcs"),
        ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 1, "capacity": {"type": "odcrr"}}]},
         "compute[0].capacity.type",
         "invalid type, got 'odcrr'; allowed on_demand, spot, odcr, capacity_block, training_plan - did you mean 'odcr'?"),
        ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 1,
                       "capacity": {"type": "capacity_block", "reservation_id": "cr-123"}}]},
         "compute[0].capacity.reservation_id", "invalid format, got 'cr-123'; allowed cr- followed by 17 hex digits"),
        ({"name": "My_Cluster"}, "name",
         "invalid format, got 'My_Cluster'; allowed 3-32 lowercase letters, digits and hyphens, starting with a letter"),
        ({"software": {"os": "ubuntu-20.04"}}, "software.os",
         "invalid value, got 'ubuntu-20.04'; allowed ubuntu-22.04, ubuntu-24.04, amazon-linux-2023"),
        ({"compute": "p5"}, "compute", "must be a list, got a string"),
        ({"storage": {"lustre": {"deployment_type": "PERSISTENT_3"}}}, "storage.lustre.deployment_type",
         "invalid value, got 'PERSISTENT_3'; allowed SCRATCH_1, SCRATCH_2, PERSISTENT_1, PERSISTENT_2"),
        ({"network": {"vpc_cidr": "10.0.0.0/8"}}, "network.vpc_cidr",
         "VPC prefix length out of range, got '10.0.0.0/8'; allowed /16 to /24 (AWS VPC limits)"),
    ],
)
def test_shape_errors(patch: dict, path: str, message: str) -> None:
    got = problems(blueprint_text(patch))
    assert (path, message) in [(p, m) for p, m, _ in got]


def test_missing_required_keys_listed_together() -> None:
    got = problems(blueprint_text({"region": DROP, "compute": DROP}))
    assert [(p, m) for p, m, _ in got] == [
        ("region", "required key 'region' is missing, got nothing; allowed the key with a value (docs/blueprint.md)"),
        ("compute", "required key 'compute' is missing, got nothing; allowed the key with a value (docs/blueprint.md)"),
    ]


def test_section_rules_still_run_when_another_section_has_a_shape_error() -> None:
    text = blueprint_text({"nme": "x", "storage": {"lustre": {"storage_capacity_gib": 3000}}})
    paths = [p for p, _, _ in problems(text)]
    assert paths == ["nme", "storage.lustre.storage_capacity_gib"]


@pytest.mark.parametrize("patch", [{"colour": "blue"}, {"region": 5}, {"budget": {"monthly_usd": "lots"}}],
                         ids=["unknown-key", "bad-region", "bad-budget"])
def test_an_invalid_blueprint_gets_no_rule_about_defaults_it_does_not_have(patch: dict,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules that judge the resolved cluster do not run on a blueprint with shape errors: resolving it would fill the
    broken parts with the catalog's defaults (on 2026-12-05 R-SUP-2 warned about the default stack's R570 driver,
    which the blueprint does not use)."""
    monkeypatch.setenv("FMCLUSTER_SUPPORT_DATE", "2026-12-05")
    got = problems(blueprint_text(patch))
    assert [p.split(".")[0] for p, _, _ in got] == [next(iter(patch))], got


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
known_keys = st.sampled_from(["name", "region", "availability_zone", "compute", "storage", "network", "software",
                              "orchestrator", "observability", "tags"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(known_keys, yaml_values, max_size=8))
def test_no_input_crashes_the_loader(data: dict) -> None:
    import yaml

    text = yaml.safe_dump(data)
    try:
        load_blueprint_text(text)
    except BlueprintError as e:
        assert all(p.message for p in e.problems)


def test_deep_nesting_is_a_problem_not_a_recursion_error() -> None:
    [(path, msg, _)] = problems("name: " + "[" * 500 + "]" * 500 + "\n")
    assert (path, msg) == ("", "the file is nested too deeply to be a blueprint; allowed at most 40 levels")


def test_alias_bomb_is_walked_once_per_node() -> None:
    levels = "abcdefghi"
    lines = ["a: &a [x,x,x,x,x,x,x,x,x]"] + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip(levels, levels[1:], strict=False)]
    got = problems("\n".join(lines) + "\n")  # 9**9 leaves if expanded; must return at once
    assert [p for p, _, _ in got][:3] == ["a", "b", "c"]


def test_duplicate_keys_are_errors_with_both_lines() -> None:
    text = blueprint_text().replace("count: 2", "count: 2\n  count: 8")
    [(path, msg, line)] = problems(text)
    assert path == "compute[0].count" and line == 8
    assert msg == ("duplicate key, got 'count' again (first on line 7); allowed each key once - YAML would silently keep "
                   "the last value")


@pytest.mark.parametrize(("patch", "path", "message"), [
    ({"name": None}, "name", "must be text, got null"),
    ({"compute": None}, "compute", "must be a list, got null"),
    ({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 4.5}]}, "compute[0].count",
     "must be a whole number, got 4.5; allowed an integer such as 4"),
    ({"orchestrator": {"kind": "pcs", "pcs": {"slurm_version": 25.1}}}, "orchestrator.pcs.slurm_version",
     "must be text, got 25.1, which YAML reads as a number, not text - quote it: '25.1'"),
    ({"software": {"environment": {"1BAD": "x", "A B": "y"}}}, "software.environment.A B",
     "invalid format, got 'A B'; allowed letters, digits and _, not starting with a digit"),
    ({"tags": {"aws:team": "x"}}, "tags.aws:team",
     "tag keys starting with aws: are reserved by AWS, got 'aws:team'; allowed any other key"),
    ({"orchestrator": {"parallelcluster": {"head_node_instance_type": "m7i.banana"}}},
     "orchestrator.parallelcluster.head_node_instance_type",
     "invalid format, got 'm7i.banana'; allowed an EC2 instance type such as m7i.4xlarge"),
    ({"compute": [{"name": "gpu", "instance_type": "P5.48XLARGE", "count": 1}]}, "compute[0].instance_type",
     "unknown instance type, got 'P5.48XLARGE'; allowed p4d.24xlarge, p4de.24xlarge, p5.4xlarge, p5.48xlarge, p5e.48xlarge, "
     "p5en.48xlarge, p6-b200.48xlarge, p6-b300.48xlarge, p6e-gb200.36xlarge - did you mean 'p5.48xlarge'?"),
])
def test_messages_speak_yaml_not_python(patch: dict, path: str, message: str) -> None:
    assert (path, message) in [(p, m) for p, m, _ in problems(blueprint_text(patch))]


@pytest.mark.parametrize(("written", "got"), [
    ("2026-12-14T11:30:00", "got 2026-12-14T11:30:00;"),  # a time without a zone
    ("2026-12-16", "got 2026-12-16;"),  # a date alone
])
def test_a_date_without_its_time_zone_is_quoted_as_written(written: str, got: str) -> None:
    """YAML reads a timestamp into a Python date or datetime: the message quotes the text, never datetime.datetime(...)."""
    text = blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "capacity": {
        "type": "capacity_block", "reservation_id": "cr-0123456789abcdef0", "starts_at": "@WHEN@"}}]})
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(text.replace("'@WHEN@'", written).replace("@WHEN@", written))
    [problem] = [p for p in e.value.problems if p.path == "compute[0].capacity.starts_at"]
    assert got in problem.message and "datetime" not in problem.message
    assert "with its time zone" in problem.message


@pytest.mark.parametrize("written", [".inf", "-.inf", ".nan"])
def test_yaml_infinity_and_nan_are_not_finite_numbers(written: str) -> None:
    text = blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": "@N@"}]})
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(text.replace("'@N@'", written))
    [problem] = [p for p in e.value.problems if p.path == "compute[0].count"]
    assert problem.message.startswith(f"must be a finite number, got {written}, which YAML reads as the number")


@pytest.mark.parametrize(("key", "read"), [
    ("on", "the boolean true"), ("no", "the boolean false"), ("1", "the number 1"), ("2.5", "the number 2.5"),
    ("~", "null"),
])
def test_a_key_yaml_reads_as_something_else_is_named_as_written(key: str, read: str) -> None:
    """tags: {on: x} is the key true for YAML 1.1: the message names the key as written, at its path, and how to quote
    it (it used to say 'tags[1]: must be text, got a boolean')."""
    text = blueprint_text({}) + f"tags:\n  team: research\n  {key}: x\n"
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(text)
    [problem] = e.value.problems
    assert problem.path == f"tags.{key}"
    assert problem.message == (f"a key must be text, got {key}, which YAML reads as {read}; "
                               f"allowed text - quote it: '{key}'")


def test_keys_inside_an_extension_block_are_the_users_own() -> None:
    load_blueprint_text(blueprint_text({}) + "x-notes:\n  1: first\n  on: second\n")


# ---- extends: a problem a base gave is reported in that base, at its line ---------------------------------------
def _line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_problems_inherited_through_extends_name_the_file_and_line_they_are_in(tmp_path: Path) -> None:
    (tmp_path / "bases").mkdir()
    base_text = blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarg", "count": 2}]})
    (tmp_path / "bases" / "base.yaml").write_text(base_text)
    (tmp_path / "bases" / "mid.yaml").write_text("extends: base.yaml\nstorage:\n  checkpoints: {bucket: create, bogus: 1}\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: bases/mid.yaml\nname: child-a\nregion: us-esat-1\n")
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child)
    got = {p.path: (p.file, p.line) for p in exc.value.problems}
    assert got["compute[0].instance_type"] == (str(tmp_path / "bases" / "base.yaml"), _line_of(base_text, "p5.48xlarg"))
    assert got["storage.checkpoints.bogus"] == (str(tmp_path / "bases" / "mid.yaml"), 3)
    assert got["region"] == (None, 3)  # the blueprint's own value: its own file
    assert "compute[0].instance_type (" + str(tmp_path / "bases" / "base.yaml") + ", line" in str(exc.value)


@pytest.mark.parametrize(("mid", "path", "line", "fragment"), [
    ("extends: nope.yaml\n", "extends", 1, "no such base blueprint, got 'nope.yaml'"),
    ("name: a\nname: b\n", "name", 2, "duplicate key"),
    ("extends: base.yaml\n1: x\n", "1", 2, "a key must be text"),
], ids=["bad-extends-in-a-base", "duplicate-key-in-a-base", "number-key-in-a-base"])
def test_a_base_blueprints_own_mistakes_are_reported_in_it(tmp_path: Path, mid: str, path: str, line: int,
                                                          fragment: str) -> None:
    (tmp_path / "base.yaml").write_text(blueprint_text())
    (tmp_path / "mid.yaml").write_text(mid)
    child = tmp_path / "child.yaml"
    child.write_text("extends: mid.yaml\n")
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child)
    assert [(p.file, p.line) for p in exc.value.problems if p.path == path and fragment in p.message] == [
        (str(tmp_path / "mid.yaml"), line)], exc.value.problems


@pytest.mark.parametrize(("in_base", "content", "line", "fragment", "value"), [
    (True, b"name: a\n---\nname: b\n", 2, "not valid YAML: a file is one YAML document, got a second one (after ---)",
     None),
    (True, b"compute: [oops\n", 2, "not valid YAML: ", None),
    (True, b"name: \xe9\n", None, "the base blueprint is not UTF-8 text, got byte 0xe9 at byte offset 6", "0xe9"),
    (True, b"n: " + b"9" * 5000 + b"\n", None, "a number is too long to read", None),
    (False, b"name: a\n---\nname: b\n", 2, "not valid YAML: a file is one YAML document, got a second one", None),
    (False, b"n: " + b"9" * 5000 + b"\n", None, "a number is too long to read", None),
], ids=["base-second-document", "base-not-yaml", "base-not-utf8", "base-long-number", "second-document",
        "long-number"])
def test_a_file_that_is_not_yaml_is_reported_under_the_blueprint(tmp_path: Path, in_base: bool, content: bytes,
                                                                 line: int | None, fragment: str,
                                                                 value: str | None) -> None:
    """The header names the blueprint validated (deploy review item 3), the problem names the base it is in, and
    ``value`` in --json is the offending value or null, never the message's prose (README: ``value``)."""
    import json

    from typer.testing import CliRunner

    from fmcluster.cli import app
    from fmcluster.validation.organisation import use_organisation

    base, child = tmp_path / "base.yaml", tmp_path / "child.yaml"
    base.write_bytes(content)
    if in_base:
        child.write_text("extends: base.yaml\nname: child-a\n")
    else:
        child.write_bytes(content)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child, org="none")
    [p] = exc.value.problems
    assert (exc.value.file, p.path, p.file, p.line) == (str(child), "", str(base) if in_base else None, line), p
    assert fragment in p.message, p.message
    try:
        r = CliRunner().invoke(app, ["--org", "none", "validate", str(child)])
        j = json.loads(CliRunner().invoke(app, ["--org", "none", "validate", "--json", str(child)]).stdout)
    finally:
        use_organisation(None)  # --org holds for the rest of the (test) process
    at = f" (line {line})" if line else ""
    shown = f"{base}{at}" if in_base else f"(blueprint){at}"
    assert r.stderr.splitlines()[:2] == [f"{child}: 1 error", f"  error: {shown}: {p.message}"], r.stderr
    [q] = j["problems"]
    assert (q["file"], q["value"]) == (str(base) if in_base else str(child), value), q


@pytest.mark.parametrize(("text", "path", "value"), [
    ("name: a\nname: b\n", "name", "name"),
    ("on: 1\n", "on", "on"),
    ("1.30: x\n", "1.30", "1.30"),
    ("a: [" + "[" * 45 + "]" * 46 + "\n", None, None),
], ids=["duplicate-key", "boolean-key", "number-key", "too-deep"])
def test_the_json_value_of_a_key_problem_is_the_key_as_written(text: str, path: str | None, value: str | None) -> None:
    """``value`` is the offending value itself (README), the key as written, or null for a size: never the message's
    prose (``'name' again (first on line 1)``, ``on, which YAML reads as the boolean true``)."""
    from fmcluster.output import problem_json

    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text)
    [p] = [p for p in exc.value.problems if path is None or p.path == path]
    assert problem_json("bp.yaml", p)["value"] == value, p


def test_a_misspelt_extends_gets_a_did_you_mean() -> None:
    [(path, message, line)] = [p for p in problems("extend: base.yaml\n" + blueprint_text()) if p[0] == "extend"]
    assert (path, line) == ("extend", 1)
    assert "allowed availability_zone, availability_zone_id, budget, compute, extends, name" in message
    assert message.endswith("- did you mean 'extends'?")


# ---- a broken extends chain is reported alone (breaker report item 8) --------------------------------------------
#: The base files of each case (name -> text); the blueprint is ``extends: <case's value>`` plus ``name: child-a``,
#: so without its base it lacks region, compute and the AZ, and the default observability would be judged.
_CHAIN = {f"l{i}.yaml": f"extends: l{i + 1}.yaml\n" for i in range(1, 6)} | {"l6.yaml": "name: deep\n"}


@pytest.mark.parametrize(("extends", "files", "at", "line", "fragment"), [
    ("nothere.yaml", {}, None, 1, "no such base blueprint, got 'nothere.yaml'"),
    ("cyc.yaml", {"cyc.yaml": "extends: child.yaml\n"}, "cyc.yaml", 1, "the extends chain is a cycle, got "),
    ("l1.yaml", _CHAIN, "l5.yaml", 1, "the extends chain is more than 5 levels"),
    ("[base.yaml]", {"base.yaml": blueprint_text()}, None, 1, "must be the path of a base blueprint, got ['base.yaml']"),
    ("bases", {"bases/x.yaml": blueprint_text()}, None, 1, "a folder, not a base blueprint, got 'bases'"),
    ("list.yaml", {"list.yaml": "- a\n"}, None, 1, "the base blueprint is not a mapping, got 'list.yaml', which holds a list"),
    ("mid.yaml", {"mid.yaml": "region: us-east-1\n\nextends: gone.yaml\n"}, "mid.yaml", 3,
     "no such base blueprint, got 'gone.yaml'"),
], ids=["missing", "cycle", "too-deep", "a-list", "a-folder", "not-a-mapping", "missing-in-a-base"])
def test_a_broken_extends_is_the_only_problem(tmp_path: Path, extends: str, files: dict[str, str], at: str | None,
                                              line: int, fragment: str) -> None:
    """The extends error alone, in the file whose ``extends`` is at fault, at its line: no ``region`` or ``compute``
    missing, no R-AZ-1, no R-OBS-7 about the default observability of a blueprint whose base was never read."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {extends}\nname: child-a\n")
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child, org="none")
    [p] = exc.value.problems
    assert (p.path, p.file, p.line) == ("extends", str(tmp_path / at) if at else None, line), p
    assert fragment in p.message, p.message


def test_a_broken_extends_is_alone_under_an_organisation_too(tmp_path: Path) -> None:
    """The organisation's rules judge the merged blueprint: with its base unread, a tag the base gives would be
    reported missing. A broken organisation file is still reported (it is loaded first)."""
    org = tmp_path / "fmcluster.org.yaml"
    org.write_text("required_tags: {cost-center: 'CC-\\d{4}'}\nallowed: {regions: [us-west-2]}\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: nothere.yaml\nname: child-a\n")
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child)
    assert [(p.path, p.rule_id) for p in exc.value.problems] == [("extends", None)]
    org.write_text("allowed: {regionz: [us-west-2]}\n")
    with pytest.raises(BlueprintError) as exc:
        load_blueprint(child)
    assert [(p.path, p.file) for p in exc.value.problems] == [("allowed.regionz", str(org))]


@pytest.mark.parametrize(("misspelt", "section", "rule"), [
    ("observabilty", {"metrics": "managed", "alert_email": "oncall@example.com"}, "R-OBS-7"),
])
def test_a_misspelt_section_is_not_judged_by_its_defaults(misspelt: str, section: dict[str, object], rule: str) -> None:
    """``observabilty:`` with an alert_email is the observability the user meant: the did-you-mean, and no rule on the
    section's defaults (R-OBS-7 "no receiver") that contradicts what the file says."""
    text = blueprint_text({"observability": DROP, misspelt: section})  # no observability: the defaults would apply
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(text)
    assert [p.rule_id for p in e.value.problems if p.rule_id == rule] == []
    assert any(p.path == misspelt and "did you mean 'observability'?" in p.message for p in e.value.problems)


@pytest.mark.parametrize(("name", "reason"), [("missing.yaml", "No such file or directory"), ("a-folder", "Is a directory")])
def test_an_unreadable_file_is_a_message_in_the_got_allowed_form(tmp_path: Path, name: str, reason: str) -> None:
    """What ``npx cdk synth -c blueprint=FILE`` prints for a path it cannot read (the CLI's commands refuse it earlier)."""
    (tmp_path / "a-folder").mkdir()
    path = tmp_path / name
    with pytest.raises(BlueprintError) as e:
        load_blueprint(path)
    [p] = e.value.problems
    assert p.message == (f"cannot read the file ({reason}), got {str(path)!r}; allowed a readable blueprint YAML file "
                         "(a path from the working directory, or absolute)")
    assert p.value == str(path)
