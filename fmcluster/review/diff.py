"""Update-safety diff: what CloudFormation will do to every resource between two versions of a cluster.

``fmcluster diff OLD NEW`` compares two blueprints (each synthesized in-process into a temp dir,
no CLI, no credentials) or two synthesized ``cdk.out`` folders, and says for every resource that
changes whether CloudFormation updates it in place or replaces it.

How replacement is decided (no hand-kept list):

1. The ``createOnlyProperties`` (and ``conditionalCreateOnlyProperties``, "may replace") of the
   resource's registry schema, as shipped in the ``cfn-lint`` package
   (``cfnlint/data/schemas/providers/<region>.json`` -> ``resources/<hash>.json``, loaded through
   ``cfnlint.schema.PROVIDER_SCHEMA_MANAGER``).
2. A small sourced supplement, :data:`SUPPLEMENT`, used only where the schema is silent:
   ``AWS::FSx::FileSystem`` properties that the CDK service spec marks ``causesReplacement`` but the
   registry schema does not list as create-only, and ``LustreConfiguration/EfaEnabled``
   (npm ``@aws-cdk/aws-service-spec``; Terraform AWS provider docs for ``efa_enabled``).
3. References: a property that refers (``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, or ``Fn::ImportValue``
   of another stack's export) to a resource that is replaced or newly created gets a new value, so
   replacements propagate (a new subnet replaces the file system through ``SubnetIds``) until
   nothing changes.
4. Identity: a resource is matched by stack and logical id. A stateful resource that disappears
   under one logical id (or stack) and appears under another is a *move*: CloudFormation creates a
   new, empty one and removes the old one from the stack (kept or deleted by its DeletionPolicy).

Replacing or moving a stateful resource (:data:`STATEFUL_TYPES`) is an error naming the property
(or the logical id / stack) that causes it; the command then exits 1.

Exports in use: "After another stack imports an output value, you can't delete the stack that is
exporting the output value or modify the exported output value"
(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-importvalue.html).
An export that another stack imports in OLD and whose value changes in NEW (its resource is replaced,
or the expression changes) or that NEW no longer has is an error ("UPDATE FAILS") naming the export
and every importing stack: the exporting stack is deployed first and its update fails and rolls back.

Node images: a change of the AMI a node group boots (``software.image`` mode, the ``<name>-image`` stack's image,
a custom AMI id) is reported as a node replacement (:data:`NODE_REPLACEMENT`, a warning) on the resource that
launches the nodes, even where CloudFormation updates that resource in place.

Replacements CloudFormation cannot carry out: it creates the replacement before deleting the old resource, so a
replacement whose new resource needs an identity the old one still holds fails (:func:`replacement_conflicts`: a
subnet keeping its CIDR block in the same VPC, a custom-named resource keeping its name). An error ("UPDATE FAILS")
naming the create-only property that replaces and the property whose value is held.

Stacks that leave the app (in OLD, not in NEW): ``cdk deploy`` never deletes them, so their resources are not
removed and their exports stay; one warning per stack ("LEAVES THE APP") says how to delete it.

Updates CloudFormation cannot apply: an in-place update that lowers a property that can only grow
(:data:`NON_DECREASING`, a small sourced table, e.g. FSx ``StorageCapacity``) is an error too
("UPDATE FAILS"): the service rejects it and the stack update fails and rolls back.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

from fmcluster.blueprint.errors import Problem
from fmcluster.resolved.mirror import REGENERATED
from fmcluster.review.assembly import Assembly
from fmcluster.review.impact import GroupImpact, job_impacts, markdown_lines, text_lines
from fmcluster.review.synth import project_context, synthesize
from fmcluster.severity import ChangeLevel, count

#: Context the CDK CLI passes to apps; in-process synthesis sets it too so templates match ``cdk synth``.
CLI_CONTEXT = {"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True}

#: Resource types that hold data: replacing or moving one loses (or orphans) the data. The Slurm accounting database
#: (``<name>-accounting``) is an ``AWS::RDS::DBCluster``: Aurora keeps the data in the cluster volume, so its
#: instances are not stateful; a standalone ``AWS::RDS::DBInstance`` (no ``DBClusterIdentifier``) holds its own
#: storage and is (:func:`is_stateful`).
STATEFUL_TYPES = ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation", "AWS::S3::Bucket",
                  "AWS::RDS::DBCluster")
#: Stateful unless it is an Aurora cluster member (``DBClusterIdentifier`` set).
_STANDALONE_STATEFUL = ("AWS::RDS::DBInstance",)


def is_stateful(resource: Mapping[str, Any]) -> bool:
    """Whether replacing or moving this template resource loses (or orphans) data (:data:`STATEFUL_TYPES`, unless its
    ``Metadata`` marks it :data:`REGENERATED`)."""
    typ = resource.get("Type")
    if REGENERATED in (resource.get("Metadata") or {}):
        return False
    if typ in STATEFUL_TYPES:
        return True
    return typ in _STANDALONE_STATEFUL and "DBClusterIdentifier" not in resource.get("Properties", {})

#: Create-only properties the registry schema does not list. Each entry keeps its source; an entry is
#: used only while the schema is silent about it (neither the property nor a parent is create-only).
SUPPLEMENT: dict[str, dict[str, str]] = {
    "AWS::FSx::FileSystem": {
        "FileSystemTypeVersion": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/DeploymentType": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        # The FSx API can change the tier in place; CloudFormation's spec says replacement: conservative.
        "LustreConfiguration/PerUnitStorageThroughput": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/ImportPath": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/ExportPath": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/ImportedFileChunkSize": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/DriveCacheType": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/CopyTagsToBackups": "CDK service spec causesReplacement (npm @aws-cdk/aws-service-spec)",
        "LustreConfiguration/EfaEnabled":
            "fmcluster: EfaEnabled must be set at creation and cannot be changed (Terraform AWS provider docs, efa_enabled; unverified)",
    },
}
#: Properties that can only grow: an update that lowers one is not a replacement, CloudFormation
#: cannot apply it (the service rejects it; the stack update fails and rolls back). Each entry keeps its
#: source. Checked only when the resource is updated in place (a replacement starts from the new value).
NON_DECREASING: dict[str, dict[str, str]] = {
    "AWS::FSx::FileSystem": {
        "StorageCapacity": "FSx storage capacity can only be increased "
                           "(https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html)",
    },
    "AWS::EC2::Volume": {
        "Size": "an EBS volume's size can only be increased "
                "(https://docs.aws.amazon.com/ebs/latest/userguide/ebs-modify-volume.html)",
    },
}
#: Replacements CloudFormation cannot carry out because the new resource must take an identity the old one still
#: holds. CloudFormation replaces by creating the new resource first and deleting the old one afterwards (kept when
#: its policy is Retain) (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html,
#: "Replacement"). Type -> (identity property paths, scope property paths, reason): the replacement fails when every
#: identity property is set and unchanged and every scope property is unchanged (a new VPC is a new scope).
REPLACEMENT_CONFLICTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "AWS::EC2::Subnet": (("CidrBlock",), ("VpcId",),
                         "the replacement subnet is created with the same CIDR block in the same VPC while the old subnet "
                         "still holds it; subnets of a VPC must not overlap, so CreateSubnet fails "
                         "(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html)"),
    "AWS::EC2::Subnet#ipv6": (("Ipv6CidrBlock",), ("VpcId",),
                              "the replacement subnet is created with the same IPv6 CIDR block in the same VPC while the "
                              "old subnet still holds it (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html)"),
}
CUSTOM_NAME_SOURCE = ("CloudFormation cannot replace a custom-named resource: \"You can't perform an update that causes a "
                      "custom-named resource to be replaced. If you must replace the resource, specify a new name.\" "
                      "(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html)")
#: Name properties the registry schema does not mark as the (writable) primary identifier; used with the schema's
#: writable ``primaryIdentifier`` (e.g. S3 ``BucketName``, IAM ``RoleName``, RDS ``DBClusterIdentifier``).
NAME_SUPPLEMENT: dict[str, str] = {
    "AWS::EC2::SecurityGroup": "GroupName",  # unique within the VPC (CreateSecurityGroup)
    "AWS::EC2::LaunchTemplate": "LaunchTemplateName",  # unique per account and Region (CreateLaunchTemplate)
}


@cache
def _schema(region: str, type_: str) -> Mapping[str, Any]:
    """The registry schema of ``type_`` (cfn-lint), or ``{}`` for an unknown type."""
    try:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

        return PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, type_).schema
    except Exception:  # noqa: BLE001 - unknown type or cfn-lint missing: no schema
        return {}


@cache
def custom_names(region: str, type_: str) -> tuple[str, ...]:
    """Property paths that name ``type_``'s resource (its physical id): the registry schema's ``primaryIdentifier``
    properties that are not read-only (set in the template, so a custom name), plus :data:`NAME_SUPPLEMENT`."""
    schema = _schema(region, type_)
    read_only = set(schema.get("readOnlyProperties") or [])
    ids = [p for p in schema.get("primaryIdentifier") or [] if p not in read_only and p.startswith("/properties/")]
    names = [p.removeprefix("/properties/") for p in ids] if len(ids) == 1 else []  # composite ids are not names
    if type_ in NAME_SUPPLEMENT and NAME_SUPPLEMENT[type_] not in names:
        names.append(NAME_SUPPLEMENT[type_])
    return tuple(names)


def replacement_conflicts(region: str, type_: str, old_props: Mapping[str, Any], new_props: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Property path -> (value, reason) for every identity a replacement of this resource would reuse while the old
    resource still holds it (:data:`REPLACEMENT_CONFLICTS`, custom names from :func:`custom_names`). ``old_props`` and
    ``new_props`` are normalized (a reference to a replaced resource differs on the NEW side). Empty for a type whose
    schema says ``replacementStrategy: delete_then_create`` (CloudFormation deletes the old one first:
    https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html)."""
    out: dict[str, tuple[str, str]] = {}
    if _schema(region, type_).get("replacementStrategy") == "delete_then_create":
        return out
    rules = [v for k, v in REPLACEMENT_CONFLICTS.items() if k.split("#", 1)[0] == type_]
    rules += [((name,), (), CUSTOM_NAME_SOURCE) for name in custom_names(region, type_)]
    for identity, scope, reason in rules:
        values = [_get(old_props, p) for p in identity]
        if any(v is _MISSING for v in values) or any(_get(new_props, p) != v for p, v in zip(identity, values, strict=True)):
            continue
        if any(_get(old_props, p) != _get(new_props, p) for p in scope):
            continue
        for p, v in zip(identity, values, strict=True):
            out[p] = (_short(v), reason)
    return out


