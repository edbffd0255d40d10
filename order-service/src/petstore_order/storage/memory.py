"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MemoryIdempotencyStore
from petstore_order.storage.base import (
    HIDDEN_STEPS,
    NANOS_PER_MILLISECOND,
    EventType,
    Status,
    Step,
    StoredOrder,
    Transition,
    already_exists,
    not_found,
)
from petstore_order.storage.events import bounded, count_dropped, new_event


class MemoryOrderStore:
    def __init__(self) -> None:
        self._orders: dict[int, order_pb2.Order] = {}
        # Order ids in order, all of them and each customer's: a list reads a page from where
        # it left off (bisect), never sorting or walking the others' orders (MongoDB's indexes
        # on _id and on owner_user_id do the same).
        self._ids: list[int] = []
        self._owned: dict[int, list[int]] = {}
        self._last_assigned_id = 0
        self._steps: dict[int, tuple[Step, datetime]] = {}
        """Order id -> the step of its sale under way, and when it was recorded."""
        self._holding: set[int] = set()
        """The orders whose pet was reserved for them."""
        self._events: dict[int, list[order_service_pb2.OrderEvent]] = {}
        """Order id -> its unacknowledged events, oldest first (only orders that have some)."""
        self._events_seq: dict[int, int] = {}
        """Order id -> the sequence of its latest event."""
        self._deleted_events: dict[int, list[order_service_pb2.OrderEvent]] = {}
        """A deleted order's id -> its events not acknowledged when it was deleted."""
        self._deleted_at: dict[int, datetime] = {}
        """A deleted order's id -> when its events were moved aside."""
        self.idempotency = MemoryIdempotencyStore()

    async def ensure_indexes(self) -> None:
        """Nothing to index: lookups are by key."""

    async def ping(self) -> None:
        """Always reachable."""

    async def get(self, order_id: int) -> order_pb2.Order:
        stored = self._stored(order_id)
        if self._step(order_id) in HIDDEN_STEPS:
            raise NotFound(not_found(order_id))
        return _copy(stored)

    async def get_stored(self, order_id: int) -> StoredOrder:
        return self._with_sale(self._stored(order_id))

    def _step(self, order_id: int) -> Step | None:
        step = self._steps.get(order_id)
        return None if step is None else step[0]

    def _with_sale(self, order: order_pb2.Order) -> StoredOrder:
        step = self._steps.get(order.id)
        return StoredOrder(
            _copy(order),
            step=None if step is None else step[0],
            step_at=None if step is None else step[1],
            holds_pet=order.id in self._holding,
        )

    async def new_id(self) -> int:
        """An id no order has, drawn like create draws one."""
        return self._draw_id()

    def _draw_id(self) -> int:
        """Like the Mongo counter: the next number, skipping ids clients chose."""
        self._last_assigned_id = next(
            i for i in itertools.count(self._last_assigned_id + 1) if i not in self._orders
        )
        return self._last_assigned_id

    async def create(
        self,
        order: order_pb2.Order,
        *,
        step: Step | None = None,
        at: datetime | None = None,
        event: EventType | None = None,
    ) -> order_pb2.Order:
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
        for ids in self._lists_of(stored):
            bisect.insort(ids, stored.id)
        if step is not None:
            assert at is not None, "a step is recorded with its time"
            self._steps[stored.id] = (step, at)
        if event is not None:
            assert at is not None, "an event is recorded with its time"
            self._record(stored, event, at)
        return _copy(stored)

    async def delete(self, order_id: int, *, only_if: Status | None = None, step: Step | None = None) -> bool:
        stored = self._stored(order_id)
        if (only_if is not None and stored.status != only_if) or self._step(order_id) != step:
            return False
        del self._orders[order_id]
        for ids in self._lists_of(stored):
            del ids[bisect.bisect_left(ids, order_id)]
        if stored.HasField("owner_user_id") and not self._owned[stored.owner_user_id]:
            del self._owned[stored.owner_user_id]
        self._steps.pop(order_id, None)
        self._holding.discard(order_id)
        self._events_seq.pop(order_id, None)
        events = self._events.pop(order_id, None)
        if events:
            self._deleted_events[order_id] = events
            self._deleted_at[order_id] = datetime.now(UTC)
        return True

    async def transition(self, order_id: int, change: Transition, *, at: datetime) -> StoredOrder | None:
        stored = self._stored(order_id)
        if self._step(order_id) != change.step_from:
            return None
        if change.status_from is not None and stored.status != change.status_from:
            return None
        if change.step_to is None:
            self._steps.pop(order_id, None)
        elif change.step_to != change.step_from:
            self._steps[order_id] = (change.step_to, at)
        if change.status_to is not None:
            stored.status = change.status_to
        if change.complete is not None:
            stored.complete = change.complete
        if change.holds_pet is not None:
            (self._holding.add if change.holds_pet else self._holding.discard)(order_id)
        if change.event is not None:
            self._record(stored, change.event, at)
        return self._with_sale(stored)

    def _record(self, order: order_pb2.Order, event_type: EventType, at: datetime) -> None:
        sequence = self._events_seq.get(order.id, 0) + 1
        self._events_seq[order.id] = sequence
        event = new_event(event_type, _copy(order), at=at, sequence=sequence)
        self._events[order.id], dropped = bounded([*self._events.get(order.id, []), event])
        count_dropped(dropped)

    async def read_events(self, *, limit: int) -> list[order_service_pb2.OrderEvent]:
        # A deletion here is one step: no order is in both places. An order stored under the
        # id of a deleted one waits until the deleted one's events are acknowledged.
        owners = [(self._deleted_events, order_id) for order_id in sorted(self._deleted_events)]
        owners += [
            (self._events, order_id)
            for order_id in sorted(self._events)
            if order_id not in self._deleted_events
        ]
        return [_copy_event(event) for place, order_id in owners[:limit] for event in place[order_id]]

    async def ack_events(self, order_id: int, through_sequence: int) -> None:
        # To the deleted order's events while there are any: those are the ones read.
        place = self._deleted_events if order_id in self._deleted_events else self._events
        remaining = [event for event in place.get(order_id, []) if event.sequence > through_sequence]
        if remaining:
            place[order_id] = remaining
        else:
            place.pop(order_id, None)
        if order_id not in self._deleted_events:
            self._deleted_at.pop(order_id, None)

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        deleted_before = datetime.now(UTC) - older_than
        expired = [order_id for order_id, at in self._deleted_at.items() if at < deleted_before]
        for order_id in expired:
            del self._deleted_at[order_id]
            del self._deleted_events[order_id]
        return len(expired)

    async def unsettled(self, *, recorded_before: datetime, limit: int) -> list[StoredOrder]:
        due = sorted((at, order_id) for order_id, (_, at) in self._steps.items() if at < recorded_before)
        return [self._with_sale(self._orders[order_id]) for _, order_id in due[:limit]]

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
        ids = self._ids if owner_user_id is None else self._owned.get(owner_user_id, [])
        for index in range(bisect.bisect_right(ids, after_id), len(ids)):
            if len(found) >= limit:
                break
            order_id = ids[index]
            order = self._orders[order_id]
            if self._step(order_id) in HIDDEN_STEPS:
                continue
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

    def _lists_of(self, order: order_pb2.Order) -> list[list[int]]:
        """The sorted id lists `order` is in: all orders', and its customer's."""
        if not order.HasField("owner_user_id"):
            return [self._ids]
        return [self._ids, self._owned.setdefault(order.owner_user_id, [])]

    def _stored(self, order_id: int) -> order_pb2.Order:
        try:
            return self._orders[order_id]
        except KeyError:
            raise NotFound(not_found(order_id)) from None


def _copy_event(event: order_service_pb2.OrderEvent) -> order_service_pb2.OrderEvent:
    copy = order_service_pb2.OrderEvent()
    copy.CopyFrom(event)
    return copy


def _copy(order: order_pb2.Order) -> order_pb2.Order:
    copy = order_pb2.Order()
    copy.CopyFrom(order)
    return copy
