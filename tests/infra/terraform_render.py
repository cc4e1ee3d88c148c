"""What terraform/ hands the code, rendered by the terraform binary from the sources themselves.

`terraform init` cannot fetch the AWS provider here, and a module with no resources needs none.
So `render` copies every variable and locals block of terraform/ verbatim into one module,
puts a stand-in in place of each resource and data source the copied text refers to (an
object with the attributes AWS would give it: a queue's URL and ARN from its own name
argument, a table's ARN, ...; see STAND_INS), and adds one output per value asked for: a
resource argument such as a function's `environment.variables`, copied verbatim, over the
resource's own `count` or `for_each`. `terraform apply` then evaluates every expression as
Terraform would, validations included, without a hand-written copy of any of them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.infra.hcl import TERRAFORM_DIR
from tests.infra.hcl_text import Item, attribute, blocks, items

TERRAFORM = shutil.which("terraform")
ACCOUNT = "123456789012"
_REFERENCE = re.compile(r"(?<![\w.])(data\.)?(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*)")

# The attributes AWS gives each kind of resource, built from its name (`N`), the region (`R`)
# and the account (`A`); every stand-in also has id, name and arn.
STAND_INS: dict[str, dict[str, str]] = {
    "aws_sqs_queue": {
        "arn": "arn:aws:sqs:R:A:N",
        "url": "https://sqs.R.amazonaws.com/A/N",
    },
    "aws_dynamodb_table": {"arn": "arn:aws:dynamodb:R:A:table/N"},
    "aws_s3_bucket": {"arn": "arn:aws:s3:::N", "bucket": "N"},
    "aws_secretsmanager_secret": {"arn": "arn:aws:secretsmanager:R:A:secret:N-AbCdEf"},
    "aws_lambda_function": {
        "arn": "arn:aws:lambda:R:A:function:N",
        "function_name": "N",
        "version": "1",
        "qualified_arn": "arn:aws:lambda:R:A:function:N:1",
        "invoke_arn": "arn:aws:apigateway:R:lambda:path/functions/arn:aws:lambda:R:A:function:N",
    },
    "aws_lambda_alias": {"arn": "arn:aws:lambda:R:A:function:N"},
    "aws_cloudwatch_event_bus": {"arn": "arn:aws:events:R:A:event-bus/N"},
    "aws_cloudwatch_event_rule": {"arn": "arn:aws:events:R:A:rule/N"},
    "aws_ssm_parameter": {"arn": "arn:aws:ssm:R:A:parameterN"},
    "aws_iam_role": {"arn": "arn:aws:iam::A:role/N"},
    "aws_kms_key": {"arn": "arn:aws:kms:R:A:key/N", "key_id": "N"},
    "aws_sns_topic": {"arn": "arn:aws:sns:R:A:N"},
    "aws_cloudwatch_log_group": {"arn": "arn:aws:logs:R:A:log-group:N"},
    "aws_ecs_cluster": {"arn": "arn:aws:ecs:R:A:cluster/N"},
    "aws_ecs_task_definition": {"arn": "arn:aws:ecs:R:A:task-definition/N:1"},
    # data sources
    "aws_caller_identity": {"account_id": "A"},
    "aws_partition": {"partition": "aws"},
    "aws_region": {"region": "R"},
    "aws_iam_policy_document": {"json": "{}"},
}
# The argument that names a resource, first found first.
_NAME_ARGUMENTS = ("name", "bucket", "function_name", "family")


@dataclass(frozen=True)
class Value:
    """One value to render: `path` inside resource `rtype.name` ("environment", "variables"),
    or the resource's stand-in itself when `path` is empty."""

    rtype: str
    name: str
    path: tuple[str, ...] = ()


@dataclass
class Sources:
    """The blocks of every .tf file in terraform/, as written."""

    variables: list[str] = field(default_factory=list)
    locals: list[str] = field(default_factory=list)
    declared: dict[tuple[str, str, str], Item] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path = TERRAFORM_DIR) -> Sources:
        """Every variable, locals, resource and data block under `directory`."""
        sources = cls()
        for path in sorted(directory.glob("*.tf")):
            for item in items(path.read_text(encoding="utf-8")):
                if item.kind == "variable":
                    sources.variables.append(f'variable "{item.labels[0]}" {{{item.text}}}')
                elif item.kind == "locals":
                    sources.locals.append(f"locals {{{item.text}}}")
                elif item.kind in ("resource", "data"):
                    sources.declared[(item.kind, *item.labels)] = item  # type: ignore[index]
        return sources


def _local_name(data: str | None, rtype: str, name: str) -> str:
    return f"{'data_' if data else 'resource_'}{rtype}__{name}"


def _rewritten(text: str) -> str:
    """`text` with each resource or data reference pointing at its stand-in local."""
    return _REFERENCE.sub(lambda m: f"local.{_local_name(*m.groups())}", text)


def _over(item: Item, expression: str) -> str:
    """`expression` evaluated once per instance of the resource `item` (count, for_each)."""
    count = attribute(item.text, "count")
    for_each = attribute(item.text, "for_each")
    if count is not None:
        inner = expression.replace("count.index", "count_index")
        return f"[for count_index in range({count}) : {inner}\n]"
    if for_each is not None:
        inner = expression.replace("each.key", "each_key").replace("each.value", "each_value")
        return f"{{ for each_key, each_value in {for_each} : each_key => {inner}\n}}"
    return expression


