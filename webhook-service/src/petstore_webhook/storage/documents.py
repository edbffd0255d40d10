"""The one place where endpoints, deliveries and attempts turn into MongoDB documents and back.

A delivery's `_id` is "<endpoint id>:<event id>": inserting it again (the event re-read after a
lost acknowledgement) is a duplicate key, so accepting is idempotent. Its `received` number
orders an endpoint's deliveries as they were accepted; `state` is "pending" or "delivered".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from petstore_webhook.storage.base import Attempt, Delivery, EndpointRecord, EndpointState, Event, Outcome

Document = dict[str, Any]

PENDING = "pending"
DELIVERED = "delivered"


def aware(moment: datetime) -> datetime:
    """A stored time as an aware UTC one (a client without tz_aware reads naive ones)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def delivery_id(endpoint_id: int, event_id: str) -> str:
    return f"{endpoint_id}:{event_id}"


def endpoint_to_document(endpoint: EndpointRecord) -> Document:
    return {
        "_id": endpoint.id,
        "url": endpoint.url,
        "event_types": list(endpoint.event_types),
        "secret": endpoint.secret,
        "created_at": endpoint.created_at,
        "state": endpoint.state.value,
        "disabled_reason": endpoint.disabled_reason,
    }


def endpoint_from_document(document: Mapping[str, Any]) -> EndpointRecord:
    return EndpointRecord(
        id=document["_id"],
        url=document["url"],
        event_types=tuple(document["event_types"]),
        secret=document["secret"],
        created_at=aware(document["created_at"]),
        state=EndpointState(document.get("state", EndpointState.ENABLED.value)),
        disabled_reason=document.get("disabled_reason", ""),
    )


def delivery_to_document(endpoint_id: int, event: Event, *, received: int, accepted_at: datetime) -> Document:
    return {
        "_id": delivery_id(endpoint_id, event.id),
        "endpoint_id": endpoint_id,
        "state": PENDING,
        "received": received,
        "accepted_at": accepted_at,
        "attempts": 0,
        "next_attempt_at": None,
        "event": {
            "id": event.id,
            "type": event.type,
            "subject": event.subject,
            "sequence": event.sequence,
            "time": event.time,
            "data": dict(event.data),
        },
    }


def delivery_from_document(document: Mapping[str, Any]) -> Delivery:
    event = document["event"]
    next_attempt_at = document.get("next_attempt_at")
    return Delivery(
        endpoint_id=document["endpoint_id"],
        event=Event(
            id=event["id"],
            type=event["type"],
            subject=event["subject"],
            sequence=event["sequence"],
            time=aware(event["time"]),
            data=event["data"],
        ),
        attempts=document.get("attempts", 0),
        next_attempt_at=None if next_attempt_at is None else aware(next_attempt_at),
    )


def due_at(document: Mapping[str, Any]) -> datetime:
    """When a pending delivery may be tried: its next attempt's time, else when it was accepted."""
    return aware(document.get("next_attempt_at") or document["accepted_at"])


def attempt_to_document(attempt_id: int, attempt: Attempt) -> Document:
    return {
        "_id": attempt_id,
        "endpoint_id": attempt.endpoint_id,
        "message_id": attempt.message_id,
        "event_type": attempt.event_type,
        "attempt": attempt.attempt,
        "attempted_at": attempt.attempted_at,
        "outcome": attempt.outcome.value,
        "response_status": attempt.response_status,
        "error": attempt.error,
    }


def attempt_from_document(document: Mapping[str, Any]) -> Attempt:
    return Attempt(
        endpoint_id=document["endpoint_id"],
        message_id=document["message_id"],
        event_type=document["event_type"],
        attempt=document["attempt"],
        attempted_at=aware(document["attempted_at"]),
        outcome=Outcome(document["outcome"]),
        response_status=document.get("response_status", 0),
        error=document.get("error", ""),
    )
