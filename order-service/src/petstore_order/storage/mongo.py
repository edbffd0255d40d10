"""The MongoDB store (PyMongo's async API): collections orders, order_events (the events of
deleted orders, until acknowledged) and counters."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_common.mongo import (
    MAX_UPDATE_ATTEMPTS,
    IdAllocator,
    KeyedLocks,
    insert_with_new_id,
    insert_with_optional_id,
    ping,
)
from petstore_order.storage.base import (
    HIDDEN_STEPS,
    STATUS_NAMES,
    EventType,
    Status,
    Step,
    StoredOrder,
    Transition,
    already_exists,
    not_found,
)
from petstore_order.storage.documents import (
    EVENTS_KEY,
    EVENTS_SEQ_KEY,
    EVENTS_VERSION_KEY,
    HAS_EVENTS_KEY,
    HOLDS_PET_KEY,
    STEP_AT_KEY,
    STEP_KEY,
    Document,
    event_from_document,
    event_to_document,
    order_from_document,
    order_to_document,
    stored_order_from_document,
)
from petstore_order.storage.events import bounded, count_dropped, new_event

VISIBLE: Document = {STEP_KEY: {"$nin": sorted(HIDDEN_STEPS)}}
"""Matches the orders anybody may see: settled, or being sold."""

WITHOUT_EVENTS: Document = {EVENTS_KEY: 0}
"""The projection of a read that wants the order, not its unacknowledged events."""

ORDER_ID_COUNTER = "orders"
DELETED_AT_KEY = "deleted_at"
"""When an order_events document was made: the order's deletion, what the purge compares."""


