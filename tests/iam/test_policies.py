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


def test_the_orchestrator_may_invoke_only_its_own_live_alias() -> None:
    """A scheduled run starts a run of an earlier, restated day as the scheduler starts one:
    lambda:InvokeFunction is granted the orchestrator on one ARN, the live alias's (built from
    the names, as the function depends on the policy), and on nothing else."""
    policies = Policies()
    invoking = [
        (s.sid, s.resources)
        for s in policies.statements["orchestrator"]
        if s.names_action("lambda:InvokeFunction")
    ]
    alias = policies.resolve("${aws_lambda_alias.orchestrator_live.arn}")
    assert alias.endswith(":function:dlpipe-orchestrator:live")
    assert invoking == [("StartRestatedDays", (alias,))]
    assert policies.allowing("orchestrator", "lambda:InvokeFunction", alias) is not None
    for other in (alias.removesuffix(":live"), alias.replace(":live", ":7")):
        assert policies.allowing("orchestrator", "lambda:InvokeFunction", other) is None
