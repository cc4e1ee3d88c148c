"""Extract the AWS provider's configuration schema from the npm package @cdktf/provider-aws.

No Terraform binary or provider plugin can be fetched where the tests run, but the prebuilt
CDKTF bindings can: they are generated from the provider's own schema (`terraform providers
schema -json`), one directory per resource or data source type under lib/. Per type:

- lib/<type>/index.js: the main class names the Terraform type (`terraformResourceType:
  'aws_x'`) and extends TerraformResource or TerraformDataSource. Its
  synthesizeHclAttributes() lists every configurable argument by its Terraform name with
  `isBlock` and the nesting (`list`, `set`, `map`, `struct`); the value expression names the
  `xxxToHclTerraform` function of a nested block, which lists that block's arguments the same
  way. Comments `// name - computed: a, optional: b, required: c` mark computed attributes.
- lib/<type>/index.d.ts: the config interfaces say which arguments are required (a property
  without `?`) and whether a block holds one object (a struct type: max_items 1) or many.

The output is compact JSON: per type `{"attributes": {name: "required" | "optional" |
"computed"}, "blocks": {name: {"nesting", "min_items", "max_items", "block"}}}`, where
"computed" means read-only (Terraform refuses a value for it), plus where it came from.

Usage:
    python scripts/extract_provider_schema.py               # npm pack, write the schema file
    python scripts/extract_provider_schema.py --check       # exit 1 if the file is stale
    python scripts/extract_provider_schema.py --tarball x.tgz   # no npm: use a packed file
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "@cdktf/provider-aws"
# The last release of the prebuilt bindings (HashiCorp archived them): AWS provider 6.25.0.
PACKAGE_VERSION = "21.22.1"
OUTPUT = ROOT / "tests" / "infra" / "data" / "aws-provider-schema.json"
FORMAT_VERSION = 1

_MAIN_CLASS = re.compile(
    r"^class (\w+) extends cdktf\.(TerraformResource|TerraformDataSource|TerraformProvider) \{$(.*?)^\}$",
    re.MULTILINE | re.DOTALL,
)
_ANY_CLASS = re.compile(r"^class (\w+) extends [\w.]+ \{$(.*?)^\}$", re.MULTILINE | re.DOTALL)
_TYPE_NAME = re.compile(r"terraformResourceType: '([a-z0-9_]+)'")
_HCL_FUNCTION = re.compile(
    r"^function (\w+)ToHclTerraform\(struct\) \{$(.*?)^\}$", re.MULTILINE | re.DOTALL
)
_SYNTHESIZE_HCL = re.compile(
    r"^    synthesizeHclAttributes\(\) \{$(.*?)^    \}$", re.MULTILINE | re.DOTALL
)
_HCL_ATTR = re.compile(
    r"^\s+(\w+): \{\s*value: (.*?),\s*isBlock: (true|false),\s*type: \"(\w+)\",",
    re.MULTILINE | re.DOTALL,
)
_PROPERTY_COMMENT = re.compile(
    r"// (\w+) - computed: (true|false), optional: (true|false), required: (true|false)"
)
_FUNCTION_REF = re.compile(r"(\w+)ToHclTerraform\b")
_SOURCE_FIELD = re.compile(r"(?:struct!?\.|this\._)(\w+)")
_INTERFACE = re.compile(r"^export interface (\w+)[^{]*\{$(.*?)^\}$", re.MULTILINE | re.DOTALL)
_INTERFACE_PROPERTY = re.compile(r"^    readonly (\w+)(\??): (.*?);?$", re.MULTILINE)


@dataclass(frozen=True)
class Property:
    """One property of a TypeScript config interface."""

    optional: bool
    type_text: str


@dataclass
class TypeSources:
    """What one lib/<dir> of the package holds: the JS module and its type declarations."""

    js: str
    dts: str
    interfaces: dict[str, dict[str, Property]] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for match in _INTERFACE.finditer(self.dts):
            self.interfaces[match.group(1)] = {
                prop.group(1): Property(prop.group(2) == "?", prop.group(3))
                for prop in _INTERFACE_PROPERTY.finditer(match.group(2))
            }
        self.functions = {m.group(1): m.group(2) for m in _HCL_FUNCTION.finditer(self.js)}
        self.classes = {m.group(1): m.group(2) for m in _ANY_CLASS.finditer(self.js)}


def _computed_only(class_body: str) -> dict[str, str]:
    """Attributes a class comments as computed and neither optional nor required."""
    return {
        m.group(1): "computed"
        for m in _PROPERTY_COMMENT.finditer(class_body)
        if m.group(2) == "true" and m.group(3) == "false" and m.group(4) == "false"
    }


def _block(
    sources: TypeSources, attrs_text: str, interface: str, class_body: str
) -> dict[str, Any]:
    """The schema of one block: its arguments (from HCL attrs) and read-only attributes."""
    properties = sources.interfaces.get(interface, {})
    attributes: dict[str, str] = _computed_only(class_body)
    blocks: dict[str, Any] = {}
    for match in _HCL_ATTR.finditer(attrs_text):
        name, value, is_block, nesting = match.groups()
        source = _SOURCE_FIELD.search(value)
        prop = properties.get(source.group(1)) if source else None
        required = prop is not None and not prop.optional
        if is_block == "false":
            attributes[name] = "required" if required else "optional"
            continue
        # cdktf's own converters (stringToHclTerraform...) are not among the module's functions.
        nested = [f for f in _FUNCTION_REF.findall(value) if f in sources.functions]
        if len(nested) != 1:
            raise ValueError(f"block {name} of {interface}: no nested schema in {value!r}")
        nested_interface = nested[0][0].upper() + nested[0][1:]
        single = prop is not None and "[]" not in prop.type_text and nesting in {"list", "set"}
        blocks[name] = {
            "nesting": nesting,
            "min_items": 1 if required else 0,
            "max_items": 1 if single or nesting == "struct" else 0,
            "block": _block(
                sources,
                sources.functions[nested[0]],
                nested_interface,
                sources.classes.get(f"{nested_interface}OutputReference", ""),
            ),
        }
    schema: dict[str, Any] = {"attributes": dict(sorted(attributes.items()))}
    if blocks:
        schema["blocks"] = dict(sorted(blocks.items()))
    return schema


def type_schema(js: str, dts: str) -> tuple[str, str, dict[str, Any]] | None:
    """(kind, Terraform type, schema) of one lib/<dir>, or None if it holds no type."""
    main = _MAIN_CLASS.search(js)
    if main is None:
        return None
    class_name, base, body = main.groups()
    type_name = _TYPE_NAME.search(body)
    synthesize = _SYNTHESIZE_HCL.search(body)
    if type_name is None or synthesize is None:
        raise ValueError(f"class {class_name}: no Terraform type or HCL attributes")
    kinds = {"TerraformDataSource": "data_sources", "TerraformProvider": "provider"}
    kind = kinds.get(base, "resources")
    sources = TypeSources(js, dts)
    return (
        kind,
        type_name.group(1),
        _block(sources, synthesize.group(1), f"{class_name}Config", body),
    )


def read_package(tarball: Path) -> tuple[dict[str, Any], str]:
    """Every type's schema from a packed @cdktf/provider-aws, and its provider version."""
    found: dict[str, dict[str, Any]] = {"provider": {}, "resources": {}, "data_sources": {}}
    files: dict[str, dict[str, str]] = {}
    provider_version = ""
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.name == "package/README.md":
                text = _read(archive, member)
                match = re.search(r"hashicorp/aws provider version (\d+\.\d+\.\d+)", text)
                provider_version = match.group(1) if match else ""
            # lib/<type>/index.js, plus lib/<type>/index-structs/*.js for the largest types.
            if len(parts) >= 4 and parts[1] == "lib" and member.name.endswith((".js", ".d.ts")):
                kind = "dts" if member.name.endswith(".d.ts") else "js"
                texts = files.setdefault(parts[2], {"js": "", "dts": ""})
                texts[kind] += _read(archive, member) + "\n"
    for directory in sorted(files):
        result = type_schema(files[directory]["js"], files[directory]["dts"])
        if result is not None:
            kind, type_name, schema = result
            found[kind][type_name] = schema
    if not provider_version:
        raise ValueError(f"{tarball}: README names no provider version")
    return found, provider_version


