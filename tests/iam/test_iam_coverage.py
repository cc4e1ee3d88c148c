"""terraform/'s IAM allows what dlpipe's code calls on AWS, and little else.

moto enforces no IAM: a call its role may not make passes every other test and is denied on
AWS. tests/iam/plugin.py records every AWS call of the session with the component that made
it; these tests run after all others and check each call against the role(s) its component
runs as, list what the roles grant that no call used, and check the operator's table in the
README. With nothing recorded (run alone) they skip: a scenario of their own would cover a
fraction of the code paths and make the "never used" list wrong.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

from tests.iam import recorder
from tests.iam.actions import ACTIONS
from tests.iam.plugin import Call, Session
from tests.iam.policies import ACCOUNT, REGION, Policies, Statement, glob_regex
from tests.infra.hcl import literal
from tests.infra.test_terraform_feeds import FEEDS

pytestmark = pytest.mark.iam_coverage

README = Path(__file__).resolve().parents[2] / "README.md"
README_SECTION = "### Permissions an operator needs"

# Tests make queues and secrets of their own so that they never share messages; each stands in
# for the Terraform resource whose part it plays. (service, test-made name, Terraform resource)
STAND_INS: tuple[tuple[str, str, str], ...] = (
    # Tests that point a worker or the CLI at a missing table, to see how it fails.
    ("dynamodb", r"(ops-test-)?no-such-table", "aws_dynamodb_table.jobs"),
    # The upgrade test's jobs table made with the seed's indexes (test_index_upgrade.py).
    ("dynamodb", r"jobs-seed-[0-9a-f]{12}", "aws_dynamodb_table.jobs"),
    # A test's own copy of the jobs table (tests/support.py own_table).
    ("dynamodb", r"data-download-jobs-own-[0-9a-f]{8}", "aws_dynamodb_table.jobs"),
    ("sqs", r".+-dlq", "aws_sqs_queue.downloads_dlq"),
    # The large-file tests' own large queues (tests/e2e/test_large_files.py, ..._routing.py).
    ("sqs", r"dl-large-.+|ops-large-.+", "aws_sqs_queue.downloads_large"),
    ("sqs", r".+", "aws_sqs_queue.downloads"),
    ("secretsmanager", r"dlpipe-test-key-.+", "aws_secretsmanager_secret.rsa_private_key"),
    (
        "secretsmanager",
        r"dlpipe-test/provider-token-.+",
        "aws_secretsmanager_secret.provider_token",
    ),
)

_LOGS = "the Lambda runtime writes the function's logs with its role"
_XRAY = "active tracing: Lambda sends the function's trace segments with its role"
_KMS = "the services its kms:ViaService names use the key for the role; no code calls KMS"
_ESM = "the SQS event source mapping polls and deletes with the function's role"

# Granted, never called by our code, needed all the same: (role, sid, action) -> who uses it.
NOT_CALLED_BUT_NEEDED: dict[tuple[str, str, str], str] = {
    ("orchestrator", "DurableExecutionCheckpoints", "lambda:CheckpointDurableExecution"): (
        "the durable SDK checkpoints every step on AWS; the local runner keeps them in memory"
    ),
    ("orchestrator", "DurableExecutionCheckpoints", "lambda:GetDurableExecutionState"): (
        "the durable SDK reads the checkpoints back on replay; the local runner keeps them in memory"
    ),
    ("orchestrator", "StartRestatedDays", "lambda:InvokeFunction"): (
        "a scheduled run starts a run of an earlier day the vendor restated through the alias it"
        " was invoked by; the SDK's local runner has no such ARN, so no test's run invokes it"
    ),
    ("orchestrator", "FunctionDeadLetterQueue", "sqs:SendMessage"): (
        "Lambda sends the events of executions that failed for good with the function's role"
    ),
    ("orchestrator", "UseDataKey", "kms:Decrypt"): _KMS,
    ("orchestrator", "UseDataKey", "kms:GenerateDataKey"): _KMS,
    ("orchestrator", "WriteLogs", "logs:CreateLogStream"): _LOGS,
    ("orchestrator", "WriteLogs", "logs:PutLogEvents"): _LOGS,
    ("orchestrator", "XRayTraces", "xray:PutTraceSegments"): _XRAY,
    ("orchestrator", "XRayTraces", "xray:PutTelemetryRecords"): _XRAY,
    ("downloader", "EventSourceConsumesDownloads", "sqs:ReceiveMessage"): _ESM,
    ("downloader", "EventSourceConsumesDownloads", "sqs:DeleteMessage"): _ESM,
    ("downloader", "EventSourceConsumesDownloads", "sqs:GetQueueAttributes"): _ESM,
    ("downloader", "UseDataKey", "kms:Decrypt"): _KMS,
    ("downloader", "UseDataKey", "kms:GenerateDataKey"): _KMS,
    ("downloader", "WriteLogs", "logs:CreateLogStream"): _LOGS,
    ("downloader", "WriteLogs", "logs:PutLogEvents"): _LOGS,
    ("downloader", "XRayTraces", "xray:PutTraceSegments"): _XRAY,
    ("downloader", "XRayTraces", "xray:PutTelemetryRecords"): _XRAY,
    ("ecs_task", "UseDataKey", "kms:Decrypt"): _KMS,
    ("ecs_task", "UseDataKey", "kms:GenerateDataKey"): _KMS,
}
# S3 answers HeadObject of a missing key 404 only to a caller with s3:ListBucket on the bucket
# (403 otherwise): the downloader's "is it there already?" depends on it without calling it.
for _role in ("downloader", "ecs_task"):
    NOT_CALLED_BUT_NEEDED[(_role, "FindObjectsAndStaleUploads", "s3:ListBucket")] = (
        "HeadObject of a missing key is a 404, not a 403, only with s3:ListBucket"
    )
# A BUSY duplicate of a large file's message is re-sent, delayed, to the large-file queue
# (dlpipe/adapters/download_queue.py); tests/unit/test_routing.py proves the routing with an in-memory SQS,
# and no emulator test makes a large file's message meet a live claim.
for _role in ("downloader", "ecs_task"):
    NOT_CALLED_BUT_NEEDED[(_role, "CopyToLargeDownloads", "sqs:SendMessage")] = (
        "a deferred copy of a large file's message goes back to the large-file queue"
    )
# The completion check lists a small day's files through BatchIndex and reads by key, once,
# only those the index has not shown yet (index lag at the end of the day: orchestrator/
# completion.py); the emulator's index never lags, so no test makes that read.
NOT_CALLED_BUT_NEEDED[("orchestrator", "TrackBatchesAndJobs", "dynamodb:BatchGetItem")] = (
    "completion reads by key the expected files BatchIndex has not shown yet (index lag)"
)
# The sweeper's HEAD of a published file (dlpipe/adapters/published.py), likewise.
NOT_CALLED_BUT_NEEDED[("orchestrator", "TellMissingFromForbidden", "s3:ListBucket")] = (
    "the sweeper's HeadObject of a missing key is a 404, not a 403, only with s3:ListBucket"
)

# write-manifest aborts a manifest's multipart upload only when the upload fails part-way
# (dlpipe/adapters/manifest_store.py); no emulator test fails one.
NOT_CALLED_BUT_NEEDED[("orchestrator", "WriteDayManifests", "s3:AbortMultipartUpload")] = (
    "a manifest upload that fails part-way is aborted, leaving no parts behind"
)

# A named feed's grants, in the statements of their purpose: each feed's secrets by ARN (per
# feed of the two-feed fixture; the local stack's feeds stand for them), the feeds' queues and
# parameters by one pattern each (terraform/iam.tf's locals).
_LAMBDA_FEEDS = (
    "the downloader Lambda reads a feed's settings and key as `dlpipe worker` does (the same "
    "bootstrap/download.py); the tests download named feeds' files with the worker's code"
)
_FEED_TOKEN = (
    "a downloader reads a feed's token only to re-sign an expired URL; no test expires a "
    "named feed's URL"
)
NOT_CALLED_BUT_NEEDED[("downloader", "ReadFeedSettings", "ssm:GetParameter")] = _LAMBDA_FEEDS
for _feed in ("vendor-a", "vendor-b"):
    for _kind in ("private_key", "token"):
        _secret = f'${{local.feed_{_kind}_secret_arns["{_feed}"]}}'
        if (_kind, _feed) != ("private_key", "vendor-b"):  # vendor-b shares vendor-a's key
            NOT_CALLED_BUT_NEEDED[("downloader", "ReadKeyAndToken", _secret)] = _LAMBDA_FEEDS
    NOT_CALLED_BUT_NEEDED[
        ("ecs_task", "ReadKeyAndToken", f'${{local.feed_token_secret_arns["{_feed}"]}}')
    ] = _FEED_TOKEN

# Each named feed's own download queue (terraform/sqs.tf), granted beside the main queue in
# each statement on it (tests/iam/test_feed_grants.py holds the two alike): where no test calls
# a feed's queue, the same grant on the main queue is called. The Lambda's event source polls a
# feed's queue as it polls the main one.
FEED_QUEUES = "${local.feed_queue_arn_patterns}"
_FEED_QUEUE = "a named feed's own queue, used as the main queue is (the same grant on it is called)"
for _role, _sid in (
    ("orchestrator", "QueueDownloads"),
    ("downloader", "KeepAndDeferDownloads"),
    ("ecs_task", "KeepAndDeferDownloads"),
    ("downloader", "EventSourceConsumesDownloads"),
    ("downloader", "FindDownloadQueue"),
    ("ecs_task", "ReceiveDownloads"),
):
    NOT_CALLED_BUT_NEEDED[(_role, _sid, FEED_QUEUES)] = _FEED_QUEUE

ENCRYPTED_SERVICES = frozenset({"s3", "sqs", "secretsmanager", "dynamodb"})


# The local stack writes its named feeds as Terraform does (an SSM parameter and two secrets per
# feed, dlpipe/local/stack_feeds.py). A feed of the two-feed fixture's name is that feed; any other
# name a test gives a feed stands for FEED_STAND_IN, whose secrets Terraform creates; a name in
# UNCONFIGURED_FEEDS is a feed no deployment has (SSM: ParameterNotFound).
FEED_STAND_IN = "vendor-a"
UNCONFIGURED_FEEDS = frozenset({"vendor-x"})


@cache
def policies() -> Policies:
    """terraform/'s component roles with the two-feed fixture's feeds, resolved once."""
    return Policies(feeds=FEEDS)


def _as_deployed(feed: str) -> str:
    return feed if feed in FEEDS or feed in UNCONFIGURED_FEEDS else FEED_STAND_IN


# Calls AWS denies on purpose, each with the test that makes it and why. (An event naming a
# feed no configuration has, `vendor-x` in tests/faults/test_feed_lookup_faults.py, is not one:
# the feeds' parameters are granted by their path, so on AWS as locally SSM answers
# ParameterNotFound, and the execution fails at once naming the feed.)
DENIED_BY_DESIGN: dict[tuple[str, str, str], str] = {}


@pytest.fixture(scope="module")
def calls(iam_session: Session) -> list[Call]:
    """The calls our components made in this session (setup and unattributed ones dropped)."""
    found = [c for c in iam_session.calls() if c.component in recorder.COMPONENTS]
    if not found:
        pytest.skip(
            "no AWS call of a dlpipe component was recorded in this session: run the checker "
            "with the suite (`pytest tests/`); it runs last by itself"
        )
    return found


def _resource_name(service: str, arn: str) -> str | None:
    if service == "dynamodb":
        match = re.fullmatch(r"arn:[^:]+:dynamodb:[^:]+:[^:]+:table/([^/]+)", arn)
        return match.group(1) if match else None
    if service == "sqs":
        return arn.rsplit(":", 1)[1]
    if service == "secretsmanager":
        match = re.fullmatch(r"arn:[^:]+:secretsmanager:[^:]+:[^:]+:secret:(.+)-.{6}", arn)
        return match.group(1) if match else None
    return None


@cache
def _terraform_names(service: str) -> frozenset[str]:
    rtype = {
        "dynamodb": "aws_dynamodb_table",
        "sqs": "aws_sqs_queue",
        "secretsmanager": "aws_secretsmanager_secret",
    }[service]
    module = policies().module
    # for_each resources (one per named feed) do not exist in the local stack (feeds = {}).
    bodies = [b for b in module.resources.get(rtype, {}).values() if "for_each" not in b]
    return frozenset(str(module.value(b["name"])) for b in bodies)


# A test's own feeds parameter path (/t<hex>-dlpipe/feeds) stands for the deployment's.
_TEST_PARAMETER_PATH = re.compile(r"(:parameter/)t[0-9a-f]+-(dlpipe/feeds)$")
# A local feed's parameter and secrets (any name a test gives the feed, any name prefix).
_LOCAL_FEED_PARAMETER = re.compile(r"(:parameter/)(t[0-9a-f]+-)?dlpipe/feeds/([a-z0-9-]+)$")
_LOCAL_FEED_SECRET = re.compile(
    r"(t[0-9a-f]+-)?dlpipe/feeds/([a-z0-9-]+)/(provider-token|rsa-private-key)"
)
_FEED_SECRET_KIND = {"provider-token": "token", "rsa-private-key": "private_key"}
# A local feed's own download queue, named as terraform/sqs.tf names it (any name prefix).
_LOCAL_FEED_QUEUE = re.compile(r"(t[0-9a-f]+-)?dlpipe-downloads-feed-([a-z0-9-]+)")


@cache
def canonical(service: str, arn: str) -> str:
    """The ARN as Terraform names it: a test's own queue or secret becomes the one it stands for."""
    if service == "ssm":
        arn = _LOCAL_FEED_PARAMETER.sub(
            lambda m: f"{m.group(1)}dlpipe/feeds/{_as_deployed(m.group(3))}", arn
        )
        return _TEST_PARAMETER_PATH.sub(r"\1\2", arn)
    name = _resource_name(service, arn)
    secret = _LOCAL_FEED_SECRET.fullmatch(name or "") if service == "secretsmanager" else None
    if secret:  # the secret Terraform resolves for that feed: created, named or shared
        kind, feed = _FEED_SECRET_KIND[secret.group(3)], _as_deployed(secret.group(2))
        return policies().resolve(f'${{local.feed_{kind}_secret_arns["{feed}"]}}')
    queue = _LOCAL_FEED_QUEUE.fullmatch(name or "") if service == "sqs" else None
    if queue:  # the queue Terraform makes for that feed
        feed = _as_deployed(queue.group(2))
        return policies().resolve(f'${{aws_sqs_queue.feed_downloads["{feed}"].arn}}')
    index = re.fullmatch(r"(arn:[^:]+:dynamodb:[^:]+:[^:]+:table/[^/]+)(/index/.+)", arn)
    if service == "dynamodb" and index:  # a stand-in table's index: that table's index
        table = canonical(service, index.group(1))
        return arn if table == index.group(1) else table + index.group(2)
    if name is None or name in _terraform_names(service):
        return arn
    for stand_in_service, pattern, resource in STAND_INS:
        if stand_in_service == service and re.fullmatch(pattern, name):
            return policies().resolve("${" + resource + ".arn}")
    return arn


