"""The named feeds' resources in IAM statements, evaluated for a given `feeds` map.

A statement lists every feed's resources with one list expression (concat, distinct, a for
over the feed names); here it becomes the list Terraform would make, each element resolved to
an ARN: the feeds' token and key secrets as feeds.tf's locals pick them (created for the feed,
an existing secret's ARN, or the key of the feed it shares; the terraform binary checks those
locals themselves in tests/infra/test_terraform_feeds_eval.py), and the patterns of their
queues and parameters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# `local.feed_token_secret_arns["vendor-a"]`, `local.feed_private_key_secret_arns["vendor-a"]`
FEED_SECRET = re.compile(r'^local\.feed_(token|private_key)_secret_arns\["([a-z0-9-]+)"\]$')
# `aws_ssm_parameter.feed["vendor-a"].arn`: a resource of a for_each, by its feed name.
KEYED_RESOURCE = re.compile(r'^(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*)\["([a-z0-9-]+)"\]\.arn$')


def secret_arn(
    feeds: Mapping[str, Mapping[str, Any]],
    kind: str,
    name: str,
    created: Callable[[str, str], str],
) -> str:
    """The ARN feed `name` reads its token or private key from; `created(label, feed)` is the
    ARN of the secret Terraform creates (aws_secretsmanager_secret.<label>[feed])."""
    if kind == "token":
        token = feeds[name].get("token_secret")
        return created("feed_token", name) if token is None else str(token)
    key = feeds[name].get("private_key_secret")
    if key is None:
        return created("feed_private_key", name)
    if key in feeds:  # shared: the named feed's own key, created or referenced
        own = feeds[key].get("private_key_secret")
        return created("feed_private_key", key) if own is None else str(own)
    return str(key)


# --- list expressions ------------------------------------------------------------------------
# A statement's resources over every feed are one list expression: concat(...), distinct(...),
# a list `[a, b]`, `[for name in sort(keys(var.feeds)) : <item indexed by name>]`, a local
# holding one, or `length(var.feeds) > 0 ? [...] : []`. Only these forms are read; any other
# raises, so that a new form is taught here rather than silently misread.

_CALL = re.compile(r"^(concat|distinct)\((.*)\)$", re.DOTALL)
_FOR_FEEDS = re.compile(r"^for (\w+) in sort\(keys\(var\.feeds\)\)\s*:\s*(.+)$", re.DOTALL)
_LOCAL = re.compile(r"^local\.([A-Za-z_]\w*)$")
_WITH_FEEDS = "length(var.feeds) > 0"
_OPENING, _CLOSING = "([{", ")]}"


def split_top(text: str, separator: str) -> list[str]:
    """`text` split at each `separator` outside brackets, strings and their interpolations."""
    parts, start, stack, i = [], 0, [], 0
    while i < len(text):
        char, inside = text[i], stack[-1] if stack else ""
        if inside == '"':
            if char == "\\":
                i += 1
            elif text.startswith("${", i):
                stack.append("${")
                i += 1
            elif char == '"':
                stack.pop()
        elif char == '"':
            stack.append('"')
        elif char in _OPENING:
            stack.append(char)
        elif char in _CLOSING:
            stack.pop()
        elif not stack and text.startswith(separator, i):
            parts.append(text[start:i].strip())
            start = i + len(separator)
        i += 1
    assert not stack, f"unbalanced expression {text!r}"
    return [*parts, text[start:].strip()]


def expand_list(
    expression: str,
    feeds: Mapping[str, Any],
    local_value: Callable[[str], Any],
    resolve: Callable[[str], str],
    source: str | None = None,
) -> list[tuple[str, str]] | None:
    """(source, value) of each string a list expression (without its `${}`) holds with `feeds`,
    or None if it is not a list expression. `local_value(name)` is a local's raw value as
    python-hcl2 reads it, `resolve(text)` the value of one string expression (quoted, or
    `${...}`). An element's source is the reference it comes from (`${local.feed_token_secret_
    arns["vendor-a"]}`), or for a string literal the local holding it (`${local.x}`)."""
    text = expression.strip()

    def items(inner: str, within: str | None = source) -> list[tuple[str, str]]:
        found = expand_list(inner, feeds, local_value, resolve, within)
        if found is not None:
            return found
        if inner.startswith('"'):
            return [(within or inner, resolve(inner))]
        return [("${" + inner + "}", resolve("${" + inner + "}"))]

    ternary = split_top(text, "?")
    if len(ternary) == 2:
        condition, branches = ternary
        chosen, other = split_top(branches, ":")
        if condition != _WITH_FEEDS:
            raise ValueError(f"teach tests/iam/feeds.py the condition {condition!r}")
        return items(chosen if feeds else other)
    call = _CALL.fullmatch(text)
    if call:
        joined = [item for arg in split_top(call.group(2), ",") if arg for item in items(arg)]
        if call.group(1) == "concat":
            return joined
        return list({value: (origin, value) for origin, value in reversed(joined)}.values())[::-1]
    if text.startswith("[") and text.endswith("]"):
        loop = _FOR_FEEDS.fullmatch(text[1:-1].strip())
        if loop:
            name, body = loop.groups()
            key = re.compile(rf"\[{name}\]")
            return [item for feed in sorted(feeds) for item in items(key.sub(f'["{feed}"]', body))]
        return [item for part in split_top(text[1:-1], ",") if part for item in items(part)]
    local = _LOCAL.fullmatch(text)
    if local:
        raw, origin = local_value(local.group(1)), "${" + text + "}"
        if isinstance(raw, list):  # a list literal python-hcl2 has read as one
            return [(origin, resolve(item)) for item in raw]
        if isinstance(raw, str) and raw.startswith("${") and raw.endswith("}"):
            return expand_list(raw[2:-1], feeds, local_value, resolve, origin)
    return None
