"""With the two-feed fixture (tests/infra/fixtures/two-feeds.tfvars), the roles our code runs
as may read each feed's parameter and secrets exactly where its code needs them.

The orchestrator lists a feed's files with the feed's token; the downloaders (the Lambda and
the ECS worker, one shared document) decrypt with the feed's key and re-sign expired URLs with
its token, as they do for the default feed. Each reads the feed's settings from its parameter.
Nobody else reads them. The secrets are granted by exact ARN (a feed may name any secret); the
feeds' queues and parameters by the names dlpipe gives them (a pattern under the deployment's
name_prefix, so that a role's policy does not grow by a statement per feed), which reach no
other queue or parameter of the stack, nor another prefix's.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.iam.policies import ACCOUNT, PARTITION, REGION, Policies
from tests.infra.test_terraform_feeds import FEEDS

ORCHESTRATOR, DOWNLOADER, ECS_TASK = "orchestrator", "downloader", "ecs_task"
READ_SECRET, READ_PARAMETER = "secretsmanager:GetSecretValue", "ssm:GetParameter"
SECRETS = f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret"
# What AWS names the secrets Terraform creates (6 random characters after the name).
VENDOR_A_TOKEN = f"{SECRETS}:dlpipe/feeds/vendor-a/provider-token-AbC123"
VENDOR_A_KEY = f"{SECRETS}:dlpipe/feeds/vendor-a/rsa-private-key-XyZ789"
VENDOR_B_TOKEN = str(FEEDS["vendor-b"]["token_secret"])  # an existing secret, by ARN


def parameter_arn(name: str, path: str = "/dlpipe/feeds") -> str:
    return f"arn:{PARTITION}:ssm:{REGION}:{ACCOUNT}:parameter{path}/{name}"


@cache
def policies() -> Policies:
    return Policies(feeds=FEEDS)


def allowed(action: str, arn: str) -> set[str]:
    """The component roles whose policy allows `action` on `arn`."""
    found = policies()
    return {role for role in found.component_roles if found.allowing(role, action, arn)}


def test_the_component_roles_are_the_three_the_code_runs_as() -> None:
    """The checks below speak of these roles: the orchestrator, the downloader, the ECS task."""
    assert set(policies().component_roles) == {ORCHESTRATOR, DOWNLOADER, ECS_TASK}


@pytest.mark.parametrize("token", [VENDOR_A_TOKEN, VENDOR_B_TOKEN], ids=["created", "referenced"])
def test_a_feeds_token_is_read_by_the_orchestrator_and_the_downloaders(token: str) -> None:
    """Listing (orchestrator) and re-signing (downloaders) need it."""
    assert allowed(READ_SECRET, token) == {ORCHESTRATOR, DOWNLOADER, ECS_TASK}


def test_a_feeds_key_is_read_by_the_downloaders_only() -> None:
    """vendor-a's key, which vendor-b shares: the downloaders decrypt, the orchestrator never."""
    assert allowed(READ_SECRET, VENDOR_A_KEY) == {DOWNLOADER, ECS_TASK}


def test_feed_secrets_are_granted_by_exact_arn() -> None:
    """A feed may name any secret, so no secret grant is a pattern: each resource is one
    secret's ARN (the created ones end in the 6 characters AWS appends, matched one by one)."""
    for role in policies().component_roles:
        for statement, action, pattern, raw in policies().grants(role):
            if action == READ_SECRET:
                assert pattern is not None, (role, statement.sid, raw)
                assert "*" not in pattern, (role, statement.sid, raw)


def test_no_feed_reaches_another_secret_under_the_feeds_prefix() -> None:
    """A secret of a feed not in the map, or vendor-b's own (it shares vendor-a's), is denied."""
    for arn in (
        f"{SECRETS}:dlpipe/feeds/vendor-c/provider-token-AbC123",
        f"{SECRETS}:dlpipe/feeds/vendor-b/rsa-private-key-XyZ789",
        f"{SECRETS}:dlpipe/feeds/vendor-b/provider-token-AbC123",
    ):
        assert allowed(READ_SECRET, arn) == set(), arn


@pytest.mark.parametrize("role", [ORCHESTRATOR, DOWNLOADER, ECS_TASK])
def test_each_role_reads_the_feeds_parameters_and_nothing_beside_their_path(role: str) -> None:
    """The feeds' parameters are read; beside the feeds' path (/<prefix>dlpipe/feeds/) nothing
    is: not the path itself, nor a look-alike path, nor another prefix's feeds."""
    assert all(role in allowed(READ_PARAMETER, parameter_arn(name)) for name in FEEDS)
    for path, name in (
        ("/dlpipe", "feeds"),
        ("/dlpipe/feeds-x", "vendor-a"),
        ("/dlpipe", "other"),
        ("/staging-dlpipe/feeds", "vendor-a"),
        ("/other/dlpipe/feeds", "vendor-a"),
    ):
        assert role not in allowed(READ_PARAMETER, parameter_arn(name, path)), (path, name)


