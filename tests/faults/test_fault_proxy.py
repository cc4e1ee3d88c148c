"""The fault proxy itself, against a local upstream that records what reaches it: forwarding is
byte-exact both ways (large and chunked bodies included), each fault has its shape (botocore
parses the refusals as the AWS errors they imitate), and the plan's choices are reproducible."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan, Rule, RuleFileError, load_plan, plan_from_data
from tests.faults.shapes import classify

ANSWER = os.urandom(3 * 1024 * 1024 + 17)


class Upstream:
    """Records each request's method, path, raw header lines and body; answers ANSWER (or
    chunked when the path says so)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, list[str], bytes]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                lines = [f"{k}: {v}" for k, v in self.headers.items()]
                upstream.seen.append((self.command, self.path, lines, body))
                self.send_response(200)
                self.send_header("X-Upstream", "yes")
                if "chunked" in self.path:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for start in range(0, len(ANSWER), 100_000):
                        piece = ANSWER[start : start + 100_000]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                    return
                self.send_header("Content-Length", str(len(ANSWER)))
                self.end_headers()
                self.wfile.write(ANSWER)

            do_GET = do_PUT = do_POST = _any

            def log_message(self, format: str, *args: object) -> None:
                """Silent."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    thread = threading.Thread(target=up.server.serve_forever, daemon=True)
    thread.start()
    yield up
    up.server.shutdown()
    up.server.server_close()
    thread.join(10)


def proxy_with(upstream: Upstream, *rules: Rule, seed: int = 1) -> FaultProxy:
    return FaultProxy(upstream.url, FaultPlan(list(rules), seed=seed))


def client(service: str, url: str) -> Any:
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=2, read_timeout=5)
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def test_requests_and_answers_pass_byte_for_byte(upstream: Upstream) -> None:
    """A 5 MiB PUT with its own Host and signature headers arrives unchanged; the 3 MiB answer
    and the upstream's headers come back unchanged, on one keep-alive connection, twice."""
    body = os.urandom(5 * 1024 * 1024 + 3)
    headers = {
        "Host": "bucket.example:1234",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/y, Signature=abc",
        "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD",
        "Content-Length": str(len(body)),
    }
    with proxy_with(upstream).running() as proxy:
        connection = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
        for path in ("/bucket/key%20x?partNumber=1&uploadId=u", "/bucket/chunked"):
            connection.request("PUT", path, body=body, headers=headers)
            answer = connection.getresponse()
            assert answer.status == 200
            assert answer.getheader("X-Upstream") == "yes"
            assert answer.read() == ANSWER
        connection.close()
        assert proxy.requests == {"s3.UploadPart": 1, "s3.PutObject": 1}
    method, path, lines, got = upstream.seen[0]
    assert (method, path, got) == ("PUT", "/bucket/key%20x?partNumber=1&uploadId=u", body)
    # http.client adds Accept-Encoding itself; the proxy adds and drops nothing.
    assert lines == ["Accept-Encoding: identity", *(f"{k}: {v}" for k, v in headers.items())]


@pytest.mark.parametrize(
    ("service", "call", "code", "status"),
    [
        (
            "dynamodb",
            lambda c: c.get_item(TableName="t", Key={"k": {"S": "v"}}),
            "ProvisionedThroughputExceededException",
            400,
        ),
        ("sqs", lambda c: c.get_queue_attributes(QueueUrl="http://q/1/q"), "RequestThrottled", 400),
        ("ssm", lambda c: c.get_parameter(Name="/dlpipe/feeds/f"), "ThrottlingException", 400),
        ("s3", lambda c: c.head_object(Bucket="b", Key="k"), "503", 503),
        ("s3", lambda c: c.put_object(Bucket="b", Key="k", Body=b"x"), "SlowDown", 503),
    ],
)
def test_a_throttle_is_the_services_own_answer(
    upstream: Upstream, service: str, call: Any, code: str, status: int
) -> None:
    """botocore reads each injected throttle as the AWS error it imitates (HEAD: no body)."""
    rule = Rule(service=service, fault="throttle")
    with proxy_with(upstream, rule).running() as proxy, pytest.raises(ClientError) as raised:
        call(client(service, proxy.url))
    assert raised.value.response["Error"]["Code"] == code
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert upstream.seen == []


