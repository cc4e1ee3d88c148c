"""The recorder attributes calls by the outermost component frame and names resources as IAM does."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.iam import recorder

REGION = "us-east-1"


@pytest.mark.parametrize(
    ("module", "role"),
    [
        ("downloader.handler", recorder.DOWNLOADER_LAMBDA),
        ("dlpipe.entrypoints.lambda_batch", recorder.DOWNLOADER_LAMBDA),
        ("dlpipe.bootstrap.download", recorder.DOWNLOADERS),
        ("dlpipe.bootstrap.orchestrator", recorder.ORCHESTRATOR),
        ("dlpipe.bootstrap.ops", recorder.OPERATOR),
        ("dlpipe.entrypoints.worker", recorder.ECS_WORKER),
        ("dlpipe.cli.worker", recorder.ECS_WORKER),
        ("dlpipe.services.download.filerun", recorder.DOWNLOADERS),
        ("dlpipe.adapters.sink", None),
        ("dlpipe.services.orchestrator.flow", recorder.ORCHESTRATOR),
        ("dlpipe.cli.ops.jobs", recorder.OPERATOR),
        ("dlpipe.cli.provider_stub", recorder.SETUP),
        ("dlpipe.local.provision", recorder.SETUP),
        ("dlpipe.adapters.provider_client", None),
        ("dlpipe.adapters.jobs_table", None),
        ("dlpipe.adapters.queue", None),
        ("opsworks", None),
        ("tests.e2e.test_worker", None),
    ],
)
def test_each_module_stands_for_the_role_of_its_longest_listed_prefix(
    module: str, role: str | None
) -> None:
    """downloader.handler is the Lambda, the download service both roles, adapters nothing."""
    assert recorder.role_of_module(module) == role


@pytest.mark.parametrize(
    ("stack", "component"),
    [
        ([None, recorder.SETUP, recorder.ORCHESTRATOR, None], recorder.ORCHESTRATOR),
        ([None, recorder.ECS_WORKER, recorder.DOWNLOADERS], recorder.ECS_WORKER),
        ([None, recorder.SETUP, None], recorder.SETUP),
        ([None, None], None),
    ],
)
def test_the_outermost_component_decides_and_setup_only_without_one(
    stack: list[str | None], component: str | None
) -> None:
    """A component anywhere beats setup; the outermost component beats inner ones."""
    assert recorder.decide(stack) == component


def _in_module(name: str, function: Any) -> Any:
    """`function` re-created as if defined in module `name`."""
    namespace = {**function.__globals__, "__name__": name}
    return type(function)(
        function.__code__, namespace, function.__name__, None, function.__closure__
    )


def test_a_thread_continues_the_stack_of_the_code_that_started_it() -> None:
    """A thread started under the Lambda handler is the Lambda's, though its own frames are not."""
    recorder.patch_threads()
    seen: list[str | None] = []

    def run() -> None:
        seen.append(recorder.current_component())

    def start() -> None:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()

    _in_module("downloader.handler", start)()
    assert seen == [recorder.DOWNLOADER_LAMBDA]


def test_a_pool_task_continues_the_stack_of_the_code_that_submitted_it() -> None:
    """A pool shared by two components attributes each task to the one that submitted it."""
    recorder.patch_threads()
    with ThreadPoolExecutor(1) as pool:

        def submit() -> str | None:
            return pool.submit(recorder.current_component).result()

        first = _in_module("dlpipe.entrypoints.worker", submit)()
        second = _in_module("dlpipe.services.orchestrator.flow", submit)()
    assert (first, second) == (recorder.ECS_WORKER, recorder.ORCHESTRATOR)


@pytest.mark.parametrize(
    ("service", "params", "arns"),
    [
        (
            "dynamodb",
            {"TableName": "jobs", "IndexName": "StatusIndex"},
            ["arn:aws:dynamodb:us-east-1:123456789012:table/jobs/index/StatusIndex"],
        ),
        (
            "dynamodb",
            {"RequestItems": {"b": {}, "a": {}}},
            [
                "arn:aws:dynamodb:us-east-1:123456789012:table/a",
                "arn:aws:dynamodb:us-east-1:123456789012:table/b",
            ],
        ),
        (
            "sqs",
            {"QueueUrl": "http://127.0.0.1:5000/123456789012/q1"},
            ["arn:aws:sqs:us-east-1:123456789012:q1"],
        ),
        ("s3", {"Bucket": "b", "Key": "k/1"}, ["arn:aws:s3:::b/k/1"]),
        ("s3", {"Bucket": "b", "Prefix": "k"}, ["arn:aws:s3:::b"]),
        (
            "secretsmanager",
            {"SecretId": "dlpipe/token"},
            ["arn:aws:secretsmanager:us-east-1:123456789012:secret:dlpipe/token-??????"],
        ),
        (
            "lambda",
            {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:f:live"},
            ["arn:aws:lambda:us-east-1:123456789012:function:f:live"],
        ),
        ("sts", {}, ["*"]),
    ],
)
def test_resources_are_the_arns_iam_evaluates(
    service: str, params: dict[str, Any], arns: list[str]
) -> None:
    """Tables and indexes, queues from URLs, objects and buckets, secrets with their suffix."""
    assert recorder.resources(service, "Op", REGION, params) == arns
