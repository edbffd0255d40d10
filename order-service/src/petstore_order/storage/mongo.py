"""The MongoDB store (PyMongo's async API): collections orders and counters."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from petstore.order.v1 import order_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_common.mongo import IdAllocator, KeyedLocks, insert_with_optional_id, ping
from petstore_order.storage.base import (
    HIDDEN_STEPS,
    STATUS_NAMES,
    Status,
    Step,
    StoredOrder,
    Transition,
    already_exists,
    not_found,
)
from petstore_order.storage.documents import (
    HOLDS_PET_KEY,
    STEP_AT_KEY,
    STEP_KEY,
    Document,
    order_from_document,
    order_to_document,
    stored_order_from_document,
)

VISIBLE: Document = {STEP_KEY: {"$nin": sorted(HIDDEN_STEPS)}}
"""Matches the orders anybody may see: settled, or being sold."""

ORDER_ID_COUNTER = "orders"


class MongoOrderStore:
    """Orders are documents whose `_id` is the order id."""

    def __init__(self, database: AsyncDatabase[Document]) -> None:
        self._database = database
        self._orders = database["orders"]
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

    async def new_id(self) -> int:
        """A fresh id from the counter (the unique `_id` index still guards the insert)."""
        return await self._ids.next()

    async def ping(self) -> None:
        await ping(self._database.client)

    async def get(self, order_id: int) -> order_pb2.Order:
        document = await self._orders.find_one({"_id": order_id, **VISIBLE})
        if document is None:
            raise NotFound(not_found(order_id))
        return order_from_document(document)

    async def get_stored(self, order_id: int) -> StoredOrder:
        document = await self._orders.find_one({"_id": order_id})
        if document is None:
            raise NotFound(not_found(order_id))
        return stored_order_from_document(document)

    async def create(
        self, order: order_pb2.Order, *, step: Step | None = None, at: datetime | None = None
    ) -> order_pb2.Order:
        document = order_to_document(order)
        if step is not None:
            document |= {STEP_KEY: step.value, STEP_AT_KEY: at}
        stored = await insert_with_optional_id(
            self._orders, self._ids, document, lambda: AlreadyExists(already_exists(order.id))
        )
        return order_from_document(stored)

    async def delete(self, order_id: int, *, only_if: Status | None = None, step: Step | None = None) -> bool:
        query: Document = {"_id": order_id, **_step_is(step)}
        if only_if is not None:
            query.update(_status_is(only_if))
        async with self._changing.hold(order_id):
            result = await self._orders.delete_one(query)
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
        if written:
            update["$set"] = written
        # A filter on the step and status: an atomic compare-and-set on MongoDB; FerretDB v1
        # filters and writes in two steps, so this process also takes them in turn.
        async with self._changing.hold(order_id):
            document = await self._orders.find_one_and_update(
                query, update, return_document=ReturnDocument.AFTER
            )
        if document is None:
            await self.get_stored(order_id)  # NotFound when absent
            return None
        return stored_order_from_document(document)

    async def unsettled(self, *, recorded_before: datetime, limit: int) -> list[StoredOrder]:
        # One query per step, each with an equality on the step, merged: FerretDB v1 pushes no
        # range down, and a lone `sale_step_at: {$lt: ...}` had it read every order on each
        # recovery pass; the step's equality it filters in the database, leaving it only the
        # unfinished sales to read. On MongoDB each is a range on the sale_step_at index.
        async def of_step(step: Step) -> list[Document]:
            query = {STEP_KEY: step.value, STEP_AT_KEY: {"$lt": recorded_before}}
            return [document async for document in self._orders.find(query).sort(STEP_AT_KEY, 1).limit(limit)]

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
        cursor = self._orders.find(query).sort("_id", 1).limit(limit)
        return [order_from_document(document) async for document in cursor]


def _aware(moment: datetime) -> datetime:
    """A stored time as an aware UTC one (a client without tz_aware reads naive ones)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


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
