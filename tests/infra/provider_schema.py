"""Check terraform/ against the AWS provider's schema, as `terraform validate` would.

The schema comes from tests/infra/data/aws-provider-schema.json, extracted from the npm
package @cdktf/provider-aws by scripts/extract_provider_schema.py (see that file for how the
package encodes it). Per type it lists attributes as "required", "optional" or "computed"
(read-only) and nested blocks with their nesting and item limits (max_items 0: no limit).

Each finding names a rule, so that each test can assert one rule.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.infra.hcl import Module, unquote

SCHEMA_FILE = Path(__file__).parent / "data" / "aws-provider-schema.json"

UNKNOWN = "unknown"  # a name the schema does not have
REQUIRED = "required"  # a required argument or block is missing
FORM = "form"  # a block written as an attribute, or an attribute written as a block
COMPUTED = "computed"  # a value for a read-only attribute
COUNT = "count"  # more blocks than the schema allows
JSONENCODE = "jsonencode"  # jsonencode() around an EventBridge keyword it would escape
VERSION = "version"  # the provider constraint admits a release without a feature used

# Meta-arguments Terraform itself handles, in resource and data blocks.
META_ARGUMENTS = {"count", "for_each", "provider", "depends_on"}
META_BLOCKS = {"lifecycle", "provisioner", "connection"}
DYNAMIC_ARGUMENTS = {"for_each", "iterator", "labels", "content"}

Version = tuple[int, ...]


@dataclass(frozen=True)
class Finding:
    """One thing Terraform (or AWS) would refuse, with where it is."""

    rule: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True)
class SchemaChange:
    """A change to the schema after the schema file's provider release.

    `block` adds a nested block (its schema entry: nesting, min_items, max_items, block);
    `attribute` adds an attribute or changes its mode. An overlay maps the changed element's
    path, (kind, type, blocks..., name) with kind "resources", "data_sources" or "provider",
    to its change.
    """

    since: Version
    attribute: str | None = None
    block: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class VersionRange:
    """Provider releases that have a feature: from `since` up to, not including, `before`."""

    since: Version = (0,)
    before: Version | None = None


def load_schema(
    path: Path = SCHEMA_FILE, overlay: Mapping[tuple[str, ...], SchemaChange] | None = None
) -> dict[str, Any]:
    """The schema file's document, with `overlay` applied."""
    document: dict[str, Any] = json.loads(path.read_text())
    for path, change in (overlay or {}).items():
        apply_change(document, path, change)
    return document


def apply_change(document: dict[str, Any], path: tuple[str, ...], change: SchemaChange) -> None:
    """Apply one overlay change, to the element at `path`, to a schema document in place."""
    kind, *names, last = path
    block = document["provider"] if kind == "provider" else document[kind][names.pop(0)]
    for name in names:
        block = block["blocks"][name]["block"]
    if change.block is not None:
        block.setdefault("blocks", {})[last] = copy.deepcopy(dict(change.block))
    if change.attribute is not None:
        block["attributes"][last] = change.attribute


