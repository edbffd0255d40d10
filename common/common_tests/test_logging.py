from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from petstore_common.logging import (
    JsonFormatter,
    RequestLog,
    TextFormatter,
    TurnBatchedStreamHandler,
    configure_logging,
    log_format_from_env,
)
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


class _CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def _batched() -> tuple[logging.Logger, _CountingStream, TurnBatchedStreamHandler]:
    stream = _CountingStream()
    handler = TurnBatchedStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"batched-{id(stream)}")
    logger.propagate = False
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    return logger, stream, handler


async def test_the_lines_of_one_loop_turn_are_written_together_when_it_ends() -> None:
    logger, stream, _ = _batched()
    for number in range(3):
        logger.info("line %d", number)
    assert stream.writes == []  # still in this turn
    await asyncio.sleep(0)
    assert stream.writes == ["line 0\nline 1\nline 2\n"]


async def test_a_line_from_another_thread_is_written_at_once_after_those_waiting() -> None:
    logger, stream, _ = _batched()
    logger.info("on the loop")
    await asyncio.to_thread(logger.info, "from a thread")
    assert stream.getvalue() == "on the loop\nfrom a thread\n"


def test_without_a_running_loop_every_line_is_written_at_once() -> None:
    logger, stream, _ = _batched()
    logger.info("one")
    logger.info("two")
    assert stream.writes == ["one\n", "two\n"]


async def test_flush_writes_what_waits_and_the_wait_is_bounded() -> None:
    logger, stream, handler = _batched()
    logger.info("waiting")
    handler.flush()  # what logging.shutdown() does at exit
    assert stream.writes == ["waiting\n"]
    for number in range(TurnBatchedStreamHandler.MAX_WAITING):
        logger.info("%d", number)
    assert len(stream.writes) == 2  # the bound reached: written without waiting for the turn's end
    assert stream.writes[1].count("\n") == TurnBatchedStreamHandler.MAX_WAITING


@pytest.fixture
def configured() -> Iterator[Callable[[str], io.StringIO]]:
    """configure_logging in a format, its stream captured; the root logger restored after."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, RequestLog.route

    def configure(log_format: str) -> io.StringIO:
        configure_logging("svc", env={"LOG_FORMAT": log_format})
        stream = io.StringIO()
        handler = root.handlers[0]
        assert isinstance(handler, TurnBatchedStreamHandler)
        handler.setStream(stream)
        return stream

    try:
        yield configure
    finally:
        root.handlers[:], level, RequestLog.route = saved
        root.setLevel(level)


def _lines_without_time(stream: io.StringIO, log_format: str) -> list[Any]:
    lines = stream.getvalue().splitlines()
    if log_format == "json":
        return [{key: value for key, value in orjson.loads(line).items() if key != "ts"} for line in lines]
    return [line.split(" ", 1)[1] for line in lines]  # past the clock


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_request_line_written_directly_reads_as_the_same_record_would(
    configured: Callable[[str], io.StringIO], log_format: str
) -> None:
    stream = configured(log_format)
    made: list[logging.LogRecord] = []
    factory = logging.getLogRecordFactory()

    def counting(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        made.append(record)
        return record

    logging.setLogRecordFactory(counting)
    try:
        token = current_request_id.set("req-9")
        try:
            RequestLog("svc.access", "request").write(method="GET", status=200, ms=0.5)
            assert made == []  # the direct route: no LogRecord
            logging.getLogger("svc.access").info("request", extra={"method": "GET", "status": 200, "ms": 0.5})
            assert len(made) == 1
        finally:
            current_request_id.reset(token)
    finally:
        logging.setLogRecordFactory(factory)
    direct, through_logging = _lines_without_time(stream, log_format)
    assert direct == through_logging
    if log_format == "json":
        assert direct == {
            "level": "INFO",
            "service": "svc",
            "logger": "svc.access",
            "request_id": "req-9",
            "msg": "request",
            "method": "GET",
            "status": 200,
            "ms": 0.5,
        }


def test_a_request_line_goes_through_logging_when_another_handler_listens(
    configured: Callable[[str], io.StringIO], caplog: pytest.LogCaptureFixture
) -> None:
    stream = configured("json")  # (it replaced the root's handlers, caplog's among them)
    logging.getLogger().addHandler(caplog.handler)
    RequestLog("svc.access", "request").write(status=404)
    assert [(record.name, record.status) for record in caplog.records] == [("svc.access", 404)]  # type: ignore[attr-defined]
    assert orjson.loads(stream.getvalue())["status"] == 404  # and still to the configured handler


def test_a_request_line_below_the_level_is_not_written(configured: Callable[[str], io.StringIO]) -> None:
    stream = configured("json")
    logging.getLogger().setLevel(logging.WARNING)
    RequestLog("svc.access", "request").write(status=200)
    assert stream.getvalue() == ""