SCHEMA_SOURCE = "registry schema createOnlyProperties (cfn-lint)"
CONDITIONAL_SOURCE = "registry schema conditionalCreateOnlyProperties (cfn-lint): may replace"

Action = Literal["add", "remove", "update", "replace", "may-replace", "move", "fail", "leave"]
_MISSING = object()


#: Exit code of ``fmcluster diff`` for input it cannot compare (0 safe, 1 unsafe: :attr:`DiffReport.exit_code`).
DIFF_INPUT_ERROR = 2


def relabel(report: DiffReport, old: str, new: str) -> DiffReport:
    """``report`` naming its two sides ``old`` and ``new`` (e.g. repository paths instead of temporary files)."""
    return replace(report, old=old, new=new)


class DiffInputError(Exception):
    """An input that is neither a blueprint YAML nor a folder, a malformed ``--context``, or cfn-lint
    missing. A folder that is not a complete cloud assembly raises
    :class:`fmcluster.review.assembly.AssemblyError` instead."""


# ---- inputs: cdk.out folders (fmcluster.review.assembly) or blueprints synthesized in-process ----------
def synth_blueprint(path: str | Path, context: Mapping[str, Any] | None = None) -> Assembly:
    """Load, validate and synthesize a blueprint in-process into a temp dir (no CLI, no credentials); the assembly
    carries the blueprint's warnings (``Assembly.warnings``).

    Context: :func:`fmcluster.review.synth.project_context` (``cdk.json`` and ``cdk.context.json``) plus ``context``.
    Raises :class:`fmcluster.blueprint.BlueprintError` for bad input and
    :class:`fmcluster.review.synth.SynthesisError` when the app has error annotations (``cdk synth`` refuses it).
    """
    from fmcluster.validation import load_blueprint_with_warnings

    org = (context or {}).get("org")
    loaded = load_blueprint_with_warnings(path, org=org if isinstance(org, str) else None)  # -c org=FILE, as app.py
    bp = loaded.blueprint
    with tempfile.TemporaryDirectory(prefix="fmcluster-diff-") as out:  # the templates are read into memory
        synthesize(bp, out, {**CLI_CONTEXT, **project_context(path), **dict(context or {})}, source=str(path))
        assembly = Assembly.from_dir(out)
    return Assembly(assembly.stacks, bp.region, str(path), tuple(loaded.warnings))


