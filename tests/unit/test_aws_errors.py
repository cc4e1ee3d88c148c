"""AWS errors at the adapter edge become one typed line without a URL's signature."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from dlpipe.adapters.aws_errors import queue_name, raise_request_error
from dlpipe.domain.errors import AwsRequestError, RecordsError


def test_a_client_error_names_service_operation_resource_and_code_and_drops_a_signature() -> None:
    """One line: service, operation, resource, AWS's code; a presigned query string's values
    are masked (dlpipe/domain/redaction.py)."""
    message = "denied for https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&X-Amz-Credential=x\nmore"
    exc = ClientError({"Error": {"Code": "AccessDenied", "Message": message}}, "GetObject")
    with pytest.raises(AwsRequestError) as raised:
        raise_request_error(exc, "S3", "GetObject", "b")
    text = str(raised.value)
    assert text == (
        "S3 GetObject on 'b' refused: AccessDenied: denied for"
        " https://b.s3.amazonaws.com/k?X-Amz-Signature=***&X-Amz-Credential=***"
    )
    assert isinstance(raised.value, RecordsError)  # the CLI's one-line row
    assert raised.value.code == "AccessDenied"


def test_errors_the_cli_already_names_pass_through_and_others_are_typed() -> None:
    """An unreachable endpoint stays botocore's (the CLI names it); a read timeout is typed."""
    unreachable = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    with pytest.raises(EndpointConnectionError):
        raise_request_error(unreachable, "SQS", "ReceiveMessage", "q")
    with pytest.raises(
        AwsRequestError, match=r"^SQS ReceiveMessage on 'q' refused: ReadTimeoutError"
    ):
        raise_request_error(ReadTimeoutError(endpoint_url="http://x"), "SQS", "ReceiveMessage", "q")
    assert queue_name("https://sqs.eu-west-1.amazonaws.com/123/my-dlq") == "my-dlq"
