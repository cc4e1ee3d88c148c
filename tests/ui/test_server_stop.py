"""The test server's stop: it returns, and closes its sockets, whatever became of the loop."""

from __future__ import annotations

import os
import socket

from flask import Flask

from dlpipe.ui.server import BackgroundServer


def test_stop_closes_the_listening_socket_even_when_the_wake_up_pipe_is_gone() -> None:
    """An fd closed under waitress (a teardown in CI once saw `OSError: [Errno 9] Bad file
    descriptor` from pull_trigger) must not turn the server's stop into a test error."""
    server = BackgroundServer(Flask(__name__)).start()
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    os.close(server._server.trigger.trigger)  # the failure is inside waitress
    server.stop()
    probe = socket.socket()
    try:
        refused = probe.connect_ex(("127.0.0.1", port))
    finally:
        probe.close()
    assert refused != 0  # nothing listens any more