def load_side(path: str | Path, context: Mapping[str, Any] | None = None) -> Assembly:
    """A ``cdk.out`` folder, or a blueprint YAML file synthesized in-process."""
    p = Path(path)
    if p.is_dir():
        return Assembly.from_dir(p)
    if p.is_file():
        return synth_blueprint(p, context)
    raise DiffInputError(f"{p}: no such file or folder; allowed a blueprint YAML or a cdk.out folder")


def load_sides(old: str | Path, new: str | Path, context: Mapping[str, Any] | None = None) -> tuple[Assembly, Assembly]:
    """Both sides of a diff (:func:`load_side`); the same blueprint file on both sides is synthesized once (synthesis
    is deterministic, and a blueprint's ``extends`` bases resolve from its own folder, so one file is one input)."""
    old_side = load_side(old, context)
    o, n = Path(old), Path(new)
    if o.is_file() and n.is_file() and o.samefile(n):
        return old_side, old_side
    return old_side, load_side(new, context)


# ---- create-only properties --------------------------------------------------------------------
@dataclass(frozen=True)
class CreateOnly:
    """Property paths (``A/B``, ``*`` for any list item) that replace the resource when they change."""

    paths: tuple[tuple[str, str, bool], ...]  # (path, source, conditional)
    known: bool  # False when no schema was found for the type

    def sources(self) -> dict[str, str]:
        return {p: s for p, s, _ in self.paths}


@cache
def create_only(region: str, type_: str) -> CreateOnly:
    """Create-only property paths of ``type_`` from the cfn-lint registry schema plus :data:`SUPPLEMENT`."""
    try:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    except ImportError as e:  # pragma: no cover - cfn-lint is a dependency of fmcluster diff
        raise DiffInputError("fmcluster diff needs the cfn-lint package (its resource schemas); pip install cfn-lint") from e
    try:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, type_).schema
        known = True
    except Exception:  # noqa: BLE001 - cfn-lint raises its own ResourceNotFoundError for unknown types
        schema, known = {}, type_.startswith("Custom::")
    paths: list[tuple[str, str, bool]] = []
    for key, conditional in (("createOnlyProperties", False), ("conditionalCreateOnlyProperties", True)):
        for ptr in schema.get(key) or []:
            if ptr.startswith("/properties/"):
                paths.append((ptr.removeprefix("/properties/"), CONDITIONAL_SOURCE if conditional else SCHEMA_SOURCE, conditional))
    schema_paths = [p for p, _, _ in paths]
    for path, source in SUPPLEMENT.get(type_, {}).items():
        covered = any(path == p or path.startswith(p + "/") for p in schema_paths)
        if not covered:
            paths.append((path, f"supplement: {source}", False))
    return CreateOnly(tuple(paths), known)


