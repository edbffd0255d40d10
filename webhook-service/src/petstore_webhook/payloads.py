"""What a webhook carries: the order or pet exactly as the HTTP API shows it, in Standard
Webhooks' recommended envelope.

The gateway's representations (petstore_gateway.representations.order and .pet) are the
source of truth; this service cannot import the gateway, so the conversion is written again
here and tests/test_webhook_payloads.py holds the two equal for every field and status.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_common.rules import enum_names
from petstore_webhook.storage.base import Event

_ORDER_STATUS_NAMES = enum_names(order_pb2.OrderStatus)
_PET_STATUS_NAMES = enum_names(pet_pb2.PetStatus)


def rfc3339(moment: datetime) -> str:
    """YYYY-MM-DDTHH:MM:SS.mmmZ in UTC, as the HTTP API writes its date-times."""
    utc = moment.astimezone(UTC)
    # Not strftime: glibc's %Y writes the year 487 as "487", which is no date-time.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


def timestamp_moment(timestamp: Timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=UTC)


def order_data(order: order_pb2.Order) -> dict[str, Any]:
    """The order as GET /v2/store/order/{id} shows it."""
    data: dict[str, Any] = {}
    if order.HasField("id"):
        data["id"] = order.id
    data["petId"] = order.pet_id
    data["quantity"] = order.quantity
    if order.HasField("ship_date"):
        data["shipDate"] = rfc3339(timestamp_moment(order.ship_date))
    if order.status in _ORDER_STATUS_NAMES:
        data["status"] = _ORDER_STATUS_NAMES[order.status]
    data["complete"] = order.complete
    return data


def pet_data(pet: pet_pb2.Pet) -> dict[str, Any]:
    """The pet as GET /v2/pet/{id} shows it."""
    data: dict[str, Any] = {}
    if pet.HasField("id"):
        data["id"] = pet.id
    if pet.HasField("category"):
        data["category"] = _id_and_name(pet.category)
    data["name"] = pet.name
    data["photoUrls"] = list(pet.photo_urls)
    data["tags"] = [_id_and_name(tag) for tag in pet.tags]
    if pet.status in _PET_STATUS_NAMES:
        data["status"] = _PET_STATUS_NAMES[pet.status]
    return data


def _id_and_name(item: pet_pb2.Category | pet_pb2.Tag) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if item.HasField("id"):
        data["id"] = item.id
    if item.HasField("name"):
        data["name"] = item.name
    return data


def webhook_body(event: Event) -> bytes:
    """The request body: {"type", "timestamp" (when it happened), "data"}, compact JSON."""
    return orjson.dumps({"type": event.type, "timestamp": rfc3339(event.time), "data": dict(event.data)})
