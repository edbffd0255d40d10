"""The request-body bytes the gateway holds at once, across all connections."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from aiohttp import web

from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER, ApiError


class BodyBudget:
    """Request-body bytes held at once across all connections. A body reserves its
    Content-Length (a chunked one the most a body may be) before it is read and gives it back
    once parsed; one that does not fit is 503 with Retry-After at once, unread: clients that
    stall their bodies cannot make the gateway hold more than this."""

    def __init__(self, max_bytes: int, max_body_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_body_bytes = max_body_bytes
        self.held = 0

    @contextlib.contextmanager
    def reserve(self, request: web.Request) -> Iterator[None]:
        length = request.content_length
        amount = self.max_body_bytes if length is None else min(length, self.max_body_bytes)
        if self.held + amount > self.max_bytes:
            raise ApiError(
                503,
                "the gateway is reading too many request bodies; retry shortly",
                headers={"Retry-After": UNAVAILABLE_RETRY_AFTER},
            )
        self.held += amount
        try:
            yield
        finally:
            self.held -= amount
