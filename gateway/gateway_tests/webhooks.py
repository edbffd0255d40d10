"""A fake webhook service behind the gateway under test: the WebhookService contract's statuses
over an in-memory list of endpoints, served the way every service is (petstore_common's shared
server: the caller gate that checks the gateway's caller tokens, the protos' field rules, health).

It honours what webhook_service.proto documents, no more: staff only (PERMISSION_DENIED),
INVALID_ARGUMENT for a URL that is not https or names a loopback/private host and for an unknown
event type, RESOURCE_EXHAUSTED past its most endpoints, NOT_FOUND for an absent endpoint. Which
addresses a name resolves to, delivery and signing are the real service's (petstore_webhook,
tested there and end to end in tests/e2e).
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.webhook.v1 import webhook_service_pb2, webhook_service_pb2_grpc
from petstore_common.callers import require_staff
from petstore_common.errors import InvalidArgument, NotFound, ResourceExhausted
from petstore_common.field_violations import FieldViolation
from petstore_common.grpc_server import ServiceDefinition
from petstore_devstack.inprocess import InProcessService
from petstore_devstack.signing import TRUSTED_ISSUERS, trusted_caller_keys
from petstore_gateway.clients import WEBHOOK_SERVICE
from petstore_gateway.representations.webhook import EVENT_TYPES

MAX_ENDPOINTS = 5
SECRET_PREFIX = "whsec_"
ENABLED = webhook_service_pb2.ENDPOINT_STATE_ENABLED
DISABLED = webhook_service_pb2.ENDPOINT_STATE_DISABLED


def _refused(field_name: str, description: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field_name}: {description}",
        violation=FieldViolation(field=field_name, reason="webhook.url", description=description),
    )


def _private_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


@dataclass(eq=False)
class FakeWebhookService(webhook_service_pb2_grpc.WebhookServiceServicer):
    endpoints: dict[int, webhook_service_pb2.Endpoint] = field(default_factory=dict)
    attempts: dict[int, list[webhook_service_pb2.DeliveryAttempt]] = field(default_factory=dict)
    page_sizes: list[int] = field(default_factory=list)
    """The page_size of every ListDeliveries call, as it arrived."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def CreateEndpoint(
        self, request: webhook_service_pb2.CreateEndpointRequest, context: Any
    ) -> webhook_service_pb2.CreateEndpointResponse:
        require_staff(request.caller)
        parts = urlsplit(request.url)
        if parts.scheme != "https" or not parts.hostname:
            raise _refused("url", "must be https")
        if _private_host(parts.hostname):
            raise _refused("url", "must not resolve to a private, loopback or link-local address")
        for index, event_type in enumerate(request.event_types):
            if event_type not in EVENT_TYPES:
                raise _refused(f"event_types[{index}]", f"must be one of {', '.join(EVENT_TYPES)}")
        if len(self.endpoints) >= MAX_ENDPOINTS:
            raise ResourceExhausted(
                f"the webhook service holds its most endpoints ({MAX_ENDPOINTS})", retry_after_seconds=60
            )
        endpoint = self.add(request.url, list(request.event_types))
        return webhook_service_pb2.CreateEndpointResponse(
            endpoint=endpoint, secret=f"{SECRET_PREFIX}c2VjcmV0LW9mLXtlbmRwb2ludC5pZH0="
        )

    async def ListEndpoints(
        self, request: webhook_service_pb2.ListEndpointsRequest, context: Any
    ) -> webhook_service_pb2.ListEndpointsResponse:
        require_staff(request.caller)
        return webhook_service_pb2.ListEndpointsResponse(
            endpoints=[self.endpoints[i] for i in sorted(self.endpoints)]
        )

    async def DeleteEndpoint(
        self, request: webhook_service_pb2.DeleteEndpointRequest, context: Any
    ) -> webhook_service_pb2.DeleteEndpointResponse:
        require_staff(request.caller)
        if self.endpoints.pop(request.id, None) is None:
            raise NotFound(f"webhook endpoint {request.id} not found")
        self.attempts.pop(request.id, None)
        return webhook_service_pb2.DeleteEndpointResponse()

    async def ListDeliveries(
        self, request: webhook_service_pb2.ListDeliveriesRequest, context: Any
    ) -> webhook_service_pb2.ListDeliveriesResponse:
        require_staff(request.caller)
        self.page_sizes.append(request.page_size)
        if request.endpoint_id not in self.endpoints:
            raise NotFound(f"webhook endpoint {request.endpoint_id} not found")
        newest_first = list(reversed(self.attempts.get(request.endpoint_id, [])))
        return webhook_service_pb2.ListDeliveriesResponse(attempts=newest_first[: request.page_size or 50])

    # Seeding, as the real service's store would hold them ------------------------------

    def add(
        self,
        url: str = "https://hooks.example.com/petstore",
        event_types: list[str] | None = None,
        *,
        disabled_reason: str = "",
    ) -> webhook_service_pb2.Endpoint:
        created_at = Timestamp()
        created_at.FromSeconds(1_700_000_000)
        endpoint = webhook_service_pb2.Endpoint(
            id=next(self._ids),
            url=url,
            event_types=event_types if event_types is not None else ["order.placed"],
            state=DISABLED if disabled_reason else ENABLED,
            disabled_reason=disabled_reason,
            created_at=created_at,
        )
        self.endpoints[endpoint.id] = endpoint
        return endpoint

    def attempted(self, endpoint_id: int, attempt: webhook_service_pb2.DeliveryAttempt) -> None:
        self.attempts.setdefault(endpoint_id, []).append(attempt)


def fake_webhook_service(
    fake: FakeWebhookService,
    caller_keys: Any,
    interceptors: tuple[grpc.aio.ServerInterceptor, ...],
) -> InProcessService[FakeWebhookService]:
    """`fake` on a server of its own (start() it), trusting the callers the webhook service
    trusts when deployed (the gateway), by the stack's keys."""

    def build() -> ServiceDefinition:
        async def ready() -> None:
            return None

        return ServiceDefinition(
            name=WEBHOOK_SERVICE,
            register=lambda server: webhook_service_pb2_grpc.add_WebhookServiceServicer_to_server(
                fake, server
            ),
            check_ready=ready,
        )

    trust = {"TRUSTED_CALLER_KEYS": trusted_caller_keys(TRUSTED_ISSUERS["webhook"], caller_keys)}
    return InProcessService(WEBHOOK_SERVICE, fake, build, interceptors, trust)
