"""The embedded AWS emulator: moto in server mode, made as strict as AWS where dlpipe relies on it.

A thin WSGI layer around moto's app refuses DynamoDB requests (DynamoDB Local serves them:
`dynamodb_local.py`) and answers an expired presigned URL 403 as S3 does; `moto_sqs`,
`moto_s3` and `moto_memory` patch defects of moto. Why each: docs/ARCHITECTURE.md, "Why the local
emulator is patched". `LocalAws` starts both children (moto and DynamoDB Local) and gives the
environment that points a process at them.
"""

from __future__ import annotations

import argparse
import calendar
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from dlpipe.config import ENV_ALLOW_HTTP_URLS, ENV_ALLOW_PRIVATE_URL_HOSTS, ENV_URL_ALLOWED_HOSTS
from dlpipe.local import moto_memory, moto_s3, moto_sqs
from dlpipe.local.ddb_limits import limits_from_env
from dlpipe.local.ddb_throughput import ThroughputProxy
from dlpipe.local.dynamodb_local import DynamoDBLocal
from dlpipe.local.processes import stop_child, wait_until_answers

DEFAULT_HOST = "127.0.0.1"
READY_PREFIX = "dlpipe-emulator listening on port "

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def presigned_url_expired(query_string: str, now_s: float) -> bool:
    """True when a presigned URL's query string says it expired before `now_s`."""
    params = parse_qs(query_string)
    if "X-Amz-Date" in params and "X-Amz-Expires" in params:
        try:
            signed = datetime.strptime(params["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ")
            expires_s = int(params["X-Amz-Expires"][0])
        except ValueError:
            return True
        return calendar.timegm(signed.timetuple()) + expires_s < now_s
    if "Expires" in params and "Signature" in params:
        try:
            return int(params["Expires"][0]) < now_s
        except ValueError:
            return True
    return False


_EXPIRED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
)


_MISROUTED_DYNAMODB_BODY = (
    b'{"__type":"com.amazonaws.dynamodb.v20120810#UnrecognizedClientException",'
    b'"message":"dlpipe: DynamoDB is served by DynamoDB Local, not moto: this client ignored '
    b'AWS_ENDPOINT_URL_DYNAMODB"}'
)


class StrictEmulatorApp:
    """WSGI middleware: refuse expired presigned URLs and DynamoDB requests that reached moto."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if presigned_url_expired(environ.get("QUERY_STRING", ""), time.time()):
            start_response(
                "403 Forbidden",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(_EXPIRED_BODY)))],
            )
            return [_EXPIRED_BODY]
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            body = _MISROUTED_DYNAMODB_BODY
            start_response(
                "400 Bad Request",
                [
                    ("Content-Type", "application/x-amz-json-1.0"),
                    ("Content-Length", str(len(body))),
                ],
            )
            return [body]
        return self._app(environ, start_response)


def build_app() -> StrictEmulatorApp:
    """moto's full server app behind the strictness layer."""
    # Imported here: moto is heavy and only the emulator child process needs it.
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415
        DomainDispatcherApplication,
        create_backend_app,
    )

    moto_sqs.apply_fixes()  # moto's SQS loses messages and slows quadratically without
    moto_memory.apply_fixes()  # moto keeps every object it made, and copies whole buckets
    moto_s3.apply_fixes()  # moto completes a multipart upload whatever its If-Match says
    return StrictEmulatorApp(DomainDispatcherApplication(create_backend_app))