class MongoOrderStore:
    """Orders are documents whose `_id` is the order id."""

    def __init__(self, database: AsyncDatabase[Document]) -> None:
        self._database = database
        self._orders = database["orders"]
        self._deleted_events = database["order_events"]
        """A deleted order's unacknowledged events: `_id` the order's id, `events` as on orders."""
        self._ids = IdAllocator(database["counters"], ORDER_ID_COUNTER)
        self.idempotency = MongoIdempotencyStore(database["idempotency_keys"])
        self._changing = KeyedLocks()
        """Status changes of one order, one at a time in this process (see KeyedLocks)."""

    async def ensure_indexes(self) -> None:
        await self.idempotency.ensure_indexes()
        # The orders of a pet are what an operator looks for when a pet goes away.
        await self._orders.create_index("pet_id")
        # A customer's list (owner, then status); staff's lists by status alone.
        await self._orders.create_index([("owner_user_id", 1), ("status", 1), ("_id", 1)])
        await self._orders.create_index([("status", 1), ("_id", 1)])
        # Recovery's look for sales left unfinished: only orders with a step have the key.
        await self._orders.create_index(STEP_AT_KEY)
        # ReadOrderEvents' look for orders with events: only those have the key.
        await self._orders.create_index(HAS_EVENTS_KEY, sparse=True)

    async def new_id(self) -> int:
        """A fresh id from the counter (the unique `_id` index still guards the insert)."""
        return await self._ids.next()

    async def ping(self) -> None:
        await ping(self._database.client)

    async def get(self, order_id: int) -> order_pb2.Order:
        document = await self._orders.find_one({"_id": order_id, **VISIBLE}, WITHOUT_EVENTS)
        if document is None:
            raise NotFound(not_found(order_id))
        return order_from_document(document)

    async def get_stored(self, order_id: int) -> StoredOrder:
        document = await self._orders.find_one({"_id": order_id}, WITHOUT_EVENTS)
        if document is None:
            raise NotFound(not_found(order_id))
        return stored_order_from_document(document)

    async def create(
        self,
        order: order_pb2.Order,
        *,
        step: Step | None = None,
        at: datetime | None = None,
        event: EventType | None = None,
    ) -> order_pb2.Order:
        document = order_to_document(order)
        if step is not None:
            document |= {STEP_KEY: step.value, STEP_AT_KEY: at}
        if event is None:
            stored = await insert_with_optional_id(
                self._orders, self._ids, document, lambda: AlreadyExists(already_exists(order.id))
            )
            return order_from_document(stored)
        assert at is not None, "an event is recorded with its time"

        def with_event(order_id: int) -> Document:
            # The event carries the order as stored: its id, its ship date to the millisecond.
            numbered = {**document, "_id": order_id}
            first, _ = _events_set(numbered, [], event, at)
            return numbered | first

        if "_id" in document:
            stored = await insert_with_optional_id(
                self._orders, self._ids, with_event(order.id), lambda: AlreadyExists(already_exists(order.id))
            )
        else:
            stored = await insert_with_new_id(self._orders, self._ids, with_event)
        return order_from_document(stored)

    async def delete(self, order_id: int, *, only_if: Status | None = None, step: Step | None = None) -> bool:
        query: Document = {"_id": order_id, **_step_is(step)}
        if only_if is not None:
            query.update(_status_is(only_if))
        async with self._changing.hold(order_id):
            for _ in range(MAX_UPDATE_ATTEMPTS):
                document = await self._orders.find_one(query)
                if document is None:
                    break
                events = document.get(EVENTS_KEY)
                if events:
                    # Its events first, where ReadOrderEvents finds them once the order is gone:
                    # only those not there already (a deletion cut short may have moved some).
                    await self._deleted_events.update_one(
                        {"_id": order_id},
                        {
                            "$addToSet": {EVENTS_KEY: {"$each": events}},
                            "$setOnInsert": {DELETED_AT_KEY: datetime.now(UTC)},
                        },
                        upsert=True,
                    )
                # Then the order, unless an event was recorded or acknowledged in between.
                result = await self._orders.delete_one({**query, **_events_version_is(document)})
                if result.deleted_count == 1:
                    return True
        await self.get_stored(order_id)  # NotFound when absent; else its status or step moved on
        return False

    async def transition(self, order_id: int, change: Transition, *, at: datetime) -> StoredOrder | None:
        query: Document = {"_id": order_id, **_step_is(change.step_from)}
        if change.status_from is not None:
            query.update(_status_is(change.status_from))
        update: Document = {}
        written: Document = {}
        if change.step_to is None:
            update["$unset"] = {STEP_KEY: "", STEP_AT_KEY: ""}
        elif change.step_to != change.step_from:
            written |= {STEP_KEY: change.step_to.value, STEP_AT_KEY: at}
        if change.status_to is not None:
            written["status"] = STATUS_NAMES[change.status_to]
        if change.complete is not None:
            written["complete"] = change.complete
        if change.holds_pet is not None:
            written[HOLDS_PET_KEY] = change.holds_pet
        # A filter on the step and status: an atomic compare-and-set on MongoDB; FerretDB v1
        # filters and writes in two steps, so this process also takes them in turn.
        async with self._changing.hold(order_id):
            if change.event is None:
                if written:
                    update["$set"] = written
                document = await self._orders.find_one_and_update(
                    query, update, return_document=ReturnDocument.AFTER
                )
            else:
                document = await self._transition_with_event(query, update, written, change.event, at)
        if document is None:
            await self.get_stored(order_id)  # NotFound when absent
            return None
        return stored_order_from_document(document)

    async def _transition_with_event(
        self, query: Document, update: Document, written: Document, event: EventType, at: datetime
    ) -> Document | None:
        """The change with its event in one write. The event's sequence and the order after
        the change are read first, then written under a compare-and-set on the events' version
        (neither `$push` with `$slice` nor `$pull` with a condition is applied by FerretDB v1:
        measured, both are accepted and ignored), so the array is written whole, bounded."""
        for _ in range(MAX_UPDATE_ATTEMPTS):
            current = await self._orders.find_one(query)
            if current is None:
                return None
            after = {**current, **written}
            for key in update.get("$unset", {}):
                after.pop(key, None)
            events_set, dropped = _events_set(after, current.get(EVENTS_KEY, []), event, at)
            document = await self._orders.find_one_and_update(
                {**query, **_events_version_is(current)},
                {**update, "$set": written | events_set},
                return_document=ReturnDocument.AFTER,
            )
            if document is not None:
                count_dropped(dropped)
                return document
        return None  # another replica kept recording events on it: it moved on

    async def read_events(self, *, limit: int) -> list[order_service_pb2.OrderEvent]:
        # Every document of order_events is wanted (an emptied one is deleted); orders are
        # found by the flag's equality, which FerretDB filters in PostgreSQL. A deleted order's
        # events come first, and an order with its id (a deletion cut short, or an order stored
        # since under the same id) waits until they are acknowledged: its events are the same
        # ones, or come after them.
        deleted = [document async for document in self._deleted_events.find({}).sort("_id", 1).limit(limit)]
        found = deleted
        if len(deleted) < limit:  # then every deleted order's events are in `deleted`
            waiting = {document["_id"] for document in deleted}
            live = self._orders.find({HAS_EVENTS_KEY: True}, {EVENTS_KEY: 1}).sort("_id", 1)
            found = (
                deleted
                + [
                    document
                    async for document in live.limit(limit - len(deleted) + len(waiting))
                    if document["_id"] not in waiting
                ][: limit - len(deleted)]
            )
        return [
            event_from_document(event)
            for document in found
            for event in sorted(document.get(EVENTS_KEY, []), key=lambda event: event["sequence"])
        ]

    async def ack_events(self, order_id: int, through_sequence: int) -> None:
        # To the deleted order's events while there are any: those are what was read.
        for _ in range(MAX_UPDATE_ATTEMPTS):
            deleted = await self._deleted_events.find_one({"_id": order_id})
            if deleted is None:
                break
            if await self._acked_deleted(deleted, through_sequence):
                return
        async with self._changing.hold(order_id):
            for _ in range(MAX_UPDATE_ATTEMPTS):
                current = await self._orders.find_one({"_id": order_id, HAS_EVENTS_KEY: True})
                if current is None or await self._acked(current, through_sequence):
                    break

    async def _acked(self, current: Document, through_sequence: int) -> bool:
        """Rewrite an order's events without those acknowledged: False when they changed since
        `current` was read."""
        events = current.get(EVENTS_KEY, [])
        remaining = [event for event in events if event["sequence"] > through_sequence]
        if len(remaining) == len(events):
            return True  # nothing to forget
        change: Document = {"$set": {EVENTS_VERSION_KEY: current.get(EVENTS_VERSION_KEY, 0) + 1}}
        if remaining:
            change["$set"][EVENTS_KEY] = remaining
        else:
            change["$unset"] = {EVENTS_KEY: "", HAS_EVENTS_KEY: ""}
        result = await self._orders.update_one({"_id": current["_id"], **_events_version_is(current)}, change)
        return result.matched_count == 1

    async def _acked_deleted(self, deleted: Document, through_sequence: int) -> bool:
        """The same for a deleted order's events, the document deleted once empty; the compare
        is on the array itself (only deletions add to it, and only events not there)."""
        events = deleted.get(EVENTS_KEY, [])
        remaining = [event for event in events if event["sequence"] > through_sequence]
        if len(remaining) == len(events) and remaining:
            return True
        unchanged: Document = {"_id": deleted["_id"], EVENTS_KEY: events}
        if remaining:
            result: Any = await self._deleted_events.update_one(unchanged, {"$set": {EVENTS_KEY: remaining}})
            return bool(result.matched_count == 1)
        result = await self._deleted_events.delete_one(unchanged)
        return bool(result.deleted_count == 1)

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        deleted_before = datetime.now(UTC) - older_than
        result = await self._deleted_events.delete_many({DELETED_AT_KEY: {"$lt": deleted_before}})
        return result.deleted_count

    async def unsettled(self, *, recorded_before: datetime, limit: int) -> list[StoredOrder]:
        # One query per step, each with an equality on the step, merged: FerretDB v1 pushes no
        # range down, and a lone `sale_step_at: {$lt: ...}` had it read every order on each
        # recovery pass; the step's equality it filters in the database, leaving it only the
        # unfinished sales to read. On MongoDB each is a range on the sale_step_at index.
        async def of_step(step: Step) -> list[Document]:
            query = {STEP_KEY: step.value, STEP_AT_KEY: {"$lt": recorded_before}}
            found = self._orders.find(query, WITHOUT_EVENTS).sort(STEP_AT_KEY, 1).limit(limit)
            return [document async for document in found]

        found = [document for documents in [await of_step(step) for step in Step] for document in documents]
        found.sort(key=lambda document: _aware(document[STEP_AT_KEY]))
        return [stored_order_from_document(document) for document in found[:limit]]

    async def find(
        self,
        *,
        statuses: Collection[Status],
        pet_id: int | None,
        owner_user_id: int | None,
        after_id: int,
        limit: int,
    ) -> list[order_pb2.Order]:
        query: Document = {"_id": {"$gt": after_id}, **VISIBLE}
        if owner_user_id is not None:
            query["owner_user_id"] = owner_user_id
        if pet_id is not None:
            query["pet_id"] = pet_id
        if statuses:
            wanted = set(statuses)
            if order_pb2.ORDER_STATUS_PLACED in wanted:  # an order stored without a status is placed
                wanted.add(order_pb2.ORDER_STATUS_UNSPECIFIED)
            query |= _statuses_are(wanted)
        cursor = self._orders.find(query, WITHOUT_EVENTS).sort("_id", 1).limit(limit)
        return [order_from_document(document) async for document in cursor]


