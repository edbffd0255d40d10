"""The one error type handlers raise, and the one table from gRPC statuses to HTTP statuses."""

from __future__ import annotations

import math
from collections.abc import Mapping
from http import HTTPStatus
from types import MappingProxyType

import grpc

from petstore_common.idempotency_keys import LEASE_SECONDS


class ApiError(Exception):
    """An HTTP error with a message safe to show the client (rendered as an ApiResponse)."""

    def __init__(self, status: int, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


GRPC_TO_HTTP: Mapping[grpc.StatusCode, int] = MappingProxyType(
    {
        grpc.StatusCode.INVALID_ARGUMENT: 400,
        # The resource's state forbids it (an order that has moved on): a conflict.
        grpc.StatusCode.FAILED_PRECONDITION: 409,
        # Another request holds what this one needs (the twin of an idempotent create).
        grpc.StatusCode.ABORTED: 409,
        grpc.StatusCode.OUT_OF_RANGE: 400,
        grpc.StatusCode.PERMISSION_DENIED: 403,
        grpc.StatusCode.NOT_FOUND: 404,
        grpc.StatusCode.ALREADY_EXISTS: 409,
        grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
        grpc.StatusCode.UNAVAILABLE: 503,
        grpc.StatusCode.DEADLINE_EXCEEDED: 503,
        # The gateway cancels a call only for a client that has gone; any other CANCELLED is a
        # server stopping with the call in flight: unavailable, like a refused connection.
        grpc.StatusCode.CANCELLED: 503,
    }
)
"""Every status not listed here is a 500 with a generic message. UNAUTHENTICATED among them: the
gateway itself decides who the client is (401); a service refuses only the gateway's own caller
token, which is the deployment's fault (keys or upgrade order), never the client's."""

SERVICE_RETRY_AFTER = "1"
"""Retry-After (seconds) of a 429 that a service's RESOURCE_EXHAUSTED became."""
UNAVAILABLE_RETRY_AFTER = "1"
"""Retry-After (seconds) of every 503: readiness and routing follow a service's health within a
second, so a second later the answer may be different."""
IN_PROGRESS_RETRY_AFTER = str(math.ceil(LEASE_SECONDS))
"""Retry-After (seconds) of a 409 that a service's ABORTED became (a twin of an idempotent create
still running, a write that lost a race): by then a twin that died has lost its lease."""

Overrides = Mapping[grpc.StatusCode, int]
NO_OVERRIDES: Overrides = MappingProxyType({})


def http_status_for(code: grpc.StatusCode, overrides: Overrides = NO_OVERRIDES) -> int:
    return overrides.get(code) or GRPC_TO_HTTP.get(code, 500)


def api_error_from_rpc(
    code: grpc.StatusCode,
    details: str | None,
    service: str,
    overrides: Overrides = NO_OVERRIDES,
    *,
    retry_after: str | None = None,
) -> ApiError:
    """4xx errors carry the service's own (client-facing) message; 5xx never show internals.
    A 429's Retry-After is the service's own figure when it sent one (`retry_after`)."""
    status = http_status_for(code, overrides)
    if status >= 500:
        if status == 503:
            return ApiError(
                status,
                f"the {service} service is unavailable",
                headers={"Retry-After": UNAVAILABLE_RETRY_AFTER},
            )
        return ApiError(status, "internal error")
    if status == 429:  # a service shedding load (MAX_CONCURRENT_RPCS): worth a retry shortly
        wait = retry_after if retry_after is not None and retry_after.isdigit() else SERVICE_RETRY_AFTER
        return ApiError(status, details or "too many requests", headers={"Retry-After": wait})
    if status == 409 and code == grpc.StatusCode.ABORTED:  # retry: the holder ends or moves on
        return ApiError(status, details or "conflict", headers={"Retry-After": IN_PROGRESS_RETRY_AFTER})
    return ApiError(status, details or HTTPStatus(status).phrase.lower())
