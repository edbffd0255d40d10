"""InFlight: the count the gateway's drain waits on before it closes connections."""

from __future__ import annotations

import asyncio
import logging
import sys

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from petstore_devstack.doc_tables import documentation_words
from petstore_gateway.aiohttp_adapter import LineTooLong
from petstore_gateway.errors import IN_PROGRESS_RETRY_AFTER, UNAVAILABLE_RETRY_AFTER
from petstore_gateway.serving import (
    DRAIN_NOTICE_SECONDS,
    InFlight,
    MalformedRequestLogFilter,
    _close_idle_connections,
)


async def test_idle_waits_for_the_request_being_handled() -> None:
    in_flight = InFlight()
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        entered.set()
        await release.wait()
        return web.Response(text="done")

    app = web.Application(middlewares=[in_flight.middleware])
    app.router.add_get("/slow", slow)
    async with TestClient(TestServer(app)) as client:
        await in_flight.idle()  # nothing in flight yet: resolves at once
        request = asyncio.create_task(client.get("/slow"))
        await entered.wait()
        assert in_flight.count == 1
        idle = asyncio.create_task(in_flight.idle())
        await asyncio.sleep(0.05)
        assert not idle.done()
        release.set()
        response = await request
        assert await response.text() == "done"
        await asyncio.wait_for(idle, timeout=1)
        assert in_flight.count == 0


async def test_a_failing_handler_is_counted_out() -> None:
    in_flight = InFlight()

    async def broken(request: web.Request) -> web.Response:
        raise web.HTTPNotFound

    app = web.Application(middlewares=[in_flight.middleware])
    app.router.add_get("/broken", broken)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/broken")).status == 404
        assert in_flight.count == 0
        await asyncio.wait_for(in_flight.idle(), timeout=1)


def record_with(error: BaseException) -> logging.LogRecord:
    try:
        raise error
    except BaseException:
        exc_info = sys.exc_info()
    return logging.LogRecord(
        "aiohttp.server", logging.ERROR, __file__, 1, "Error handling request from %s", ("1.2.3.4",), exc_info
    )


def test_a_malformed_request_is_one_warning_without_a_traceback() -> None:
    record = record_with(LineTooLong("x" * 20, "8190"))
    assert MalformedRequestLogFilter().filter(record)
    assert (record.levelno, record.levelname) == (logging.WARNING, "WARNING")
    assert record.getMessage() == "malformed request refused: LineTooLong"
    assert record.exc_info is None


def test_other_errors_keep_their_level_and_traceback() -> None:
    record = record_with(RuntimeError("boom"))
    assert MalformedRequestLogFilter().filter(record)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None


def test_the_readme_states_the_drain_notice_and_the_retry_after() -> None:
    readme = documentation_words()
    assert f"after a {DRAIN_NOTICE_SECONDS:g} s notice" in readme
    assert f"`Retry-After: {UNAVAILABLE_RETRY_AFTER}`" in readme
    assert f"`Retry-After: {IN_PROGRESS_RETRY_AFTER}`" in readme


async def test_answers_during_the_drain_close_their_connection_and_say_so() -> None:
    in_flight = InFlight()
    app = web.Application(middlewares=[in_flight.middleware])
    app.on_response_prepare.append(in_flight.on_response_prepare)

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hi")

    app.router.add_get("/", hello)
    async with TestClient(TestServer(app)) as client:
        before = await client.get("/")
        assert before.headers.get("Connection") != "close"
        in_flight.draining = True
        during = await client.get("/")
        assert (during.status, during.headers.get("Connection")) == (200, "close")


async def test_the_drain_closes_idle_connections_at_the_notice_and_answers_busy_ones() -> None:
    """From a client's side: its idle keep-alive connection is closed when the notice ends
    (not left open and deaf until the clean-up); one whose request is being handled gets its
    answer."""
    in_flight = InFlight()
    release = asyncio.Event()
    app = web.Application(middlewares=[in_flight.middleware])

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="late")

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hi")

    app.router.add_get("/slow", slow)
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", site.port)
        idle_writer.write(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        await asyncio.wait_for(idle_reader.readuntil(b"hi"), 2)
        busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", site.port)
        busy_writer.write(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        async with asyncio.timeout(2):
            while not in_flight.busy:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert runner.server is not None
        await _close_idle_connections(runner.server, in_flight, 0.05)
        assert await asyncio.wait_for(idle_reader.read(), 1) == b""  # closed at the notice's end
        release.set()
        assert (await asyncio.wait_for(busy_reader.readuntil(b"late"), 2)).endswith(b"late")
        idle_writer.close()
        busy_writer.close()
    finally:
        release.set()
        await runner.cleanup()
