"""A multipart completion that S3 carried out but whose response was lost, sent again.

botocore re-sends a CompleteMultipartUpload whose response never arrived. Real S3 may then
answer 200 again (same ETag) or NoSuchUpload: the upload is gone because it completed. moto
accepts the retry, so the NoSuchUpload answer is forced here: botocore hooks on an S3 client
of the test's own let the first send complete the upload on the emulator, drop its response,
and answer the retry with S3's NoSuchUpload error.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.sink import MultipartSink, ObjectExists
from dlpipe.config import Settings
from dlpipe.domain.download_errors import DestinationUnavailableError
from dlpipe.local.provision import Provisioned
from tests.integration.test_downloader_kit import MULTIPART_SIZE
from tests.integration.test_publish_once import versions

pytestmark = pytest.mark.integration
COMPLETE = "CompleteMultipartUpload"
NO_SUCH_UPLOAD = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code>'
    b"<Message>The specified upload does not exist.</Message></Error>"
)


class _Body:
    """The raw body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


class LostCompletion:
    """The first CompleteMultipartUpload lands and its response is lost; botocore re-sends it
    and the re-sent one is answered `retry_answer` (None: it goes to the emulator as it is).
    `calls` lists every S3 operation the client made, retries included."""

    def __init__(self, client: Any, retry_answer: bytes | None) -> None:
        self._answer, self.lost, self.calls = retry_answer, False, list[str]()
        events = client.meta.events
        events.register(f"needs-retry.s3.{COMPLETE}", self._lose_first)
        events.register(f"before-send.s3.{COMPLETE}", self._answer_retry)
        events.register("before-send.s3", self._record)

    def _record(self, event_name: str, **_: Any) -> None:
        self.calls.append(event_name.rsplit(".", 1)[-1])

    def _lose_first(self, response: tuple[Any, Any] | None, **_: Any) -> int | None:
        if self.lost or response is None or response[0].status_code != 200:
            return None
        self.lost = True
        return 0  # retry now, as after a dropped connection

    def _answer_retry(self, request: Any, **_: Any) -> AWSResponse | None:
        if not self.lost or self._answer is None:
            return None
        return AWSResponse(
            request.url, 404, {"Content-Type": "application/xml"}, _Body(self._answer)
        )


@pytest.fixture
def own_s3(aws_env: dict[str, str]) -> Any:
    """An S3 client of the test's own: its hooks touch no other test."""
    return AwsClients(Settings.from_env()).s3


def _upload(s3: Any, bucket: str, key: str, data: bytes) -> MultipartSink:
    sha256 = hashlib.sha256(data).hexdigest()
    sink = MultipartSink(
        s3, bucket, key, part_bytes=MULTIPART_SIZE - 123_457, expected_sha256=sha256
    )
    sink.write(data)
    return sink


def _data(size: int = MULTIPART_SIZE, seed: bytes = b"a") -> bytes:
    return (hashlib.sha256(seed).digest() * (size // 32 + 1))[:size]


def test_a_retried_completion_answered_no_such_upload_is_our_published_object(
    own_s3: Any, clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """The object at the key is ours (size, SHA-256, multipart ETag of our parts): published,
    decided by one HeadObject before anything else (no abort, no second upload)."""
    bucket, key, data = str(provisioned.destination_bucket), f"{entity}/retried", _data()
    lost = LostCompletion(own_s3, NO_SUCH_UPLOAD)
    sink = _upload(own_s3, bucket, key, data)
    sink.publish(hashlib.sha256(data).hexdigest())
    assert lost.lost
    assert sink.published
    assert lost.calls[-3:] == [COMPLETE, COMPLETE, "HeadObject"]
    sink.abort()  # the caller's finally: nothing to do for a published upload
    assert lost.calls[-1] == "HeadObject"
    assert len(versions(clients, bucket, key)) == 1


def test_a_retried_completion_answered_200_again_is_published(
    own_s3: Any, clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """The emulator answers the re-sent completion itself (200, as S3 may): published once."""
    bucket, key, data = str(provisioned.destination_bucket), f"{entity}/again", _data()
    lost = LostCompletion(own_s3, None)
    sink = _upload(own_s3, bucket, key, data)
    # S3 may refuse the re-send with 412 instead: the caller then verifies the object.
    with contextlib.suppress(ObjectExists):
        sink.publish(hashlib.sha256(data).hexdigest())
    assert lost.lost
    assert len(versions(clients, bucket, key)) == 1


def _aborted_before_completion(own_s3: Any, other_s3: Any, then_put: bytes | None) -> None:
    """Just before our completion, a successor aborts our upload (and publishes `then_put`);
    our completion gets S3's answer, NoSuchUpload (moto would answer a 500)."""

    def abort(params: dict[str, Any], **_: Any) -> None:
        bucket, key = params["Bucket"], params["Key"]
        other_s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=params["UploadId"])
        if then_put is not None:
            other_s3.put_object(Bucket=bucket, Key=key, Body=then_put)

    def no_such_upload(request: Any, **_: Any) -> AWSResponse:
        return AWSResponse(request.url, 404, {}, _Body(NO_SUCH_UPLOAD))

    own_s3.meta.events.register(f"before-parameter-build.s3.{COMPLETE}", abort)
    own_s3.meta.events.register(f"before-send.s3.{COMPLETE}", no_such_upload)


def test_no_such_upload_with_nothing_at_the_key_stays_a_transient_failure(
    own_s3: Any, clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """Our upload was aborted (a successor took the file over) and nothing was published."""
    bucket, key, data = str(provisioned.destination_bucket), f"{entity}/aborted", _data()
    sink = _upload(own_s3, bucket, key, data)
    _aborted_before_completion(own_s3, clients.s3, None)
    with pytest.raises(DestinationUnavailableError, match="NoSuchUpload"):
        sink.publish(hashlib.sha256(data).hexdigest())
    assert not sink.published


def test_no_such_upload_with_another_object_at_the_key_is_object_exists(
    own_s3: Any, clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """Our upload gone and someone else's object at the key: the publish was refused."""
    bucket, key, data = str(provisioned.destination_bucket), f"{entity}/taken", _data()
    sink = _upload(own_s3, bucket, key, data)
    _aborted_before_completion(own_s3, clients.s3, _data(seed=b"b"))
    with pytest.raises(ObjectExists):
        sink.publish(hashlib.sha256(data).hexdigest())
    assert len(versions(clients, bucket, key)) == 1
