"""Slow clients cost nothing: from the side of a client that opens connections and stalls
(half-sent headers, half-sent bodies, idle keep-alive) and of one that sends more bodies at once
than the gateway will hold. Each runs against the gateway served as serve() serves it, with
timeouts of a fraction of a second."""

from __future__ import annotations

import asyncio
import json

import pytest

from petstore_devstack.doc_tables import documentation_words
from petstore_gateway.connections import MIN_BODY_BYTES_PER_SECOND
from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER
from petstore_gateway.settings import (
    BODY_BUFFER_BYTES,
    BODY_TIMEOUT_SECONDS,
    HEADER_TIMEOUT_SECONDS,
    KEEPALIVE_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    GatewaySettings,
)

from .backend import SESSION_SECRET
from .guarded import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    KEEPALIVE_TIMEOUT,
    MAX_BODY,
    SLACK,
    STAFF_PET_HEAD,
    USER_HEAD,
    closed_after,
    connect,
    message_of,
    port,
    status_of,
)

__all__ = ["port"]  # the fixture


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


async def test_a_body_that_keeps_coming_within_its_deadline_is_not_cut_off(port: int) -> None:
    """A slow but steady client that finishes within the body deadline is served."""
    reader, writer = await connect(port)
    body = json.dumps({"username": "slowpoke", "email": "s@example.com", "password": "pass-word-1"}).encode()
    writer.write(USER_HEAD + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    for start in range(0, len(body), len(body) // 4 + 1):
        await asyncio.sleep(BODY_TIMEOUT / 6)
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


def sign_up(name: str) -> bytes:
    body = json.dumps({"username": name, "email": f"{name}@example.com", "password": "pass-word-1"}).encode()
    return USER_HEAD + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


async def stall_a_body(port: int, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A sign-up from `source` whose body of the largest size stops one byte short of its end:
    the gateway holds every byte it sent (a body holds what arrived, not what it declares)."""
    reader, writer = await connect(port, source)
    writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\n\r\n".encode() + b" " * (MAX_BODY - 1))
    await writer.drain()
    return reader, writer


async def answer_to(port: int, request: bytes, source: str = "127.0.0.1") -> bytes:
    reader, writer = await connect(port, source)
    writer.write(request)
    answer, _ = await closed_after(reader, within=2)
    writer.close()
    return answer


async def test_a_dripping_body_is_408_by_its_deadline_though_it_never_falls_silent(port: int) -> None:
    deadline = BODY_TIMEOUT + MAX_BODY / MIN_BODY_BYTES_PER_SECOND
    reader, writer = await connect(port)
    writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\n\r\n".encode() + b"{")

    async def drip() -> None:
        while True:  # a byte every quarter of the silence allowed: never silent for long
            await asyncio.sleep(BODY_TIMEOUT / 4)
            writer.write(b" ")

    dripping = asyncio.create_task(drip())
    try:
        answer, elapsed = await closed_after(reader, within=deadline + SLACK)
    finally:
        dripping.cancel()
    assert status_of(answer) == 408
    assert message_of(answer) == "request body timed out: the body was not complete in time"
    assert elapsed >= deadline * 0.9
    writer.close()


async def test_anonymous_bodies_hold_at_most_their_share_and_staff_writes_go_on(port: int) -> None:
    # Four stalled anonymous bodies of the largest size, from four addresses, take the
    # anonymous share (half the budget) ...
    stalled = [await stall_a_body(port, f"127.0.0.{n}") for n in range(2, 6)]
    await asyncio.sleep(BODY_TIMEOUT / 3)
    # ... so a fifth anonymous one, from yet another address, is refused as its bytes arrive ...
    reader, writer = await connect(port, "127.0.0.6")
    head = USER_HEAD + f"Content-Length: {MAX_BODY}\r\nConnection: close\r\n\r\n".encode()
    writer.write(head + b" " * MAX_BODY)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BODY_TIMEOUT / 2)
    assert head.startswith(b"HTTP/1.1 503")
    assert f"Retry-After: {UNAVAILABLE_RETRY_AFTER}\r\n".encode() in head
    writer.close()
    # ... while a staff write still has its bytes.
    pet = json.dumps({"name": "rex", "photoUrls": []}).encode()
    staff_write = STAFF_PET_HEAD + f"Content-Length: {len(pet)}\r\nConnection: close\r\n\r\n".encode() + pet
    answer = await answer_to(port, staff_write)
    assert status_of(answer) == 200, answer
    # Once the stalled ones have timed out, their bytes are free again.
    for stalled_reader, stalled_writer in stalled:
        answer, _ = await closed_after(stalled_reader, within=BODY_TIMEOUT + SLACK)
        assert status_of(answer) == 408
        stalled_writer.close()
    answer = await answer_to(port, sign_up("after"), "127.0.0.6")
    assert status_of(answer) == 200, answer


async def test_bodies_that_trickle_hold_only_what_arrived(port: int) -> None:
    # Eight sign-ups from eight addresses declare a body of the largest size and send a byte:
    # declared, they would be twice the anonymous share; held as they arrive, next to nothing.
    trickling = []
    for n in range(2, 10):
        reader, writer = await connect(port, f"127.0.0.{n}")
        writer.write(USER_HEAD + f"Content-Length: {MAX_BODY}\r\n\r\n".encode() + b"{")
        trickling.append((reader, writer))
    await asyncio.sleep(BODY_TIMEOUT / 3)
    answer = await answer_to(port, sign_up("meanwhile"), "127.0.0.20")
    assert status_of(answer) == 200, answer
    for _, writer in trickling:
        writer.close()


async def test_one_address_holds_at_most_its_share_of_the_body_budget(port: int) -> None:
    stalled_reader, stalled_writer = await stall_a_body(port, "127.0.0.2")
    await asyncio.sleep(BODY_TIMEOUT / 3)
    answer = await answer_to(port, sign_up("second"), "127.0.0.2")
    assert status_of(answer) == 503
    assert message_of(answer) == "this address is sending too many request bodies at once; retry shortly"
    answer = await answer_to(port, sign_up("elsewhere"), "127.0.0.3")  # the others still have theirs
    assert status_of(answer) == 200, answer
    stalled_writer.close()
    del stalled_reader


def test_the_defaults_close_every_stalled_or_idle_connection_within_a_minute() -> None:
    defaults = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SESSION_SECRET})
    # A head started just before the keep-alive clock runs out still gets its header timeout.
    assert defaults.keepalive_timeout_seconds + defaults.header_timeout_seconds <= 60
    assert defaults.body_timeout_seconds <= 60
    assert defaults.body_buffer_bytes == BODY_BUFFER_BYTES >= defaults.max_body_bytes == MAX_BODY_BYTES


def test_the_readme_states_the_timeouts_and_the_buffer_bound() -> None:
    readme = documentation_words()
    for name, value in [
        ("HEADER_TIMEOUT_SECONDS", f"{HEADER_TIMEOUT_SECONDS:g}"),
        ("BODY_TIMEOUT_SECONDS", f"{BODY_TIMEOUT_SECONDS:g}"),
        ("KEEPALIVE_TIMEOUT_SECONDS", f"{KEEPALIVE_TIMEOUT_SECONDS:g}"),
        ("BODY_BUFFER_BYTES", str(BODY_BUFFER_BYTES)),
    ]:
        assert f"| `{name}` | gateway | {value} |" in readme
    assert f"`BODY_BUFFER_BYTES` ({BODY_BUFFER_BYTES // 2**20} MiB)" in readme
