"""Read resource definitions out of terraform/ so local provisioning has one schema, not two.

python-hcl2 leaves expressions as text (`"${local.jobs_table_name}"`, quoted literals). We
resolve the small subset our resources use: quoted strings with `${...}` interpolation,
`var.*` (defaults or overrides), `local.*`, a few known data sources, numbers, booleans, and
`a == b` / arithmetic on those. Anything else raises, so a silent mismatch cannot creep in.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import hcl2

TERRAFORM_DIR = Path(__file__).resolve().parents[2] / "terraform"

# What the data sources resolve to on the local emulator (moto's default account).
LOCAL_DATA_VALUES: Mapping[str, Any] = {
    "data.aws_caller_identity.current.account_id": "123456789012",
    "data.aws_region.current.region": "us-east-1",
    "data.aws_region.current.name": "us-east-1",
    "data.aws_partition.current.partition": "aws",
}


class TerraformReadError(ValueError):
    """The HCL holds something the local reader cannot resolve."""


_REF = re.compile(
    r"\b(?:var|local|each|data\.[a-z0-9_]+\.[a-z0-9_]+)\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*"
)
_BINOPS: Mapping[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_CMPOPS: Mapping[type[ast.AST], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


@dataclass
class TerraformModule:
    """The parsed .tf files of one directory, with a resolver for their expressions."""

    resources: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    each_key: str | None = None  # `each.key` while resolving one instance of a for_each

    @classmethod
    def load(cls, directory: Path = TERRAFORM_DIR, **var_overrides: Any) -> TerraformModule:
        """Parse every .tf file in `directory`; `var_overrides` replace variable defaults."""
        module = cls(overrides=dict(var_overrides))
        for path in sorted(directory.glob("*.tf")):
            with path.open() as handle:
                parsed = hcl2.load(handle)
            for block in parsed.get("resource", []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        module.resources.setdefault(_unquote(rtype), {})[_unquote(name)] = body
            for block in parsed.get("variable", []):
                for name, body in block.items():
                    module.variables[_unquote(name)] = body.get("default")
            for block in parsed.get("locals", []):
                module.locals.update({k: v for k, v in block.items() if not k.startswith("__")})
        return module

    def resource(self, rtype: str, name: str) -> dict[str, Any]:
        """The raw body of resource `rtype.name`."""
        try:
            return self.resources[rtype][name]
        except KeyError as exc:
            raise TerraformReadError(
                f"resource {rtype}.{name} is not defined in terraform/"
            ) from exc

    def value_for(self, raw: Any, each_key: str) -> Any:
        """`value(raw)` for the for_each instance keyed `each_key` (its `each.key`)."""
        return replace(self, each_key=each_key).value(raw)

    def value(self, raw: Any) -> Any:
        """Resolve one raw hcl2 value (string expression, number, bool, list or dict)."""
        if isinstance(raw, list):
            return [self.value(item) for item in raw]
        if isinstance(raw, dict):
            return {k: self.value(v) for k, v in raw.items() if not k.startswith("__")}
        if not isinstance(raw, str):
            return raw
        return self._expression(raw)

    def _expression(self, text: str) -> Any:
        text = text.strip()
        if text.startswith("${") and text.endswith("}") and text.count("${") == 1:
            return self._evaluate(text[2:-1])
        if text.startswith('"') and text.endswith('"'):
            return re.sub(r"\$\{([^}]*)\}", lambda m: str(self._evaluate(m.group(1))), text[1:-1])
        return self._evaluate(text)

    def _reference(self, ref: str) -> Any:
        if ref in LOCAL_DATA_VALUES:
            return LOCAL_DATA_VALUES[ref]
        kind, _, name = ref.partition(".")
        if kind == "each" and name == "key" and self.each_key is not None:
            return self.each_key
        if kind == "var":
            if name in self.overrides:
                return self.overrides[name]
            if name not in self.variables:
                raise TerraformReadError(f"variable {name!r} is not declared")
            return self.value(self.variables[name])
        if kind == "local":
            if name not in self.locals:
                raise TerraformReadError(f"local {name!r} is not defined")
            return self.value(self.locals[name])
        raise TerraformReadError(f"cannot resolve {ref!r} locally")

    def _evaluate(self, expression: str) -> Any:
        names: dict[str, Any] = {}

        def substitute(match: re.Match[str]) -> str:
            placeholder = f"_ref{len(names)}"
            names[placeholder] = self._reference(match.group(0))
            return placeholder

        python_text = _REF.sub(substitute, expression.strip())
        python_text = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", python_text))
        try:
            tree = ast.parse(python_text, mode="eval")
        except SyntaxError as exc:
            raise TerraformReadError(f"unsupported expression {expression!r}") from exc
        return _eval_node(tree.body, names, expression)


def _eval_node(node: ast.AST, names: Mapping[str, Any], source: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval_node(node.left, names, source), _eval_node(node.right, names, source)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
        left = _eval_node(node.left, names, source)
        right = _eval_node(node.comparators[0], names, source)
        return _CMPOPS[type(node.ops[0])](left, right)
    raise TerraformReadError(f"unsupported expression {source!r}")


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
