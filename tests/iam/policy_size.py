"""The size IAM counts for a role's inline policy, from the documents tests/iam/policies.py reads.

Each role's documents are rendered as the AWS provider's aws_iam_policy_document renders them
(Version, then each statement's Sid, Effect, Action, Resource, Condition; actions and resources
are sets there, so each appears once; a one-element list as a plain string) and serialised as minified JSON: IAM counts every character but whitespace
against its 10,240-character limit for a role's inline policies together.

Resources are the ARNs the evaluation resolves, with what only AWS knows put back at its real
length: the KMS key's id (a UUID, evaluated as "*") and a secret's 6 random characters
(evaluated as "??????", the same length).
"""

from __future__ import annotations

import json
from typing import Any

from tests.iam.policies import Policies, Statement

# AWS's limit on the inline policies of one role, in characters other than whitespace.
INLINE_POLICY_LIMIT = 10_240
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"  # a KMS key id: 36 characters


def _one_or_list(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


def _resource(statement: Statement, pattern: str | None, raw: str) -> str:
    assert pattern is not None, f"{statement.role}/{statement.sid}: cannot resolve {raw}"
    if ":kms:" in pattern and pattern.endswith(":key/*"):
        return pattern.removesuffix("*") + KEY_ID
    return pattern


def rendered(statement: Statement) -> dict[str, Any]:
    """One statement as the provider renders it."""
    body: dict[str, Any] = {"Sid": statement.sid, "Effect": statement.effect}
    body["Action"] = _one_or_list(sorted(set(statement.actions)))
    resources = [
        _resource(statement, pattern, raw)
        for pattern, raw in zip(statement.resources, statement.raw_resources, strict=True)
    ]
    body["Resource"] = _one_or_list(sorted(set(resources)))
    if statement.conditions:
        tests: dict[str, dict[str, Any]] = {}
        for condition in statement.conditions:
            values = _one_or_list(list(condition.values))
            tests.setdefault(condition.test, {})[condition.variable] = values
        body["Condition"] = tests
    if not body["Sid"]:
        del body["Sid"]
    return body


def document(policies: Policies, role: str) -> dict[str, Any]:
    """The role's inline policy (its documents' statements in order) as a policy document."""
    statements = [rendered(s) for s in policies.statements[role]]
    return {"Version": "2012-10-17", "Statement": statements}


def inline_size(policies: Policies, role: str) -> int:
    """The characters IAM counts for the role's inline policy: minified JSON, no whitespace."""
    text = json.dumps(document(policies, role), separators=(",", ":"))
    return sum(1 for ch in text if not ch.isspace())


def feeds_fixture(count: int, name_length: int = 17) -> dict[str, dict[str, Any]]:
    """`count` named feeds with names of `name_length` characters, each with its own created
    token and key (the largest case: no secret shared or named by ARN)."""
    names = [f"vendor-{i:0{name_length - 7}d}" for i in range(count)]
    assert all(len(n) == name_length for n in names)
    return {name: {"token_secret": None, "private_key_secret": None} for name in names}