def _stand_in(item: Item) -> str:
    """The object standing in for a resource or data source, over its count or for_each."""
    rtype = item.labels[0]
    named = next(
        (attribute(item.text, arg) for arg in _NAME_ARGUMENTS if attribute(item.text, arg)), None
    )
    name = f"({named})" if named else json.dumps(f"{rtype}-{item.labels[1]}")
    shapes = {"id": "N", "name": "N", "arn": f"arn:aws:{rtype}:R:A:N"} | STAND_INS.get(rtype, {})
    fields = ", ".join(f"{key} = {_shape(shape, name)}" for key, shape in shapes.items())
    return _over(item, f"{{ {fields} }}")


def _shape(shape: str, name: str) -> str:
    """An HCL string expression for `shape` with N, R and A filled in."""
    parts = re.split(r"(?<![A-Za-z])([NRA])(?![a-z])", shape)
    out = []
    for part in parts:
        if part == "N":
            out.append(f"${{{name}}}")
        elif part == "R":
            out.append("${var.aws_region}")
        elif part == "A":
            out.append(ACCOUNT)
        else:
            out.append(part)  # literal shapes hold no quote, backslash or template sequence
    return '"' + "".join(out) + '"'


def _argument(item: Item, path: Sequence[str]) -> str:
    """The expression at `path` inside the resource `item`: nested blocks, then an attribute."""
    body = item.text
    for block in path[:-1]:
        (found,) = blocks(body, block)
        body = found.text
    expression = attribute(body, path[-1])
    if expression is None:
        raise KeyError(f"{item.labels}: no {'.'.join(path)}")
    return expression


def _preconditions(sources: Sources) -> list[str]:
    """Each resource's lifecycle preconditions as outputs' preconditions: an apply evaluates
    them as a plan would (a resource with count or for_each only when it has an instance)."""
    checks = []
    for (kind, rtype, name), item in sorted(sources.declared.items()):
        for lifecycle in blocks(item.text, "lifecycle"):
            for number, check in enumerate(blocks(lifecycle.text, "precondition")):
                condition = attribute(check.text, "condition")
                message = attribute(check.text, "error_message")
                count = attribute(item.text, "count") or attribute(item.text, "for_each")
                if count is not None:
                    guard = (
                        f"({count}) == 0"
                        if attribute(item.text, "count")
                        else f"length({count}) == 0"
                    )
                    condition = f"{guard} || ({condition})"
                checks.append(
                    f'output "precondition_{kind}_{rtype}__{name}_{number}" {{\n  value = true\n'
                    f"  precondition {{\n    condition = {condition}\n"
                    f"    error_message = {message}\n  }}\n}}"
                )
    return checks


def module_text(
    values: Mapping[str, Value], sources: Sources | None = None, *, preconditions: bool = False
) -> str:
    """A resource-free module that outputs each of `values` under its key; with
    `preconditions`, every resource's lifecycle preconditions too."""
    sources = sources or Sources.read()
    outputs = _preconditions(sources) if preconditions else []
    for key, value in values.items():
        item = sources.declared[("resource", value.rtype, value.name)]
        reference = f"{value.rtype}.{value.name}"
        expression = _over(item, _argument(item, value.path)) if value.path else reference
        outputs.append(f'output "{key}" {{\n  value = {expression}\n}}')
    parts = [*sources.variables, *sources.locals, *outputs]
    done: set[tuple[str | None, str, str]] = set()
    while True:
        wanted = {m.groups() for m in _REFERENCE.finditer("\n".join(parts))} - done
        if not wanted:
            break
        for data, rtype, name in sorted(wanted, key=lambda w: (w[0] or "", w[1], w[2])):
            done.add((data, rtype, name))
            declared = sources.declared[("data" if data else "resource", rtype, name)]
            local = _local_name(data, rtype, name)
            parts.append(f"locals {{\n  {local} = {_stand_in(declared)}\n}}")
    return "\n".join(map(_rewritten, parts)) + "\n"


class Rendered:
    """A module of `values` in `directory`, initialised; apply it with variables to read them."""

    def __init__(
        self, directory: Path, values: Mapping[str, Value], *, preconditions: bool = False
    ) -> None:
        if TERRAFORM is None:
            raise RuntimeError("no terraform binary on PATH")
        self.directory = directory
        text = module_text(values, preconditions=preconditions)
        (directory / "main.tf").write_text(text, encoding="utf-8")
        subprocess.run(
            [TERRAFORM, "init", "-input=false", "-no-color"],
            cwd=directory,
            check=True,
            capture_output=True,
        )

    def apply(self, variables: Mapping[str, Any]) -> subprocess.CompletedProcess[str]:
        """`terraform apply` with `variables` (a JSON var file); the outputs are then set."""
        (self.directory / "case.tfvars.json").write_text(json.dumps(variables), encoding="utf-8")
        command = [TERRAFORM, "apply", "-auto-approve", "-input=false", "-no-color"]
        return subprocess.run(
            [*command, "-var-file=case.tfvars.json"],
            cwd=self.directory,
            capture_output=True,
            text=True,
            check=False,
        )

    def outputs(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """Every output's value for `variables`; AssertionError with Terraform's words if the
        apply fails (a validation, a precondition, an expression)."""
        applied = self.apply(variables)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        shown = subprocess.run(
            [TERRAFORM, "output", "-json"],  # type: ignore[list-item]
            cwd=self.directory,
            capture_output=True,
            text=True,
            check=True,
        )
        return {name: value["value"] for name, value in json.loads(shown.stdout).items()}
