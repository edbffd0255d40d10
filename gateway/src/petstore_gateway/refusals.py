"""The answers to requests aiohttp could not parse or the gateway would not read to the end,
in the product's error body (ApiResponse JSON) and never echoing the client's bytes.

Two kinds: raw bytes written to the transport where no request exists yet (a head that is too
large, too slow, or one connection too many), and the Response answering a request aiohttp
could not parse (aiohttp's own is plain text that quotes the offending line, credentials and
all). aiohttp's parser errors come through aiohttp_adapter.py (not all are exported).
"""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web

from petstore_gateway.aiohttp_adapter import (
    TOO_MANY_HEADERS,
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
)
from petstore_gateway.head_limits import MAX_HEAD_BYTES, MAX_HEAD_LINES, MAX_HEADER_FIELDS
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.representations.api_response import API_RESPONSE, error_body
from petstore_gateway.representations.shapes import encode

NOSNIFF = {"X-Content-Type-Options": "nosniff"}
"""On every error body: no browser may read it as anything but JSON."""

HEAD_TOO_LARGE = f"request headers are larger than {MAX_HEAD_BYTES} bytes"
HEAD_TOO_LONG = f"a request may have at most {MAX_HEAD_LINES} head lines ({MAX_HEADER_FIELDS} headers)"
HEAD_TIMED_OUT = "request headers timed out"
TOO_MANY_HEADS_FROM_ADDRESS = "too many unfinished requests from this address"
TOO_MANY_HEADS = "the gateway is receiving too many request headers at once; retry shortly"


def error_json(status: int, message: str) -> bytes:
    """The ApiResponse error body, encoded as every other JSON answer of the gateway is."""
    return encode(error_body(status, message), BodyFormat.JSON, API_RESPONSE)


def raw_error(status: int, message: str, *, retry_after: str | None = None) -> bytes:
    """A whole HTTP/1.1 answer that closes its connection, for where no request exists."""
    body = error_json(status, message)
    phrase = HTTPStatus(status).phrase
    extra = f"Retry-After: {retry_after}\r\n" if retry_after is not None else ""
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: application/json\r\n"
        f"X-Content-Type-Options: nosniff\r\n{extra}Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


def parse_failure(exc: BaseException | None, status: int) -> tuple[int, str]:
    """Status and message for what aiohttp's parser raised: chosen by the error's type, never
    taken from its text (which quotes the client's bytes)."""
    if isinstance(exc, LineTooLong):
        return 431, HEAD_TOO_LARGE
    if isinstance(exc, BadHttpMethod):
        return 400, "malformed request line: unknown method"
    if isinstance(exc, BadStatusLine):
        return 400, "malformed request line"
    if isinstance(exc, InvalidURLError):
        return 400, "malformed request target"
    if isinstance(exc, InvalidHeader):
        return 400, "malformed request header"
    if isinstance(exc, BadHttpMessage) and exc.message == TOO_MANY_HEADERS:
        return 431, HEAD_TOO_LONG
    if isinstance(exc, HttpProcessingError):
        return 400, "malformed request"
    if status >= 500:
        return status, "internal error"
    return status, HTTPStatus(status).phrase.lower()


def failure_response(status: int, message: str) -> web.Response:
    response = web.Response(
        status=status, body=error_json(status, message), content_type="application/json", headers=NOSNIFF
    )
    response.force_close()
    return response
