"""The served web view answers only requests addressed to itself: a page whose DNS name
rebinds to 127.0.0.1 sends its own name as Host and must not read the operator's view."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from tests.ui.seed import SeededDay

pytestmark = pytest.mark.integration


def get(ui_url: str, host: str) -> tuple[int, str]:
    """GET / from the served view with exactly `host` as the Host header."""
    port = urlsplit(ui_url).port
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/", headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


@pytest.mark.parametrize(
    "host", ["attacker.example", "attacker.example:{port}", "127.0.0.1:1", "localhost", ""]
)
def test_a_foreign_host_header_gets_a_one_line_400(
    ui_url: str, seeded: SeededDay, host: str
) -> None:
    """Another name (with or without the view's port), another port, or none: refused."""
    status, page = get(ui_url, host.format(port=urlsplit(ui_url).port))
    assert status == 400, page[:300]
    assert "batch-" not in page  # none of the operator's data
    assert "this view answers only at" in page


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST"])
def test_the_views_own_address_is_answered(ui_url: str, seeded: SeededDay, name: str) -> None:
    """127.0.0.1:PORT and localhost:PORT, as a browser on this machine sends them."""
    status, page = get(ui_url, f"{name}:{urlsplit(ui_url).port}")
    assert status == 200
    assert "<h1>Batches of " in page
