"""Logs never carry a presigned URL's signature, a PEM key, or a secret-named value."""

from __future__ import annotations

import io
import json
import logging

from dlpipe.domain.redaction import forget_secrets, register_secret
from dlpipe.domain.redaction import redact as redact_text
from dlpipe.log import configure_logging, get_logger, redact_stdlib_logs

URL = "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F&X-Amz-Signature=deadbeef&X-Amz-Expires=60"


def test_signature_and_credential_are_masked_but_the_rest_of_the_url_stays() -> None:
    """X-Amz-Signature and X-Amz-Credential values become ***; expiry stays readable."""
    masked = redact_text(URL)
    assert "deadbeef" not in masked
    assert "AKIA" not in masked
    assert "X-Amz-Expires=60" in masked


def test_pem_blocks_are_removed() -> None:
    """A PEM private key inside a message is replaced whole."""
    text = "key -----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY----- end"
    assert "MIIEv" not in redact_text(text)


def test_module_level_logger_created_before_configuration_is_still_redacted() -> None:
    """A logger made at import time follows the configuration made later, redaction included."""
    early = get_logger(component="test")
    stream = io.StringIO()
    configure_logging(stream=stream)
    early.info("job.claimed", url=URL, token="t0ps3cret", aes_key=b"\x00" * 32)
    line = json.loads(stream.getvalue().splitlines()[-1])
    assert line["component"] == "test"
    assert "deadbeef" not in stream.getvalue()
    assert line["token"] == "***"
    assert "t0ps3cret" not in stream.getvalue()
    configure_logging()


def test_the_durable_sdk_log_records_and_their_tracebacks_are_redacted() -> None:
    """The SDK logs a failed step with logger.exception: its message and the traceback (which
    quotes the exception's message) pass the one redaction, whichever handler prints them."""
    token = "CANARYsdk0traceback0token"
    register_secret(token)
    sdk = logging.getLogger("aws_durable_execution_sdk_python.test_only")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    sdk.addHandler(handler)
    try:
        redact_stdlib_logs("aws_durable_execution_sdk_python.test_only")
        try:
            _refuse(f"listing.date: got {token.lower()!r}")
        except ValueError:
            sdk.exception("step %s failed: %s", "fetch", token.upper())
    finally:
        sdk.removeHandler(handler)
        forget_secrets()
    printed = stream.getvalue()
    assert "Traceback" in printed
    assert "ValueError: listing.date: got '***'" in printed
    assert "canarysdk0tr" not in printed.lower()


def _refuse(message: str) -> None:
    raise ValueError(message)
