"""structlog JSON logging with a redaction pass: no signature, key or token ever leaves.

A value under a secret's name is masked whole; any other text goes through the one
redaction, `dlpipe/domain/redaction.py`'s `redact`.

structlog is imported when a logger is first used or logging is configured, not when a module
that holds a logger is imported: a command's `--help` never pays for it (about 0.15 s)."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from types import ModuleType
from typing import Any

from dlpipe.domain.redaction import REDACTED, redact

# Keys whose values are secret whatever they hold.
_SECRET_KEYS = frozenset(
    {
        "authorization",
        "token",
        "provider_token",
        "private_key",
        "aes_key",
        "encrypted_key",
        "encrypted_aes_key",
        "secret",
        "password",
        "plaintext",
    }
)


def _redact_value(key: str, value: Any) -> Any:
    if key.lower() in _SECRET_KEYS:
        return REDACTED
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {k: _redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(key, v) for v in value]
    return value


def redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: redact every field of the event."""
    for key in list(event_dict):
        event_dict[key] = _redact_value(key, event_dict[key])
    return event_dict


def _structlog() -> ModuleType:
    import structlog  # noqa: PLC0415 - imported on first use (the module's docstring)

    return structlog


def configure_logging(level: str = "INFO", stream: Any = None) -> None:
    """Send JSON log lines to stderr (or `stream`); safe to call more than once."""
    structlog = _structlog()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_processor,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.WriteLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def logging_config() -> dict[str, Any]:
    """The current configuration, for `restore_logging` (a run that logs to a file it closes)."""
    return dict(_structlog().get_config())


def restore_logging(config: dict[str, Any]) -> None:
    """Put back a configuration `logging_config` returned."""
    _structlog().configure(**config)


class RedactingFilter(logging.Filter):
    """A standard-library log record, redacted: its message (arguments applied) and its
    traceback pass the one redaction. The durable SDK logs a failed step or execution with
    the exception's traceback, whose message may quote a provider's echo of our token; the
    traceback joins the message, so whichever formatter prints the record (Lambda's text or
    JSON, `dlpipe run`'s log file) prints it redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and record.exc_info[0] is not None:
            text += "\n" + logging.Formatter().formatException(record.exc_info).rstrip()
        elif record.exc_text:
            text += "\n" + record.exc_text
        record.msg, record.args = redact(text), ()
        record.exc_info, record.exc_text = None, None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redact_stdlib_logs(*prefixes: str) -> None:
    """Put RedactingFilter on the root logger, its handlers and the last-resort handler, and on
    every logger whose name starts with one of `prefixes` (a logger's filter sees only its own
    records: a library's module loggers each need one). Once per logger."""
    root = logging.getLogger()
    loggers: list[logging.Filterer] = [root, *root.handlers]
    if logging.lastResort is not None:
        loggers.append(logging.lastResort)
    loggers += [
        logger
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and name.startswith(prefixes)
    ]
    for logger in loggers:
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


class _Logger:
    """A logger whose structlog logger is made on first use (then kept: structlog's own is
    lazy, so later configuration still applies to it)."""

    __slots__ = ("_bound", "_logger")

    def __init__(self, bound: dict[str, Any]) -> None:
        self._bound = bound
        self._logger: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._logger is None:
            self._logger = _first_use().get_logger("dlpipe", **self._bound)
        return getattr(self._logger, name)


def get_logger(**bound: Any) -> Any:
    """A structlog logger with `bound` context; lazy, so later configuration still applies."""
    return _Logger(bound)


def _first_use() -> ModuleType:
    # Redaction must hold even in a process that never calls configure_logging (a library use,
    # a Lambda handler): install the JSON + redaction pipeline unless someone configured
    # structlog already.
    structlog = _structlog()
    if not structlog.is_configured():
        configure_logging()
    return structlog