def _checked(calls: Iterable[Call]) -> Iterable[tuple[Call, str, str, str]]:
    """(call, role, action, canonical resource) for every check a call implies."""
    for call in calls:
        if call.component == recorder.OPERATOR:
            continue  # no role: the README's table says what an operator needs
        for role in policies().roles_of(str(call.component)):
            for action in ACTIONS.get((call.service, call.operation), ()):
                for resource in call.resources:
                    yield call, role, action, canonical(call.service, resource)


def _generic(resource: str) -> str:
    """Any index of a table, any object of a bucket: the level policies grant at."""
    generic = re.sub(r"(:table/[^/]+/index/).+", r"\1*", resource)
    return re.sub(r"^(arn:aws:s3:::[^/]+)/.+", r"\1/*", generic)


# --- every call is allowed -------------------------------------------------------------------


def test_every_operation_the_code_calls_has_its_iam_actions_listed(calls: list[Call]) -> None:
    """Each boto operation a component calls is in tests/iam/actions.py's table."""
    missing = sorted(
        {
            f"{c.service} {c.operation} (at {c.at})"
            for c in calls
            if (c.service, c.operation) not in ACTIONS
        }
    )
    assert not missing, (
        "add these operations, with the IAM action(s) AWS checks for each, to "
        "ACTIONS in tests/iam/actions.py:\n" + "\n".join(missing)
    )


