from __future__ import annotations

import logging
from datetime import UTC, datetime

import orjson
import pytest

from petstore_common.logging import JsonFormatter
from petstore_common.request_context import current_request_id


def test_a_record_becomes_one_json_line_with_request_id_and_extras() -> None:
    record = logging.makeLogRecord(
        {"name": "t", "levelname": "INFO", "msg": "hello %s", "args": ("world",), "port": 5}
    )
    token = current_request_id.set("req-1")
    try:
        line = JsonFormatter("pet-service").format(record)
    finally:
        current_request_id.reset(token)
    entry = orjson.loads(line)
    assert "\n" not in line
    assert entry["msg"] == "hello world"
    assert entry["request_id"] == "req-1"
    assert entry["service"] == "pet-service"
    assert entry["port"] == 5


@pytest.mark.parametrize(
    "created", [0.0, 1.9999999, 1795441426.9995, 1795441426.0004999, 1795441426.123456, 72893224.97499962]
)
def test_timestamps_read_as_datetime_writes_them(created: float) -> None:
    record = logging.makeLogRecord({"msg": "x", "created": created})
    line = orjson.loads(JsonFormatter("svc").format(record))
    assert line["ts"] == datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")


def test_a_record_without_extras_carries_only_the_standard_fields() -> None:
    record = logging.makeLogRecord({"msg": "plain", "name": "x"})
    assert set(orjson.loads(JsonFormatter("svc").format(record))) == {
        "ts",
        "level",
        "service",
        "logger",
        "request_id",
        "msg",
    }
