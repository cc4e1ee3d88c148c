"""Many vendors, one deployment: every role's inline policy fits IAM's limit with 30 named feeds.

IAM allows 10,240 characters (whitespace aside) of inline policy per role. Each role's
documents are rendered from terraform/ with N named feeds (17-character names, a 5-character
name_prefix, each feed with its own created token and key: the largest case) as tests/iam/
policies.py evaluates them, and measured as minified JSON (tests/iam/policy_size.py).
terraform/README.md ("Feeds") quotes these sizes.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.iam.policies import Policies
from tests.iam.policy_size import INLINE_POLICY_LIMIT, feeds_fixture, inline_size

PREFIX = "acme-"  # 5 characters
MANY = 30


@cache
def sizes(count: int) -> dict[str, int]:
    """role -> its inline policy's size with `count` named feeds."""
    policies = Policies(feeds=feeds_fixture(count) or None, name_prefix=PREFIX)
    return {role: inline_size(policies, role) for role in policies.component_roles}


def test_the_fixture_is_the_case_the_readme_states() -> None:
    """30 feeds, names of 17 characters, a prefix of 5, and every role our code runs as."""
    feeds = feeds_fixture(MANY)
    assert len(feeds) == MANY
    assert {len(name) for name in feeds} == {17}
    assert len(PREFIX) == 5
    assert set(sizes(MANY)) == {"orchestrator", "downloader", "ecs_task"}


@pytest.mark.parametrize("role", ["orchestrator", "downloader", "ecs_task"])
def test_every_role_fits_iams_inline_limit_with_30_named_feeds(role: str) -> None:
    """The documents grow only by the exact ARNs of the feeds' secrets, not by statements."""
    assert sizes(MANY)[role] <= INLINE_POLICY_LIMIT, sizes(MANY)


def test_a_feed_adds_only_its_secrets_arns() -> None:
    """From 5 feeds to 30, a feed adds the ARNs of its token (orchestrator) or its token and key
    (downloaders), about 115 characters each: no statement and no queue or parameter ARN."""
    grown = {role: (sizes(MANY)[role] - sizes(5)[role]) / (MANY - 5) for role in sizes(5)}
    assert grown["orchestrator"] <= 120, grown
    assert grown["downloader"] <= 240, grown
    assert grown["ecs_task"] <= 240, grown


def test_a_shared_key_is_listed_once() -> None:
    """Feeds that share one key add its ARN once: one statement lists every feed's secrets
    (distinct; the provider's resources are a set as well), not one statement per feed."""
    shared = feeds_fixture(MANY)
    first = next(iter(shared))
    for name in shared:
        if name != first:
            shared[name] = {"token_secret": None, "private_key_secret": first}
    policies = Policies(feeds=shared, name_prefix=PREFIX)
    assert inline_size(policies, "downloader") < sizes(MANY)["downloader"] - 25 * 110
