"""AWS's own DynamoDB engine for the local stack: DynamoDB Local, on 127.0.0.1 only.

moto's DynamoDB accepts what DynamoDB refuses (a 683 KiB item, names and expressions it should
reject) and lets two conditional writes race. DynamoDB Local is the engine AWS ships for
offline use; the npm package `amplify-dynamodb-simulator` carries it (jar + native libraries).

Installed on first use into `.dlpipe/dynamodb-local/<version>/` (ignored by git): `npm pack`
of a pinned version, its sha512 checked against the integrity pinned here, the jar extracted,
and `java/DlpipeDynamoDBLocal.java` compiled against it. That launcher serves DynamoDB Local's
request handler on a Jetty connector bound to 127.0.0.1 (DynamoDB Local itself has no host
option and binds every interface) and never starts its telemetry.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import IO

import requests

from dlpipe.local.processes import stop_child, wait_until_answers

NPM_PACKAGE = "amplify-dynamodb-simulator"
NPM_VERSION = "2.9.30"  # carries DynamoDB Local 1.25.1 (jar dated 2025)
NPM_INTEGRITY = "sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="
LAUNCHER_CLASS = "DlpipeDynamoDBLocal"
LAUNCHER_SOURCE = Path(__file__).resolve().parent / "java" / f"{LAUNCHER_CLASS}.java"
READY_PREFIX = "dlpipe-dynamodb-local listening on port "
ENV_HOME = "DLPIPE_DYNAMODB_LOCAL_HOME"  # where it is installed; default below the repo
# The JVM's heap: a 20,000-file day is ~40 MB of items; the rest is headroom.
JVM_OPTIONS = ("-Xms64m", "-Xmx1g", "-XX:+UseSerialGC")

_INSTALL_LOCK = threading.Lock()


class DynamoDBLocalError(RuntimeError):
    """DynamoDB Local could not be installed, started or reached; the message says how to fix."""


def default_home() -> Path:
    """Where the pinned version is (or will be) installed."""
    configured = os.environ.get(ENV_HOME)
    if configured:
        return Path(configured)
    repo = Path(__file__).resolve().parents[2]
    return repo / ".dlpipe" / "dynamodb-local" / NPM_VERSION


def _require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise DynamoDBLocalError(f"{name} not found: DynamoDB Local needs it ({hint})")
    return path


def _java_hint() -> str:
    return "install Java 17, e.g. `apt-get install openjdk-17-jdk-headless`"


def _integrity_ok(tarball: Path) -> bool:
    algorithm, _, expected = NPM_INTEGRITY.partition("-")
    digest = hashlib.new(algorithm, tarball.read_bytes()).digest()
    return base64.b64encode(digest).decode() == expected


def _npm_pack(workdir: Path) -> Path:
    npm = _require_tool("npm", "install Node.js and npm, e.g. `apt-get install npm`")
    spec = f"{NPM_PACKAGE}@{NPM_VERSION}"
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [npm, "pack", spec, "--pack-destination", str(workdir), "--silent"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    tarballs = sorted(workdir.glob(f"{NPM_PACKAGE}-*.tgz"))
    if done.returncode != 0 or not tarballs:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DynamoDBLocalError(f"npm pack {spec} failed: {last}")
    return tarballs[0]


def _extract_emulator(tarball: Path, target: Path) -> None:
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("package/emulator/")]
        archive.extractall(target, members=members, filter="data")


def _compile_launcher(home: Path) -> None:
    javac = _require_tool("javac", _java_hint())
    (home / "launcher").mkdir(exist_ok=True)
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [
            javac,
            "-cp",
            _classpath(home, launcher=False),
            "-d",
            str(home / "launcher"),
            str(LAUNCHER_SOURCE),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise DynamoDBLocalError(f"compiling the DynamoDB Local launcher failed: {done.stderr}")


def _classpath(home: Path, *, launcher: bool = True) -> str:
    emulator = home / "emulator"
    parts = [str(emulator / "DynamoDBLocal.jar"), str(emulator / "DynamoDBLocal_lib" / "*")]
    if launcher:
        parts.insert(0, str(home / "launcher"))
    return os.pathsep.join(parts)


def _stamp(home: Path) -> Path:
    return home / ".installed"


def is_installed(home: Path | None = None) -> bool:
    """True when the pinned version and its compiled launcher are in `home`."""
    home = home or default_home()
    return _stamp(home).read_text().strip() == NPM_INTEGRITY if _stamp(home).exists() else False


def install(home: Path | None = None) -> Path:
    """Install the pinned DynamoDB Local into `home` (once; verified by checksum)."""
    home = home or default_home()
    with _INSTALL_LOCK:
        if is_installed(home):
            return home
        _require_tool("java", _java_hint())
        home.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
            staging = Path(tmp) / "home"
            staging.mkdir()
            tarball = _npm_pack(Path(tmp))
            if not _integrity_ok(tarball):
                raise DynamoDBLocalError(
                    f"{tarball.name} does not match the pinned integrity {NPM_INTEGRITY[:20]}..."
                )
            _extract_emulator(tarball, Path(tmp))
            (Path(tmp) / "package" / "emulator").rename(staging / "emulator")
            _compile_launcher(staging)
            _stamp(staging).write_text(NPM_INTEGRITY + "\n")
            shutil.rmtree(home, ignore_errors=True)
            staging.rename(home)
    return home


class DynamoDBLocal:
    """A DynamoDB Local child process on 127.0.0.1, started and stopped by PID."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", log_path: str | None = None) -> None:
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self._log_path = log_path
        self._process: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    @property
    def endpoint_url(self) -> str:
        """http://host:port of the running server."""
        if self.port is None:
            raise DynamoDBLocalError("DynamoDB Local is not running")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """PID of the JVM, while it runs."""
        return self._process.pid if self._process else None

    def start(self, timeout_s: float = 60.0) -> str:
        """Install if needed, start the JVM, wait until it answers; return the endpoint URL."""
        home = install()
        java = _require_tool("java", _java_hint())
        cmd = [java, *JVM_OPTIONS, f"-Djava.library.path={home / 'emulator' / 'DynamoDBLocal_lib'}"]
        cmd += ["-cp", _classpath(home), LAUNCHER_CLASS, self.host, str(self.requested_port)]
        env = {**os.environ, "DDB_LOCAL_TELEMETRY": "0"}
        self._process = subprocess.Popen(  # noqa: S603 - fixed arguments
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.port = self._read_port(timeout_s)
        self._drain = threading.Thread(target=self._drain_output, daemon=True)
        self._drain.start()
        self._wait_ready(timeout_s)
        return self.endpoint_url

    def _read_port(self, timeout_s: float) -> int:
        assert self._process is not None
        assert self._process.stdout is not None
        stdout = self._process.stdout
        seen: list[str] = []
        found: list[int] = []

        def read() -> None:
            for line in stdout:
                if line.startswith(READY_PREFIX):
                    found.append(int(line[len(READY_PREFIX) :]))
                    return
                seen.append(line.rstrip())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if found:
            return found[0]
        self.stop()
        last = seen[-1] if seen else "no output"
        raise DynamoDBLocalError(
            f"DynamoDB Local failed to start on port {self.requested_port} "
            f"(in use? Java broken?): {last}"
        )

    def _drain_output(self) -> None:
        # The JVM logs to stdout; a full pipe would block it.
        process = self._process
        if process is None or process.stdout is None:
            return
        sink: IO[str] | None = open(self._log_path, "a") if self._log_path else None  # noqa: SIM115
        try:
            for line in process.stdout:
                if sink is not None:
                    sink.write(line)
                    sink.flush()
        except (OSError, ValueError):
            pass  # the pipe closed under us at stop
        finally:
            if sink is not None:
                sink.close()

    def _wait_ready(self, timeout_s: float) -> None:
        try:
            # Any HTTP answer (DynamoDB Local says 400 to a bare GET) means it serves requests.
            wait_until_answers(self.endpoint_url, timeout_s, require_ok=False)
        except requests.RequestException as exc:
            self.stop()
            raise DynamoDBLocalError(f"DynamoDB Local did not answer within {timeout_s}s") from exc

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the JVM by PID: SIGTERM, then SIGKILL if it lingers."""
        process, self._process = self._process, None
        if process is None:
            return
        stop_child(process, timeout_s)
        if self._drain is not None:
            self._drain.join(timeout_s)
            self._drain = None
        if process.stdout:
            process.stdout.close()
        self.port = None


def main(argv: list[str] | None = None) -> int:
    """`python -m dlpipe.local.dynamodb_local install`: install the pinned version now."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["install"]:
        print("usage: python -m dlpipe.local.dynamodb_local install", file=sys.stderr)
        return 2
    try:
        home = install()
    except DynamoDBLocalError as exc:
        print(f"dlpipe: {exc}", file=sys.stderr)
        return 1
    print(f"DynamoDB Local ({NPM_PACKAGE} {NPM_VERSION}) installed in {home}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
