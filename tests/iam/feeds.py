"""Per-feed IAM statements expanded for a given `feeds` map, as Terraform would repeat them.

A `dynamic "statement"` over var.feeds is written once with `statement.key`; here it becomes
one statement per feed name, its references indexed by that name and resolved to ARNs: the
feed's parameter, and its token and key secrets as feeds.tf's locals pick them (created for
the feed, an existing secret's ARN, or the key of the feed it shares; the terraform binary
checks those locals themselves in tests/infra/test_terraform_feeds_eval.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# `local.feed_token_secret_arns["vendor-a"]`, `local.feed_private_key_secret_arns["vendor-a"]`
FEED_SECRET = re.compile(r'^local\.feed_(token|private_key)_secret_arns\["([a-z0-9-]+)"\]$')
# `aws_ssm_parameter.feed["vendor-a"].arn`: a resource of a for_each, by its feed name.
KEYED_RESOURCE = re.compile(r'^(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*)\["([a-z0-9-]+)"\]\.arn$')
_SID_KEY = re.compile(r'\$\{replace\(statement\.key, "-", "X"\)\}')


def for_feed(raw: Any, name: str) -> Any:
    """A raw statement body with `statement.key` read as feed `name` (in sids: "-" as "X")."""
    if isinstance(raw, list):
        return [for_feed(item, name) for item in raw]
    if isinstance(raw, dict):
        return {k: for_feed(v, name) for k, v in raw.items()}
    if not isinstance(raw, str):
        return raw
    text = _SID_KEY.sub(name.replace("-", "X"), raw)
    return text.replace("statement.key", f'"{name}"')


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
