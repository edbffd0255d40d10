"""Slow clients cost nothing: from the side of a client that opens connections and stalls
(half-sent headers, half-sent bodies, idle keep-alive) and of one that sends more bodies at once
than the gateway will hold. Each runs against the gateway served as serve() serves it, with
timeouts of a fraction of a second."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from petstore_gateway.app import create_app
from petstore_gateway.connections import ConnectionTimeouts, GuardedAppRunner
from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER
from petstore_gateway.settings import (
    BODY_BUFFER_BYTES,
    BODY_TIMEOUT_SECONDS,
    HEADER_TIMEOUT_SECONDS,
    KEEPALIVE_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    GatewaySettings,
)

from .backend import SESSION_SECRET, Backend

HEADER_TIMEOUT = 0.3
BODY_TIMEOUT = 0.3
KEEPALIVE_TIMEOUT = 1.0
MAX_BODY = 1000
SLACK = 0.7
"""How much later than its timeout a connection may close on a busy test machine."""

USER_HEAD = b"POST /v2/user HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"


@pytest.fixture
async def port(backend: Backend) -> AsyncIterator[int]:
    settings = GatewaySettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
            "BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
            "KEEPALIVE_TIMEOUT_SECONDS": str(KEEPALIVE_TIMEOUT),
            "MAX_BODY_BYTES": str(MAX_BODY),
            "BODY_BUFFER_BYTES": str(2 * MAX_BODY),
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


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def closed_after(reader: asyncio.StreamReader, *, within: float) -> tuple[bytes, float]:
    """Everything the gateway writes until it closes the connection, and when it closed.
    TimeoutError if it is still open after `within` seconds."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = await asyncio.wait_for(reader.read(), within)
    return answer, loop.time() - started


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def message_of(answer: bytes) -> str:
    return str(json.loads(answer.partition(b"\r\n\r\n")[2])["message"])


async def test_half_sent_headers_are_408_and_closed_after_the_header_timeout(port: int) -> None:
    reader, writer = await connect(port)
    writer.write(b"GET /v2/pet/1 HTTP/1.1\r\nHost: t\r\n")  # and never the blank line
    answer, elapsed = await closed_after(reader, within=HEADER_TIMEOUT + SLACK)
    assert status_of(answer) == 408
    assert HEADER_TIMEOUT * 0.9 <= elapsed < KEEPALIVE_TIMEOUT  # its own clock, not keep-alive's
    writer.close()


async def test_headers_trickled_a_byte_at_a_time_are_cut_off_too(port: int) -> None:
    reader, writer = await connect(port)
    head = b"GET /v2/pet/1 HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 200

    async def trickle() -> None:
        for byte in head:  # a byte every 20 ms: 4 s in all, never a silence of HEADER_TIMEOUT
            writer.write(bytes([byte]))
            await asyncio.sleep(0.02)

    trickling = asyncio.create_task(trickle())
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        answer = await asyncio.wait_for(reader.read(), HEADER_TIMEOUT + SLACK)
        assert status_of(answer) == 408
    except ConnectionResetError:  # our bytes after its close reset the connection: closed too
        pass
    assert loop.time() - started < HEADER_TIMEOUT + SLACK
    trickling.cancel()
    writer.close()


@pytest.mark.parametrize("after_a_request", [False, True])
async def test_an_idle_connection_is_closed_after_the_keepalive_timeout(
    port: int, after_a_request: bool
) -> None:
    reader, writer = await connect(port)
    if after_a_request:
        writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    answer, elapsed = await closed_after(reader, within=KEEPALIVE_TIMEOUT + SLACK)
    assert b"HTTP/1.1" not in answer  # nothing more was said: it was idle
    assert elapsed >= KEEPALIVE_TIMEOUT * 0.9
    writer.close()


