"""tests/iam/policies.py reads the stack the local emulator stands for: no named feeds.

Statements and resources that exist once per named feed (for_each over var.feeds) are absent
with feeds = {}, as on AWS; reading them as present would report grants nothing could use.
"""

from __future__ import annotations

from tests.iam.policies import Policies
from tests.iam.test_iam_coverage import _terraform_names
from tests.infra.hcl import Module


def test_terraform_declares_per_feed_statements() -> None:
    """The documents do hold per-feed statements, so the next test is not vacuous."""
    body = Module.load().data[("aws_iam_policy_document", "orchestrator")]
    assert any("var.feeds" in str(d) for d in body.get("dynamic", []))


def test_no_per_feed_statement_is_read_without_feeds() -> None:
    """With the default feeds = {}, no statement of a component role is a per-feed one."""
    policies = Policies()
    per_feed = [
        (role, s.sid)
        for role, statements in policies.statements.items()
        for s in statements
        if any("statement.key" in r for r in s.raw_resources)
    ]
    assert per_feed == []


def test_terraform_secret_names_leave_out_per_feed_secrets() -> None:
    """The secrets the local stack has are the default feed's two, per-feed ones have no name."""
    names = _terraform_names("secretsmanager")
    assert names == {"dlpipe/rsa-private-key", "dlpipe/provider-token"}
