"""Calls to the services: deadline on every call, gRPC statuses turned into ApiErrors (a refused
field worded for the client: violations.py)."""

from __future__ import annotations

import logging
from typing import TypeVar

import grpc
from aiohttp import web

from petstore_common.errors import RETRY_AFTER_METADATA
from petstore_gateway.errors import NO_OVERRIDES, Overrides, api_error_from_rpc
from petstore_gateway.etags import IF_MATCH
from petstore_gateway.keys import SETTINGS
from petstore_gateway.operations import current_operation
from petstore_gateway.violations import violation_message

log = logging.getLogger(__name__)

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")


async def call_service(
    method: grpc.aio.UnaryUnaryMultiCallable[RequestT, ResponseT],
    message: RequestT,
    *,
    service: str,
    deadline_seconds: float,
    overrides: Overrides = NO_OVERRIDES,
) -> ResponseT:
    """Call `method` within the deadline; `service` names it in 5xx messages ("pet")."""
    try:
        return await method(message, timeout=deadline_seconds)
    except grpc.aio.AioRpcError as exc:
        trailing = exc.trailing_metadata()
        details = violation_message(exc.code(), trailing, message) or exc.details()
        error = api_error_from_rpc(
            exc.code(), details, service, overrides, retry_after=_retry_after(trailing)
        )
        if error.status >= 500:
            log.warning("service call failed", extra={"service": service, "grpc_code": exc.code().name})
        raise error from None


async def call(
    request: web.Request,
    method: grpc.aio.UnaryUnaryMultiCallable[RequestT, ResponseT],
    message: RequestT,
    *,
    service: str,
) -> ResponseT:
    """call_service with the configured deadline (GRPC_TIMEOUT_SECONDS), the service's statuses
    mapped as the request's operation declares."""
    op = current_operation(request)
    return await call_service(
        method,
        message,
        service=service,
        deadline_seconds=request.config_dict[SETTINGS].grpc_timeout_seconds,
        overrides=op.status_overrides(if_match=IF_MATCH in request.headers),
    )


def _retry_after(metadata: grpc.aio.Metadata | None) -> str | None:
    """The service's RETRY_AFTER_METADATA, when it sent one."""
    if metadata is None:
        return None
    value = metadata.get(RETRY_AFTER_METADATA)
    return value if isinstance(value, str) else None
