"""Record every AWS API call the test suite makes, with the component whose role would make it.

Test code only. The pytest plugin (tests/iam/plugin.py) installs it in the test process, and
tests/iam/site/sitecustomize.py in every Python child process (`dlpipe worker`, `python -m`),
so this module imports nothing but the standard library: a child loads it by file path.

Attribution: the outermost frame of the call stack that belongs to a component decides
(the entry point, not the helper it calls, is what runs under a role). Frames of threads
and thread-pool tasks continue the stack of the code that started them. A stack without a
component frame is setup (local stack, stub provider, benchmarks) or unattributed (shared
libraries called straight from a test); the checker ignores both.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

FILE_ENV = "IAM_RECORDING_FILE"  # the session's JSONL file; not DLPIPE_*: worker envs drop those
TEST_ENV = "IAM_RECORDING_TEST"  # node id of the test running now, inherited by child processes

ORCHESTRATOR = "orchestrator"
DOWNLOADER_LAMBDA = "downloader-lambda"
ECS_WORKER = "ecs-worker"
DOWNLOADERS = "downloaders"  # code both downloader roles run: checked against both
OPERATOR = "operator"
COMPONENTS = (ORCHESTRATOR, DOWNLOADER_LAMBDA, ECS_WORKER, DOWNLOADERS, OPERATOR)
SETUP = "setup"

# Module prefix -> what a frame of it stands for; the longest prefix wins, and "dlpipe.local.stub.server"
# also covers dlpipe.cli.provider_stub, stub_http, ... Packages are about to be renamed: this table is
# the only place that knows them. Anything not listed (records, dlpipe, provider, tests,
# libraries) decides nothing.
MODULE_ROLES: dict[str, str] = {
    "orchestrator": ORCHESTRATOR,
    "dlpipe.services.orchestrator": ORCHESTRATOR,
    "downloader": DOWNLOADERS,
    "dlpipe.services.download": DOWNLOADERS,
    "dlpipe.bootstrap.orchestrator": ORCHESTRATOR,
    "dlpipe.bootstrap.download": DOWNLOADERS,
    "dlpipe.bootstrap.worker_queues": ECS_WORKER,  # only the long-poll worker lists the feeds
    "dlpipe.bootstrap.ops": OPERATOR,
    "downloader.handler": DOWNLOADER_LAMBDA,
    "dlpipe.entrypoints.dispatch": DOWNLOADERS,
    "dlpipe.entrypoints.lambda_batch": DOWNLOADER_LAMBDA,
    "dlpipe.entrypoints.worker": ECS_WORKER,
    "dlpipe.entrypoints.pool": ECS_WORKER,
    "dlpipe.cli.worker": ECS_WORKER,
    "dlpipe.services.ops": OPERATOR,
    "dlpipe.cli.ops": OPERATOR,
    "dlpipe.ui": OPERATOR,  # `dlpipe ui` reads with the operator's credentials, like the CLI
    "dlpipe.local": SETUP,
    "dlpipe.local.stub.server": SETUP,
    "dlpipe.cli.provider_stub": SETUP,
    "bench": SETUP,
}
# Our own packages: the frames a thread passes on, and the `at` field (where a call was made).
OUR_PACKAGES = ("orchestrator", "downloader", "dlpipe", "bench")

LOCAL_ACCOUNT = "123456789012"  # moto's account, as dlpipe/local/terraform.py resolves it
SECRET_SUFFIX = "??????"  # Secrets Manager appends 6 random characters to a secret's name


@lru_cache(maxsize=4096)
def role_of_module(module: str) -> str | None:
    """The MODULE_ROLES entry of the longest prefix of `module`, if any."""
    best: tuple[int, str] | None = None
    for prefix, role in MODULE_ROLES.items():
        matches = module == prefix or module.startswith((prefix + ".", prefix + "_"))
        if matches and (best is None or len(prefix) > best[0]):
            best = (len(prefix), role)
    return best[1] if best else None


def decide(roles: Iterable[str | None]) -> str | None:
    """The component of a stack given outermost first: its outermost component, else setup."""
    seen_setup = False
    for role in roles:
        if role in COMPONENTS:
            return role
        seen_setup = seen_setup or role == SETUP
    return SETUP if seen_setup else None


# --- the call stack, continued across threads ------------------------------------------------

_local = threading.local()


def _module_of(frame: Any) -> str:
    names = frame.f_globals
    name = str(names.get("__name__", ""))
    spec = names.get("__spec__")
    if name == "__main__" and spec is not None:  # `python -m dlpipe.cli.provider_stub`
        return str(spec.name)
    return name


Frame = tuple[str, str, int]  # module, file, line


def _stack(skip: int) -> list[Frame]:
    """Every frame, outermost first, after the frames inherited from the starting thread."""
    frames = []
    frame = sys._getframe(skip + 1)
    while frame is not None:
        frames.append((_module_of(frame), frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    return _origin() + frames


def _origin() -> list[Frame]:
    task_origin = getattr(_local, "task_origin", None)
    if task_origin is not None:
        return list(task_origin)
    return list(getattr(threading.current_thread(), "_iam_origin", ()))


def _ours(module: str) -> bool:
    return module.partition(".")[0] in OUR_PACKAGES


def _summary(stack: list[Frame]) -> list[Frame]:
    """Only the frames that matter for attribution, to keep what a thread inherits small."""
    return [frame for frame in stack if _ours(frame[0])]


def patch_threads() -> None:
    """Make new threads and pool tasks inherit the stack of the code that starts them (once)."""
    if getattr(threading.Thread.start, "_iam_patched", False):
        return
    original_start = threading.Thread.start
    original_submit = ThreadPoolExecutor.submit

    def start(self: threading.Thread) -> None:
        self._iam_origin = _summary(_stack(1))  # type: ignore[attr-defined]
        original_start(self)

    def submit(
        self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Any:
        origin = _summary(_stack(1))

        def run(*inner_args: Any, **inner_kwargs: Any) -> Any:
            _local.task_origin = origin
            try:
                return fn(*inner_args, **inner_kwargs)
            finally:
                _local.task_origin = None

        return original_submit(self, run, *args, **kwargs)

    start._iam_patched = True  # type: ignore[attr-defined]
    threading.Thread.start = start  # type: ignore[method-assign]
    ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]


def current_component() -> str | None:
    """The component the calling code runs as, by the rules above."""
    return decide(role_of_module(module) for module, _, _ in _stack(1))


# --- resources -------------------------------------------------------------------------------


def _sqs_arn(region: str, queue_url: str) -> str:
    # https://sqs.region.amazonaws.com/ACCOUNT/NAME, or http://127.0.0.1:PORT/ACCOUNT/NAME
    parts = [p for p in urlsplit(queue_url).path.split("/") if p]
    account, name = (parts[-2], parts[-1]) if len(parts) >= 2 else (LOCAL_ACCOUNT, parts[-1])
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _table_arn(region: str, table: str, index: str | None = None) -> str:
    arn = (
        table
        if table.startswith("arn:")
        else f"arn:aws:dynamodb:{region}:{LOCAL_ACCOUNT}:table/{table}"
    )
    return f"{arn}/index/{index}" if index else arn


def _secret_arn(region: str, secret_id: str) -> str:
    if secret_id.startswith("arn:"):
        return secret_id
    return f"arn:aws:secretsmanager:{region}:{LOCAL_ACCOUNT}:secret:{secret_id}-{SECRET_SUFFIX}"


def _function_arn(region: str, name: str, qualifier: str | None) -> str:
    arn = (
        name
        if name.startswith("arn:")
        else f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT}:function:{name}"
    )
    return f"{arn}:{qualifier}" if qualifier else arn


def _bus_arn(region: str, bus: str) -> str:
    if bus.startswith("arn:"):
        return bus
    return f"arn:aws:events:{region}:{LOCAL_ACCOUNT}:event-bus/{bus}"


def versioned(service: str, operation: str, params: dict[str, Any]) -> str:
    """`operation`, or for a read of one version of an object (GetObject, HeadObject with
    VersionId) `operation(VersionId)`: AWS authorizes it as s3:GetObjectVersion, not
    s3:GetObject (tests/iam/actions.py)."""
    if service == "s3" and operation in ("GetObject", "HeadObject") and params.get("VersionId"):
        return f"{operation}(VersionId)"
    return operation


def resources(service: str, operation: str, region: str, params: dict[str, Any]) -> list[str]:
    """The ARNs an IAM policy is evaluated against for one call ("*" when none applies)."""
    if service == "dynamodb":
        if "RequestItems" in params:  # BatchGetItem / BatchWriteItem
            return sorted(_table_arn(region, table) for table in params["RequestItems"])
        if "TableName" in params:
            return [_table_arn(region, params["TableName"], params.get("IndexName"))]
    elif service == "sqs":
        if "QueueUrl" in params:
            return [_sqs_arn(region, params["QueueUrl"])]
        if "QueueName" in params:  # GetQueueUrl, CreateQueue
            account = params.get("QueueOwnerAWSAccountId", LOCAL_ACCOUNT)
            return [f"arn:aws:sqs:{region}:{account}:{params['QueueName']}"]
    elif service == "s3" and "Bucket" in params:
        bucket = f"arn:aws:s3:::{params['Bucket']}"
        return [f"{bucket}/{params['Key']}"] if "Key" in params else [bucket]
    elif service == "secretsmanager":
        secret_id = params.get("SecretId") or params.get("Name")
        if secret_id:
            return [_secret_arn(region, secret_id)]
    elif service == "events" and "Entries" in params:  # PutEvents: each entry's bus
        buses = {entry.get("EventBusName") or "default" for entry in params["Entries"]}
        return sorted(_bus_arn(region, bus) for bus in buses)
    elif service == "lambda" and "FunctionName" in params:
        return [_function_arn(region, params["FunctionName"], params.get("Qualifier"))]
    elif service == "ssm" and "Path" in params:  # GetParametersByPath: the path's own ARN
        return [f"arn:aws:ssm:{region}:{LOCAL_ACCOUNT}:parameter{params['Path']}"]
    elif service == "ssm" and "Name" in params:  # GetParameter, PutParameter
        return [f"arn:aws:ssm:{region}:{LOCAL_ACCOUNT}:parameter{params['Name']}"]
    return ["*"]


# --- the recording ---------------------------------------------------------------------------


class Recorder:
    """Appends one JSON line per distinct (component, call, resources, test) to `path`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: set[tuple[Any, ...]] = set()
        self._lock = threading.Lock()
        # O_APPEND and one write per line: lines from many processes never interleave.
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(self, service: str, operation: str, region: str, params: dict[str, Any]) -> None:
        """Attribute one call from the current stack and write it unless already written."""
        stack = _stack(2)
        component = decide(role_of_module(module) for module, _, _ in stack)
        arns = resources(service, operation, region, params)
        operation = versioned(service, operation, params)
        test = os.environ.get(TEST_ENV, "")
        key = (component, service, operation, tuple(arns), test)
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        at = next((f"{_relative(f)}:{n}" for m, f, n in reversed(stack) if _ours(m)), "")
        line = {
            "component": component,
            "service": service,
            "operation": operation,
            "resources": arns,
            "test": test,
            "at": at,
            "pid": os.getpid(),
        }
        os.write(self._fd, (json.dumps(line) + "\n").encode())