def test_an_error_rule_answers_its_status_and_code_in_the_requests_protocol(
    upstream: Upstream,
) -> None:
    """SQS (JSON protocol) 500 InternalError, only for the named operation."""
    rule = Rule(service="sqs", fault="error", operations=frozenset({"SendMessage"}))
    with proxy_with(upstream, rule).running() as proxy:
        sqs = client("sqs", proxy.url)
        with pytest.raises(ClientError) as raised:
            sqs.send_message(QueueUrl="http://q/1/q", MessageBody="m")
        assert raised.value.response["Error"]["Code"] == "InternalError"
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
        with pytest.raises(ValueError, match=r"Expecting value|JSON|decode"):
            # forwarded: the recorder's random bytes are no SQS answer
            sqs.get_queue_attributes(QueueUrl="http://q/1/q")
    assert [(m, json.loads(b)) for m, _, _, b in upstream.seen] == [
        ("POST", {"QueueUrl": "http://q/1/q"})
    ]


def test_reset_forwards_nothing_and_drop_forwards_then_answers_nothing(
    upstream: Upstream,
) -> None:
    """reset: ECONNRESET, the upstream never sees it. drop: the upstream got the write, the
    client's connection closes without an answer (what botocore retries)."""
    reset = Rule(service="dynamodb", fault="reset", operations=frozenset({"GetItem"}))
    drop = Rule(service="dynamodb", fault="drop", operations=frozenset({"UpdateItem"}))
    with proxy_with(upstream, reset, drop).running() as proxy:
        ddb = client("dynamodb", proxy.url)
        with pytest.raises((ConnectionClosedError, EndpointConnectionError)) as raised:
            ddb.get_item(TableName="t", Key={"k": {"S": "v"}})
        assert "reset" in str(raised.value).lower() or "closed" in str(raised.value).lower()
        assert upstream.seen == []
        with pytest.raises(ConnectionClosedError):
            ddb.update_item(TableName="t", Key={"k": {"S": "v"}})
    assert len(upstream.seen) == 1
    assert upstream.seen[0][3] == b'{"TableName": "t", "Key": {"k": {"S": "v"}}}'


def test_a_delay_holds_the_request_then_forwards_it(upstream: Upstream) -> None:
    """The proxy sleeps the rule's delay while nothing has reached the upstream, then forwards."""
    held: list[tuple[float, int]] = []  # (delay, requests the upstream had seen by then)
    proxy = proxy_with(upstream, Rule(service="s3", fault="delay", delay_s=0.6))
    proxy.plan.sleep = lambda seconds: held.append((seconds, len(upstream.seen)))
    with proxy.running():
        answer = requests.get(f"{proxy.url}/b/k", timeout=60)
    assert answer.content == ANSWER
    assert (held, len(upstream.seen)) == ([(0.6, 0)], 1)


def test_the_plan_is_reproducible_and_keeps_to_window_and_count() -> None:
    """The same seed makes the same choices; a rule fires only inside its window, at most
    `count` times, at about its probability."""

    def run(seed: int) -> list[bool]:
        plan = FaultPlan([Rule(service="sqs", fault="error", probability=0.3)], seed=seed)
        return [plan.decide("sqs", "SendMessage", b"", 1.0) is not None for _ in range(400)]

    assert run(7) == run(7)
    assert run(7) != run(8)
    assert 80 < sum(run(7)) < 160
    plan = FaultPlan([Rule(service="s3", fault="drop", start_s=5, end_s=10, count=3)])
    at = [0.0, 4.9, 5.0, 6.0, 7.0, 8.0, 10.0]
    assert [plan.decide("s3", "PutObject", b"", t) is not None for t in at] == [
        False,
        False,
        True,
        True,
        True,
        False,
        False,
    ]


