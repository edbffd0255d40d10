"""One log line per event, carrying the request id of the call being served: a JSON object
for machines (files, pipes, collectors), or a short human-readable line on a terminal.
`LOG_FORMAT` chooses: `json`, `text`, or `auto` (the default: text when stderr is a terminal)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

from petstore_common.request_context import NO_REQUEST_ID, current_request_id

# Attributes every LogRecord has; anything else was passed through `extra=` and is logged.
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


@functools.lru_cache(maxsize=4)
def _second(whole_seconds: int) -> str:
    """The timestamp up to the second: the same for every record within it (most of them,
    under load), so it is formatted once."""
    return datetime.fromtimestamp(whole_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _timestamp(created: float) -> str:
    """ISO 8601 in UTC with milliseconds, as datetime.isoformat(timespec="milliseconds") writes it."""
    whole = int(created)
    micro = round((created - whole) * 1e6)  # rounded as datetime.fromtimestamp rounds
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    return f"{_second(whole)}.{micro // 1000:03d}+00:00"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """What came through `extra=`, in its order."""
    attributes = record.__dict__
    if not attributes.keys() - _STANDARD_ATTRS:
        return {}
    return {
        key: value
        for key, value in attributes.items()
        if key not in _STANDARD_ATTRS and not key.startswith("_")
    }


@dataclass(frozen=True, slots=True)
class LogLine:
    """What one line says, however it is written."""

    created: float
    level: str
    logger: str
    message: str
    fields: Mapping[str, Any]
    exc: str | None = None


class LineFormatter(logging.Formatter):
    """A formatter whose line is built from plain values, so that RequestLog can write the same
    line without a LogRecord."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def format(self, record: logging.LogRecord) -> str:
        exc = self.formatException(record.exc_info) if record.exc_info else None
        return self.line(
            LogLine(record.created, record.levelname, record.name, record.getMessage(), _extras(record), exc)
        )

    def line(self, entry: LogLine) -> str:
        raise NotImplementedError


class JsonFormatter(LineFormatter):
    def line(self, entry: LogLine) -> str:
        document: dict[str, Any] = {
            "ts": _timestamp(entry.created),
            "level": entry.level,
            "service": self._service,
            "logger": entry.logger,
            "request_id": current_request_id.get(),
            "msg": entry.message,
            **entry.fields,
        }
        if entry.exc is not None:
            document["exc"] = entry.exc
        return orjson.dumps(document, default=str).decode()


class TextFormatter(LineFormatter):
    """`HH:MM:SS.mmm LEVEL service: message key=value … [request id]` for a person at a terminal.
    A value with spaces is quoted (`reason="no such pet"`), so that where it ends is plain; a
    mapping (a service's settings at start) follows on lines of its own, one `key=value` each."""

    def line(self, entry: LogLine) -> str:
        clock = _timestamp(entry.created)[11:23]
        parts = [f"{clock} {entry.level:<7} {self._service}: {entry.message}"]
        below: list[str] = []
        for key, value in entry.fields.items():
            if isinstance(value, Mapping):
                below.extend(f"    {key}.{name}={_text_value(item)}" for name, item in value.items())
            else:
                parts.append(f"{key}={_text_value(value)}")
        request_id = current_request_id.get()
        if request_id != NO_REQUEST_ID:
            parts.append(f"[{request_id}]")
        text = "\n".join([" ".join(parts), *below])
        if entry.exc is not None:
            text += "\n" + entry.exc
        return text


_QUOTED = frozenset(' "=\t\n\r')
"""A text value holding any of these is written quoted."""


def _text_value(value: Any) -> str:
    text = str(value)
    if isinstance(value, str) and (not text or any(char in text for char in _QUOTED)):
        return orjson.dumps(text).decode()
    return text


def settings_fields(settings: Any) -> dict[str, Any]:
    """A settings dataclass as the fields of its start-up log line: every field its repr shows
    (secrets are declared `repr=False` and stay out), a tuple as one comma-separated value.
    JSON keeps it one object; the text format writes one setting per line."""
    shown: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        if item.repr:
            value = getattr(settings, item.name)
            shown[item.name] = ",".join(map(str, value)) if isinstance(value, tuple) else value
    return shown


