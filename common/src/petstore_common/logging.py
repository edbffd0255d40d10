"""One log line per event, carrying the request id of the call being served: a JSON object
for machines (files, pipes, collectors), or a short human-readable line on a terminal.
`LOG_FORMAT` chooses: `json`, `text`, or `auto` (the default: text when stderr is a terminal)."""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

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


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "service": self._service,
            "logger": record.name,
            "request_id": current_request_id.get(),
            "msg": record.getMessage(),
        }
        attributes = record.__dict__
        if attributes.keys() - _STANDARD_ATTRS:  # something came through `extra=`: in its order
            for key, value in attributes.items():
                if key not in _STANDARD_ATTRS and not key.startswith("_"):
                    entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """`HH:MM:SS.mmm LEVEL service: message key=value … [request id]` for a person at a terminal."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def format(self, record: logging.LogRecord) -> str:
        clock = _timestamp(record.created)[11:23]
        parts = [f"{clock} {record.levelname:<7} {self._service}: {record.getMessage()}"]
        attributes = record.__dict__
        for key, value in attributes.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                parts.append(f"{key}={value}")
        request_id = current_request_id.get()
        if request_id != NO_REQUEST_ID:
            parts.append(f"[{request_id}]")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


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
    handler = logging.StreamHandler(sys.stderr)
    formatter = TextFormatter(service) if log_format == "text" else JsonFormatter(service)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
