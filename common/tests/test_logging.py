from __future__ import annotations

import logging
from datetime import UTC, datetime

import orjson
import pytest

from petstore_common.logging import JsonFormatter, TextFormatter, configure_logging, log_format_from_env
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


def test_a_text_line_reads_as_a_sentence_with_its_extras_and_request_id() -> None:
    record = logging.makeLogRecord(
        {
            "name": "t",
            "levelname": "WARNING",
            "msg": "hello %s",
            "args": ("world",),
            "port": 5,
            "created": 0.25,
        }
    )
    token = current_request_id.set("req-1")
    try:
        line = TextFormatter("pet-service").format(record)
    finally:
        current_request_id.reset(token)
    assert line == "00:00:00.250 WARNING pet-service: hello world port=5 [req-1]"
    outside = logging.makeLogRecord({"msg": "serving", "levelname": "INFO", "created": 0.0})
    assert TextFormatter("gateway").format(outside) == "00:00:00.000 INFO    gateway: serving"


@pytest.mark.parametrize(
    ("value", "terminal", "expected"),
    [
        (None, True, "text"),
        (None, False, "json"),
        ("auto", True, "text"),
        ("", False, "json"),
        ("json", True, "json"),
        ("TEXT", False, "text"),
    ],
)
def test_the_format_follows_log_format_and_else_the_stream(
    value: str | None, terminal: bool, expected: str
) -> None:
    env = {} if value is None else {"LOG_FORMAT": value}
    assert log_format_from_env(env, terminal) == expected


def test_an_unknown_log_format_stops_the_process_naming_the_choices() -> None:
    with pytest.raises(SystemExit, match="LOG_FORMAT must be one of auto, json, text"):
        configure_logging("svc", env={"LOG_FORMAT": "yaml"})


def test_configure_logging_installs_the_chosen_formatter() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("svc", env={"LOG_FORMAT": "text"})
        assert isinstance(root.handlers[0].formatter, TextFormatter)
        configure_logging("svc", env={"LOG_FORMAT": "json"})
        assert isinstance(root.handlers[0].formatter, JsonFormatter)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
