"""Webhook endpoints and their delivery attempts: wire <-> protobuf, and the event types.

The event types are derived, never listed: "order." or "pet." and the lower-case name of each
value of the order and pet services' event enums ("order.placed", "pet.sold"), so an event type
added to a proto is offered here, and in both API descriptions, at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import EnumDescriptor

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore.webhook.v1 import webhook_service_pb2
from petstore_common.rules import enum_names, field_rules
from petstore_gateway.representations.fields import as_object, get_str, get_str_list
from petstore_gateway.representations.order import format_utc
from petstore_gateway.representations.shapes import Document, ListOf, Obj, Scalar

EVENT_SUBJECTS: tuple[tuple[str, EnumDescriptor], ...] = (
    ("order", order_service_pb2.OrderEventType.DESCRIPTOR),
    ("pet", pet_service_pb2.PetEventType.DESCRIPTOR),
)
"""Each subject of events and the enum of its event types."""
EVENT_TYPES: tuple[str, ...] = tuple(
    f"{subject}.{name}" for subject, enum in EVENT_SUBJECTS for name in enum_names(enum).values()
)
"""Every event type an endpoint may ask for, in the enums' order."""

_CREATE = webhook_service_pb2.CreateEndpointRequest
URL_RULES = field_rules(_CREATE, "url").string
EVENT_TYPE_RULES = field_rules(_CREATE, "event_types").repeated
MAX_EVENT_TYPES = EVENT_TYPE_RULES.max_items
"""The contract's bounds (the webhook service refuses more; the description publishes them)."""

_STATE_NAMES = enum_names(webhook_service_pb2.EndpointState)
_OUTCOME_NAMES = enum_names(webhook_service_pb2.AttemptOutcome)
ENDPOINT_STATES: tuple[str, ...] = tuple(_STATE_NAMES.values())
"""enabled, disabled."""
ATTEMPT_OUTCOMES: tuple[str, ...] = tuple(_OUTCOME_NAMES.values())
"""delivered, failed."""

WEBHOOK_SHAPE = Obj(
    {
        "id": Scalar.INT,
        "url": Scalar.STR,
        "eventTypes": ListOf("eventType", Scalar.STR),
        "state": Scalar.STR,
        "disabledReason": Scalar.STR,
        "createdAt": Scalar.STR,
        "secret": Scalar.STR,
    }
)
WEBHOOK = Document("Webhook", WEBHOOK_SHAPE)
"""What POST /webhooks reads (url, eventTypes) and answers (with the secret, that once)."""
WEBHOOKS = Document("webhooks", ListOf(WEBHOOK.root_tag, WEBHOOK_SHAPE))
DELIVERY_SHAPE = Obj(
    {
        "messageId": Scalar.STR,
        "eventType": Scalar.STR,
        "attempt": Scalar.INT,
        "attemptedAt": Scalar.STR,
        "outcome": Scalar.STR,
        "responseStatus": Scalar.INT,
        "error": Scalar.STR,
    }
)
WEBHOOK_DELIVERY = Document("WebhookDelivery", DELIVERY_SHAPE)
DELIVERIES = Document("deliveries", ListOf(WEBHOOK_DELIVERY.root_tag, DELIVERY_SHAPE))


def new_webhook_from_wire(value: Any) -> tuple[str, list[str]]:
    """The url and eventTypes of a Webhook body; every other field is ignored. Their bounds, the
    https rule and which event types exist are the webhook service's to check (it names the
    field), so that one rule is never written twice."""
    data = as_object(value, "the webhook")
    url = get_str(data, "url", required=True) or ""
    return url, get_str_list(data, "eventTypes", required=True)


def webhook_to_wire(endpoint: webhook_service_pb2.Endpoint, *, secret: str | None = None) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": endpoint.id,
        "url": endpoint.url,
        "eventTypes": list(endpoint.event_types),
    }
    if endpoint.state in _STATE_NAMES:
        wire["state"] = _STATE_NAMES[endpoint.state]
    if endpoint.disabled_reason:
        wire["disabledReason"] = endpoint.disabled_reason
    if endpoint.HasField("created_at"):
        wire["createdAt"] = format_utc(endpoint.created_at)
    if secret is not None:
        wire["secret"] = secret
    return wire


def webhooks_to_wire(endpoints: Iterable[webhook_service_pb2.Endpoint]) -> list[dict[str, Any]]:
    """Never with a secret: the service shows it only when the endpoint is made."""
    return [webhook_to_wire(endpoint) for endpoint in endpoints]


def delivery_to_wire(attempt: webhook_service_pb2.DeliveryAttempt) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "messageId": attempt.message_id,
        "eventType": attempt.event_type,
        "attempt": attempt.attempt,
    }
    if attempt.HasField("attempted_at"):
        wire["attemptedAt"] = format_utc(attempt.attempted_at)
    if attempt.outcome in _OUTCOME_NAMES:
        wire["outcome"] = _OUTCOME_NAMES[attempt.outcome]
    wire["responseStatus"] = attempt.response_status
    wire["error"] = attempt.error
    return wire


def deliveries_to_wire(attempts: Iterable[webhook_service_pb2.DeliveryAttempt]) -> list[dict[str, Any]]:
    return [delivery_to_wire(attempt) for attempt in attempts]
