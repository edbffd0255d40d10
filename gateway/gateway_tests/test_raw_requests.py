"""Requests only a raw socket can send: bytes that are not UTF-8 in headers and multipart parts,
charsets Python does not know, a Content-Encoding the body does not follow. Each one is a 4xx
with the error body (or ignored), never a 500."""

from __future__ import annotations

import asyncio
import json

import pytest

from petstore_gateway.bodies import MAX_FORM_FIELDS

from .backend import Backend
from .conftest import STATIC_KEY, Client

KEY = STATIC_KEY.encode()


async def send(client: Client, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send one request as raw bytes; (status, headers, body) of the answer."""
    assert client.server.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
    try:
        length = f"Content-Length: {len(body)}\r\n".encode() if body else b""
        writer.write(head + b"Host: test\r\nConnection: close\r\n" + length + b"\r\n" + body)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        await writer.wait_closed()
    head_part, _, payload = answer.partition(b"\r\n\r\n")
    status_line, *lines = head_part.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, payload


def error_message(status: int, payload: bytes) -> str:
    body = json.loads(payload)
    assert (body["code"], body["type"]) == (status, "error")
    return str(body["message"])


async def test_an_api_key_that_is_not_utf8_is_401_on_writes_and_ignored_on_reads(
    client: Client, backend: Backend
) -> None:
    await backend.add_pet(1, "rex")
    status, _, payload = await send(client, b"DELETE /v2/pet/1 HTTP/1.1\r\napi_key: \xff\xfe.\xff.\xff\r\n")
    assert (status, error_message(status, payload)) == (401, "invalid api_key")
    status, _, _ = await send(client, b"GET /v2/pet/1 HTTP/1.1\r\napi_key: \xff\xfe\r\n")
    assert status == 200
    status, _, payload = await send(client, b"GET /v2/user/logout HTTP/1.1\r\napi_key: \xff.\xfe.\xfd\r\n")
    assert (status, json.loads(payload)["message"]) == (200, "ok")


def multipart(*parts: bytes) -> bytes:
    return b"".join(b"--b\r\n" + part + b"\r\n" for part in parts) + b"--b--\r\n"


IMAGE = b'Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\nPNG'


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (
            b'Content-Disposition: form-data; name="file"; filename="\xff\xfe.png"\r\n'
            b"Content-Type: image/png\r\n\r\nPNG",
            "the file name must be UTF-8 text",
        ),
        (
            b'Content-Disposition: form-data; name="file"; filename="a.png"\r\n'
            b"Content-Type: image/\xff\r\n\r\nPNG",
            "the file's Content-Type must be UTF-8 text",
        ),
    ],
)
async def test_upload_parts_with_bytes_that_are_not_utf8_are_400(
    client: Client, backend: Backend, part: bytes, message: str
) -> None:
    await backend.add_pet(1, "rex")
    head = (
        b"POST /v2/pet/1/uploadImage HTTP/1.1\r\napi_key: " + KEY + b"\r\n"
        b"Content-Type: multipart/form-data; boundary=b\r\n"
    )
    status, _, payload = await send(client, head, multipart(part))
    assert (status, error_message(status, payload)) == (400, message)
    assert await backend.stack.pet.store.list_images(1) == []


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (b"application/x-www-form-urlencoded; charset=no-such-charset", b"name=rex"),
        (
            b"multipart/form-data; boundary=b",
            multipart(
                b'Content-Disposition: form-data; name="name"\r\n'
                b"Content-Type: text/plain; charset=nope\r\n\r\nx"
            ),
        ),
        (
            b"multipart/form-data; boundary=b",
            # The bad part first: a file part already read would be left to the garbage collector.
            multipart(
                b'Content-Disposition: form-data; name="additionalMetadata"\r\n'
                b"Content-Type: text/plain; charset=nope\r\n\r\nx",
                IMAGE,
            ),
        ),
    ],
)
async def test_forms_in_an_unknown_charset_are_400(
    client: Client, backend: Backend, content_type: bytes, body: bytes
) -> None:
    await backend.add_pet(1, "rex")
    path = b"/v2/pet/1/uploadImage" if b"additionalMetadata" in body else b"/v2/pet/1"
    head = b"POST " + path + b" HTTP/1.1\r\napi_key: " + KEY + b"\r\nContent-Type: " + content_type + b"\r\n"
    status, _, payload = await send(client, head, body)
    assert (status, error_message(status, payload)) == (400, "request body is not a valid form")
    assert (await backend.pet(1)).name == "rex"


@pytest.mark.parametrize("encoding", [b"deflate", b"gzip"])
async def test_a_body_that_does_not_follow_its_content_encoding_is_400(
    client: Client, backend: Backend, encoding: bytes
) -> None:
    head = (
        b"POST /v2/pet HTTP/1.1\r\napi_key: " + KEY + b"\r\n"
        b"Content-Type: application/json\r\nContent-Encoding: " + encoding + b"\r\n"
    )
    status, _, payload = await send(client, head, b"not compressed at all")
    assert status == 400
    error_message(status, payload)
    assert await backend.pet_ids() == []


async def test_a_part_header_aiohttp_cannot_parse_is_400(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "rex")
    head = (
        b"POST /v2/pet/1/uploadImage HTTP/1.1\r\napi_key: " + KEY + b"\r\n"
        b"Content-Type: multipart/form-data; boundary=b\r\n"
    )
    part = b'Content-Disposition: form-data; name="file"; filename="a\x00.png"\r\n'
    part += b"Content-Type: image/png\r\n\r\nPNG"
    status, _, payload = await send(client, head, multipart(part))
    assert (status, error_message(status, payload)) == (400, "request body is not a valid form")


async def test_too_many_form_fields_is_413_saying_so(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "rex")
    head = (
        b"POST /v2/pet/1 HTTP/1.1\r\napi_key: "
        + KEY
        + b"\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    )
    status, _, payload = await send(client, head, b"a=1&" * 5000)
    message = f"a form may have at most {MAX_FORM_FIELDS} fields"
    assert (status, error_message(status, payload)) == (413, message)