async def test_a_stalled_body_is_408_and_its_connection_closed(port: int) -> None:
    reader, writer = await connect(port)
    writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\n\r\n".encode() + b'{"username": ')
    answer, elapsed = await closed_after(reader, within=BODY_TIMEOUT + SLACK)
    assert status_of(answer) == 408
    assert message_of(answer) == f"request body timed out: no body bytes for {BODY_TIMEOUT:g} s"
    assert elapsed >= BODY_TIMEOUT * 0.9
    writer.close()


async def test_a_body_that_keeps_coming_is_not_cut_off(port: int) -> None:
    """The body clock measures silence, not the whole body: a slow but steady client finishes."""
    reader, writer = await connect(port)
    body = json.dumps({"username": "slowpoke", "email": "s@example.com", "password": "pass-word-1"}).encode()
    writer.write(USER_HEAD + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    for start in range(0, len(body), len(body) // 4 + 1):
        await asyncio.sleep(BODY_TIMEOUT / 2)
        writer.write(body[start : start + len(body) // 4 + 1])
    answer, _ = await closed_after(reader, within=2)
    assert status_of(answer) == 200, answer
    writer.close()


async def test_a_stalled_body_nobody_reads_is_closed_after_the_answer(port: int) -> None:
    reader, writer = await connect(port)
    writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\nContent-Length: 500\r\n\r\n" + b"x" * 10)
    answer, _ = await closed_after(reader, within=BODY_TIMEOUT + SLACK)
    assert status_of(answer) == 200
    writer.close()


async def test_bodies_past_the_buffer_bound_are_503_unread_until_the_stalled_ones_time_out(port: int) -> None:
    # Two stalled bodies of the largest size take the whole bound (2 x MAX_BODY) ...
    stalled = [await connect(port) for _ in range(2)]
    for _, writer in stalled:
        writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\n\r\n".encode() + b"{")
    await asyncio.sleep(BODY_TIMEOUT / 3)
    # ... so a third is refused at once, before its body is read.
    reader, writer = await connect(port)
    writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\nConnection: close\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BODY_TIMEOUT / 2)
    assert head.startswith(b"HTTP/1.1 503")
    assert f"Retry-After: {UNAVAILABLE_RETRY_AFTER}\r\n".encode() in head
    writer.close()
    # Once the stalled ones have timed out, their bytes are free again.
    for stalled_reader, stalled_writer in stalled:
        answer, _ = await closed_after(stalled_reader, within=BODY_TIMEOUT + SLACK)
        assert status_of(answer) == 408
        stalled_writer.close()
    reader, writer = await connect(port)
    body = b'{"username": "after", "email": "a@example.com", "password": "pass-word-1"}'
    writer.write(USER_HEAD + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    answer, _ = await closed_after(reader, within=2)
    assert status_of(answer) == 200, answer
    writer.close()


def test_the_defaults_close_every_stalled_or_idle_connection_within_a_minute() -> None:
    defaults = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SESSION_SECRET})
    # A head started just before the keep-alive clock runs out still gets its header timeout.
    assert defaults.keepalive_timeout_seconds + defaults.header_timeout_seconds <= 60
    assert defaults.body_timeout_seconds <= 60
    assert defaults.body_buffer_bytes == BODY_BUFFER_BYTES >= defaults.max_body_bytes == MAX_BODY_BYTES


def test_the_readme_states_the_timeouts_and_the_buffer_bound() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name, value in [
        ("HEADER_TIMEOUT_SECONDS", f"{HEADER_TIMEOUT_SECONDS:g}"),
        ("BODY_TIMEOUT_SECONDS", f"{BODY_TIMEOUT_SECONDS:g}"),
        ("KEEPALIVE_TIMEOUT_SECONDS", f"{KEEPALIVE_TIMEOUT_SECONDS:g}"),
        ("BODY_BUFFER_BYTES", str(BODY_BUFFER_BYTES)),
    ]:
        assert f"| `{name}` | gateway | {value} |" in readme
    assert f"`BODY_BUFFER_BYTES` ({BODY_BUFFER_BYTES // 2**20} MiB)" in readme
