"""SIGTERM during load: a service stopping lets in-flight calls finish and new requests get
503 (never a cut-off answer); the gateway stopping finishes the request it is reading, then
refuses new connections, and drains keep-alive clients without cutting a request."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import ClientSession, ClientTimeout

from petstore_devstack.stack import Stack
from tests.faults.conftest import FAULT_ENV, STATIC_KEY, running_stack
from tests.faults.load import Request, SteadyLoad, send


@pytest.fixture
def stack(log_dir: Path) -> Iterator[Stack]:
    # The embedded store: these tests are about processes stopping, not about storage.
    with running_stack(log_dir) as stack:
        yield stack


async def test_sigterm_to_the_pet_service_under_load(stack: Stack, session: ClientSession) -> None:
    base = stack.base_url
    created = await send(
        session, Request("create", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, STATIC_KEY)
    )
    get_pet = Request("get pet", "GET", f"{base}/pet/{created.body['id']}")

    async with SteadyLoad(session, [get_pet], workers=6) as load:
        await asyncio.sleep(0.5)
        stopped_with = await asyncio.to_thread(stack.stop_process, "pet")
        stopped = time.monotonic()
        await asyncio.sleep(1.0)

    assert stopped_with == 0  # a clean exit within the grace period, not a SIGKILL
    outcomes = load.outcomes
    assert all(o.status is not None for o in outcomes), [o for o in outcomes if o.status is None]
    assert {o.status for o in outcomes} <= {200, 503}
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    assert {o.status for o in load.between(stopped, time.monotonic())} == {503}


async def test_sigterm_to_the_gateway_finishes_the_request_in_flight(stack: Stack) -> None:
    body = json.dumps({"name": "Slowpoke", "photoUrls": []}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", stack.gateway_port)
    head = (
        "POST /v2/pet HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"api_key: {STATIC_KEY}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    # Headers and half the body: the request is now being served when the signal comes.
    writer.write(head.encode() + body[:10])
    await writer.drain()
    await asyncio.sleep(0.3)
    stack.signal("gateway", signal.SIGTERM)
    await asyncio.sleep(0.5)
    with pytest.raises(ConnectionRefusedError):  # no new connections while stopping
        await asyncio.open_connection("127.0.0.1", stack.gateway_port)

    writer.write(body[10:])
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=5)
    writer.close()

    head_block, _, payload = answer.partition(b"\r\n\r\n")
    assert head_block.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
    assert json.loads(payload)["name"] == "Slowpoke"
    gateway = stack.processes["gateway"].process
    assert gateway is not None
    assert await asyncio.to_thread(gateway.wait, 10) == 0


NEVER_SENT = "ClientConnectorError"
"""A request refused at connect (the listener closed): it never reached the gateway."""


async def test_sigterm_to_the_gateway_drains_keep_alive_clients_under_load(stack: Stack) -> None:
    base = stack.base_url
    # Keep-alive connections (aiohttp's default pool), as real clients use: the drain must tell
    # them to stop reusing their connections, not cut requests on them.
    async with ClientSession(timeout=ClientTimeout(total=10)) as session:
        created = await send(
            session, Request("create", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, STATIC_KEY)
        )
        assert created.status == 200, created
        requests = [
            Request("get pet", "GET", f"{base}/pet/{created.body['id']}"),
            # POSTs are never resent by the client, so a cut one cannot hide behind a retry.
            Request("create", "POST", f"{base}/pet", {"name": "Max", "photoUrls": []}, STATIC_KEY),
        ]
        gateway = stack.processes["gateway"].process
        assert gateway is not None
        # Enough clients that some request is always in flight: the drain must end anyway.
        async with SteadyLoad(session, requests, workers=16, pause_seconds=0) as load:
            await asyncio.sleep(1.0)
            stack.signal("gateway", signal.SIGTERM)
            signalled = time.monotonic()
            code = await asyncio.to_thread(gateway.wait, 10)
            exited = time.monotonic() - signalled
            await asyncio.sleep(0.2)

    outcomes = load.outcomes
    answered = [o for o in outcomes if o.status is not None]
    cut = [o for o in outcomes if o.status is None and o.failure != NEVER_SENT]
    assert not cut, [(o.request, round(o.started - signalled, 3), o.failure) for o in cut]
    assert {o.status for o in answered} == {200}, [o for o in answered if o.status != 200]
    assert len(load.between(signalled - 1.0, signalled)) > 50  # it was under load
    # Nothing new was taken on: what came after the signal found the listener closed.
    late = [o for o in answered if o.started > signalled + 0.5]
    assert not late, [(o.request, round(o.started - signalled, 3)) for o in late]
    assert code == 0
    assert exited < float(FAULT_ENV["GRACE_SECONDS"]) / 2, exited  # well inside the grace period