def test_every_call_is_allowed_by_the_role_its_component_runs_as(calls: list[Call]) -> None:
    """No recorded call would be denied on AWS: its role's policy allows action and resource."""
    misses: dict[tuple[str, str, str, str], tuple[str, Call]] = {}
    for call, role, action, resource in _checked(calls):
        if (role, action, resource) in DENIED_BY_DESIGN:
            continue
        if policies().allowing(role, action, resource) is None:
            key = (str(call.component), role, action, _generic(resource))
            misses.setdefault(key, (resource, call))
    lines = [
        f"{component} (role {role}): {action} on {resource} — {call.test} ({call.at})"
        for (component, role, action, _), (resource, call) in sorted(misses.items())
    ]
    assert not lines, "AWS would deny these calls; grant them in terraform/iam.tf:\n" + "\n".join(
        lines
    )


def test_the_calls_denied_by_design_are_denied() -> None:
    """DENIED_BY_DESIGN holds only calls AWS would deny, even with the fixture's feeds."""
    for role, action, resource in DENIED_BY_DESIGN:
        assert policies().allowing(role, action, resource) is None, resource


# --- every grant is used ---------------------------------------------------------------------


def _used(calls: list[Call]) -> set[tuple[str, str, str]]:
    return {(role, action, resource) for _, role, action, resource in _checked(calls)}