def _relative(path: str) -> str:
    for package in OUR_PACKAGES:
        marker = f"{os.sep}{package}{os.sep}"
        if marker in path:
            return package + os.sep + path.rsplit(marker, 1)[1]
    return path


def install_into(client_module: Any, path: str) -> Recorder:
    """Wrap botocore.client.BaseClient._make_api_call (once per process) to record each call."""
    base = client_module.BaseClient
    existing = getattr(base, "_iam_recorder", None)
    if existing is not None:
        return existing  # type: ignore[no-any-return]
    recorder = Recorder(path)
    original = base._make_api_call

    def _make_api_call(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        try:
            model = self.meta.service_model
            recorder.record(model.service_name, operation_name, self.meta.region_name, api_params)
        except Exception as exc:  # recording must never change what a test sees
            sys.stderr.write(f"iam recorder: {type(exc).__name__}: {exc}\n")
        return original(self, operation_name, api_params)

    base._make_api_call = _make_api_call
    base._iam_recorder = recorder
    patch_threads()
    return recorder


def install(path: str) -> Recorder:
    """Install now (botocore imported here)."""
    import botocore.client  # only a process that records needs it

    return install_into(botocore.client, path)


def install_on_import(path: str) -> None:
    """Install as soon as botocore.client is imported: processes that never use boto pay nothing."""
    if "botocore.client" in sys.modules:
        install_into(sys.modules["botocore.client"], path)
        return
    import importlib.abc
    import importlib.machinery

    class _AfterImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path_: Any, target: Any = None) -> Any:
            if name != "botocore.client":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path_)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def exec_then_install(module: Any) -> None:
                exec_module(module)
                install_into(module, path)

            spec.loader.exec_module = exec_then_install  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _AfterImport())