def test_rule_files_in_json_and_toml(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(
        '{"seed": 3, "rules": [{"service": "dynamodb", "operation": "UpdateItem",'
        ' "fault": "drop", "probability": 0.1, "body_contains": ":completed"}]}'
    )
    (tmp_path / "r.toml").write_text(
        'seed = 3\n[[rules]]\nservice = "dynamodb"\noperations = ["UpdateItem"]\n'
        'fault = "drop"\nprobability = 0.1\nbody_contains = ":completed"\n'
    )
    assert load_plan(tmp_path / "r.json").rules == load_plan(tmp_path / "r.toml").rules
    for bad, message in [
        ({"rules": [{"service": "ec2", "fault": "drop"}]}, "rule 0: service must be"),
        ({"rules": [{"service": "s3", "fault": "explode"}]}, "rule 0: fault must be"),
        ({"rules": [{"service": "s3", "fault": "drop", "probability": 2}]}, "not within 0..1"),
        ({"rules": [{"service": "s3", "fault": "drop", "oops": 1}]}, "unknown field(s) ['oops']"),
        ({"seed": "x", "rules": []}, "seed must be an integer"),
    ]:
        with pytest.raises(
            RuleFileError,
            match=message.replace("(", r"\(")
            .replace(")", r"\)")
            .replace("[", r"\[")
            .replace("]", r"\]"),
        ):
            plan_from_data(bad)


def test_requests_are_named_as_aws_names_them() -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert classify("POST", "/", {"x-amz-target": "DynamoDB_20120810.UpdateItem"}, b"") == (
        "dynamodb",
        "UpdateItem",
    )
    assert classify("POST", "/", {"x-amz-target": "AmazonSQS.ReceiveMessage"}, b"") == (
        "sqs",
        "ReceiveMessage",
    )
    assert classify("POST", "/", {"x-amz-target": "AmazonSSM.GetParameter"}, b"") == (
        "ssm",
        "GetParameter",
    )
    assert classify("POST", "/", form, b"Action=SendMessageBatch&QueueUrl=x") == (
        "sqs",
        "SendMessageBatch",
    )
    cases = {
        ("POST", "/b/k?uploads"): "CreateMultipartUpload",
        ("POST", "/b/k?uploadId=u"): "CompleteMultipartUpload",
        ("PUT", "/b/k?partNumber=2&uploadId=u"): "UploadPart",
        ("PUT", "/b/k"): "PutObject",
        ("DELETE", "/b/k?uploadId=u"): "AbortMultipartUpload",
        ("HEAD", "/b/k"): "HeadObject",
        ("GET", "/b/k"): "GetObject",
        ("GET", "/b?versions&prefix=k"): "ListObjectVersions",
        ("GET", "/b?list-type=2"): "ListObjectsV2",
    }
    for (method, path), operation in cases.items():
        assert classify(method, path, {}, b"") == ("s3", operation)


def test_a_completed_upload_is_gone_afterwards_when_the_plan_says_so(upstream: Upstream) -> None:
    """s3_completed_uploads_gone: the first CompleteMultipartUpload is forwarded (its answer
    dropped here), its retry answers 404 NoSuchUpload as S3 does; other uploads pass."""
    plan = FaultPlan(
        [
            Rule(
                service="s3",
                fault="drop",
                operations=frozenset({"CompleteMultipartUpload"}),
                count=1,
            )
        ],
        s3_completed_uploads_gone=True,
    )
    with FaultProxy(upstream.url, plan).running() as proxy:
        with pytest.raises(requests.ConnectionError):
            requests.post(f"{proxy.url}/b/k?uploadId=u1", data=b"<x/>", timeout=5)
        retry = requests.post(f"{proxy.url}/b/k?uploadId=u1", data=b"<x/>", timeout=5)
        other = requests.post(f"{proxy.url}/b/k?uploadId=u2", data=b"<x/>", timeout=5)
    assert retry.status_code == 404
    assert b"<Code>NoSuchUpload</Code>" in retry.content
    assert other.status_code == 200
    assert [(m, p) for m, p, _, _ in upstream.seen] == [
        ("POST", "/b/k?uploadId=u1"),
        ("POST", "/b/k?uploadId=u2"),
    ]