def _grant_is_used(
    used: set[tuple[str, str, str]], role: str, action: str, pattern: str | None
) -> bool:
    if pattern is None:
        return False
    wanted, where = glob_regex(action, ignore_case=True), glob_regex(pattern)
    return any(r == role and wanted.fullmatch(a) and where.fullmatch(res) for r, a, res in used)


def unused_grants(calls: list[Call]) -> list[tuple[Statement, str]]:
    """(statement, item) for each action of a statement that no call used on any of its
    resources, and each resource that no call used with any of its actions."""
    used, unused = _used(calls), []
    for role in policies().component_roles:
        for statement in policies().statements[role]:
            if statement.effect != "Allow":
                continue
            hits = [
                (action, raw)
                for action in statement.actions
                for pattern, raw in zip(statement.resources, statement.raw_resources, strict=True)
                if _grant_is_used(used, role, action, pattern)
            ]
            unused += [(statement, a) for a in statement.actions if a not in {a for a, _ in hits}]
            if hits:  # with no action used, the actions above say it all
                unused += [
                    (statement, literal(raw))
                    for raw in statement.raw_resources
                    if raw not in {r for _, r in hits}
                ]
    return unused


def test_every_grant_is_used_by_a_call_or_explained(
    calls: list[Call], iam_session: Session
) -> None:
    """What a role grants, some call of its component uses, or NOT_CALLED_BUT_NEEDED says why."""
    lines, unexplained = [], []
    for statement, item in unused_grants(calls):
        why = NOT_CALLED_BUT_NEEDED.get((statement.role, statement.sid, item))
        line = f"{statement.role} / {statement.sid}: {item}"
        lines.append(f"{line}  [{why}]" if why else f"{line}  [UNEXPLAINED]")
        if why is None:
            unexplained.append(line)
    iam_session.unused_report = tuple(lines)
    print("\n".join(["granted but never called:", *lines]))  # the listing is what -s shows
    if not iam_session.complete:
        pytest.skip(f"not the whole suite ({iam_session.why_partial}): unused grants only listed")
    assert not unexplained, (
        "granted but no call uses it: remove it from terraform/iam.tf, or say in "
        "NOT_CALLED_BUT_NEEDED (tests/iam/test_iam_coverage.py) who uses it:\n"
        + "\n".join(unexplained)
    )