def _read(archive: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    handle = archive.extractfile(member)
    if handle is None:
        raise ValueError(f"{member.name} is not a regular file")
    return handle.read().decode()


def npm_pack(version: str, directory: Path, timeout_s: float = 600) -> Path:
    """`npm pack` the package into `directory` (npm's cache serves repeats offline)."""
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError("npm is not installed")
    command = [npm, "pack", f"{PACKAGE}@{version}", "--json", "--prefer-offline"]
    command += ["--pack-destination", str(directory)]
    completed = subprocess.run(  # noqa: S603 (fixed argv, no shell)
        command, capture_output=True, text=True, check=True, timeout=timeout_s
    )
    (packed,) = json.loads(completed.stdout)
    return directory / packed["filename"]


def integrity(tarball: Path) -> str:
    """The tarball's Subresource Integrity string, as npm records it (sha512, base64)."""
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def render(document: dict[str, Any]) -> str:
    """Stable JSON: sorted, one type per line, so a regenerated file diffs type by type."""
    lines = ["{"]
    lines.append(f'"source": {json.dumps(document["source"], sort_keys=True)},')
    (provider,) = document["provider"].values()
    lines.append(f'"provider": {json.dumps(provider, sort_keys=True, separators=(",", ":"))},')
    for index, kind in enumerate(("data_sources", "resources")):
        lines.append(f'"{kind}": {{')
        types = sorted(document[kind].items())
        for position, (name, schema) in enumerate(types):
            comma = "," if position < len(types) - 1 else ""
            compact = json.dumps(schema, sort_keys=True, separators=(",", ":"))
            lines.append(f"{json.dumps(name)}: {compact}{comma}")
        lines.append("}," if index == 0 else "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def build(tarball: Path, version: str) -> str:
    """The rendered schema document of a packed package."""
    types, provider_version = read_package(tarball)
    source = {
        "format": FORMAT_VERSION,
        "package": PACKAGE,
        "version": version,
        "integrity": integrity(tarball),
        "provider": "hashicorp/aws",
        "provider_version": provider_version,
        "generator": "scripts/extract_provider_schema.py",
    }
    return render({"source": source, **types})


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the schema file; print what happened."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=PACKAGE_VERSION, help="package version to pack")
    parser.add_argument("--tarball", type=Path, help="a packed package instead of `npm pack`")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="fail if --output is stale")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        tarball = args.tarball or npm_pack(args.version, Path(scratch))
        text = build(tarball, args.version)
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is stale: run scripts/extract_provider_schema.py", file=sys.stderr
            )
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"{args.output}: {len(text) / 1_048_576:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
