"""Read terraform/ with python-hcl2 for the static tests: blocks, references, literal values.

python-hcl2 8.x keeps the quotes of string literals ('"PAY_PER_REQUEST"'), leaves every
expression as text ('${local.is_prod}'), and adds '__is_block__' / '__comments__' keys.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import hcl2

_HCL2_VERSION = version("python-hcl2")

TERRAFORM_DIR = Path(__file__).resolve().parents[2] / "terraform"
# Parsed files, by the SHA-256 of their text: parsing the module takes seconds, and every
# pytest-xdist worker collects every test module, so the workers share one parse.
_PARSE_CACHE = TERRAFORM_DIR.parent / ".dlpipe" / "cache" / "hcl"

# A reference such as var.x, local.x, data.aws_t.n or aws_t.n, inside an expression's text.
# The look-behind keeps `data.aws_t.n` and `var.aws_region` from reading as resources.
VAR_REF = re.compile(r"(?<![\w.])var\.([A-Za-z_][\w-]*)")
LOCAL_REF = re.compile(r"(?<![\w.])local\.([A-Za-z_][\w-]*)")
DATA_REF = re.compile(r"(?<![\w.])data\.([a-z][a-z0-9_]*)\.([A-Za-z_][\w-]*)")
RESOURCE_REF = re.compile(r"(?<![\w.])(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*)")


def unquote(text: str) -> str:
    """'"abc"' -> 'abc'; anything else unchanged."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def literal(value: Any) -> Any:
    """The value of an HCL literal as Python sees it (strings lose their quotes)."""
    return unquote(value) if isinstance(value, str) else value


_HEREDOC = re.compile(r'^"<<(-?)([A-Za-z_]\w*)\n(.*\n)[ \t]*\2"$', re.DOTALL)
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def literal_string(value: Any) -> str | None:
    """The text of a quoted string or heredoc without interpolation; None for anything else.

    python-hcl2 keeps a heredoc as '"<<-EOT\\n...\\nEOT"' and a quoted string with its
    escapes, so both are decoded here as Terraform would.
    """
    if not isinstance(value, str) or "${" in value or "%{" in value:
        return None
    heredoc = _HEREDOC.match(value)
    if heredoc:
        body = heredoc.group(3)
        return textwrap.dedent(body) if heredoc.group(1) else body
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return None
    return _ESCAPE.sub(
        lambda m: _ESCAPES.get(m.group(1)) or chr(int(m.group(1)[1:], 16)), value[1:-1]
    )


@dataclass
class Module:
    """Every block of every .tf file in one directory, by kind."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    data: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    resources: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path = TERRAFORM_DIR) -> Module:
        """Parse every .tf file in `directory`."""
        module = cls()
        for path in sorted(directory.glob("*.tf")):
            parsed = copy.deepcopy(_parsed(path.read_text(encoding="utf-8")))
            module.files[path.name] = parsed
            for block in parsed.get("variable", []):
                module.variables.update({unquote(k): v for k, v in block.items()})
            for block in parsed.get("output", []):
                module.outputs.update({unquote(k): v for k, v in block.items()})
            for block in parsed.get("locals", []):
                module.locals.update({k: v for k, v in block.items() if not k.startswith("__")})
            for kind, target in (("data", module.data), ("resource", module.resources)):
                for block in parsed.get(kind, []):
                    for rtype, named in block.items():
                        for name, body in named.items():
                            target[(unquote(rtype), unquote(name))] = body
        return module

    def resource(self, rtype: str, name: str) -> dict[str, Any]:
        """The body of resource `rtype.name` (KeyError if it is not declared)."""
        return self.resources[(rtype, name)]

    def resolve_local(self, value: Any) -> Any:
        """Follow a value that is exactly '${local.x}' to the local's own value."""
        while isinstance(value, str):
            match = re.fullmatch(r"\$\{local\.([\w-]+)\}", value)
            if not match:
                break
            value = self.locals[match.group(1)]
        return value


@functools.cache
def _parsed(text: str) -> dict[str, Any]:
    """python-hcl2's reading of one file's `text`, kept on disk by the text's SHA-256."""
    digest = hashlib.sha256(f"{hcl2.__name__}\0{_HCL2_VERSION}\0{text}".encode()).hexdigest()
    cached = _PARSE_CACHE / f"{digest}.json"
    try:
        return dict(json.loads(cached.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    parsed: dict[str, Any] = hcl2.loads(text)
    _PARSE_CACHE.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(parsed), encoding="utf-8")
    partial.replace(cached)  # atomic: a worker reading it sees all of it or nothing
    return parsed


def strings(value: Any) -> Iterator[str]:
    """Every string anywhere inside `value`, skipping python-hcl2's '__...' bookkeeping."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not key.startswith("__"):
                yield from strings(item)


def index_keys(index: dict[str, Any]) -> tuple[str | None, str | None]:
    """(hash key, range key) of a GSI block, written as hash_key/range_key or key_schema."""
    if "key_schema" in index:
        keys = {literal(k["key_type"]): literal(k["attribute_name"]) for k in index["key_schema"]}
        return keys.get("HASH"), keys.get("RANGE")
    return literal(index["hash_key"]), literal(index.get("range_key"))


def policy_statements(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The statements of an aws_iam_policy_document, including `dynamic "statement"` ones."""
    yield from document.get("statement", [])
    for dynamic in document.get("dynamic", []):
        for label, body in dynamic.items():
            if unquote(label) == "statement":
                yield from body.get("content", [])