def serve(host: str, port: int) -> None:
    """Run the emulator in this process until SIGTERM/SIGINT; print the bound port first."""
    from werkzeug.serving import make_server  # noqa: PLC0415 - child process only

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server(host, port, build_app(), threaded=True)
    os.environ.setdefault("MOTO_PORT", str(server.port))

    def shutdown(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    print(f"{READY_PREFIX}{server.port}", flush=True)
    server.serve_forever()


class EmulatorError(RuntimeError):
    """The emulator could not be started or did not answer."""


class Emulator:
    """A moto server child process on 127.0.0.1, started and stopped by PID."""

    def __init__(self, port: int = 0, host: str = DEFAULT_HOST, log_path: str | None = None):
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self._log_path = log_path
        self._process: subprocess.Popen[str] | None = None

    @property
    def endpoint_url(self) -> str:
        """http://host:port of the running emulator."""
        if self.port is None:
            raise EmulatorError("emulator is not running")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """PID of the child process, while it runs."""
        return self._process.pid if self._process else None

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the child, wait until it answers, and return its endpoint URL."""
        stderr = open(self._log_path, "a") if self._log_path else subprocess.DEVNULL  # noqa: SIM115
        cmd = [sys.executable, "-m", "dlpipe.local.emulator", "--host", self.host]
        cmd += ["--port", str(self.requested_port)]
        try:
            self._process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
                cmd, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        finally:
            if not isinstance(stderr, int):
                stderr.close()  # the child holds its own descriptor
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise EmulatorError(f"emulator failed to start (port {self.requested_port} in use?)")
        self.port = int(line[len(READY_PREFIX) :])
        self._wait_ready(timeout_s)
        return self.endpoint_url

    def _wait_ready(self, timeout_s: float) -> None:
        try:
            wait_until_answers(
                f"{self.endpoint_url}/moto-api/data.json", timeout_s, require_ok=True
            )
        except requests.RequestException as exc:
            self.stop()
            raise EmulatorError(f"emulator did not answer within {timeout_s}s") from exc

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the child by PID: SIGTERM, then SIGKILL if it lingers."""
        process, self._process = self._process, None
        if process is None:
            return
        stop_child(process, timeout_s)
        if process.stdout:
            process.stdout.close()
        self.port = None

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def local_environment(
    endpoint_url: str, dynamodb_endpoint_url: str | None = None
) -> dict[str, str]:
    """The AWS variables a process needs to talk to the local stack (dummy credentials).

    `AWS_ENDPOINT_URL` is moto (S3, SQS, Secrets Manager); the standard per-service variable
    `AWS_ENDPOINT_URL_DYNAMODB` sends DynamoDB to DynamoDB Local. The stub's presigned URLs
    are plain http to moto on loopback: the URL policy allows exactly that host:port.
    """
    env = {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
    if dynamodb_endpoint_url:
        env["AWS_ENDPOINT_URL_DYNAMODB"] = dynamodb_endpoint_url
    env[ENV_URL_ALLOWED_HOSTS] = urlsplit(endpoint_url).netloc
    env[ENV_ALLOW_HTTP_URLS] = "true"
    env[ENV_ALLOW_PRIVATE_URL_HOSTS] = "true"
    return env


class LocalAws:
    """The embedded local AWS: moto (S3, SQS, Secrets Manager) and DynamoDB Local, both child
    processes on 127.0.0.1, started together and stopped by PID. With a per-partition limit
    set (DLPIPE_LOCAL_PARTITION_WCU / _RCU), DynamoDB is reached through the throughput proxy
    (`ddb_throughput.py`, a thread of this process), which throttles as DynamoDB does."""

    def __init__(self, port: int = 0, dynamodb_port: int = 0, log_dir: str | None = None):
        moto_log = os.path.join(log_dir, "emulator.log") if log_dir else None
        ddb_log = os.path.join(log_dir, "dynamodb-local.log") if log_dir else None
        self.moto = Emulator(port=port, log_path=moto_log)
        self.dynamodb = DynamoDBLocal(port=dynamodb_port, log_path=ddb_log)
        self._limits = limits_from_env(os.environ)
        self.throughput: ThroughputProxy | None = None

    @property
    def endpoint_url(self) -> str:
        """moto's endpoint (every service but DynamoDB)."""
        return self.moto.endpoint_url

    @property
    def dynamodb_endpoint_url(self) -> str:
        """DynamoDB's endpoint: the throughput proxy's when it runs, else DynamoDB Local's."""
        if self.throughput is not None:
            return self.throughput.endpoint_url
        return self.dynamodb.endpoint_url

    @property
    def pid(self) -> int | None:
        """PID of the moto child (the emulator that serves the data path)."""
        return self.moto.pid

    @property
    def pids(self) -> dict[str, int | None]:
        """PIDs of both children, by name."""
        return {"moto": self.moto.pid, "dynamodb-local": self.dynamodb.pid}

    def environment(self) -> dict[str, str]:
        """The variables another process sets to use this stack."""
        return local_environment(self.endpoint_url, self.dynamodb_endpoint_url)

    def start(self) -> LocalAws:
        """Start both children (DynamoDB Local's JVM starts while moto imports)."""
        starter = threading.Thread(target=self._start_dynamodb, daemon=True)
        self._dynamodb_error: BaseException | None = None
        starter.start()
        try:
            self.moto.start()
        except BaseException:
            starter.join()
            self.stop()  # DynamoDB Local may have started beside it: no orphan JVM
            raise
        starter.join()
        if self._dynamodb_error is not None:
            self.stop()
            raise self._dynamodb_error
        if self._limits is not None:
            self.throughput = ThroughputProxy(self.dynamodb.endpoint_url, self._limits).start()
        return self

    def _start_dynamodb(self) -> None:
        try:
            self.dynamodb.start()
        except BaseException as exc:  # noqa: BLE001 - re-raised by start() on the caller's thread
            self._dynamodb_error = exc

    def stop(self) -> None:
        """Stop the throughput proxy, if any, and both children by PID."""
        proxy, self.throughput = self.throughput, None
        try:
            if proxy is not None:
                proxy.stop()
            self.moto.stop()
        finally:
            self.dynamodb.stop()

    def __enter__(self) -> LocalAws:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m dlpipe.local.emulator [--host H] [--port P]`."""
    parser = argparse.ArgumentParser(description="dlpipe's strict moto server")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    serve(args.host, args.port)


if __name__ == "__main__":
    main()
