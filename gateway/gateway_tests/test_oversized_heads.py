"""Heads that are too large, too long or left half-sent, and requests aiohttp cannot parse, from
the side of a client that sends them over raw sockets. Each runs against the gateway served as
serve() serves it (guarded.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

import pytest

from petstore_gateway.head_limits import (
    MAX_HEAD_BYTES,
    MAX_HEADER_FIELDS,
    MAX_UNFINISHED_HEAD_BYTES,
    MAX_UNFINISHED_HEADS_PER_ADDRESS,
)
from petstore_gateway.refusals import (
    HEAD_TOO_LARGE,
    HEAD_TOO_LONG,
    TOO_MANY_HEADS,
    TOO_MANY_HEADS_FROM_ADDRESS,
)

from .guarded import HEADER_TIMEOUT, SLACK, body_of, closed_after, connect, headers_of, port, status_of

__all__ = ["port"]  # the fixture

SECRET = b"s3cr3t-credential-0123456789"


def head_with(fields: list[bytes]) -> bytes:
    return (
        b"GET /livez HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
        + b"".join(f + b"\r\n" for f in fields)
        + b"\r\n"
    )


async def answer_to(port: int, request: bytes, source: str = "127.0.0.1") -> bytes:
    reader, writer = await connect(port, source)
    writer.write(request)
    try:
        answer, _ = await closed_after(reader, within=2)
    finally:
        writer.close()
    return answer


def assert_error_body(answer: bytes, status: int, message: str | None = None) -> None:
    assert status_of(answer) == status, answer[:200]
    headers = headers_of(answer)
    assert headers["content-type"].startswith("application/json")
    assert headers["x-content-type-options"] == "nosniff"
    body = body_of(answer)
    assert (body["code"], body["type"]) == (status, "error")
    if message is not None:
        assert body["message"] == message


async def test_a_head_that_fits_the_bounds_is_served(port: int) -> None:
    # Nearly every line the bound allows, nearly every byte: what no real client comes close to.
    fields = [f"X-Field-{n}: ".encode() + b"v" * 400 for n in range(MAX_HEADER_FIELDS - 3)]
    request = head_with(fields)
    assert len(request) < MAX_HEAD_BYTES
    answer = await answer_to(port, request)
    assert status_of(answer) == 200, answer[:200]


async def test_a_head_over_the_byte_bound_is_431_though_each_line_is_short(port: int) -> None:
    fields = [f"X-Field-{n}: ".encode() + b"v" * 2000 for n in range(20)]  # 20 lines, 40 KB
    answer = await answer_to(port, head_with(fields))
    assert_error_body(answer, 431, HEAD_TOO_LARGE)


async def test_a_head_over_the_line_bound_is_431_though_it_is_small(port: int) -> None:
    fields = [f"X-F{n}: v".encode() for n in range(MAX_HEADER_FIELDS + 1)]
    answer = await answer_to(port, head_with(fields))
    assert_error_body(answer, 431, HEAD_TOO_LONG)


async def test_a_megabyte_of_headers_is_cut_off_at_the_bound(port: int) -> None:
    """aiohttp alone would take 128 lines of 8190 bytes; the answer comes once the bound is passed."""
    reader, writer = await connect(port)
    line = b"X-Pad: " + b"v" * 8000 + b"\r\n"
    writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\n" + line * 128)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    answer, _ = await closed_after(reader, within=HEADER_TIMEOUT / 2)
    assert_error_body(answer, 431, HEAD_TOO_LARGE)
    writer.close()


async def test_one_address_keeps_only_so_many_half_sent_heads(port: int) -> None:
    held = []
    for _ in range(MAX_UNFINISHED_HEADS_PER_ADDRESS):
        reader, writer = await connect(port, "127.0.0.2")
        writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        held.append((reader, writer))
    await asyncio.sleep(0.05)
    # The next one from that address is answered and closed at once, not after the header timeout ...
    reader, writer = await connect(port, "127.0.0.2")
    writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\nX-Slow: ")
    answer, _ = await closed_after(reader, within=HEADER_TIMEOUT / 2)
    assert_error_body(answer, 429, TOO_MANY_HEADS_FROM_ADDRESS)
    writer.close()
    # ... while another address is served ...
    answer = await answer_to(port, head_with([]), "127.0.0.3")
    assert status_of(answer) == 200
    # ... and the held ones still get their own header timeout.
    for held_reader, held_writer in held:
        answer, _ = await closed_after(held_reader, within=HEADER_TIMEOUT + SLACK)
        assert status_of(answer) == 408
        held_writer.close()


async def test_all_half_sent_heads_together_hold_at_most_their_bound(port: int) -> None:
    part = b"GET /livez HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"v" * (MAX_HEAD_BYTES - 100)
    fit = MAX_UNFINISHED_HEAD_BYTES // len(part)
    addresses = [f"127.0.1.{n}" for n in range(1, fit // MAX_UNFINISHED_HEADS_PER_ADDRESS + 3)]
    sources = [address for address in addresses for _ in range(MAX_UNFINISHED_HEADS_PER_ADDRESS)][: fit + 4]
    connections = [await connect(port, source) for source in sources]
    for _, writer in connections:
        writer.write(part)
        await writer.drain()
    await asyncio.sleep(0.1)
    refused = []
    for reader, _ in connections[fit:]:
        answer, _ = await closed_after(reader, within=HEADER_TIMEOUT / 2)
        refused.append(answer)
    for answer in refused:
        assert_error_body(answer, 503, TOO_MANY_HEADS)
    for _, writer in connections:
        writer.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(
            b"GET /livez HTTP/1.1\r\nHost: t\r\napi_key: " + SECRET + b"\x00\r\n\r\n", id="nul-in-value"
        ),
        pytest.param(b"GET /livez HTTP/1.1\r\nHost: t\r\napi_key " + SECRET + b"\r\n\r\n", id="no-colon"),
        pytest.param(b"GET /livez HTTP/1.1\r\nHost: t\r\nAuth\x01: " + SECRET + b"\r\n\r\n", id="bad-name"),
        pytest.param(b"G\x01T /" + SECRET + b" HTTP/1.1\r\nHost: t\r\n\r\n", id="bad-method"),
        pytest.param(b"GET /" + SECRET + b"\x7f HTTP/1.1\r\nHost: t\r\n\r\n", id="bad-target"),
    ],
)
async def test_a_request_aiohttp_cannot_parse_is_a_json_400_that_echoes_nothing(
    port: int, request_bytes: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="petstore_gateway.connections"):
        answer = await answer_to(port, request_bytes)
    assert_error_body(answer, 400)
    assert SECRET not in answer
    [record] = [r for r in caplog.records if r.name == "petstore_gateway.connections"]
    assert record.getMessage().startswith("connection cut: malformed request")
    assert getattr(record, "client", None) == "127.0.0.1"
    assert record.exc_info is None


async def test_requests_pipelined_behind_bodies_are_each_counted_and_served(port: int) -> None:
    """A head is counted from where the body before it ends, in the same read or not."""
    body = b'{"username": "piped", "email": "p@example.com", "password": "pass-word-1"}'
    chunked = (
        b"%x\r\n" % len(body.replace(b"piped", b"chunk"))
        + body.replace(b"piped", b"chunk")
        + b"\r\n0\r\n\r\n"
    )
    user = b"POST /v2/user HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    padding = [f"X-Pad-{n}: ".encode() + b"v" * 1000 for n in range(20)]  # 20 KB: two would not fit one head
    requests = (
        user
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
        + head_with(padding).replace(b"Connection: close\r\n", b"")
        + user
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + chunked
        + head_with(padding)
    )
    reader, writer = await connect(port)
    writer.write(requests)
    answer, _ = await closed_after(reader, within=2)
    writer.close()
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", answer) == [b"200"] * 4, answer
