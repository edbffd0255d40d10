"""The one place where orders turn into MongoDB documents and back.

The ship date is a BSON datetime (UTC, whole milliseconds) so the database can compare and
index it; the status is stored by name. Absent optional fields (ship date, an unspecified
status) are absent keys, so what a client stores is what it reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_order.storage.base import (
    EVENT_TYPE_BY_NAME,
    EVENT_TYPE_NAMES,
    NANOS_PER_MILLISECOND,
    STATUS_NAMES,
    Status,
    Step,
    StoredOrder,
)

Document = dict[str, Any]

STEP_KEY = "sale_step"
"""The step of the order's sale under way (storage.base.Step), absent when settled."""
STEP_AT_KEY = "sale_step_at"
"""When that step was recorded (absent with it): what recovery looks for."""
HOLDS_PET_KEY = "holds_pet"
"""True once the order's pet was reserved for it."""
EVENTS_KEY = "events"
"""The order's unacknowledged events, oldest first (storage.events); absent when there are none."""
HAS_EVENTS_KEY = "has_events"
"""True while `events` is not empty, absent otherwise: an equality FerretDB filters in
PostgreSQL, where it would read every order for a test of the array."""
EVENTS_SEQ_KEY = "events_seq"
"""The sequence of the order's latest event (absent before its first): the next is one more."""
EVENTS_VERSION_KEY = "events_version"
"""Moves on with every write of `events` (an event recorded or acknowledged): the compare-and-set
of each such write, so one never undoes another."""

_STATUS_BY_NAME: Mapping[str, Status] = {name: value for value, name in STATUS_NAMES.items()}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def order_to_document(order: order_pb2.Order) -> Document:
    document: Document = {
        "pet_id": order.pet_id,
        "quantity": order.quantity,
        "complete": order.complete,
    }
    if order.HasField("id"):
        document["_id"] = order.id
    if order.HasField("ship_date"):
        document["ship_date"] = timestamp_to_datetime(order.ship_date)
    name = STATUS_NAMES.get(order.status)
    if name is not None:
        document["status"] = name
    if order.HasField("owner_user_id"):
        document["owner_user_id"] = order.owner_user_id
    return document


def order_from_document(document: Mapping[str, Any]) -> order_pb2.Order:
    order = order_pb2.Order(
        id=document["_id"],
        pet_id=document.get("pet_id", 0),
        quantity=document.get("quantity", 0),
        status=_STATUS_BY_NAME.get(document.get("status", ""), order_pb2.ORDER_STATUS_UNSPECIFIED),
        complete=document.get("complete", False),
    )
    ship_date = document.get("ship_date")
    if ship_date is not None:
        order.ship_date.CopyFrom(datetime_to_timestamp(ship_date))
    owner = document.get("owner_user_id")
    if owner is not None:  # orders stored before orders had owners have none: staff only
        order.owner_user_id = owner
    return order


def stored_order_from_document(document: Mapping[str, Any]) -> StoredOrder:
    step = document.get(STEP_KEY)
    at = document.get(STEP_AT_KEY)
    return StoredOrder(
        order_from_document(document),
        step=None if step is None else Step(step),
        step_at=None if at is None else (at if at.tzinfo is not None else at.replace(tzinfo=UTC)),
        holds_pet=bool(document.get(HOLDS_PET_KEY, False)),
    )


def event_to_document(event: order_service_pb2.OrderEvent) -> Document:
    return {
        "id": event.id,
        "type": EVENT_TYPE_NAMES[event.type],
        "time": timestamp_to_datetime(event.time),
        "sequence": event.sequence,
        "order": order_to_document(event.order),
    }


def event_from_document(document: Mapping[str, Any]) -> order_service_pb2.OrderEvent:
    return order_service_pb2.OrderEvent(
        id=document["id"],
        type=EVENT_TYPE_BY_NAME[document["type"]],
        time=datetime_to_timestamp(document["time"]),
        sequence=document["sequence"],
        order=order_from_document(document["order"]),
    )


def timestamp_to_datetime(timestamp: Timestamp) -> datetime:
    """An aware UTC datetime, truncated to the millisecond (integer arithmetic: exact for
    every validated ship date, year 1 to 9999)."""
    return _EPOCH + timedelta(
        milliseconds=timestamp.seconds * 1000 + timestamp.nanos // NANOS_PER_MILLISECOND
    )


def datetime_to_timestamp(moment: datetime) -> Timestamp:
    """A naive datetime is UTC: that is what PyMongo returns without tz_aware."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    milliseconds = (moment - _EPOCH) // _MILLISECOND
    return Timestamp(seconds=milliseconds // 1000, nanos=milliseconds % 1000 * NANOS_PER_MILLISECOND)
