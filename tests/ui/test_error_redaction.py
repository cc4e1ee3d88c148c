"""The web view's error pages print an exception's text masked: a 500 page and a 503 page
name no registered token, `Bearer ...` or signature, and a message cut to its first 300
characters is masked before the cut (no store: the failing views are the test's own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import pytest
from flask import Flask
from flask.testing import FlaskClient

from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.domain.redaction import forget_secrets, register_secret
from dlpipe.services.ops.context import OpsContext
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST

TOKEN = "tok-CANARY-0123456789abcdefghij"
LEAKS = (TOKEN[:11], TOKEN[-11:], "sekret-token-abcdef", "deadbeef")
HOSTILE = "refused Authorization: Bearer sekret-token-abcdef ?X-Amz-Signature=deadbeef"


@pytest.fixture
def app() -> Iterator[Flask]:
    """`dlpipe ui`'s app over no store, with TOKEN registered; its pages raise what a test
    gives them (no page of the app is asked for, so the OpsContext is never read)."""
    forget_secrets()
    register_secret(TOKEN)
    app = create_app(cast(OpsContext, object()))
    answer_only_at(app, HOST, 80)
    yield app
    forget_secrets()


def _raising(app: Flask, error: Exception) -> FlaskClient:
    @app.get("/boom")
    def boom() -> str:
        raise error

    return app.test_client()


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (RuntimeError(f"echo {TOKEN}, {HOSTILE}"), 500),
        (StoreUnavailableError(f"echo {TOKEN}, {HOSTILE}"), 503),
    ],
    ids=["unexpected", "store-down"],
)
def test_an_error_page_masks_the_exceptions_secrets(
    app: Flask, error: Exception, code: int
) -> None:
    response = _raising(app, error).get("/boom")
    page = response.get_data(as_text=True)
    assert response.status_code == code
    assert "echo ***, refused Authorization: ***" in page
    for leak in LEAKS:
        assert leak not in page, page


def test_a_500_page_masks_the_token_before_cutting_the_line(app: Flask) -> None:
    """The token straddles the 300th character: cut first, its first 11 would be too short a
    run to be recognised; masked first, none of it is left."""
    prefix = "RuntimeError: "
    error = RuntimeError("x" * (300 - len(prefix) - 11) + TOKEN)
    page = _raising(app, error).get("/boom").get_data(as_text=True)
    assert "x***" in page
    assert TOKEN[:11] not in page, page
