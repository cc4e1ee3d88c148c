"""What a request is (service and operation, as AWS names them) and what AWS answers when it
refuses one (status, headers, body), per protocol: DynamoDB's and SSM's JSON, SQS's JSON or
query protocol, S3's REST XML."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

_FORM = "application/x-www-form-urlencoded"
_TARGETS = {
    "DynamoDB_20120810": "dynamodb",
    "AmazonSQS": "sqs",
    "secretsmanager": "secrets",
    "AmazonSSM": "ssm",
}


def classify(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[str, str]:
    """(service, operation) of a request; `headers` with lower-case names. S3 is what is
    neither JSON-targeted nor a query-protocol form."""
    target = headers.get("x-amz-target", "")
    if target:
        prefix, _, operation = target.partition(".")
        return _TARGETS.get(prefix, prefix.lower()), operation
    if headers.get("content-type", "").startswith(_FORM):
        action = parse_qs(body.decode(errors="replace")).get("Action", [""])[0]
        return "sqs", action
    return "s3", s3_operation(method, path, headers)


def s3_operation(method: str, path: str, headers: dict[str, str]) -> str:
    """The S3 operation of a path-style request (`/bucket[/key]?query`)."""
    parts = urlsplit(path)
    query = parse_qs(parts.query, keep_blank_values=True)
    has_key = "/" in parts.path.lstrip("/")
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        return "CompleteMultipartUpload" if "uploadId" in query else "PostObject"
    if method == "PUT":
        if "uploadId" in query:
            return "UploadPart"
        if not has_key:
            return "CreateBucket"
        return "CopyObject" if "x-amz-copy-source" in headers else "PutObject"
    if method == "DELETE":
        if "uploadId" in query:
            return "AbortMultipartUpload"
        return "DeleteObject" if has_key else "DeleteBucket"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if has_key:
        return "ListParts" if "uploadId" in query else "GetObject"
    for flag, operation in (
        ("uploads", "ListMultipartUploads"),
        ("versions", "ListObjectVersions"),
    ):
        if flag in query:
            return operation
    return "ListObjectsV2" if query.get("list-type") == ["2"] else "ListObjects"


# The code each service answers a throttled request with, and its HTTP status.
THROTTLE = {
    "dynamodb": (400, "ProvisionedThroughputExceededException"),
    "sqs": (400, "RequestThrottled"),
    "s3": (503, "SlowDown"),
    "secrets": (400, "ThrottlingException"),
    "ssm": (400, "ThrottlingException"),
}


def error_response(
    service: str, status: int, code: str, headers: dict[str, str], method: str
) -> tuple[int, list[tuple[str, str]], bytes]:
    """An AWS-shaped refusal in the protocol the request used."""
    request_id = str(uuid.uuid4())
    message = f"injected by the fault proxy ({code})"
    fault = "Sender" if status < 500 else "Receiver"
    if "x-amz-target" in headers:
        domain = {
            "dynamodb": "com.amazonaws.dynamodb.v20120810",
            "sqs": "com.amazonaws.sqs",
        }.get(service, f"com.amazonaws.{service}")
        body = f'{{"__type":"{domain}#{code}","message":"{message}"}}'.encode()
        extra = [("x-amzn-query-error", f"{code};{fault}")] if service == "sqs" else []
        return (
            status,
            [
                ("Content-Type", "application/x-amz-json-1.0"),
                ("x-amzn-RequestId", request_id),
                *extra,
            ],
            body,
        )
    if service == "sqs":  # query protocol
        body = (
            '<?xml version="1.0"?><ErrorResponse><Error>'
            f"<Type>{fault}</Type><Code>{code}</Code><Message>{message}</Message>"
            f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
        return status, [("Content-Type", "text/xml")], body
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<RequestId>{request_id}</RequestId></Error>"
    ).encode()
    s3_headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
    return status, s3_headers, b"" if method == "HEAD" else body