class TurnBatchedStreamHandler(logging.StreamHandler[TextIO]):
    """Writes the lines logged during one event-loop turn together, when the turn ends: under
    load one write carries tens of access-log lines instead of one each (cached reads about 5 %
    faster, bench/README.md). Lines logged off the loop's
    thread, or with no loop running, are written at once, after any still waiting, so the order
    is kept; at most MAX_WAITING lines wait; logging.shutdown() at exit writes the rest."""

    MAX_WAITING = 512

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._waiting: list[str] = []
        self._scheduled = False

    def emit(self, record: logging.LogRecord) -> None:  # called with self.lock held
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self._enqueue(line)

    def write_line(self, line: str) -> None:
        """A line already formatted (RequestLog's), written as emit() writes a record's."""
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._enqueue(line)

    def _enqueue(self, line: str) -> None:
        self._waiting.append(line + self.terminator)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or len(self._waiting) >= self.MAX_WAITING:
            self._write_waiting()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self.flush)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._scheduled = False
            self._write_waiting()

    def _write_waiting(self) -> None:
        if not self._waiting:
            return
        text = "".join(self._waiting)
        self._waiting.clear()
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # as logging's own handlers do: a broken stream never breaks the caller
            self.handleError(logging.makeLogRecord({"msg": "could not write log lines"}))


LOG_FORMATS = ("auto", "json", "text")


def log_format_from_env(env: Mapping[str, str], stream_is_terminal: bool) -> str:
    """`json` or `text`, as LOG_FORMAT asks (`auto`, the default, picks by the stream)."""
    chosen = env.get("LOG_FORMAT", "auto").strip().lower() or "auto"
    if chosen not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {chosen!r}")
    if chosen == "auto":
        return "text" if stream_is_terminal else "json"
    return chosen


def configure_logging(service: str, level: str = "INFO", env: Mapping[str, str] | None = None) -> None:
    """Send every logger's records to stderr, one line each, in the format LOG_FORMAT chooses."""
    try:
        log_format = log_format_from_env(os.environ if env is None else env, sys.stderr.isatty())
    except ValueError as exc:
        raise SystemExit(f"{service}: {exc}") from None
    # The JSON lines never show the caller's file and line, thread or process: not collecting
    # them saves a stack walk and three look-ups per record (the logging HOWTO's
    # "Optimization" section); the access log writes one record per request.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = TurnBatchedStreamHandler(sys.stderr)
    formatter = TextFormatter(service) if log_format == "text" else JsonFormatter(service)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    RequestLog.route = handler


class RequestLog:
    """The one line per request (the gateway's access log, a service's line per RPC), at INFO
    unless `level` says otherwise: by far the most frequent line, so while configure_logging's
    handler is the only one a record would reach, it is written to it directly, formatted by
    the same formatter, without the LogRecord and handler chain (about a fifth of a cached
    read's cost in the gateway: bench/README.md). Otherwise (a test capturing records, a
    handler or filter added) it is an ordinary `logger.log(level, message, extra=fields)`."""

    route: TurnBatchedStreamHandler | None = None
    """configure_logging's handler (its formatter formats the line)."""

    def __init__(self, logger_name: str, message: str, *, level: int = logging.INFO) -> None:
        self._logger = logging.getLogger(logger_name)
        self._message = message
        self._level = level
        self._level_name = logging.getLevelName(level)

    def write(self, **fields: Any) -> None:
        logger = self._logger
        if not logger.isEnabledFor(self._level):
            return
        route = RequestLog.route
        formatter = None if route is None else route.formatter
        if (
            route is None
            or not isinstance(formatter, LineFormatter)
            or not _only_route(logger, route, self._level)
        ):
            logger.log(self._level, self._message, extra=fields)
            return
        entry = LogLine(time.time(), self._level_name, logger.name, self._message, fields)
        route.write_line(formatter.line(entry))


def _only_route(logger: logging.Logger, handler: logging.Handler, level: int) -> bool:
    """Whether a record of `logger` at `level` would reach `handler` alone, unfiltered."""
    current: logging.Logger | None = logger
    while current is not None and current.parent is not None:  # up to the root
        if current.handlers or current.filters or not current.propagate:
            return False
        current = current.parent
    return (
        current is not None
        and not current.filters
        and len(current.handlers) == 1
        and current.handlers[0] is handler
        and not handler.filters
        and handler.level <= level
    )
