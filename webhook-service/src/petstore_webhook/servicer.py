"""WebhookService RPCs: staff register, list and remove the endpoints events are sent to, and
look at their recent delivery attempts.

Every method is staff only: a customer or an anonymous caller is PERMISSION_DENIED before
anything is read (an endpoint's URL and its deliveries are the shop's business). Errors are
raised as petstore_common.errors exceptions; the shared server interceptor turns them into gRPC
statuses. Every request has passed its field rules in that interceptor before a method here runs.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.webhook.v1 import webhook_service_pb2, webhook_service_pb2_grpc
from petstore_common.callers import require_staff
from petstore_webhook import validation
from petstore_webhook.storage.base import (
    ATTEMPTS_KEPT,
    Attempt,
    EndpointRecord,
    EndpointState,
    Outcome,
    WebhookStore,
)
from petstore_webhook.targets import IPNetwork, Resolve, resolve_host

Context = grpc.aio.ServicerContext[Any, Any]

STAFF_ONLY = "only staff may manage webhooks"
SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix Standard Webhooks secrets carry, no secret)
SECRET_BYTES = 32
"""256 bits: the HMAC-SHA256 key Standard Webhooks signs with."""
DEFAULT_DELIVERIES_PAGE = 50
"""Attempts ListDeliveries answers when the request asks for none (its cap: ATTEMPTS_KEPT)."""

STATES = {
    EndpointState.ENABLED: webhook_service_pb2.ENDPOINT_STATE_ENABLED,
    EndpointState.DISABLED: webhook_service_pb2.ENDPOINT_STATE_DISABLED,
}
OUTCOMES = {
    Outcome.DELIVERED: webhook_service_pb2.ATTEMPT_OUTCOME_DELIVERED,
    Outcome.FAILED: webhook_service_pb2.ATTEMPT_OUTCOME_FAILED,
}


def new_secret() -> str:
    """A Standard Webhooks signing secret: "whsec_" and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


class WebhookServicer(webhook_service_pb2_grpc.WebhookServiceServicer):
    def __init__(
        self,
        store: WebhookStore,
        *,
        allowed_networks: Sequence[IPNetwork] = (),
        resolve: Resolve = resolve_host,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._allowed_networks = tuple(allowed_networks)
        self._resolve = resolve
        self._clock = clock

    async def CreateEndpoint(
        self, request: webhook_service_pb2.CreateEndpointRequest, context: Context
    ) -> webhook_service_pb2.CreateEndpointResponse:
        require_staff(request.caller, STAFF_ONLY)
        event_types = validation.event_types(request.event_types)
        url = await validation.target_url(request.url, self._allowed_networks, resolve=self._resolve)
        secret = new_secret()
        endpoint = await self._store.create_endpoint(
            url=url, event_types=event_types, secret=secret, at=self._clock()
        )
        return webhook_service_pb2.CreateEndpointResponse(endpoint=_endpoint(endpoint), secret=secret)

    async def ListEndpoints(
        self, request: webhook_service_pb2.ListEndpointsRequest, context: Context
    ) -> webhook_service_pb2.ListEndpointsResponse:
        require_staff(request.caller, STAFF_ONLY)
        endpoints = await self._store.list_endpoints()
        return webhook_service_pb2.ListEndpointsResponse(
            endpoints=[_endpoint(endpoint) for endpoint in endpoints]
        )

    async def DeleteEndpoint(
        self, request: webhook_service_pb2.DeleteEndpointRequest, context: Context
    ) -> webhook_service_pb2.DeleteEndpointResponse:
        require_staff(request.caller, STAFF_ONLY)
        await self._store.delete_endpoint(request.id)
        return webhook_service_pb2.DeleteEndpointResponse()

    async def ListDeliveries(
        self, request: webhook_service_pb2.ListDeliveriesRequest, context: Context
    ) -> webhook_service_pb2.ListDeliveriesResponse:
        require_staff(request.caller, STAFF_ONLY)
        limit = min(request.page_size or DEFAULT_DELIVERIES_PAGE, ATTEMPTS_KEPT)
        attempts = await self._store.recent_attempts(request.endpoint_id, limit=limit)
        return webhook_service_pb2.ListDeliveriesResponse(
            attempts=[_attempt(attempt) for attempt in attempts]
        )


def _endpoint(endpoint: EndpointRecord) -> webhook_service_pb2.Endpoint:
    """The endpoint as staff see it: never its secret."""
    return webhook_service_pb2.Endpoint(
        id=endpoint.id,
        url=endpoint.url,
        event_types=endpoint.event_types,
        state=STATES[endpoint.state],
        disabled_reason=endpoint.disabled_reason,
        created_at=_timestamp(endpoint.created_at),
    )


def _attempt(attempt: Attempt) -> webhook_service_pb2.DeliveryAttempt:
    return webhook_service_pb2.DeliveryAttempt(
        message_id=attempt.message_id,
        event_type=attempt.event_type,
        attempt=attempt.attempt,
        attempted_at=_timestamp(attempt.attempted_at),
        outcome=OUTCOMES[attempt.outcome],
        response_status=attempt.response_status,
        error=attempt.error,
    )


def _timestamp(moment: datetime) -> Timestamp:
    timestamp = Timestamp()
    timestamp.FromDatetime(moment)
    return timestamp