LIST_PARAMETERS = "ssm:GetParametersByPath"


def test_ssm_grants_are_get_parameter_under_the_feeds_path_only() -> None:
    """No other SSM action: GetParameter on the parameters under the feeds' path, one pattern
    per role; only the ECS worker (to consume each feed's queue) and the orchestrator (to keep
    the default feed's entities out of the feeds' prefixes) list the path, and nothing else."""
    path = parameter_arn("x").removesuffix("/x")
    for role in policies().component_roles:
        read = []
        for statement, action, pattern, raw in policies().grants(role):
            if action == LIST_PARAMETERS:
                assert role in {"ecs_task", "orchestrator"}, (role, statement.sid)
                assert pattern == path, pattern
                continue
            if action.lower().startswith("ssm:") or "ssm" in raw:
                assert action == READ_PARAMETER, (role, statement.sid)
                read.append(pattern)
        assert read == [f"{path}/*"], (role, read)


def test_without_feeds_no_role_reads_a_feed_parameter() -> None:
    """The local stack's view (feeds = {}): no per-feed grant exists."""
    plain = Policies()
    for name in FEEDS:
        arn = parameter_arn(name)
        assert [r for r in plain.component_roles if plain.allowing(r, READ_PARAMETER, arn)] == []


# --- each feed's own download queue (terraform/sqs.tf) ---------------------------------------

SQS_ACTIONS = (
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:PurgeQueue",
    "sqs:SetQueueAttributes",
)


def queue_arn(name: str) -> str:
    """The ARN of the queue Terraform makes for feed `name`, resolved as the policies are."""
    return policies().resolve(f'${{aws_sqs_queue.feed_downloads["{name}"].arn}}')


def sqs_grants(arn: str, found: Policies | None = None) -> dict[str, set[str]]:
    """role -> the SQS actions its policy allows on the queue `arn` (with the two feeds, or as
    `found` reads the stack)."""
    found = found or policies()
    return {
        role: {action for action in SQS_ACTIONS if found.allowing(role, action, arn)}
        for role in found.component_roles
    }


@pytest.mark.parametrize("feed", sorted(FEEDS))
def test_each_role_uses_a_feeds_queue_as_it_uses_the_main_queue(feed: str) -> None:
    """The orchestrator sends (and reads the backlog), the Lambda's event source and the ECS
    worker consume, both keep and defer messages: on a feed's queue exactly as on the main one."""
    main = sqs_grants(policies().resolve("${aws_sqs_queue.downloads.arn}"))
    assert main[ORCHESTRATOR] == {"sqs:SendMessage", "sqs:GetQueueAttributes"}
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage"} <= main[DOWNLOADER] & main[ECS_TASK]
    arn = queue_arn(feed)
    assert feed in arn
    assert sqs_grants(arn) == main


def test_no_role_reaches_a_queue_beside_the_feeds_queue_names() -> None:
    """The feeds' queues are granted by the name dlpipe gives them (<prefix>dlpipe-downloads-
    feed-<name>, in this account and region): the stack's other queues (the DLQs, the large-file
    queue), another prefix's feed queues and another account's or region's are out of reach,
    and so is the main queue's look-alike that is not a feed's."""
    vendor_a = queue_arn("vendor-a")
    beside = [
        vendor_a.replace("dlpipe-downloads-feed-vendor-a", name)
        for name in (
            "dlpipe-downloads-dlq",
            "dlpipe-downloads-large",
            "dlpipe-orchestrator-dlq",
            "dlpipe-schedule-dlq",
            "dlpipe-downloads-feedx",
            "staging-dlpipe-downloads-feed-vendor-a",
        )
    ]
    beside += [vendor_a.replace(f":{ACCOUNT}:", ":210987654321:")]
    beside += [vendor_a.replace(f":{REGION}:", ":eu-central-1:")]
    plain = Policies()  # feeds = {}: the grants these queues have without named feeds
    for arn in beside:
        assert sqs_grants(arn) == sqs_grants(arn, plain), arn
    assert sqs_grants(beside[0]) == {role: set() for role in policies().component_roles}


def test_without_feeds_no_role_uses_a_feed_queue() -> None:
    """The local stack's view (feeds = {}): no per-feed queue grant exists."""
    plain = Policies()
    arn = queue_arn("vendor-a")
    assert [
        (role, action)
        for role in plain.component_roles
        for action in SQS_ACTIONS
        if plain.allowing(role, action, arn)
    ] == []
