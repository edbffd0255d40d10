"""The storage contract both stores fulfil; protobuf `Order` messages are the currency."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol, TypeAlias

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.idempotency import IdempotencyStore
from petstore_common.rules import enum_names

Status: TypeAlias = order_pb2.OrderStatus.ValueType
"""An OrderStatus enum value."""

EventType: TypeAlias = order_service_pb2.OrderEventType.ValueType
"""An OrderEventType enum value (storage.events has the outbox's rules)."""

EVENT_TYPE_NAMES: Mapping[EventType, str] = enum_names(order_service_pb2.OrderEventType)
"""How an event's type is stored ("placed", "approved", ...: the OrderEventType values' names)."""

EVENT_TYPE_BY_NAME: Mapping[str, EventType] = {name: value for value, name in EVENT_TYPE_NAMES.items()}

STATUS_NAMES: Mapping[Status, str] = enum_names(order_pb2.OrderStatus)
"""How a status is stored ("placed", "approved", "delivered": the OrderStatus values' names);
ORDER_STATUS_UNSPECIFIED is stored as an absent status."""

NANOS_PER_MILLISECOND = 1_000_000
"""Ship dates are kept to the millisecond: a BSON datetime holds no more."""


class Step(StrEnum):
    """A step of an order's sale (petstore_order.sale) recorded on the order before it is taken
    with the pet service, and cleared once it is done: what recovery finishes after a crash."""

    RESERVE = "reserve"
    """The order is being placed: its pet is being reserved. Hidden until placed."""
    RELEASE = "release"
    """The order is being cancelled: its pet is being released. Hidden, then deleted."""
    SELL = "sell"
    """The order was delivered: its pet is being sold. Shown as delivered."""


HIDDEN_STEPS = frozenset({Step.RESERVE, Step.RELEASE})
"""An order at one of these steps is not (or no longer) an order to anyone who asks."""


@dataclass(frozen=True, slots=True)
class StoredOrder:
    """An order with the state of its sale."""

    order: order_pb2.Order
    step: Step | None = None
    """The step recorded and not yet done; None when the order is settled."""
    step_at: datetime | None = None
    """When the step was recorded."""
    holds_pet: bool = False
    """Whether the order's pet was reserved for it (so it is released or sold with the order)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """One compare-and-set of an order: it applies only to an order at `step_from` (None:
    settled) with status `status_from` (when given)."""

    step_from: Step | None
    step_to: Step | None
    status_from: Status | None = None
    status_to: Status | None = None
    complete: bool | None = None
    holds_pet: bool | None = None
    event: EventType | None = None
    """The event to record with the change, in the same write (the order after the change)."""


def not_found(order_id: int) -> str:
    return f"order {order_id} not found"


def already_exists(order_id: int) -> str:
    return f"order {order_id} already exists"


class OrderStore(Protocol):
    """Orders keyed by a positive integer id.

    Every method raises petstore_common.errors.NotFound / AlreadyExists with a client-safe
    message; stored and returned orders are copies, never shared with the caller. A ship
    date is stored truncated to whole milliseconds, by both stores.
    """

    @property
    def idempotency(self) -> IdempotencyStore:
        """Idempotency records of creates, in the same database."""

    async def new_id(self) -> int:
        """A server-assigned id for a order about to be created under it."""

    async def ensure_indexes(self) -> None:
        """Create the indexes the queries need (idempotent)."""

    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    async def get(self, order_id: int) -> order_pb2.Order:
        """The order with this id; NotFound when absent or hidden (HIDDEN_STEPS)."""

    async def get_stored(self, order_id: int) -> StoredOrder:
        """The order with this id and the state of its sale, hidden or not; NotFound when absent."""

    async def create(
        self,
        order: order_pb2.Order,
        *,
        step: Step | None = None,
        at: datetime | None = None,
        event: EventType | None = None,
    ) -> order_pb2.Order:
        """Store a new order under its own id (AlreadyExists when taken) or, without one, a fresh
        id, at `step` when given, with `event` (its first) when given, both recorded `at`;
        returns the order as stored."""

    async def delete(self, order_id: int, *, only_if: Status | None = None, step: Step | None = None) -> bool:
        """Remove the order while it is at `step` (None: settled) and, with `only_if`, has that
        status: False, and nothing removed, otherwise; NotFound when absent. Its unacknowledged
        events outlive it: they are moved aside first (where read_events still finds them), and
        the order is removed only if no event was recorded on it in between."""

    async def transition(self, order_id: int, change: Transition, *, at: datetime) -> StoredOrder | None:
        """Compare-and-set of the order's step (recorded `at`), status, completeness and hold,
        recording `change.event` (at `at`, its sequence the order's next) in the same write:
        the order after it, or None (nothing changed) when the order is not at `change.step_from`
        with `change.status_from`; NotFound when absent."""

    async def read_events(self, *, limit: int) -> list[order_service_pb2.OrderEvent]:
        """The unacknowledged events of at most `limit` orders, deleted orders' first, then by
        order id; each order's in sequence. An event may be read twice (a deletion cut short
        keeps it in both places until the deletion is finished or it is acknowledged)."""

    async def ack_events(self, order_id: int, through_sequence: int) -> None:
        """Forget the order's events up to and including `through_sequence`, deleted order or
        not; nothing happens for an order without such events (or none at all)."""

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        """Forget the events of orders deleted longer ago than `older_than` (by this store's
        clock, which also dated the deletion), read or not; how many orders' events went."""

    async def unsettled(self, *, recorded_before: datetime, limit: int) -> list[StoredOrder]:
        """Orders with a step recorded before the given time, oldest step first, at most `limit`."""

    async def find(
        self,
        *,
        statuses: Collection[Status],
        pet_id: int | None,
        owner_user_id: int | None,
        after_id: int,
        limit: int,
    ) -> list[order_pb2.Order]:
        """Orders with any of `statuses` (every status when empty; an order stored without one
        is placed), of `pet_id` and owned by `owner_user_id` when those are given, by id, only
        ids above `after_id`, at most `limit` of them; never a hidden one."""