def test_every_feed_queue_grant_is_explained_while_no_call_uses_it() -> None:
    """Every statement that grants the feeds' queues beside the main queue explains them: where
    the suite calls the main queue but no feed's, the whole suite's check finds none unexplained."""
    on_feed_queues = {
        (s.role, s.sid, FEED_QUEUES)
        for role in policies().component_roles
        for s in policies().statements[role]
        if FEED_QUEUES in s.raw_resources
    }
    assert len(on_feed_queues) == 6
    assert on_feed_queues - set(NOT_CALLED_BUT_NEEDED) == set()


def test_a_local_feed_queue_stands_for_the_feeds_queue_on_aws() -> None:
    """A test's queue named as Terraform names a feed's (any name prefix) is that feed's queue;
    a feed the fixture lacks stands for FEED_STAND_IN's."""
    local = f"arn:aws:sqs:{REGION}:{ACCOUNT}:t0a1b-dlpipe-downloads-feed-"
    deployed = '${aws_sqs_queue.feed_downloads["%s"].arn}'
    assert canonical("sqs", local + "vendor-b") == policies().resolve(deployed % "vendor-b")
    assert canonical("sqs", local + "other") == policies().resolve(deployed % FEED_STAND_IN)


def test_every_explanation_names_a_grant_that_exists() -> None:
    """NOT_CALLED_BUT_NEEDED has no entry for a statement or action no longer granted."""
    granted = {
        (s.role, s.sid, item)
        for role in policies().component_roles
        for s, action, _, raw in policies().grants(role)
        for item in (action, literal(raw))
    }
    assert set(NOT_CALLED_BUT_NEEDED) - granted == set()


