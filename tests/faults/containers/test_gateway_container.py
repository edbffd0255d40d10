"""SIGTERM to the gateway container while it reads a request: that request is answered in
full and the container then exits cleanly (not Docker's SIGKILL after the grace period)."""

from __future__ import annotations

import asyncio
import json

from tests.e2e import tls
from tests.e2e.control import ComposeControl, wait_until_serving


async def test_sigterm_to_the_gateway_finishes_the_request_in_flight(
    compose: ComposeControl, base: str, static_key: str
) -> None:
    (gateway,) = compose.containers("gateway")
    body = json.dumps({"name": "Slowpoke", "photoUrls": []}).encode()
    reader, writer = await tls.open_connection(base)  # through the TLS proxy when there is one
    head = (
        "POST /v2/pet HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"api_key: {static_key}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    # Headers and half the body: the request is now being served when the signal comes.
    writer.write(head.encode() + body[:10])
    await writer.drain()
    await asyncio.sleep(0.5)
    stopping = asyncio.create_task(asyncio.to_thread(gateway.stop, timeout=30))  # SIGTERM, then waits
    await asyncio.sleep(0.5)
    writer.write(body[10:])
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    await tls.close(writer)
    await stopping

    head_block, _, payload = answer.partition(b"\r\n\r\n")
    assert head_block.split(b"\r\n")[0] == b"HTTP/1.1 200 OK", answer[:200]
    assert json.loads(payload)["name"] == "Slowpoke"
    gateway.reload()
    assert gateway.attrs["State"]["ExitCode"] == 0
    gateway.start()
    await asyncio.to_thread(wait_until_serving, gateway)
