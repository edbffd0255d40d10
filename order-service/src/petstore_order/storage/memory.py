"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection

from petstore.order.v1 import order_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MemoryIdempotencyStore
from petstore_order.storage.base import NANOS_PER_MILLISECOND, Status, already_exists, not_found


class MemoryOrderStore:
    def __init__(self) -> None:
        self._orders: dict[int, order_pb2.Order] = {}
        self._last_assigned_id = 0
        self.idempotency = MemoryIdempotencyStore()

    async def ensure_indexes(self) -> None:
        """Nothing to index: lookups are by key."""

    async def ping(self) -> None:
        """Always reachable."""

    async def get(self, order_id: int) -> order_pb2.Order:
        return _copy(self._stored(order_id))

    async def new_id(self) -> int:
        """An id no order has, drawn like create draws one."""
        return self._draw_id()

    def _draw_id(self) -> int:
        """Like the Mongo counter: the next number, skipping ids clients chose."""
        self._last_assigned_id = next(
            i for i in itertools.count(self._last_assigned_id + 1) if i not in self._orders
        )
        return self._last_assigned_id

    async def create(self, order: order_pb2.Order) -> order_pb2.Order:
        stored = _copy(order)
        if stored.HasField("ship_date"):
            # Keep what MongoDB keeps, so both stores read back the same order.
            stored.ship_date.nanos -= stored.ship_date.nanos % NANOS_PER_MILLISECOND
        if stored.HasField("id"):
            if stored.id in self._orders:
                raise AlreadyExists(already_exists(stored.id))
        else:
            stored.id = self._draw_id()
        self._orders[stored.id] = stored
        return _copy(stored)

    async def delete(self, order_id: int, *, only_if: Status | None = None) -> bool:
        stored = self._stored(order_id)
        if only_if is not None and stored.status != only_if:
            return False
        del self._orders[order_id]
        return True

    async def set_status(
        self, order_id: int, *, expected: Status, status: Status, complete: bool
    ) -> order_pb2.Order | None:
        stored = self._stored(order_id)
        if stored.status != expected:
            return None
        stored.status, stored.complete = status, complete
        return _copy(stored)

    async def find(
        self,
        *,
        statuses: Collection[Status],
        pet_id: int | None,
        owner_user_id: int | None,
        after_id: int,
        limit: int,
    ) -> list[order_pb2.Order]:
        wanted = set(statuses)
        found: list[order_pb2.Order] = []
        for order_id in sorted(i for i in self._orders if i > after_id):
            if len(found) >= limit:
                break
            order = self._orders[order_id]
            if wanted and (order.status or order_pb2.ORDER_STATUS_PLACED) not in wanted:
                continue
            if pet_id is not None and order.pet_id != pet_id:
                continue
            if owner_user_id is not None and (
                not order.HasField("owner_user_id") or order.owner_user_id != owner_user_id
            ):
                continue
            found.append(_copy(order))
        return found

    def _stored(self, order_id: int) -> order_pb2.Order:
        try:
            return self._orders[order_id]
        except KeyError:
            raise NotFound(not_found(order_id)) from None


def _copy(order: order_pb2.Order) -> order_pb2.Order:
    copy = order_pb2.Order()
    copy.CopyFrom(order)
    return copy
