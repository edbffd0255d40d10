"""What the connection guards assume of aiohttp's internals (aiohttp_adapter.py) holds for the
installed aiohttp: each assumption, from a raw socket against a server whose handlers are the
adapter's. A new aiohttp that breaks one fails here (`make aiohttp-next` runs this file against
the newest release), not in production."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import StreamReader, web

from petstore_gateway import aiohttp_adapter
from petstore_gateway.aiohttp_adapter import (
    TOO_MANY_HEADERS,
    AdaptedAppRunner,
    AdaptedHandler,
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    HttpProcessingError,
    InvalidURLError,
    LineTooLong,
    RawRequestMessage,
)
from petstore_gateway.connections import GuardedAppRunner, GuardedRequestHandler

HELD: web.AppKey[asyncio.Event] = web.AppKey("held", asyncio.Event)
LIMITS: dict[str, Any] = {"max_line_size": 1234, "max_field_size": 2345, "max_headers": 12}
KEEPALIVE = 7.5
PROBE_STATUS = 422
"""What the probe answers a request aiohttp could not parse."""
WAIT = 2.0


class Probe(AdaptedHandler):
    """Records what the adapter shows after each read, and the errors aiohttp hands over."""

    __slots__ = ("errors", "seen")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[int, tuple[RawRequestMessage, StreamReader] | None]] = []
        self.errors: list[tuple[int, BaseException | None]] = []

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if data:
            self.seen.append((self.parsed_count, self.newest_parsed()))

    def unparsable_answer(self, status: int, exc: BaseException | None) -> web.StreamResponse:
        self.errors.append((status, exc))
        answer_status = PROBE_STATUS if isinstance(exc, HttpProcessingError) else status
        return web.Response(status=answer_status, text=f"probe: {type(exc).__name__}")


class ProbeRunner(AdaptedAppRunner):
    def __init__(self, app: web.Application) -> None:
        super().__init__(app, keepalive_timeout=KEEPALIVE, access_log=None, **LIMITS)
        self.handlers: list[Probe] = []

    def make_handler(self, server: web.Server, **kwargs: Any) -> Probe:
        handler = Probe(server, **kwargs)
        self.handlers.append(handler)
        return handler


async def hold(request: web.Request) -> web.Response:
    await request.app[HELD].wait()
    return web.Response(text="held")


async def echo(request: web.Request) -> web.Response:
    return web.Response(body=await request.read())


async def fail(request: web.Request) -> web.Response:
    raise RuntimeError("a handler failed outside the middlewares")


async def fail_after_answer_began(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    await response.write(b"partial")
    raise RuntimeError("failed halfway through its answer")


@pytest.fixture
async def served() -> AsyncIterator[tuple[ProbeRunner, int]]:
    app = web.Application()
    app[HELD] = asyncio.Event()
    app.router.add_get("/hold", hold)
    app.router.add_get("/next", hold)
    app.router.add_post("/echo", echo)
    app.router.add_get("/fail", fail)
    app.router.add_get("/partial", fail_after_answer_began)
    runner = ProbeRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner, site.port
    finally:
        app[HELD].set()
        await runner.cleanup()


async def until(condition: Callable[[], object]) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():  # noqa: ASYNC110 (a state of aiohttp, no event to wait on)
            await asyncio.sleep(0.005)


async def connected(
    served: tuple[ProbeRunner, int],
) -> tuple[Probe, asyncio.StreamReader, asyncio.StreamWriter]:
    runner, port = served
    count = len(runner.handlers)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await until(lambda: len(runner.handlers) > count)
    return runner.handlers[-1], reader, writer


async def answer_to(reader: asyncio.StreamReader) -> bytes:
    """One whole answer with a Content-Length body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await asyncio.wait_for(reader.readexactly(length), WAIT)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


async def test_handlers_are_the_runners_own_made_with_its_keywords(served: tuple[ProbeRunner, int]) -> None:
    handler, reader, writer = await connected(served)
    assert isinstance(handler, Probe)
    assert handler.keepalive_timeout == KEEPALIVE
    assert (handler.max_line_size, handler.max_field_size, handler.max_headers) == tuple(LIMITS.values())
    assert handler.loop is asyncio.get_running_loop()
    writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
    assert (await answer_to(reader)).endswith(b"\r\n\r\nhi")  # the app's handler answers
    writer.close()


