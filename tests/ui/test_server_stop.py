"""The test server's stop: it returns, and closes its sockets, whatever became of the loop."""

from __future__ import annotations

import errno
import os
import socket

import pytest
from flask import Flask
from structlog.testing import capture_logs

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


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_os_error_ending_the_loop_is_one_log_line_not_a_thread_traceback() -> None:
    """waitress's select can meet an fd that stop() closed from this thread a moment before
    (EBADF; 2 of 300 stops with a closed wake-up pipe, the warning CI printed): the server's
    thread logs `ui.server_loop_ended` and ends, and stop() still returns."""
    server = BackgroundServer(Flask(__name__))

    def select_on_a_closed_fd() -> None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    server._server.run = select_on_a_closed_fd  # type: ignore[method-assign]
    with capture_logs() as logs:
        server.start()
        server._thread.join(timeout=10)
    server.stop()
    assert [(e["event"], e["error"]) for e in logs] == [
        ("ui.server_loop_ended", "[Errno 9] Bad file descriptor")
    ]
