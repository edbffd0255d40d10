"""The MongoDB store (PyMongo's async API): collections orders and counters."""

from __future__ import annotations

from collections.abc import Collection

from pymongo.asynchronous.database import AsyncDatabase

from petstore.order.v1 import order_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_common.mongo import IdAllocator, KeyedLocks, insert_with_optional_id, ping
from petstore_order.storage.base import STATUS_NAMES, Status, already_exists, not_found
from petstore_order.storage.documents import Document, order_from_document, order_to_document

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

    async def new_id(self) -> int:
        """A fresh id from the counter (the unique `_id` index still guards the insert)."""
        return await self._ids.next()

    async def ping(self) -> None:
        await ping(self._database.client)

    async def get(self, order_id: int) -> order_pb2.Order:
        document = await self._orders.find_one({"_id": order_id})
        if document is None:
            raise NotFound(not_found(order_id))
        return order_from_document(document)

    async def create(self, order: order_pb2.Order) -> order_pb2.Order:
        document = await insert_with_optional_id(
            self._orders, self._ids, order_to_document(order), lambda: AlreadyExists(already_exists(order.id))
        )
        return order_from_document(document)

    async def delete(self, order_id: int, *, only_if: Status | None = None) -> bool:
        query: Document = {"_id": order_id}
        if only_if is not None:
            query.update(_status_is(only_if))
        async with self._changing.hold(order_id):
            result = await self._orders.delete_one(query)
        if result.deleted_count == 1:
            return True
        await self.get(order_id)  # NotFound when absent; else its status moved on
        return False

    async def set_status(
        self, order_id: int, *, expected: Status, status: Status, complete: bool
    ) -> order_pb2.Order | None:
        # update_one with the old status in the filter: an atomic compare-and-set on MongoDB;
        # FerretDB v1 filters and writes in two steps, so this process also takes them in turn.
        async with self._changing.hold(order_id):
            result = await self._orders.update_one(
                {"_id": order_id, **_status_is(expected)},
                {"$set": {"status": STATUS_NAMES[status], "complete": complete}},
            )
        if result.matched_count == 0:
            await self.get(order_id)  # NotFound when absent
            return None
        return await self.get(order_id)

    async def find(
        self,
        *,
        statuses: Collection[Status],
        pet_id: int | None,
        owner_user_id: int | None,
        after_id: int,
        limit: int,
    ) -> list[order_pb2.Order]:
        query: Document = {"_id": {"$gt": after_id}}
        if owner_user_id is not None:
            query["owner_user_id"] = owner_user_id
        if pet_id is not None:
            query["pet_id"] = pet_id
        if statuses:
            wanted = set(statuses)
            if order_pb2.ORDER_STATUS_PLACED in wanted:  # an order stored without a status is placed
                wanted.add(order_pb2.ORDER_STATUS_UNSPECIFIED)
            query["$or"] = [_status_is(status) for status in sorted(wanted)]
        cursor = self._orders.find(query).sort("_id", 1).limit(limit)
        return [order_from_document(document) async for document in cursor]


def _status_is(status: Status) -> Document:
    name = STATUS_NAMES.get(status)
    return {"status": name} if name is not None else {"status": {"$exists": False}}
