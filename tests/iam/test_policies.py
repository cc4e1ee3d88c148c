"""tests/iam/policies.py reads the stack the local emulator stands for: no named feeds.

Statements and resources that exist only with named feeds (the feeds' lists in terraform/
iam.tf) are absent with feeds = {}, as on AWS; reading them as present would report grants
nothing could use.
"""

from __future__ import annotations

from tests.iam.policies import Policies
from tests.iam.test_iam_coverage import _terraform_names
from tests.infra.hcl import Module


def test_terraform_declares_per_feed_statements() -> None:
    """The documents do hold per-feed statements, so the next test is not vacuous."""
    body = Module.load().data[("aws_iam_policy_document", "orchestrator")]
    assert any("var.feeds" in str(d) for d in body.get("dynamic", []))


def test_no_feed_grant_is_read_without_feeds() -> None:
    """With the default feeds = {}, no statement of a component role names a feed's queue,
    parameter or secret: the feeds' lists are empty, their statements absent."""
    policies = Policies()
    per_feed = [
        (role, s.sid, pattern)
        for role, statements in policies.statements.items()
        for s in statements
        for pattern in s.resources
        if pattern is None or "feed" in pattern
    ]
    assert per_feed == []


def test_terraform_secret_names_leave_out_per_feed_secrets() -> None:
    """The secrets the local stack has are the default feed's two, per-feed ones have no name."""
    names = _terraform_names("secretsmanager")
    assert names == {"dlpipe/rsa-private-key", "dlpipe/provider-token"}