def schema_has(document: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether `path` (kind, type, blocks..., name) exists in a schema document."""
    kind, *names, last = path
    if kind == "provider":
        block = document["provider"]
    elif names and names[0] in document[kind]:
        block = document[kind][names.pop(0)]
    else:
        return False
    for name in names:
        if name not in block.get("blocks", {}):
            return False
        block = block["blocks"][name]["block"]
    return last in block["attributes"] or last in block.get("blocks", {})


# --- the module against the schema -----------------------------------------------------------


def _is_block(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and item.get("__is_block__") for item in value)
    )


def _dynamic_blocks(body: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, dynamic body) of each `dynamic "label" { ... }` in `body`."""
    for dynamic in body.get("dynamic", []):
        for label, dynamic_body in dynamic.items():
            if not label.startswith("__"):
                yield unquote(label), dynamic_body


def _suggest(name: str, schema: Mapping[str, Any]) -> str:
    names = [*schema["attributes"], *schema.get("blocks", {})]
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_body(
    schema: Mapping[str, Any],
    body: Mapping[str, Any],
    where: str,
    *,
    meta: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Every finding in one block body against its schema, nested blocks included."""
    findings: list[Finding] = []
    for name, value in body.items():
        if not (name.startswith("__") or name in meta or name == "dynamic"):
            findings += _check_entry(schema, name, value, where)
    return findings + _check_dynamic(schema, body, where) + _check_required(schema, body, where)


def _check_entry(schema: Mapping[str, Any], name: str, value: Any, where: str) -> list[Finding]:
    """Findings for one `name = value` or `name { }` of a body."""
    attributes: Mapping[str, str] = schema["attributes"]
    blocks: Mapping[str, Any] = schema.get("blocks", {})
    if name in attributes:
        if _is_block(value):
            return [
                Finding(FORM, where, f"{name} is an argument: write `{name} = ...`, not a block")
            ]
        if attributes[name] == "computed":
            return [Finding(COMPUTED, where, f"{name} is read-only (computed by the provider)")]
        return []
    if name in blocks:
        if not _is_block(value):
            message = f"{name} is a block: write `{name} {{ ... }}`, not `{name} = ...`"
            return [Finding(FORM, where, message)]
        return _check_blocks(blocks[name], value, f"{where}.{name}")
    message = f"unknown argument or block {name!r}{_suggest(name, schema)}"
    return [Finding(UNKNOWN, where, message)]


def _check_dynamic(schema: Mapping[str, Any], body: Mapping[str, Any], where: str) -> list[Finding]:
    """Findings for `dynamic "label"` blocks: the label, then each content body."""
    findings: list[Finding] = []
    blocks: Mapping[str, Any] = schema.get("blocks", {})
    for label, dynamic_body in _dynamic_blocks(body):
        if label not in blocks:
            rule = FORM if label in schema["attributes"] else UNKNOWN
            findings.append(Finding(rule, where, f"dynamic {label!r} names no block of this type"))
            continue
        for content in dynamic_body.get("content", []):
            findings += check_body(blocks[label]["block"], content, f"{where}.dynamic.{label}")
    return findings


def _check_required(
    schema: Mapping[str, Any], body: Mapping[str, Any], where: str
) -> list[Finding]:
    """Required arguments that are not set, required blocks neither written nor generated."""
    generated = {label for label, _ in _dynamic_blocks(body)}
    missing = [
        f"required argument {name!r} is missing"
        for name, mode in schema["attributes"].items()
        if mode == "required" and name not in body
    ]
    missing += [
        f"required block {name!r} is missing"
        for name, spec in schema.get("blocks", {}).items()
        if spec["min_items"] > 0 and name not in body and name not in generated
    ]
    return [Finding(REQUIRED, where, message) for message in missing]


def _check_blocks(
    spec: Mapping[str, Any], items: list[dict[str, Any]], where: str
) -> list[Finding]:
    findings: list[Finding] = []
    if spec["max_items"] and len(items) > spec["max_items"]:
        findings.append(
            Finding(
                COUNT, where, f"at most {spec['max_items']} block(s) allowed, found {len(items)}"
            )
        )
    for index, item in enumerate(items):
        label = f"{where}[{index}]" if len(items) > 1 else where
        findings += check_body(spec["block"], item, label)
    return findings


def check_module(module: Module, schema: Mapping[str, Any]) -> list[Finding]:
    """Every finding in every resource, data source and provider block of `module`."""
    findings: list[Finding] = []
    meta = frozenset(META_ARGUMENTS | META_BLOCKS)
    for kind, declared in (("resources", module.resources), ("data_sources", module.data)):
        for (rtype, name), body in sorted(declared.items()):
            prefix = "data." if kind == "data_sources" else ""
            where = f"{prefix}{rtype}.{name}"
            if rtype not in schema[kind]:
                findings.append(
                    Finding(UNKNOWN, where, f"the provider has no {kind[:-1]} type {rtype!r}")
                )
                continue
            findings += check_body(schema[kind][rtype], body, where, meta=meta)
    for parsed in module.files.values():
        for provider in parsed.get("provider", []):
            for label, body in provider.items():
                if unquote(label) == "aws":
                    findings += check_body(schema["provider"], body, 'provider "aws"')
    return findings


# --- traps -----------------------------------------------------------------------------------

# EventBridge context keywords (Scheduler's <aws.scheduler.scheduled-time>, an event rule's
# <aws.events.event>...): substituted only where the text holds a literal '<' and '>'.
CONTEXT_KEYWORD = re.compile(r"<aws\.[a-z0-9.-]+>")


def _strings_with_paths(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for item in value:
            yield from _strings_with_paths(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not key.startswith("__"):
                yield from _strings_with_paths(
                    item, f"{where}.{unquote(key)}" if where else unquote(key)
                )


def _call_arguments(text: str, function: str) -> Iterator[str]:
    """The argument text of every `function(...)` call in an expression."""
    for match in re.finditer(rf"\b{function}\(", text):
        depth, start = 1, match.end()
        for position in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[position], 0)
            if depth == 0:
                yield text[start:position]
                break


def jsonencode_traps(module: Module) -> list[Finding]:
    """jsonencode() calls whose value holds an EventBridge context keyword.

    Terraform's jsonencode writes '<' and '>' as \\u003c and \\u003e (Go's HTML-safe JSON),
    so EventBridge never sees the keyword and passes it through unsubstituted.
    """
    findings = []
    for file_name, parsed in sorted(module.files.items()):
        for where, text in _strings_with_paths(parsed, ""):
            for argument in _call_arguments(text, "jsonencode"):
                for keyword in CONTEXT_KEYWORD.findall(argument):
                    findings.append(
                        Finding(
                            JSONENCODE,
                            f"{file_name}: {where}",
                            f"jsonencode() writes {keyword} as \\u003c...\\u003e, so EventBridge "
                            "never substitutes it: write the JSON as a literal string (heredoc)",
                        )
                    )
    return findings


# --- the provider version constraint ---------------------------------------------------------

_CONSTRAINT = re.compile(r"^\s*(>=|<=|~>|!=|>|<|=)?\s*v?(\d+(?:\.\d+)*)\s*$")


def parse_version(text: str) -> Version:
    """'6.25' -> (6, 25)."""
    return tuple(int(part) for part in text.split("."))


def _pad(version: Version) -> Version:
    return (*version, *(0,) * (3 - len(version)))


def _next_patch(version: Version) -> Version:
    major, minor, patch = _pad(version)
    return (major, minor, patch + 1)


def _bounds(operator: str, version: Version) -> tuple[Version | None, Version | None]:
    """(lowest admitted, first excluded) release of one `operator version` term."""
    if operator == "~>":  # the last given part may grow: ~> 6.25 is >= 6.25, < 7.0
        bumped = (*version[:-2], version[-2] + 1) if len(version) > 1 else (version[0] + 1,)
        return _pad(version), _pad(bumped)
    return {
        ">=": (_pad(version), None),
        ">": (_next_patch(version), None),
        "=": (_pad(version), _next_patch(version)),
        "<": (None, _pad(version)),
        "<=": (None, _next_patch(version)),
        "!=": (None, None),  # excludes one release, moves neither bound
    }[operator]


def constraint_range(constraint: str) -> VersionRange:
    """The releases a Terraform version constraint admits, as [since, before).

    Without a lower bound the range starts at 0.0.0; without an upper one `before` is None.
    """
    since: Version = (0, 0, 0)
    before: Version | None = None
    for part in filter(str.strip, constraint.split(",")):
        match = _CONSTRAINT.match(part)
        if match is None:
            raise ValueError(f"cannot read version constraint {constraint!r}")
        lower, upper = _bounds(match.group(1) or "=", parse_version(match.group(2)))
        since = max(since, lower) if lower else since
        if upper is not None:
            before = upper if before is None else min(before, upper)
    return VersionRange(since, before)


def provider_constraint(module: Module) -> str:
    """The version constraint of hashicorp/aws in the module's required_providers."""
    for parsed in module.files.values():
        for terraform in parsed.get("terraform", []):
            for providers in terraform.get("required_providers", []):
                aws = providers.get("aws")
                if isinstance(aws, dict) and "version" in aws:
                    return str(unquote(aws["version"]))
    return ""


def _uses(body: Mapping[str, Any], names: tuple[str, ...]) -> bool:
    first, rest = names[0], names[1:]
    bodies: list[Mapping[str, Any]] = []
    if first in body:
        if not rest:
            return True
        value = body[first]
        bodies += value if _is_block(value) else []
    for label, dynamic_body in _dynamic_blocks(body):
        if label == first:
            if not rest:
                return True
            bodies += dynamic_body.get("content", [])
    return any(_uses(item, rest) for item in bodies)


def feature_users(module: Module, path: tuple[str, ...]) -> list[str]:
    """The resources or data sources of `module` that use the feature at `path`."""
    kind, rtype, *names = path
    if kind == "provider":
        return []
    declared = module.resources if kind == "resources" else module.data
    prefix = "data." if kind == "data_sources" else ""
    return [
        f"{prefix}{t}.{n}"
        for (t, n), body in sorted(declared.items())
        if t == rtype and _uses(body, tuple(names))
    ]


def _show(version: Version) -> str:
    return ".".join(str(part) for part in version)


def _version_problems(needed: VersionRange, admitted: VersionRange) -> Iterator[str]:
    """What is wrong with the admitted releases for one feature, if anything."""
    if admitted.since < _pad(needed.since):
        yield f"needs hashicorp/aws >= {_show(needed.since)}, but the constraint admits {_show(admitted.since)}"
    unbounded = admitted.before is None
    if needed.before is not None and (unbounded or admitted.before > _pad(needed.before)):
        yield f"may be gone from hashicorp/aws {_show(needed.before)}, but the constraint admits it"


def version_findings(
    module: Module, features: Mapping[tuple[str, ...], VersionRange]
) -> list[Finding]:
    """Features used by `module` that some release admitted by its constraint lacks."""
    constraint = provider_constraint(module)
    admitted = constraint_range(constraint)
    return [
        Finding(VERSION, user, f"{'.'.join(path[2:])} {problem} ({constraint!r})")
        for path, needed in sorted(features.items())
        for user in feature_users(module, path)
        for problem in _version_problems(needed, admitted)
    ]
