"""The gateway served as serve() serves it (GuardedAppRunner, its connection guards), with
timeouts of a fraction of a second, and raw-socket helpers for talking to it as an attacker
would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from petstore_gateway.app import create_app
from petstore_gateway.connections import ConnectionTimeouts, GuardedAppRunner
from petstore_gateway.settings import GatewaySettings

from .backend import SESSION_SECRET, Backend
from .conftest import STATIC_KEY

HEADER_TIMEOUT = 0.3
BODY_TIMEOUT = 0.3
KEEPALIVE_TIMEOUT = 1.0
MAX_BODY = 1000
BODY_BUFFER = 8 * MAX_BODY
"""Anonymous bodies may hold half of it (4 bodies), one address one body, staff all of it."""
SLACK = 0.7
"""How much later than its timeout a connection may close on a busy test machine."""

USER_HEAD = b"POST /v2/user HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
STAFF_PET_HEAD = (
    b"POST /v2/pet HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\napi_key: "
    + STATIC_KEY.encode()
    + b"\r\n"
)


@pytest.fixture
async def port(backend: Backend) -> AsyncIterator[int]:
    settings = GatewaySettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "PETSTORE_API_KEYS": STATIC_KEY,
            "HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
            "BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
            "KEEPALIVE_TIMEOUT_SECONDS": str(KEEPALIVE_TIMEOUT),
            "MAX_BODY_BYTES": str(MAX_BODY),
            "BODY_BUFFER_BYTES": str(BODY_BUFFER),
        }
    )
    clients = backend.clients()
    runner = GuardedAppRunner(
        create_app(settings, clients=clients),
        timeouts=ConnectionTimeouts.from_settings(settings),
        access_log=None,
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site.port
    finally:
        await runner.cleanup()
        await clients.close()


async def connect(port: int, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection from `source` (any 127.0.0.0/8 address: one client address each)."""
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def closed_after(reader: asyncio.StreamReader, *, within: float) -> tuple[bytes, float]:
    """Everything the gateway writes until it closes the connection, and when it closed.
    TimeoutError if it is still open after `within` seconds."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = await asyncio.wait_for(reader.read(), within)
    return answer, loop.time() - started


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def headers_of(answer: bytes) -> dict[str, str]:
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1")
    return {
        name.lower(): value.strip()
        for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:])
    }


def body_of(answer: bytes) -> dict[str, object]:
    body = json.loads(answer.partition(b"\r\n\r\n")[2])
    assert isinstance(body, dict)
    return body


def message_of(answer: bytes) -> str:
    return str(body_of(answer)["message"])
