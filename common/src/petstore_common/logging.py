"""One JSON object per log line, carrying the request id of the call being served."""

from __future__ import annotations

import functools
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from petstore_common.request_context import current_request_id

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


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every logger's records to stderr as JSON lines."""
    # The JSON lines never show the caller's file and line, thread or process: not collecting
    # them saves a stack walk and three look-ups per record (the logging HOWTO's
    # "Optimization" section); the access log writes one record per request.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