# --- KMS: only through the services that use the key ----------------------------------------


def _kms_statements() -> list[Statement]:
    return [
        s
        for role in policies().component_roles
        for s in policies().statements[role]
        if any(a.lower().startswith("kms:") for a in s.actions)
    ]


def _via_services(statement: Statement) -> set[str]:
    """The services a kms:ViaService condition names, in the region Terraform deploys to."""
    region = policies().module.value("${var.aws_region}")
    return {
        value.removesuffix(f".{region}.amazonaws.com")
        for c in statement.conditions
        if c.variable == "kms:ViaService" and c.test == "StringEquals"
        for value in c.values
    }


def test_kms_grants_of_component_roles_hold_only_through_a_service() -> None:
    """Every KMS statement of a role our code runs as has a kms:ViaService condition."""
    assert [(s.role, s.sid) for s in _kms_statements() if not _via_services(s)] == []


def test_kms_via_services_are_the_encrypted_services_the_role_calls(
    calls: list[Call], iam_session: Session
) -> None:
    """kms:ViaService names exactly the KMS-encrypted services whose APIs the role calls."""
    if not iam_session.complete:
        pytest.skip(f"not the whole suite ({iam_session.why_partial})")
    called: dict[str, set[str]] = defaultdict(set)
    for call, role, _, _ in _checked(calls):
        called[role].add(call.service)
    wrong = {
        (s.role, s.sid): (sorted(_via_services(s)), sorted(called[s.role] & ENCRYPTED_SERVICES))
        for s in _kms_statements()
        if _via_services(s) != called[s.role] & ENCRYPTED_SERVICES
    }
    assert wrong == {}, "(role, sid): (kms:ViaService services, services the role calls)"


# --- the operator's permissions, in the README ----------------------------------------------


def _readme_rows() -> list[tuple[set[str], str]]:
    text = README.read_text()
    assert README_SECTION in text, f"README.md has no section {README_SECTION!r}"
    section = text.split(README_SECTION, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            actions = set(re.findall(r"`([^`]+)`", cells[0]))
            (resource,) = re.findall(r"`([^`]+)`", cells[1])
            rows.append((actions, resource))
    return rows


def _readme_pattern(resource: str) -> str:
    return resource.replace("REGION", REGION).replace("ACCOUNT", ACCOUNT)


def _as_readme_resource(resource: str) -> str:
    generic = resource.replace(f":{REGION}:", ":REGION:").replace(f":{ACCOUNT}:", ":ACCOUNT:")
    return _generic(generic)


def _operator_table(needed: set[tuple[str, str]]) -> str:
    by_resource: dict[str, set[str]] = defaultdict(set)
    for action, resource in needed:
        by_resource[_as_readme_resource(resource)].add(action)
    lines = ["| actions | resource | commands |", "| --- | --- | --- |"]
    for resource, actions in sorted(by_resource.items()):
        listed = ", ".join(f"`{a}`" for a in sorted(actions))
        lines.append(f"| {listed} | `{resource}` | |")
    return "\n".join(lines)


def test_the_readme_lists_every_permission_the_operator_cli_uses(
    calls: list[Call], iam_session: Session
) -> None:
    """The README's operator table covers every operator call, and lists nothing unused."""
    needed = {
        (action, canonical(c.service, resource))
        for c in calls
        if c.component == recorder.OPERATOR
        for action in ACTIONS.get((c.service, c.operation), ())
        for resource in c.resources
    }
    rows = _readme_rows()

    def covers(actions: set[str], resource: str, action: str, arn: str) -> bool:
        return action in actions and bool(glob_regex(_readme_pattern(resource)).fullmatch(arn))

    uncovered = sorted(n for n in needed if not any(covers(*row, *n) for row in rows))
    unused = []
    if iam_session.complete:
        unused = sorted(
            f"{action} on {resource}"
            for actions, resource in rows
            for action in actions
            if not any(covers({action}, resource, *n) for n in needed)
        )
    table = f"README.md {README_SECTION!r} should read:\n{_operator_table(needed)}"
    assert uncovered == [], f"missing from the README: {uncovered}\n{table}"
    assert unused == [], f"in the README but never used: {unused}\n{table}"