def _values_at(obj: Any, parts: list[str], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(concrete path, value) for a property path with ``*`` list wildcards; missing -> _MISSING."""
    if not parts:
        yield prefix, obj
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        items = obj if isinstance(obj, list) else []
        if not items:
            yield prefix + "/*", _MISSING
        for i, item in enumerate(items):
            yield from _values_at(item, rest, f"{prefix}/{i}")
        return
    value = obj.get(head, _MISSING) if isinstance(obj, dict) else _MISSING
    if value is _MISSING:
        yield (prefix + "/" + "/".join(parts)).lstrip("/"), _MISSING
        return
    yield from _values_at(value, rest, f"{prefix}/{head}".lstrip("/"))


# ---- references -------------------------------------------------------------------------------
_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")
#: The ``Fn::GetAtt`` attribute whose value is what ``Ref`` returns, per type: the two expressions name the same
#: physical value, so they compare equal (a template that switches from one to the other changes nothing). Each
#: from the type's "Return values" in the CloudFormation template reference
#: (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-ec2-subnet.html: Ref returns
#: the subnet ID, ``SubnetId`` the same; ...-ec2-vpc.html: the VPC ID, ``VpcId``; ...-ec2-securitygroup.html: the
#: security group ID, ``GroupId``; ...-ec2-placementgroup.html: the placement group name, ``GroupName``;
#: ...-iam-managedpolicy.html: the policy ARN, ``PolicyArn``), and each attribute is the type's registry-schema
#: primary identifier but for the security group, whose schema identifier is ``Id``.
REF_ATTRIBUTE: dict[str, str] = {"AWS::EC2::Subnet": "SubnetId", "AWS::EC2::VPC": "VpcId",
                                 "AWS::EC2::SecurityGroup": "GroupId", "AWS::EC2::PlacementGroup": "GroupName",
                                 "AWS::IAM::ManagedPolicy": "PolicyArn"}


class _Normalizer:
    """Turns template values into comparable values where references name physical identities.

    A reference to a resource becomes ``<ref stack/id>``; on the NEW side it becomes
    ``<ref stack/id (new)>`` when that resource is new, moved or replaced (its physical id changes). A ``GetAtt`` of
    the attribute ``Ref`` returns (:data:`REF_ATTRIBUTE`) becomes the same token as the ``Ref``.
    ``Fn::ImportValue`` is resolved through the exporting stack's output.
    """

    def __init__(self, assembly: Assembly, fresh: set[tuple[str, str]]) -> None:
        self.assembly = assembly
        self.exports = assembly.exports
        self.fresh = fresh

    def token(self, stack: str, lid: str) -> str:
        mark = " (new)" if (stack, lid) in self.fresh else ""
        return f"<ref {stack}/{lid}{mark}>"

    def __call__(self, value: Any, stack: str, depth: int = 0) -> Any:
        if depth > 20:
            return value
        resources = self.assembly.stacks[stack].get("Resources", {})
        if isinstance(value, dict):
            if len(value) == 1:
                (k, v), = value.items()
                if k == "Ref" and isinstance(v, str) and v in resources:
                    return self.token(stack, v)
                if k == "Fn::GetAtt":
                    target, attr = (v.split(".", 1) + [""])[:2] if isinstance(v, str) else (v + ["", ""])[:2]
                    if isinstance(target, str) and target in resources:
                        same_as_ref = REF_ATTRIBUTE.get(resources[target].get("Type", "")) == attr
                        return self.token(stack, target) if same_as_ref else f"{self.token(stack, target)}.{attr}"
                if k == "Fn::ImportValue" and isinstance(v, str) and v in self.exports:
                    producer, expr = self.exports[v]
                    return self(expr, producer, depth + 1)
                if k == "Fn::Sub":
                    text, variables = (v, {}) if isinstance(v, str) else (v[0], v[1] if len(v) > 1 else {})
                    refs = sorted({self.token(stack, m.split(".")[0]) for m in _SUB_VAR.findall(text)
                                   if m.split(".")[0] in resources and m not in variables})
                    return {"Fn::Sub": [text, self(variables, stack, depth + 1), refs]}
            return {k: self(v, stack, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, stack, depth + 1) for v in value]
        return value


# ---- the diff ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PropertyChange:
    """One changed property: ``old``/``new`` as the reports show them (:func:`_short`: JSON text cut at 80 characters,
    ``(absent)``), ``old_value``/``new_value`` the template values themselves (``None`` when absent), for ``--json``."""

    path: str
    old: str
    new: str
    replaces: bool = False
    conditional: bool = False
    source: str = ""
    fails: bool = False  # an in-place update CloudFormation cannot apply (see NON_DECREASING)
    old_value: Any = None
    new_value: Any = None


@dataclass
class ResourceChange:
    stack: str
    logical_id: str
    type: str
    action: Action
    level: ChangeLevel
    construct_path: str = ""
    stateful: bool = False
    properties: list[PropertyChange] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    moved_from: str | None = None
    note: str = ""
    #: The orchestrator's own verdict on each changed setting of its cluster resource (:func:`_orchestrator_updates`):
    #: ``{"setting", "kind", "text", "queue"}``, kind ``in_place``, ``replaces_nodes``, ``needs_stop``, ``cannot_tell``
    #: or ``fails``.
    orchestrator_updates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.construct_path or self.logical_id

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DiffReport:
    old: str
    new: str
    changes: list[ResourceChange]
    #: Cost delta (fmcluster.review.cost.cost_delta) when both sides are blueprints; None otherwise.
    cost: dict[str, Any] | None = None
    #: What the change does to each node group and its jobs (:mod:`fmcluster.review.impact`), boot estimates added
    #: by the CLI when NEW is a blueprint.
    impact: list[GroupImpact] = field(default_factory=list)

    @property
    def errors(self) -> list[ResourceChange]:
        return [c for c in self.changes if c.level == "error"]

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0

    def by_id(self, logical_id: str, stack: str | None = None) -> ResourceChange:
        hits = [c for c in self.changes if c.logical_id == logical_id and (stack is None or c.stack == stack)]
        if len(hits) != 1:
            raise KeyError(f"{logical_id}: {len(hits)} changes")
        return hits[0]

    def of_type(self, type_: str) -> list[ResourceChange]:
        return [c for c in self.changes if c.type == type_]

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.changes:
            counts[c.action] = counts.get(c.action, 0) + 1
        return counts

    def problems(self) -> list[Problem]:
        """Every error and warning change as a :class:`Problem`, in report order (errors first), for the JSON
        envelope's ``problems`` (README.md "The CLI"); the full report stays the envelope's ``result``. See
        :func:`change_problem` for each field."""
        return [change_problem(c) for c in self.changes if c.level in ("error", "warning")]

    def as_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "exit_code": self.exit_code, "errors": len(self.errors),
                "summary": self.summary(), "cost": self.cost, "impact": [g.as_dict() for g in self.impact],
                "changes": [c.as_dict() for c in self.changes]}


def _cdk_path(res: Mapping[str, Any]) -> str:
    path = (res.get("Metadata") or {}).get("aws:cdk:path", "")
    parts = path.split("/")[1:]  # drop the stack name
    if parts and parts[-1] == "Resource":
        parts = parts[:-1]
    return "/".join(parts)


def _value(value: Any) -> Any:
    """A template value for ``--json``: itself, ``None`` for an absent one."""
    return None if value is _MISSING else value


def _short(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _changed_paths(old: Any, new: Any, prefix: str = "") -> Iterator[str]:
    """Leaf-ish paths where two normalized property trees differ (objects recurse, lists compare whole)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if old.get(k, _MISSING) != new.get(k, _MISSING):
                sub = f"{prefix}/{k}".lstrip("/")
                if isinstance(old.get(k), dict) and isinstance(new.get(k), dict):
                    yield from _changed_paths(old[k], new[k], sub)
                else:
                    yield sub
    elif old != new:
        yield prefix


def _get(obj: Any, path: str) -> Any:
    for part in path.split("/") if path else []:
        obj = obj.get(part, _MISSING) if isinstance(obj, dict) else _MISSING
    return obj


def diff_assemblies(old: Assembly, new: Assembly) -> DiffReport:
    """Every resource that changes between ``old`` and ``new``, with CloudFormation's update behaviour."""
    region = new.region or old.region
    old_res = {(s, lid): r for s, lid, r in old.resources()}
    new_res = {(s, lid): r for s, lid, r in new.resources()}
    matched = {k for k in old_res.keys() & new_res.keys() if old_res[k].get("Type") == new_res[k].get("Type")}
    retyped = {k for k in old_res.keys() & new_res.keys() if k not in matched}
    # A stack in OLD that NEW's app no longer has: cdk deploy never touches it (its resources are not removed).
    gone = [s for s in old.stacks if s not in new.stacks]
    removed = [k for k in old_res if k not in new_res]
    added = [k for k in new_res if k not in old_res]
    moves = _pair_moves(removed, added, old_res, new_res)

    # Fixed point: resources whose physical identity is new on the NEW side.
    fresh: set[tuple[str, str]] = set(added) | retyped
    verdicts: dict[tuple[str, str], tuple[list[PropertyChange], bool, bool]] = {}
    old_norm = _Normalizer(old, set())
    while True:
        new_norm = _Normalizer(new, fresh)
        grew = False
        for key in sorted(matched):
            verdicts[key] = _compare(region, old_res[key], new_res[key], key, old_norm, new_norm)
            if verdicts[key][1] and key not in fresh:
                fresh.add(key)
                grew = True
        if not grew:
            break
    new_norm = _Normalizer(new, fresh)

    changes: list[ResourceChange] = []
    for key in sorted(matched):
        props, replaces, may = verdicts[key]
        res = new_res[key]
        policy = _policy_change(old_res[key], res)
        if not props and not policy:
            continue
        typ = res["Type"]
        stateful = is_stateful(res)
        action: Action = "replace" if replaces else "may-replace" if may else "update"
        causes = [p.path for p in props if p.replaces or p.conditional]
        level: ChangeLevel = "info"
        note = ""
        blocked = {} if replaces else _decreases(typ, old_res[key].get("Properties", {}), res.get("Properties", {}))
        conflicts = replacement_conflicts(region, typ, old_norm(dict(old_res[key].get("Properties", {})), key[0]),
                                          new_norm(dict(res.get("Properties", {})), key[0])) if replaces else {}
        if conflicts:
            held = [PropertyChange(p, v, v, fails=True, source=reason) for p, (v, reason) in conflicts.items()]
            props = [p for p in props if p.path not in conflicts] + held
            action, level = "fail", "error"
            causes = [p.path for p in props if p.replaces and not p.conditional] + list(conflicts)
            note = ("CloudFormation replaces by creating the new resource before deleting the old one, and the new one "
                    f"needs the {', '.join(conflicts)} the old one still holds: the stack update fails and rolls back "
                    "(change that value too, or avoid the replacement)")
        elif blocked:
            props = [replace(p, fails=True, source=blocked[p.path]) if p.path in blocked else p for p in props]
            action, level, causes = "fail", "error", [p.path for p in props if p.fails]
            note = "CloudFormation cannot apply this update: the service rejects it; the stack update fails and rolls back"
        elif replaces or may:
            level = "error" if stateful else "warning" if may else "info"
            if stateful:
                kept = old_res[key].get("UpdateReplacePolicy") in ("Retain", "Snapshot")
                note = (f"CloudFormation creates a new, empty {_what(typ)}; the old one is "
                        + ("kept but orphaned (UpdateReplacePolicy Retain): the cluster loses its data"
                           if kept else "DELETED (UpdateReplacePolicy Delete): data loss"))
        elif policy and stateful and "Delete" in policy:
            level, note = "warning", f"{policy}: a later stack deletion deletes the data"
        elif lowered := _protection_lowered(typ, old_res[key].get("Properties", {}), res.get("Properties", {})):
            level, note = "warning", lowered
        if policy and not note:
            note = policy
        moved_images = _node_image_changes(typ, old_norm(dict(old_res[key].get("Properties", {})), key[0]),
                                           new_norm(dict(res.get("Properties", {})), key[0]))
        if moved_images:
            level = "warning" if level == "info" else level
            note = "; ".join(x for x in (note, NODE_REPLACEMENT + ", ".join(moved_images)) if x)
        updates = _orchestrator_updates(typ, old_norm(dict(old_res[key].get("Properties", {})), key[0]),
                                        new_norm(dict(res.get("Properties", {})), key[0]), region)
        if action == "update" and updates:
            action, level = _orchestrator_verdict(updates, action, level)
        changes.append(ResourceChange(key[0], key[1], typ, action, level, _cdk_path(res), stateful, props, causes,
                                      note=note, orchestrator_updates=updates))

    for key in sorted(retyped):
        o, n = old_res[key], new_res[key]
        stateful = is_stateful(o) or is_stateful(n)
        changes.append(ResourceChange(
            key[0], key[1], n["Type"], "replace", "error" if stateful else "info", _cdk_path(n), stateful,
            [PropertyChange("Type", o["Type"], n["Type"], True, source="resource type")], ["Type"],
            note="the resource type changed under the same logical id"))

    moved_new = {n for _, n in moves}
    moved_old = {o for o, _ in moves}
    for o_key, n_key in moves:
        o, n = old_res[o_key], new_res[n_key]
        co = create_only(region, n["Type"])
        props = _property_changes(co, o.get("Properties", {}), n.get("Properties", {}), o_key, n_key, old_norm, new_norm)
        where = "stack" if o_key[0] != n_key[0] else "logical id"
        old_fate = (f"left running in stack {o_key[0]}, which leaves the app" if o_key[0] in gone else
                f"{'kept but orphaned' if o.get('DeletionPolicy') == 'Retain' else 'DELETED'} (DeletionPolicy "
                f"{o.get('DeletionPolicy', 'Delete')})")
        cause = (f"{where}: {o_key[0]}/{o_key[1]} -> {n_key[0]}/{n_key[1]}")
        changes.append(ResourceChange(
            n_key[0], n_key[1], n["Type"], "move", "error", _cdk_path(n), True, props,
            [cause] + [p.path for p in props if p.replaces], moved_from=f"{o_key[0]}/{o_key[1]}",
            note=f"a new, empty {_what(n['Type'])} is created; the old one is {old_fate}"))

    for key in removed:
        if key in moved_old or key[0] in gone:
            continue
        r = old_res[key]
        stateful = is_stateful(r)
        retained = r.get("DeletionPolicy") in ("Retain", "RetainExceptOnCreate", "Snapshot")
        removal_level: ChangeLevel = ("warning" if retained else "error") if stateful else "info"
        changes.append(ResourceChange(
            key[0], key[1], r["Type"], "remove", removal_level, _cdk_path(r), stateful,
            note=("removed from the stack; " + ("kept in the account (orphaned)" if retained else "DELETED with its data"))
            if stateful else ""))
    for key in added:
        if key in moved_new:
            continue
        r = new_res[key]
        changes.append(ResourceChange(key[0], key[1], r["Type"], "add", "info", _cdk_path(r), is_stateful(r)))

    changes.extend(_stack_leaves(stack, old) for stack in gone)
    changes.extend(_export_changes(old, new, old_norm, new_norm, set(gone)))

    staying = {k: r for k, r in old_res.items() if k[0] not in gone}  # a stack that leaves keeps running
    impact = job_impacts(_reviewed(staying, old_norm), _reviewed(new_res, new_norm), changes, region)
    _warn_on_hit_groups(changes, impact)
    order = {"error": 0, "warning": 1, "info": 2}
    changes.sort(key=lambda c: (order[c.level], not c.stateful, c.stack, c.construct_path, c.logical_id))
    return DiffReport(old.source, new.source, changes, impact=impact)


def _warn_on_hit_groups(changes: list[ResourceChange], impact: list[GroupImpact]) -> None:
    """A change whose node groups lose running work (or whose effect on them nobody documents) is at least a
    warning, naming the groups, so the default text output shows it."""
    for c in changes:
        hit = [g for g in impact if g.cluster == f"{c.stack}/{c.logical_id}" and g.hits_work]
        if hit and c.level == "info":
            c.level = "warning"
            jobs = "; ".join(f"{g.group}: {g.nodes}" for g in hit)
            c.note = "; ".join(x for x in (c.note, f"node groups: {jobs}") if x)


def _reviewed(resources: Mapping[tuple[str, str], Mapping[str, Any]], norm: _Normalizer) -> dict[tuple[str, str], dict[str, Any]]:
    """The resources an orchestrator judges (registry ``UPDATE_REVIEWERS``), their properties normalized."""
    from fmcluster.orchestrators.registry import UPDATE_REVIEWERS

    return {k: {"Type": r["Type"], "Properties": norm(dict(r.get("Properties", {})), k[0])}
            for k, r in resources.items() if r.get("Type") in UPDATE_REVIEWERS}


def _orchestrator_updates(type_: str, old_props: Mapping[str, Any], new_props: Mapping[str, Any],
                          region: str) -> list[dict[str, Any]]:
    """The orchestrator's own verdicts on a changed cluster resource (the registry's
    :data:`fmcluster.orchestrators.registry.UPDATE_REVIEWERS`: ParallelCluster's update policies for
    ``Custom::PclusterCluster``); empty for every other type. Settings applied in place are left out."""
    import importlib

    from fmcluster.orchestrators.registry import UPDATE_REVIEWERS

    module = UPDATE_REVIEWERS.get(type_)
    if module is None:
        return []
    found: list[dict[str, Any]] = importlib.import_module(module).review_resource_update(old_props, new_props, region)
    return [u for u in found if u["kind"] != "in_place"]


#: The change level and action of each orchestrator verdict kind, worst first.
_VERDICT_LEVELS: tuple[tuple[str, Action, ChangeLevel], ...] = (
    ("fails", "fail", "error"), ("needs_stop", "update", "warning"), ("cannot_tell", "update", "warning"),
    ("replaces_nodes", "update", "warning"))


def _orchestrator_verdict(updates: list[dict[str, Any]], action: Action, level: ChangeLevel) -> tuple[Action, ChangeLevel]:
    """The resource's action and level from its worst orchestrator verdict (a refused setting fails the update)."""
    kinds = {u["kind"] for u in updates}
    for kind, new_action, new_level in _VERDICT_LEVELS:
        if kind in kinds:
            order = {"error": 0, "warning": 1, "info": 2}
            return new_action, new_level if order[new_level] < order[level] else level
    return action, level


#: Note of a change to the AMI nodes boot (``software.image``: mode, image stack, AMI id): CloudFormation updates the
#: resource in place, but the orchestrator relaunches the nodes from the new image (ParallelCluster per
#: ``QueueUpdateStrategy``, PCS node groups and HyperPod instance groups by replacing instances): running jobs on
#: those nodes end. docs/software.md "Upgrading".
NODE_REPLACEMENT = "node replacement: nodes relaunch from a new image: "


def _node_images(type_: str, props: Any) -> dict[str, Any]:
    """Node group -> the image setting its nodes boot, for the resource types that launch nodes."""
    if not isinstance(props, dict):
        return {}
    if type_ == "AWS::PCS::ComputeNodeGroup":
        return {str(props.get("Name", "?")): props.get("AmiId")}
    if type_ == "Custom::PclusterCluster":
        cfg = props.get("ClusterConfiguration")
        if not isinstance(cfg, dict):
            return {}
        out: dict[str, Any] = {"head node and defaults": cfg.get("Image")}
        queues = (cfg.get("Scheduling") or {}).get("SlurmQueues") if isinstance(cfg.get("Scheduling"), dict) else None
        for q in queues if isinstance(queues, list) else []:
            if isinstance(q, dict):
                out[f"queue {q.get('Name', '?')}"] = q.get("Image")
        return out
    if type_ == "AWS::SageMaker::Cluster":
        groups = props.get("InstanceGroups")
        return {f"instance group {g.get('InstanceGroupName', '?')}": g.get("ImageId")
                for g in (groups if isinstance(groups, list) else []) if isinstance(g, dict)}
    return {}


def _node_image_changes(type_: str, old_props: Any, new_props: Any) -> list[str]:
    """``<group> (<old> -> <new>)`` for every node group (present on both sides) whose image changes."""
    old, new = _node_images(type_, old_props), _node_images(type_, new_props)
    return [f"{k} ({_short(old[k] if old[k] is not None else 'official image')} -> "
            f"{_short(new[k] if new[k] is not None else 'official image')})"
            for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]


#: ``ResourceChange.type`` of a change to a stack output's export (not a resource).
EXPORT_TYPE = "Output (Export)"
EXPORT_SOURCE = ("an imported export cannot be modified or removed "
                 "(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-importvalue.html)")


def _imports(value: Any) -> Iterator[str]:
    """Export names of every ``Fn::ImportValue`` (with a literal name) in a template fragment."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "Fn::ImportValue" and isinstance(v, str):
                yield v
            else:
                yield from _imports(v)
    elif isinstance(value, list):
        for v in value:
            yield from _imports(v)


def importers(assembly: Assembly) -> dict[str, list[str]]:
    """Export name -> the stacks (other than the exporter) whose templates import it, sorted."""
    exports = assembly.exports
    out: dict[str, set[str]] = {}
    for stack, tpl in assembly.stacks.items():
        for name in _imports({k: v for k, v in tpl.items() if k in ("Resources", "Outputs", "Conditions")}):
            if name in exports and exports[name][0] != stack:
                out.setdefault(name, set()).add(stack)
    return {k: sorted(v) for k, v in out.items()}


def _export_outputs(assembly: Assembly) -> dict[str, tuple[str, str, Any]]:
    """Export name -> (stack, output logical id, value expression)."""
    out: dict[str, tuple[str, str, Any]] = {}
    for stack, tpl in assembly.stacks.items():
        for lid, o in (tpl.get("Outputs") or {}).items():
            name = (o.get("Export") or {}).get("Name") if isinstance(o, dict) else None
            if isinstance(name, str):
                out[name] = (stack, lid, o.get("Value"))
    return out


#: ``ResourceChange.type`` of a stack that leaves the app (in OLD, not in NEW).
STACK_TYPE = "AWS::CloudFormation::Stack"


def _stack_leaves(stack: str, old: Assembly) -> ResourceChange:
    """One warning for a stack that OLD has and NEW does not. ``cdk deploy`` deploys the stacks of the app it runs
    (``--all``: all of them) and never deletes a stack the app no longer has; only ``cdk destroy STACK`` (with an app
    that still has it) deletes it (https://docs.aws.amazon.com/cdk/v2/guide/ref-cli-cmd-destroy.html). Its resources
    keep running (and billing); its exports stay, so its importers' updates that drop the import succeed."""
    source = old.source if old.source.endswith((".yaml", ".yml")) else "<OLD blueprint>"
    n = sum(1 for _ in old.stacks[stack].get("Resources", {}))
    return ResourceChange(
        stack, stack, STACK_TYPE, "leave", "warning", stack, False,
        note=f"stack {stack} leaves the app: cdk deploy leaves it running ({n} resource{'' if n == 1 else 's'}, still billed); "
             f"delete it with `npx cdk destroy {stack} -c blueprint={source}` once nothing needs it; "
             "its retained resources stay")


def _export_changes(old: Assembly, new: Assembly, old_norm: _Normalizer, new_norm: _Normalizer,
                    gone: set[str] | None = None) -> list[ResourceChange]:
    """An error for every export that another stack imports in ``old`` and that ``new`` changes or drops, except
    exports of stacks in ``gone`` (they leave the app: not deployed, their exports stay)."""
    used = importers(old)
    old_out, new_out = _export_outputs(old), _export_outputs(new)
    changes = []
    for name in sorted(used):
        stack, lid, value = old_out[name]
        if stack in (gone or set()):
            continue
        a = old_norm(value, stack)
        if name in new_out:
            n_stack, n_lid, n_value = new_out[name]
            b = new_norm(n_value, n_stack)
            if a == b:
                continue
            what, new_text = "changes", _short(b)
        else:
            what, new_text, n_lid = "is removed", "(absent)", lid
        who = ", ".join(used[name])
        changes.append(ResourceChange(
            stack, n_lid, EXPORT_TYPE, "fail", "error", n_lid, False,
            [PropertyChange("Value", _short(a), new_text, fails=True, source=EXPORT_SOURCE, old_value=a,
                            new_value=b if name in new_out else None)], ["Value"],
            note=f"export {name} {what} but stack(s) {who} import it: CloudFormation cannot modify or remove an export "
                 f"in use, so the {stack} update fails and rolls back (deploy a version that stops importing it first, "
                 "or keep the exported resource)"))
    return changes


def _what(type_: str) -> str:
    return {"AWS::FSx::FileSystem": "file system", "AWS::FSx::DataRepositoryAssociation": "data repository association",
            "AWS::S3::Bucket": "bucket", "AWS::RDS::DBCluster": "database cluster",
            "AWS::RDS::DBInstance": "database"}.get(type_, type_)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _decreases(type_: str, old_props: Mapping[str, Any], new_props: Mapping[str, Any]) -> dict[str, str]:
    """Property path -> source, for every :data:`NON_DECREASING` property of ``type_`` whose number goes down."""
    out = {}
    for path, source in NON_DECREASING.get(type_, {}).items():
        a, b = _number(_get(old_props, path)), _number(_get(new_props, path))
        if a is not None and b is not None and b < a:
            out[path] = f"cannot decrease: {source}"
    return out


#: Settings whose lowering leaves a stateful resource less protected: (resource type, property path, the value that
#: protects, what is lost). The change is an in-place update CloudFormation applies without a word.
PROTECTIONS: tuple[tuple[str, str, str, str], ...] = (
    ("AWS::S3::Bucket", "VersioningConfiguration/Status", "Enabled",
     "versioning suspended: an overwritten or deleted object (a checkpoint) can no longer be recovered "
     "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html)"),
)


def _protection_lowered(type_: str, old_props: Mapping[str, Any], new_props: Mapping[str, Any]) -> str:
    """What an update of ``type_`` stops protecting (:data:`PROTECTIONS`), or ``""``."""
    return "; ".join(lost for t, path, protects, lost in PROTECTIONS
                     if t == type_ and _get(old_props, path) == protects and _get(new_props, path) != protects)


def _policy_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    out = []
    for attr in ("DeletionPolicy", "UpdateReplacePolicy"):
        a, b = old.get(attr, "Delete"), new.get(attr, "Delete")
        if a != b:
            out.append(f"{attr} {a} -> {b}")
    return ", ".join(out)


def _compare(region: str, old: Mapping[str, Any], new: Mapping[str, Any], key: tuple[str, str],
             old_norm: _Normalizer, new_norm: _Normalizer) -> tuple[list[PropertyChange], bool, bool]:
    co = create_only(region, new["Type"])
    props = _property_changes(co, old.get("Properties", {}), new.get("Properties", {}), key, key, old_norm, new_norm)
    return props, any(p.replaces and not p.conditional for p in props), any(p.conditional for p in props)


def _property_changes(co: CreateOnly, old_props: Mapping[str, Any], new_props: Mapping[str, Any],
                      old_key: tuple[str, str], new_key: tuple[str, str],
                      old_norm: _Normalizer, new_norm: _Normalizer) -> list[PropertyChange]:
    a = old_norm(dict(old_props), old_key[0])
    b = new_norm(dict(new_props), new_key[0])
    out: dict[str, PropertyChange] = {}
    covered: set[str] = set()
    for path, source, conditional in co.paths:
        parts = path.split("/")
        olds = dict(_values_at(a, parts))
        news = dict(_values_at(b, parts))
        for concrete in sorted(set(olds) | set(news)):
            ov, nv = olds.get(concrete, _MISSING), news.get(concrete, _MISSING)
            if ov != nv:
                out[concrete] = PropertyChange(concrete, _short(ov), _short(nv), True, conditional, source,
                                               old_value=_value(ov), new_value=_value(nv))
                covered.add(concrete)
    for path in _changed_paths(a, b):
        if any(path == c or path.startswith(c + "/") or c.startswith(path + "/") for c in covered):
            continue
        source = "" if co.known else "no schema for this type: replacement unknown"
        ov, nv = _get(a, path), _get(b, path)
        out[path] = PropertyChange(path, _short(ov), _short(nv), False, not co.known, source,
                                   old_value=_value(ov), new_value=_value(nv))
    return [out[k] for k in sorted(out)]


def _pair_moves(removed: list[tuple[str, str]], added: list[tuple[str, str]], old_res: Mapping[tuple[str, str], Any],
                new_res: Mapping[tuple[str, str], Any]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Stateful resources that left one (stack, logical id) and arrived under another.

    Paired by type and construct path (relative to the stack); then, per type and stack (or across
    stacks), when exactly one candidate is left on each side.
    """
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    rem = [k for k in removed if is_stateful(old_res[k])]
    add = [k for k in added if is_stateful(new_res[k])]

    def take(match: Iterable[tuple[tuple[str, str], tuple[str, str]]]) -> None:
        for o, n in match:
            if o in rem and n in add:
                pairs.append((o, n))
                rem.remove(o)
                add.remove(n)

    take([(o, n) for o in list(rem) for n in list(add)
          if old_res[o]["Type"] == new_res[n]["Type"] and _cdk_path(old_res[o]) and _cdk_path(old_res[o]) == _cdk_path(new_res[n])])
    for same_stack in (True, False):
        groups: dict[tuple[str, ...], tuple[list[Any], list[Any]]] = {}
        for o in rem:
            groups.setdefault((old_res[o]["Type"], o[0] if same_stack else ""), ([], []))[0].append(o)
        for n in add:
            groups.setdefault((new_res[n]["Type"], n[0] if same_stack else ""), ([], []))[1].append(n)
        take([(os_[0], ns[0]) for os_, ns in groups.values() if len(os_) == 1 and len(ns) == 1])
    return pairs


# ---- rendering --------------------------------------------------------------------------------
ACTION_WORDS = {"add": "ADD", "remove": "REMOVE", "update": "UPDATE in place", "replace": "REPLACE",
                "may-replace": "MAY REPLACE", "move": "MOVE (new resource)", "fail": "UPDATE FAILS",
                "leave": "LEAVES THE APP"}


def _headline(report: DiffReport) -> str:
    """``fmcluster diff OLD -> NEW: <N errors | safe: ...>; changes: <count per action>``: the verdict, then every
    change by action (errors, warnings and info alike, so the counts are not read as the errors' breakdown)."""
    s = report.summary()
    parts = [f"{n} {a}" for a, n in sorted(s.items())]
    verdict = count(len(report.errors), "error") if report.errors else "safe: no stateful resource is replaced or moved"
    changes = f"changes: {', '.join(parts)}" if parts else "no changes"
    return f"fmcluster diff {report.old} -> {report.new}: {verdict}; {changes}"


def _cause_text(c: ResourceChange) -> str:
    if c.orchestrator_updates:
        return "; ".join(f"{u['setting']}: {u['text']}" for u in c.orchestrator_updates)
    if c.action in ("replace", "may-replace", "move", "fail"):
        details = []
        for cause in c.causes:
            p = next((p for p in c.properties if p.path == cause), None)
            details.append(f"{cause}: {p.old} -> {p.new} [{p.source}]" if p else cause)
        return "; ".join(details)
    if c.action == "update":
        return ", ".join(p.path for p in c.properties) + (f" ({c.note})" if c.note else "")
    return c.note


#: ``rule_id`` prefix of a diff finding in the JSON envelope: ``diff-<action>`` (``diff-replace``, ``diff-move``,
#: ``diff-remove``, ``diff-fail``, ``diff-may-replace``, ``diff-update``, ``diff-leave``).
DIFF_RULE_PREFIX = "diff-"


def change_problem(c: ResourceChange) -> Problem:
    """One change as a problem of the JSON envelope: ``path`` the resource as the text output names it
    (``<stack>/<construct path or logical id>``; the stack alone for a stack that leaves the app), ``message`` the
    action, type and logical id, then the cause and what happens to the data (the text output's lines), ``level``
    the change's level, ``rule_id`` ``diff-<action>``, ``source`` the sources of the causing properties (registry
    schema, service limit, the orchestrator's update documentation), ``value`` the causing property changes
    ``{property: {"old", "new"}}`` with the template values themselves, and each orchestrator verdict
    ``{setting: {"old", "new", "verdict", "text"}}`` (``None`` when neither causes it: a removal, a stack leaving)."""
    causing = [p for p in c.properties if p.path in c.causes]
    settings = [u for u in c.orchestrator_updates if u.get("kind") != "in_place"]
    if c.action == "leave":
        path, message = c.stack, f"{ACTION_WORDS[c.action]}: {c.note}"
    else:
        path = f"{c.stack}/{c.name}"
        message = "; ".join(x for x in (f"{ACTION_WORDS[c.action]} ({c.type}, {c.logical_id})", _cause_text(c),
                                       c.note if c.action in ("replace", "move", "fail") else "") if x)
    sources = sorted({p.source for p in causing if p.source} | {str(u["source"]) for u in settings if u.get("source")})
    value: dict[str, Any] = {p.path: {"old": p.old_value, "new": p.new_value} for p in causing}
    value |= {str(u["setting"]): {"old": u.get("old"), "new": u.get("new"), "verdict": u["kind"], "text": u.get("text")}
              for u in settings}
    return Problem(path, message, level="warning" if c.level == "warning" else "error",
                   rule_id=f"{DIFF_RULE_PREFIX}{c.action}", source="; ".join(sources) or None, value=value or None)


def render_text(report: DiffReport, *, verbose: bool = False) -> str:
    lines = [_headline(report)] + ([report.cost["text"]] if report.cost else [])
    lines += text_lines(report.impact, verbose=verbose)
    for c in report.changes:
        if c.level == "info" and not verbose and c.action in ("update", "add") and not c.stateful:
            continue
        if c.action == "leave":
            lines.append(f"{c.level.upper():7} {ACTION_WORDS[c.action]:18} {c.note}")
            continue
        lines.append(f"{c.level.upper():7} {ACTION_WORDS[c.action]:18} {c.stack}/{c.name} ({c.type}, {c.logical_id})")
        text = _cause_text(c)
        if text:
            lines.append(f"        {text}")
        if c.note and c.action in ("replace", "move", "fail"):
            lines.append(f"        {c.note}")
    hidden = sum(1 for c in report.changes if c.level == "info" and c.action in ("update", "add") and not c.stateful)
    if hidden and not verbose:
        lines.append(f"({hidden} in-place update(s) or addition(s) of stateless resources not shown; --verbose lists them)")
    return "\n".join(lines)


def render_markdown(report: DiffReport) -> str:
    icon = ":x:" if report.errors else ":white_check_mark:"
    lines = [f"### {icon} {_headline(report)}", ""] + ([f"**Cost:** {report.cost['text']}", ""] if report.cost else [])
    lines += markdown_lines(report.impact)
    if not report.changes:
        return "\n".join(lines)
    lines += ["| level | change | stack | resource | type | cause / changed properties |", "|---|---|---|---|---|---|"]
    for c in report.changes:
        cause = _cause_text(c).replace("|", "\\|")
        if c.note and c.action in ("replace", "move", "fail"):
            cause += f"<br>{c.note}"
        name = "" if c.action == "leave" else f"`{c.name}`"
        lines.append(f"| {c.level} | {ACTION_WORDS[c.action]} | {c.stack} | {name} | {c.type} | {cause} |")
    return "\n".join(lines) + "\n"


# ---- the --context option ----------------------------------------------------------------------
def parse_context(pairs: list[str]) -> dict[str, Any]:
    """``--context KEY=VALUE`` pairs: a JSON value when VALUE parses as JSON, else the string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise DiffInputError(f"--context needs KEY=VALUE, got {pair!r}; allowed e.g. fmcluster:allowDataDestruction=true")
        try:
            out[key] = json.loads(raw)
        except ValueError:  # not JSON (JSONDecodeError), or a number longer than Python reads: the text as given
            out[key] = raw
    return out
