"""The Idempotency-Key request header (IETF httpapi draft; Stripe's API works the same way).

The gateway checks the key's form and passes it on; the service that owns the resource keeps
the record and decides replay, conflict or mismatch.
"""

from __future__ import annotations

from types import MappingProxyType

import grpc
from aiohttp import web

from petstore_common.idempotency_keys import KEY_RULE, is_valid_key
from petstore_gateway.errors import ApiError, Overrides

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
"""Set to "true" on an answer that repeats the first answer to the key."""
KEY_REUSED_IS_422: Overrides = MappingProxyType({grpc.StatusCode.FAILED_PRECONDITION: 422})
"""A create fails its precondition only when its key was used for a different request."""


def idempotency_key(request: web.Request) -> str:
    """The request's key, or "" without one; 400 for a key that is not 1 to 255 characters of
    visible ASCII (or is sent twice)."""
    values = request.headers.getall(IDEMPOTENCY_KEY_HEADER, [])
    if not values:
        return ""
    if len(values) > 1:
        raise ApiError(400, f"{IDEMPOTENCY_KEY_HEADER} must be sent once")
    key = values[0]
    if not is_valid_key(key):
        raise ApiError(400, KEY_RULE)
    return key


def replay_headers(replayed: bool) -> dict[str, str] | None:
    return {REPLAYED_HEADER: "true"} if replayed else None