def _aware(moment: datetime) -> datetime:
    """A stored time as an aware UTC one (a client without tz_aware reads naive ones)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _events_set(
    order: Document, events: list[Document], event: EventType, at: datetime
) -> tuple[Document, int]:
    """The keys that record `event` of `order` (its document after the change) beside its
    `events` so far: the array whole, bounded, its next sequence, and the flags; and how many
    of the oldest events the bound drops."""
    sequence = order.get(EVENTS_SEQ_KEY, 0) + 1
    recorded = new_event(event, order_from_document(order), at=at, sequence=sequence)
    kept, dropped = bounded([*events, event_to_document(recorded)])
    keys = {
        EVENTS_KEY: kept,
        HAS_EVENTS_KEY: True,
        EVENTS_SEQ_KEY: sequence,
        EVENTS_VERSION_KEY: order.get(EVENTS_VERSION_KEY, 0) + 1,
    }
    return keys, dropped


def _events_version_is(document: Document) -> Document:
    """Matches the order while its events are as in `document` (read before)."""
    version = document.get(EVENTS_VERSION_KEY)
    return {EVENTS_VERSION_KEY: version} if version is not None else {EVENTS_VERSION_KEY: {"$exists": False}}


def _step_is(step: Step | None) -> Document:
    return {STEP_KEY: step.value} if step is not None else {STEP_KEY: {"$exists": False}}


STORED_STATUSES: frozenset[Status] = frozenset({*STATUS_NAMES, order_pb2.ORDER_STATUS_UNSPECIFIED})
"""Every status a stored order can have (unspecified: stored without one)."""


def _statuses_are(wanted: Collection[Status]) -> Document:
    """Matches an order whose status is one of `wanted`, in the shape FerretDB v1 filters in
    PostgreSQL where one exists: it pushes down an equality or a `$ne` on a top-level field but
    never an `$or` (it would read every order of the rest of the filter, e.g. all a customer's
    orders for the open-order count, and filter them itself). One status is an equality; all
    but one named status (the open orders: not delivered) is a `$ne`, which also matches an
    absent status as the complement should. MongoDB serves each from the status indexes."""
    wanted = set(wanted)
    if wanted >= STORED_STATUSES:
        return {}
    if len(wanted) == 1:
        return _status_is(next(iter(wanted)))
    excluded = STORED_STATUSES - wanted
    if len(excluded) == 1 and (name := STATUS_NAMES.get(next(iter(excluded)))) is not None:
        return {"status": {"$ne": name}}
    return {"$or": [_status_is(status) for status in sorted(wanted)]}


def _status_is(status: Status) -> Document:
    name = STATUS_NAMES.get(status)
    return {"status": name} if name is not None else {"status": {"$exists": False}}
