"""A client that goes away (mid-body, or before its answer) is one access-log line with status
499 and a 499 in the metrics: no traceback, no ERROR, no 500."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import generate_latest

from petstore_gateway.app import create_app
from petstore_gateway.keys import METRICS
from petstore_gateway.refusal_log import CLIENT_CLOSED_REQUEST
from petstore_gateway.settings import GatewaySettings

from .backend import Backend
from .conftest import STATIC_KEY


@dataclass
class Served:
    app: web.Application
    port: int


@pytest.fixture(params=["handler kept", "handler cancelled"])
async def served(
    request: pytest.FixtureRequest, settings: GatewaySettings, backend: Backend
) -> AsyncIterator[Served]:
    """The gateway as it runs (aiohttp lets a handler finish when its client leaves, and
    reading the rest of the body fails) and as aiohttp's test server runs it (the handler is
    cancelled)."""
    clients = backend.clients()
    app = create_app(settings, clients=clients)
    runner = web.AppRunner(app, handler_cancellation=request.param == "handler cancelled")
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield Served(app, port)
    finally:
        await runner.cleanup()
        await clients.close()


async def _open(served: Served) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", served.port)


async def _walk_away(writer: asyncio.StreamWriter, data: bytes, settle: float) -> None:
    """Send `data`, give the gateway `settle` seconds to start on it, then close."""
    writer.write(data)
    await writer.drain()
    await asyncio.sleep(settle)
    writer.close()
    await writer.wait_closed()


async def _access_lines(caplog: pytest.LogCaptureFixture, route: str) -> list[logging.LogRecord]:
    for _ in range(100):  # the gateway learns of the close on its next turn of the loop
        lines = [r for r in caplog.records if r.name == "petstore_gateway.access" and r.route == route]  # type: ignore[attr-defined]
        if lines:
            return lines
        await asyncio.sleep(0.02)
    return []


def _counted(served: Served, route: str, status: int) -> bool:
    text = generate_latest(served.app[METRICS].registry).decode()
    return f'route="{route}",status="{status}"' in text


def _assert_one_quiet_499(served: Served, caplog: pytest.LogCaptureFixture, route: str, lines: Any) -> None:
    assert len(lines) == 1
    (line,) = lines
    assert line.status == CLIENT_CLOSED_REQUEST == 499
    assert line.levelno in (logging.INFO, logging.WARNING)
    assert not any(record.exc_info for record in caplog.records)
    assert not any(record.levelno >= logging.ERROR for record in caplog.records)
    assert _counted(served, route, 499)
    assert not _counted(served, route, 500)


async def test_a_client_that_aborts_mid_body_is_a_quiet_499(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    body = b'{"name": "rex", "photoUrls": []}'
    head = (
        b"POST /v2/pet HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        + f"api_key: {STATIC_KEY}\r\nContent-Length: {len(body) * 10}\r\n\r\n".encode()
    )
    with caplog.at_level(logging.DEBUG):
        _, writer = await _open(served)
        await _walk_away(writer, head + body, settle=0.2)
        lines = await _access_lines(caplog, "/v2/pet")
    _assert_one_quiet_499(served, caplog, "/v2/pet", lines)


async def test_a_client_that_leaves_before_its_answer_is_a_quiet_499(
    served: Served, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petstore_gateway import rpc
    from petstore_gateway.routes import store

    original = rpc.call

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)  # the client is gone by now
        return await original(*args, **kwargs)

    monkeypatch.setattr(store, "call", slow)
    with caplog.at_level(logging.DEBUG):
        _, writer = await _open(served)
        await _walk_away(writer, b"GET /v2/store/inventory HTTP/1.1\r\nHost: test\r\n\r\n", settle=0.05)
        lines = await _access_lines(caplog, "/v2/store/inventory")
    _assert_one_quiet_499(served, caplog, "/v2/store/inventory", lines)
