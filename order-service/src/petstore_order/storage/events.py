"""The order event outbox's rules, shared by both stores: an event's id and time, its type for a
status move, and the bound on the events one order keeps unacknowledged.

Each event is written in the same single-document write as the change it tells of (FerretDB v1
has no transactions): on the order itself, in an `events` array beside a per-order counter that
gives each event its sequence. The webhook service reads them (ReadOrderEvents), keeps them, then
acknowledges them (AckOrderEvents), which removes them.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import TypeVar

from prometheus_client import Counter

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_order.storage.base import EVENT_TYPE_BY_NAME, STATUS_NAMES, EventType, Status
from petstore_order.storage.documents import datetime_to_timestamp

MAX_EVENTS_PER_ORDER = 64
"""Unacknowledged events one order keeps: a write past it drops the oldest (counted in
DROPPED_EVENTS). The sale records at most four in an order's life (placed, approved, delivered,
deleted): the bound is a guard on the document's size whatever writes events, not a limit any
order meets today."""

DELETED_EVENTS_RETENTION = timedelta(days=7)
"""How long a deleted order's events wait for a webhook service to acknowledge them before they
are purged: a shop that runs none does not keep its deleted orders' contents forever."""
DELETED_EVENTS_PURGE_INTERVAL = timedelta(minutes=1)
"""How often the purge runs (with sale recovery): on FerretDB v1 it reads `order_events` whole."""

EVENT_ID_PREFIX = "evt_"
EVENT_ID_RANDOM_BYTES = 11
"""88 random bits: ids never repeat in practice; 26 characters with the prefix."""

T = TypeVar("T")

DROPPED_EVENTS = Counter(
    "petstore_order_events_dropped_total",
    "Order events dropped unread because their order held MAX_EVENTS_PER_ORDER unacknowledged "
    "events already (no webhook service is reading them, or it is far behind).",
)


def event_type_of_move(status: Status) -> EventType:
    """The event of an order moved to `status`: APPROVED for approved, DELIVERED for delivered
    (the OrderEventType value named like the status)."""
    return EVENT_TYPE_BY_NAME[STATUS_NAMES[status]]


def new_event(
    event_type: EventType, order: order_pb2.Order, *, at: datetime, sequence: int
) -> order_service_pb2.OrderEvent:
    """An event with a fresh id, at `at` kept to the millisecond (what MongoDB keeps), so both
    stores read back the same event."""
    return order_service_pb2.OrderEvent(
        id=EVENT_ID_PREFIX + secrets.token_hex(EVENT_ID_RANDOM_BYTES),
        type=event_type,
        time=datetime_to_timestamp(at),
        sequence=sequence,
        order=order,
    )


def bounded(events: list[T]) -> tuple[list[T], int]:
    """`events` (oldest first) without the oldest past MAX_EVENTS_PER_ORDER, and how many went
    (for count_dropped once the write is done: a compare-and-set may be tried again)."""
    dropped = max(len(events) - MAX_EVENTS_PER_ORDER, 0)
    return events[dropped:], dropped


def count_dropped(dropped: int) -> None:
    if dropped:
        DROPPED_EVENTS.inc(dropped)