async def test_a_head_counts_once_complete_with_its_message_and_open_body_stream(
    served: tuple[ProbeRunner, int],
) -> None:
    handler, reader, writer = await connected(served)
    for part in (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n", b"\r\n", b"hel"):
        writer.write(part)
        count = len(handler.seen)
        await until(lambda: len(handler.seen) > count)  # noqa: B023 (awaited before the next turn)
    (unfinished, _), (complete, parsed), _ = handler.seen
    assert unfinished == 0
    assert complete == 1
    assert parsed is not None
    message, body = parsed
    assert (message.method, message.path, message.headers["Content-Length"]) == ("POST", "/echo", "5")
    assert not message.chunked
    assert not body.is_eof()  # the body clocks watch this stream
    writer.write(b"lo")
    assert (await answer_to(reader)).endswith(b"hello")
    writer.close()


async def test_a_chunked_head_says_so(served: tuple[ProbeRunner, int]) -> None:
    handler, reader, writer = await connected(served)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
    await until(lambda: handler.seen)
    [(count, parsed)] = handler.seen
    assert count == 1
    assert parsed is not None
    assert parsed[0].chunked
    writer.write(b"2\r\nok\r\n0\r\n\r\n")
    assert (await answer_to(reader)).endswith(b"ok")
    writer.close()


async def test_a_pipelined_request_waits_queued_behind_the_one_being_handled(
    served: tuple[ProbeRunner, int],
) -> None:
    runner, _ = served
    handler, reader, writer = await connected(served)
    writer.write(b"GET /hold HTTP/1.1\r\nHost: t\r\n\r\nGET /next HTTP/1.1\r\nHost: t\r\n\r\n")
    await until(lambda: handler.handling is not None and handler.queued)
    handling = handler.handling
    assert handling is not None
    assert handling.path == "/hold"
    waiting = handler.newest_parsed()
    assert waiting is not None
    assert waiting[0].path == "/next"
    runner.app[HELD].set()
    assert (await answer_to(reader)).endswith(b"held")
    assert (await answer_to(reader)).endswith(b"held")
    await until(lambda: handler.handling is None and not handler.queued)
    assert handler.newest_parsed() is None
    writer.close()


async def test_close_stops_taking_requests_and_force_close_closes_too(
    served: tuple[ProbeRunner, int],
) -> None:
    handler, reader, writer = await connected(served)
    before = handler.closing
    handler.close()
    assert (before, handler.closing) == (False, True)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx")
    with pytest.raises(TimeoutError):  # no answer (and, idle, not even closed: serving.py)
        await asyncio.wait_for(reader.read(1), 0.3)
    handler.force_close()
    assert handler.closing
    assert handler.transport is None
    assert await asyncio.wait_for(reader.read(), WAIT) == b""
    writer.close()


async def test_stop_taking_requests_leaves_the_transport_to_the_caller(
    served: tuple[ProbeRunner, int],
) -> None:
    handler, reader, writer = await connected(served)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx")
    await answer_to(reader)
    handler.stop_taking_requests()
    assert handler.closing
    transport = handler.transport
    assert transport is not None
    writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\ny")
    with pytest.raises(TimeoutError):  # aiohttp neither answers nor closes
        await asyncio.wait_for(reader.read(1), 0.3)
    transport.write(b"our own answer")
    assert await asyncio.wait_for(reader.readexactly(14), WAIT) == b"our own answer"
    transport.close()
    assert await asyncio.wait_for(reader.read(), WAIT) == b""
    writer.close()


PARSER_ERRORS = {
    "request line too long": (b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", LineTooLong),
    "header too long": (b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 3000 + b"\r\n\r\n", LineTooLong),
    "unknown method": (b"G@T / HTTP/1.1\r\nHost: t\r\n\r\n", BadHttpMethod),
    "malformed request line": (b"GET / HTTP/9.Z\r\nHost: t\r\n\r\n", BadStatusLine),
    "malformed target": (b"GET /\x7f HTTP/1.1\r\nHost: t\r\n\r\n", InvalidURLError),
    "malformed header": (b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", HttpProcessingError),
}


@pytest.mark.parametrize(("sent", "error"), PARSER_ERRORS.values(), ids=PARSER_ERRORS.keys())
async def test_what_aiohttp_cannot_parse_is_answered_by_the_hook_by_its_error_type(
    served: tuple[ProbeRunner, int], sent: bytes, error: type[BaseException]
) -> None:
    handler, reader, writer = await connected(served)
    writer.write(sent)
    answer = await answer_to(reader)
    assert status_of(answer) == PROBE_STATUS
    [(_, exc)] = handler.errors
    assert isinstance(exc, error)
    assert answer.endswith(b"probe: " + type(exc).__name__.encode())
    writer.close()


async def test_too_many_headers_is_told_by_its_message(served: tuple[ProbeRunner, int]) -> None:
    handler, reader, writer = await connected(served)
    fields = b"".join(b"X-%d: y\r\n" % n for n in range(LIMITS["max_headers"] + 1))
    writer.write(b"GET / HTTP/1.1\r\n" + fields + b"\r\n")
    assert status_of(await answer_to(reader)) == PROBE_STATUS
    [(_, exc)] = handler.errors
    assert isinstance(exc, BadHttpMessage)
    assert exc.message == TOO_MANY_HEADERS
    writer.close()


async def test_a_failed_handler_is_answered_by_the_hook_unless_its_answer_began(
    served: tuple[ProbeRunner, int],
) -> None:
    handler, reader, writer = await connected(served)
    writer.write(b"GET /fail HTTP/1.1\r\nHost: t\r\n\r\n")
    assert (await answer_to(reader)).startswith(b"HTTP/1.1 500 ")
    [(status, exc)] = handler.errors
    assert (status, type(exc)) == (500, RuntimeError)
    writer.close()
    handler, reader, writer = await connected(served)
    writer.write(b"GET /partial HTTP/1.1\r\nHost: t\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), WAIT)  # until aiohttp closes the connection
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"partial" in answer
    assert b"probe" not in answer  # no second answer after the first began
    assert answer.count(b"HTTP/1.1 ") == 1
    writer.close()


def aiohttp_names(*classes: type) -> set[str]:
    names: set[str] = set()
    for cls in classes:
        for klass in cls.__mro__:
            names.update(vars(klass))
            names.update(getattr(klass, "__slots__", ()))
    return names


def ours(cls: type, below: type) -> set[str]:
    """What `cls` and its bases up to (not including) `below` define."""
    names: set[str] = set()
    for klass in cls.__mro__[: cls.__mro__.index(below)]:
        names.update(name for name in vars(klass) if not name.startswith("__") and name != "_abc_impl")
        names.update(getattr(klass, "__slots__", ()))
    return names


def test_no_name_of_ours_shadows_one_of_aiohttps() -> None:
    """The adapter's and the guards' attributes live on aiohttp's classes: a name aiohttp
    starts using too would silently be overwritten (or overwrite ours)."""
    overridden = {"data_received", "connection_made", "connection_lost", "handle_error"}
    handler_names = ours(GuardedRequestHandler, web.RequestHandler) - overridden
    assert handler_names & aiohttp_names(web.RequestHandler) == set()
    runner_names = ours(GuardedAppRunner, web.AppRunner) - {"_make_server"}
    assert runner_names & aiohttp_names(web.AppRunner) == set()


SOURCE = Path(aiohttp_adapter.__file__).parent
PUBLIC_MODULES = {"aiohttp", "aiohttp.web", "aiohttp.http", "aiohttp.hdrs", "aiohttp.typedefs"}
"""aiohttp's public modules (typedefs: the middleware types its documentation imports)."""
GUARDS = ("connections.py", "head_limits.py", "refusals.py", "serving.py")
"""The modules that handle aiohttp's connections, handlers and runners."""


def imported_modules(path: Path) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            modules.append(node.module or "")
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return modules


def test_no_module_but_the_adapter_imports_aiohttps_internal_modules() -> None:
    offenders = [
        f"{path.relative_to(SOURCE)}: {module}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path.name != "aiohttp_adapter.py"
        for module in imported_modules(path)
        if module.startswith("aiohttp.") and module not in PUBLIC_MODULES
    ]
    assert offenders == [], "import these from aiohttp.web (or through aiohttp_adapter.py)"


def test_the_guards_touch_no_private_attribute_of_aiohttps() -> None:
    private = {
        name
        for cls in (web.RequestHandler, web.Server, web.AppRunner, web.TCPSite, web.Request)
        for klass in cls.__mro__
        for name in (*vars(klass), *getattr(klass, "__slots__", ()))
        if name.startswith("_") and not name.startswith("__")
    } | {"_kwargs", "_loop", "_connections"}  # Server's, set in its __init__
    pattern = re.compile(r"\.(" + "|".join(sorted(map(re.escape, private))) + r")\b")
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name in GUARDS
        for number, line in enumerate((SOURCE / name).read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
