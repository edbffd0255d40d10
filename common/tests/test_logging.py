from __future__ import annotations

import logging

import orjson

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
