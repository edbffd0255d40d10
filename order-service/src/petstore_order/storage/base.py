"""The storage contract both stores fulfil; protobuf `Order` messages are the currency."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol, TypeAlias

from petstore.order.v1 import order_pb2
from petstore_common.idempotency import IdempotencyStore
from petstore_common.rules import enum_names

Status: TypeAlias = order_pb2.OrderStatus.ValueType
"""An OrderStatus enum value."""

STATUS_NAMES: Mapping[Status, str] = enum_names(order_pb2.OrderStatus)
"""How a status is stored ("placed", "approved", "delivered": the OrderStatus values' names);
ORDER_STATUS_UNSPECIFIED is stored as an absent status."""

NANOS_PER_MILLISECOND = 1_000_000
"""Ship dates are kept to the millisecond: a BSON datetime holds no more."""


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
        """The order with this id; NotFound when absent."""

    async def create(self, order: order_pb2.Order) -> order_pb2.Order:
        """Store a new order under its own id (AlreadyExists when taken) or, without one, a fresh
        id; returns the order as stored."""

    async def delete(self, order_id: int, *, only_if: Status | None = None) -> bool:
        """Remove the order (with `only_if`, only while it has that status: False, and nothing
        removed, when it has another); NotFound when absent."""

    async def set_status(
        self, order_id: int, *, expected: Status, status: Status, complete: bool
    ) -> order_pb2.Order | None:
        """Compare-and-set: the order with its new status and completeness, or None (nothing
        changed) when its status is no longer `expected`; NotFound when absent."""

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
        ids above `after_id`, at most `limit` of them."""
