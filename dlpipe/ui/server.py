"""Serving the web view with waitress on 127.0.0.1: in the foreground, or in a thread for tests."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from flask import Flask
from waitress.server import BaseWSGIServer, create_server

from dlpipe.log import get_logger
from dlpipe.ui.app import answer_only_at

HOST = "127.0.0.1"  # an operator's view of production tables: never on another interface
THREADS = 4


def _server(app: Flask, port: int, socket_map: dict[int, Any] | None = None) -> BaseWSGIServer:
    server = create_server(
        app, map=socket_map, host=HOST, port=port, threads=THREADS, ident="dlpipe-ui"
    )
    assert isinstance(server, BaseWSGIServer)  # one host, one port: never a multi-socket server
    answer_only_at(app, HOST, int(server.getsockname()[1]))  # the bound port, also for port 0
    return server


def _url(server: BaseWSGIServer) -> str:
    return f"http://{HOST}:{int(server.getsockname()[1])}/"


def serve(app: Flask, port: int, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve `app` on 127.0.0.1:`port` until interrupted (Ctrl-C); `on_ready` gets its URL."""
    server = _server(app, port)
    if on_ready is not None:
        on_ready(_url(server))
    server.run()


class BackgroundServer:
    """`app` served by waitress in a thread; `with` starts it and stops it (sockets closed)."""

    def __init__(self, app: Flask, port: int = 0) -> None:
        self._sockets: dict[int, Any] = {}  # waitress's socket map: its loop runs while not empty
        self._server = _server(app, port, self._sockets)
        self._thread = threading.Thread(target=self._serve, name="dlpipe-ui", daemon=True)
        self.url = _url(self._server)

    def start(self) -> BackgroundServer:
        """Start serving; returns self."""
        self._thread.start()
        return self

    def _serve(self) -> None:
        try:
            self._server.run()
        except OSError as exc:
            # A socket or the wake-up pipe closed under waitress's loop: the loop has ended,
            # and stop() still closes what is left; one log line, not a thread's traceback.
            get_logger(component="ui").warning("ui.server_loop_ended", error=str(exc))

    def stop(self) -> None:
        """Close every socket from waitress's own loop (which then ends), stop its threads."""
        trigger: Any = self._server.trigger  # the stubs call it an int; it is the loop's wake-up
        try:
            trigger.pull_trigger(self._close_all)
        except OSError:
            # The wake-up pipe is gone (its fd closed under waitress): the loop cannot be asked,
            # so close the sockets from here (the pipe's own close fails the same way); the
            # loop ends at its next select timeout.
            for channel in list(self._sockets.values()):
                with contextlib.suppress(OSError):
                    channel.close()
        self._thread.join(timeout=10)
        self._server.task_dispatcher.shutdown()

    def _close_all(self) -> None:
        for channel in list(self._sockets.values()):
            channel.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
