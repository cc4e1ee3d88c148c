"""The IAM policies of the roles dlpipe's code runs as, read from terraform/ and resolved to the
names local provisioning creates (dlpipe/local/terraform.py evaluates the same HCL).

Only the roles our code runs as are read: the orchestrator's and the downloader's (Lambda),
and the ECS task role. The scheduler and ECS execution roles are used by AWS services alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dlpipe.local.terraform import LOCAL_DATA_VALUES, TerraformModule, TerraformReadError
from tests.iam import feeds as per_feed
from tests.iam import recorder
from tests.infra.hcl import Module, literal, unquote

REGION = str(LOCAL_DATA_VALUES["data.aws_region.current.region"])
ACCOUNT = str(LOCAL_DATA_VALUES["data.aws_caller_identity.current.account_id"])
PARTITION = str(LOCAL_DATA_VALUES["data.aws_partition.current.partition"])

# Where Terraform says which role each component runs as: (resource type, label, attribute).
COMPONENT_ROLE_SOURCES: dict[str, tuple[tuple[str, str, str], ...]] = {
    recorder.ORCHESTRATOR: (("aws_lambda_function", "orchestrator", "role"),),
    recorder.DOWNLOADER_LAMBDA: (("aws_lambda_function", "downloader", "role"),),
    recorder.ECS_WORKER: (("aws_ecs_task_definition", "worker", "task_role_arn"),),
    recorder.DOWNLOADERS: (
        ("aws_lambda_function", "downloader", "role"),
        ("aws_ecs_task_definition", "worker", "task_role_arn"),
    ),
}

# ARNs of resources, from the attribute that names them.
_ARN_FORMATS: dict[str, tuple[str, str]] = {
    "aws_dynamodb_table": ("name", "arn:{p}:dynamodb:{r}:{a}:table/{n}"),
    "aws_sqs_queue": ("name", "arn:{p}:sqs:{r}:{a}:{n}"),
    "aws_s3_bucket": ("bucket", "arn:{p}:s3:::{n}"),
    # The 6 random characters Secrets Manager appends to the name, as the recorder writes them.
    "aws_secretsmanager_secret": ("name", "arn:{p}:secretsmanager:{r}:{a}:secret:{n}-??????"),
    "aws_cloudwatch_log_group": ("name", "arn:{p}:logs:{r}:{a}:log-group:{n}"),
    "aws_kms_key": ("description", "arn:{p}:kms:{r}:{a}:key/*"),  # the key id exists only on AWS
    "aws_ssm_parameter": ("name", "arn:{p}:ssm:{r}:{a}:parameter{n}"),  # the name starts with /
}
# `x.y.arn`, `x.y[0].arn`, or the splat `x.y[*].arn` of a counted resource (local provisioning
# always creates it, so the splat's one element is the local name).
_RESOURCE_ATTRIBUTE = re.compile(
    r"^(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*)(?:\[0\]|\[\*\])?\.([a-z_]+)$"
)
_DOCUMENT_REF = re.compile(r"data\.aws_iam_policy_document\.([A-Za-z_][\w-]*)(?:\[0\])?\.json")
_ROLE_REF = re.compile(r"aws_iam_role\.([A-Za-z_][\w-]*)(?:\[0\])?\.(?:id|arn|name)")
# A `dynamic "statement"` over the feeds (other than _WITH_FEEDS): not read here.
_PER_FEED = re.compile(r"(?<![\w.])var\.feeds\b")
# A dynamic statement present once while there are named feeds, none without.
_WITH_FEEDS = '${length(var.feeds) > 0 ? ["feeds"] : []}'


def glob_regex(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """An IAM wildcard pattern (* and ?) as a regular expression."""
    body = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(body, re.IGNORECASE if ignore_case else 0)


@dataclass(frozen=True)
class Condition:
    """One condition block: test, variable, values."""

    test: str
    variable: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Statement:
    """One policy statement, its resources resolved to local ARN patterns (None: unresolvable)."""

    role: str
    document: str
    sid: str
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str | None, ...]
    raw_resources: tuple[str, ...]
    conditions: tuple[Condition, ...]

    def names_action(self, action: str) -> bool:
        """Whether the statement lists `action` (IAM action names ignore case)."""
        return any(glob_regex(a, ignore_case=True).fullmatch(action) for a in self.actions)

    def names_resource(self, arn: str) -> bool:
        """Whether a resource pattern of the statement matches `arn`."""
        return any(p is not None and glob_regex(p).fullmatch(arn) for p in self.resources)

    def holds_for_direct_call(self) -> bool:
        """Whether the conditions hold for a call our code makes itself (not a service for it)."""
        return all(_direct_call_satisfies(c) for c in self.conditions)


def _direct_call_satisfies(condition: Condition) -> bool:
    if condition.variable.lower() == "kms:viaservice":
        return condition.test.startswith("ForAnyValue") or condition.test.endswith("IfExists")
    if condition.variable == "aws:SecureTransport":
        return condition.values == ("true",)
    raise AssertionError(
        f"condition {condition.variable}: teach tests/iam/policies.py how it evaluates"
    )


class Policies:
    """Every role's statements, and the role(s) of every component."""

    def __init__(
        self, feeds: dict[str, dict[str, Any]] | None = None, name_prefix: str | None = None
    ) -> None:
        """The stack as local provisioning evaluates it; `feeds` adds named feeds (their
        per-feed statements), which the local stack never has, and `name_prefix` a prefix."""
        self.static = Module.load()
        # Evaluated as dlpipe/local/provision.py does, so that names are the ones it creates.
        overrides: dict[str, Any] = {"feeds": feeds} if feeds else {}
        if name_prefix is not None:
            overrides["name_prefix"] = name_prefix
        self.module = TerraformModule.load(**overrides)
        self.feeds = feeds or {}

    # --- expressions -------------------------------------------------------------------------

    def resolve(self, text: str) -> str:
        """A string expression with `${...}` parts, resolved locally (TerraformReadError if not)."""
        text = text.strip()
        if text.startswith("${") and text.endswith("}") and text.count("${") == 1:
            return self._interpolation(text[2:-1])
        if text.startswith('"') and text.endswith('"'):
            return re.sub(r"\$\{([^{}]*)\}", lambda m: self._interpolation(m.group(1)), text[1:-1])
        raise TerraformReadError(f"cannot resolve {text!r}")

    def _interpolation(self, expression: str) -> str:
        expression = expression.strip()
        secret = per_feed.FEED_SECRET.fullmatch(expression)
        if secret:
            return per_feed.secret_arn(self.feeds, *secret.groups(), self._keyed_arn)
        keyed = per_feed.KEYED_RESOURCE.fullmatch(expression)
        if keyed:
            return self._keyed_arn(*keyed.groups()[1:], rtype=keyed.group(1))
        match = _RESOURCE_ATTRIBUTE.fullmatch(expression)
        if match is None:
            value = self.module.value("${" + expression + "}")
            if not isinstance(value, str):
                raise TerraformReadError(f"{expression!r} is not a string")
            return value
        rtype, label, attribute = match.groups()
        body = self.module.resource(rtype, label)
        if attribute == "arn" and rtype in _ARN_FORMATS:
            name_attribute, form = _ARN_FORMATS[rtype]
            name = self.module.value(body[name_attribute])
            return form.format(p=PARTITION, r=REGION, a=ACCOUNT, n=name)
        if rtype == "aws_lambda_alias" and attribute == "arn":
            function = self.resolve(body["function_name"])
            name = self.module.value(body["name"])
            return f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{function}:{name}"
        if isinstance(body.get(attribute), str):
            return self.resolve(body[attribute])
        raise TerraformReadError(f"cannot resolve {expression!r}")

    def _keyed_arn(self, label: str, key: str, rtype: str = "aws_secretsmanager_secret") -> str:
        """The ARN of `rtype.label[key]`, a resource for_each over the feeds, by feed name."""
        if key not in self.feeds:
            raise TerraformReadError(f"no feed {key!r}")
        name_attribute, form = _ARN_FORMATS[rtype]
        raw_name = self.module.resource(rtype, label)[name_attribute]
        name = self.resolve(raw_name.replace("${each.key}", key))
        return form.format(p=PARTITION, r=REGION, a=ACCOUNT, n=name)

    def _resource_patterns(self, raw: Any) -> tuple[tuple[str | None, ...], tuple[str, ...]]:
        """The resources' patterns (None: unresolvable) and, for each, the raw text it is from:
        each element of a list expression (concat, a local, a for over the feeds) its own."""
        resolved: list[str | None] = []
        texts: list[str] = []
        for item in raw if isinstance(raw, list) else [raw]:
            found: list[tuple[str, str | None]]
            try:
                expanded = self._list_items(item)
                found = [(str(item), self.resolve(item))] if expanded is None else expanded
            except (TerraformReadError, KeyError):
                found = [(str(item), None)]
            resolved.extend(value for _, value in found)
            texts.extend(origin for origin, _ in found)
        return tuple(resolved), tuple(texts)

    def _list_items(self, item: str) -> list[tuple[str, str]] | None:
        """(source, value) of each element of a list expression `${...}`, or None if `item` is
        no list expression."""
        text = item.strip()
        if not (text.startswith("${") and text.endswith("}")):
            return None
        return per_feed.expand_list(
            text[2:-1], self.feeds, self.static.locals.__getitem__, self.resolve
        )

    # --- roles and documents -----------------------------------------------------------------

    def roles_of(self, component: str) -> tuple[str, ...]:
        """The IAM roles (Terraform labels) a component's calls are made with."""
        roles = []
        for rtype, label, attribute in COMPONENT_ROLE_SOURCES[component]:
            value = self.static.resource(rtype, label)[attribute]
            match = _ROLE_REF.search(value)
            assert match, f"{rtype}.{label}.{attribute} = {value!r} names no aws_iam_role"
            roles.append(match.group(1))
        return tuple(roles)

    @cached_property
    def component_roles(self) -> tuple[str, ...]:
        """Every role some component runs as."""
        return tuple(sorted({r for c in COMPONENT_ROLE_SOURCES for r in self.roles_of(c)}))

    def _documents_of(self, role: str) -> Iterator[str]:
        for (rtype, _), body in self.static.resources.items():
            if rtype == "aws_iam_role_policy":
                match = _ROLE_REF.search(body["role"])
                if match and match.group(1) == role:
                    document = _DOCUMENT_REF.search(body["policy"])
                    assert document, f"the policy of role {role} is not a policy document"
                    yield document.group(1)
        kinds = {rtype for rtype, _ in self.static.resources}
        assert "aws_iam_role_policy_attachment" not in kinds, "teach tests/iam/ attachments"

    def _document_statements(self, role: str, document: str) -> Iterator[Statement]:
        body = self.static.data[("aws_iam_policy_document", document)]
        for name in _DOCUMENT_REF.findall(str(body.get("source_policy_documents", ""))):
            yield from self._document_statements(role, name)
        for raw in self._present_statements(body):
            resources, raw_resources = self._resource_patterns(raw.get("resources", []))
            assert "not_actions" not in raw, "teach tests/iam/policies.py not_actions"
            assert "not_resources" not in raw, "teach tests/iam/policies.py not_resources"
            yield Statement(
                role=role,
                document=document,
                sid=literal(raw.get("sid", "")),
                effect=literal(raw.get("effect", "Allow")),
                actions=tuple(literal(a) for a in raw.get("actions", [])),
                resources=resources,
                raw_resources=raw_resources,
                conditions=tuple(self._condition(c) for c in raw.get("condition", [])),
            )

    def _present_statements(self, document: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The document's statements as the evaluated stack has them: those present while there
        are named feeds only with feeds (none on the local stack, whose feeds = {})."""
        yield from document.get("statement", [])
        for dynamic in document.get("dynamic", []):
            for label, body in dynamic.items():
                if unquote(label) != "statement":
                    continue
                if body.get("for_each") == _WITH_FEEDS:
                    if self.feeds:  # one statement while there are named feeds
                        yield from body.get("content", [])
                    continue
                # A statement per feed would grow the policy by a statement per feed: the
                # feeds' resources go in the statement of their purpose (terraform/iam.tf).
                assert not _PER_FEED.search(str(body.get("for_each", ""))), "teach tests/iam/"
                yield from body.get("content", [])

    def _condition(self, raw: dict[str, Any]) -> Condition:
        values = tuple(self.resolve(v) for v in raw["values"])
        return Condition(literal(raw["test"]), literal(raw["variable"]), values)

    @cached_property
    def statements(self) -> dict[str, tuple[Statement, ...]]:
        """Every statement of every component role, by role."""
        return {
            role: tuple(
                s for d in self._documents_of(role) for s in self._document_statements(role, d)
            )
            for role in self.component_roles
        }

    def allowing(self, role: str, action: str, resource: str) -> Statement | None:
        """The statement that allows the call, or None if AWS would deny it."""
        candidates = [
            s
            for s in self.statements[role]
            if s.names_action(action) and s.names_resource(resource) and s.holds_for_direct_call()
        ]
        if any(s.effect == "Deny" for s in candidates):
            return None
        return next((s for s in candidates if s.effect == "Allow"), None)

    def grants(self, role: str) -> Iterable[tuple[Statement, str, str | None, str]]:
        """(statement, action, resource pattern, raw resource) for every Allow of a role."""
        for statement in self.statements[role]:
            if statement.effect != "Allow":
                continue
            for action in statement.actions:
                for pattern, raw in zip(statement.resources, statement.raw_resources, strict=True):
                    yield statement, action, pattern, raw
