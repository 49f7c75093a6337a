"""Read a synthesized ``cdk.out`` (a CDK cloud assembly): stack name -> CloudFormation template.

The one reader of cloud assemblies; ``fmcluster plan --cdk-out`` (resource counts) and ``fmcluster
diff`` (resource changes) both go through :meth:`Assembly.from_dir`. Only stack artifacts are read,
through the assembly's ``manifest.json`` (``artifacts.<id>.properties.templateFile``; the stack name is
``properties.stackName``, else the artifact's ``displayName``, else its id), as ``cdk synth`` writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Resource types that are not AWS resources (CDK's version reporting); never counted or compared.
IGNORED_TYPES = ("AWS::CDK::Metadata",)
#: Region assumed when the assembly's stacks are environment-agnostic (used for schema lookups).
DEFAULT_REGION = "us-east-1"


class AssemblyError(Exception):
    """A folder or file that is not a complete cloud assembly (or not the one expected); the message
    names the folder or file, what is wrong and what is allowed."""


@dataclass(frozen=True)
class Assembly:
    """A synthesized app: stack name -> CloudFormation template, and the region for schema lookups.

    Attributes:
        stacks: stack name -> template (the parsed JSON object), in manifest order.
        region: the stacks' region (the first stack artifact with a concrete ``aws://account/region``
            environment), else :data:`DEFAULT_REGION`.
        source: where it came from (a folder, a blueprint file), for messages.
        warnings: the blueprint's warnings (``fmcluster.blueprint.errors.Problem``) when it was synthesized from a
            blueprint file (:func:`fmcluster.review.diff.synth_blueprint`); empty for a folder.
    """

    stacks: Mapping[str, Mapping[str, Any]]
    region: str = DEFAULT_REGION
    source: str = ""
    warnings: tuple[Any, ...] = ()

    @staticmethod
    def from_templates(templates: Mapping[str, Mapping[str, Any]], region: str = DEFAULT_REGION, source: str = "") -> Assembly:
        return Assembly(dict(templates), region, source)

    @staticmethod
    def from_dir(path: str | Path) -> Assembly:
        """Read a ``cdk.out`` folder through its ``manifest.json`` (stack artifacts only).

        Raises :class:`AssemblyError` naming the folder or file when the manifest is missing or not
        JSON, lists no CloudFormation stack, or a stack's template is missing or not JSON.
        """
        root = Path(path)
        manifest_file = root / "manifest.json"
        try:
            is_dir, has_manifest = root.is_dir(), manifest_file.is_file()
        except OSError as e:  # a name too long: Path.is_dir() hides only ENOENT and a few others
            raise AssemblyError(f"{root}: cannot use the path ({e.strerror or e}); allowed a cdk.out folder") from None
        if not is_dir:
            raise AssemblyError(f"{root}: not a folder; allowed a cdk.out folder (cloud assembly)")
        if not has_manifest:
            raise AssemblyError(f"{root}: not a cloud assembly (no manifest.json); allowed a cdk.out folder or a blueprint YAML")
        manifest = read_json(manifest_file, "cloud assembly manifest")
        artifacts = manifest.get("artifacts") if isinstance(manifest, dict) else None
        if not isinstance(artifacts, dict):
            raise AssemblyError(f"{manifest_file}: not a cloud assembly manifest (no \"artifacts\" object); "
                                "allowed the manifest.json that cdk synth writes")
        stacks: dict[str, Mapping[str, Any]] = {}
        region = ""
        for art_id, art in artifacts.items():
            if not isinstance(art, dict) or art.get("type") != "aws:cloudformation:stack":
                continue
            raw_props = art.get("properties")
            props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
            name = props.get("stackName") or art.get("displayName") or art_id
            template_file = props.get("templateFile")
            if not isinstance(template_file, str) or not template_file:
                raise AssemblyError(f"{manifest_file}: stack {name} names no templateFile; the assembly is incomplete "
                                    "(run cdk synth again)")
            template = root / template_file
            if not template.is_file():
                raise AssemblyError(f"{template}: template of stack {name} is missing; the assembly is incomplete "
                                    "(interrupted synth? run cdk synth again)")
            tpl = read_json(template, f"template of stack {name}")
            if not isinstance(tpl, dict):
                raise AssemblyError(f"{template}: template of stack {name} is not a JSON object; run cdk synth again")
            stacks[name] = tpl
            env = art.get("environment", "")
            if isinstance(env, str) and not region and env.count("/") >= 3 and not env.endswith("unknown-region"):
                region = env.rsplit("/", 1)[-1]
        if not stacks:
            raise AssemblyError(f"{root}: the cloud assembly has no CloudFormation stacks; allowed a cdk.out folder "
                                "that cdk synth wrote for a blueprint")
        return Assembly(stacks, region or DEFAULT_REGION, str(root))

    def resources(self) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
        """(stack, logical id, resource) for every resource but :data:`IGNORED_TYPES`."""
        for stack, tpl in self.stacks.items():
            for lid, res in tpl.get("Resources", {}).items():
                if res.get("Type") not in IGNORED_TYPES:
                    yield stack, lid, res

    def resource_count(self, stack: str) -> int:
        """Number of AWS resources in ``stack`` (:data:`IGNORED_TYPES` and malformed entries not counted).
        Raises KeyError for a stack the assembly does not hold."""
        return sum(isinstance(r, dict) and r.get("Type") not in IGNORED_TYPES
                   for r in (self.stacks[stack].get("Resources") or {}).values())

    @property
    def exports(self) -> dict[str, tuple[str, Any]]:
        """Export name -> (stack, output value expression)."""
        out: dict[str, tuple[str, Any]] = {}
        for stack, tpl in self.stacks.items():
            for o in tpl.get("Outputs", {}).values():
                name = (o.get("Export") or {}).get("Name")
                if isinstance(name, str):
                    out[name] = (stack, o.get("Value"))
        return out


def read_json(file: Path, what: str) -> Any:
    """Parse the JSON file ``file`` (``what`` names it in messages). Raises :class:`AssemblyError` when it
    cannot be read or is not valid JSON."""
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise AssemblyError(f"{file}: cannot read the {what}: {getattr(e, 'strerror', None) or e}") from None
    except json.JSONDecodeError as e:
        raise AssemblyError(f"{file}: the {what} is not valid JSON (line {e.lineno}: {e.msg}); "
                            "the assembly is damaged (run cdk synth again)") from None
    except ValueError as e:  # a number longer than Python reads (sys.get_int_max_str_digits)
        raise AssemblyError(f"{file}: the {what} cannot be read ({e}); the assembly is damaged (run cdk synth again)") from None
