"""The MongoDB store (PyMongo's async API): collections endpoints, deliveries, attempts and
counters.

Every query selects by equalities FerretDB v1 filters in the database (an `_id`, or an
endpoint's id with a delivery state); the one range, the purge's `delivered_at`, rides on the
`state` equality. On MongoDB the indexes below serve each query.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from petstore_common.mongo import IdAllocator, insert_with_new_id, next_id, ping
from petstore_webhook.storage.base import (
    ATTEMPTS_KEPT,
    MAX_ENDPOINTS,
    PENDING_WINDOW,
    Accepted,
    Attempt,
    Delivery,
    EndpointRecord,
    EndpointState,
    Event,
    Outcome,
    endpoint_not_found,
    endpoints_full,
    subject_heads,
)
from petstore_webhook.storage.documents import (
    DELIVERED,
    PENDING,
    Document,
    attempt_from_document,
    attempt_to_document,
    delivery_from_document,
    delivery_id,
    delivery_to_document,
    due_at,
    endpoint_from_document,
    endpoint_to_document,
)

ENDPOINT_ID_COUNTER = "endpoints"
ATTEMPT_ID_COUNTER = "attempts"
RECEIVED_COUNTER = "deliveries_received"
DUPLICATE_KEY = 11000


class MongoWebhookStore:
    def __init__(self, database: AsyncDatabase[Document]) -> None:
        self._database = database
        self._endpoints = database["endpoints"]
        self._deliveries = database["deliveries"]
        self._attempts = database["attempts"]
        self._counters = database["counters"]
        self._endpoint_ids = IdAllocator(self._counters, ENDPOINT_ID_COUNTER)
        self._attempt_ids = IdAllocator(self._counters, ATTEMPT_ID_COUNTER)
        self._creating = asyncio.Lock()
        """Creates, one at a time: the MAX_ENDPOINTS count and the insert must not interleave
        (one replica: the bound is exact)."""
        self._receiving = asyncio.Lock()
        """Draws of `received` numbers, one at a time: FerretDB's findAndModify reads, then
        writes, so two concurrent draws could get the same numbers."""

    async def ensure_indexes(self) -> None:
        # An endpoint's pending deliveries, oldest first (due_deliveries, next_due), and all of
        # them (delete_endpoint).
        await self._deliveries.create_index([("endpoint_id", 1), ("state", 1), ("received", 1)])
        # The purge of delivered ones.
        await self._deliveries.create_index([("state", 1), ("delivered_at", 1)])
        # An endpoint's newest attempts (ListDeliveries, and keeping only ATTEMPTS_KEPT).
        await self._attempts.create_index([("endpoint_id", 1), ("_id", -1)])

    async def ping(self) -> None:
        await ping(self._database.client)

    async def create_endpoint(
        self, *, url: str, event_types: Sequence[str], secret: str, at: datetime
    ) -> EndpointRecord:
        def build(endpoint_id: int) -> Document:
            return endpoint_to_document(
                EndpointRecord(
                    id=endpoint_id, url=url, event_types=tuple(event_types), secret=secret, created_at=at
                )
            )

        async with self._creating:
            if await self._endpoints.count_documents({}) >= MAX_ENDPOINTS:
                raise endpoints_full()
            document = await insert_with_new_id(self._endpoints, self._endpoint_ids, build)
        return await self.get_endpoint(document["_id"])  # as stored: the time to the millisecond

    async def list_endpoints(self) -> list[EndpointRecord]:
        return [
            endpoint_from_document(document) async for document in self._endpoints.find({}).sort("_id", 1)
        ]

    async def get_endpoint(self, endpoint_id: int) -> EndpointRecord:
        document = await self._endpoints.find_one({"_id": endpoint_id})
        if document is None:
            raise endpoint_not_found(endpoint_id)
        return endpoint_from_document(document)

    async def delete_endpoint(self, endpoint_id: int) -> None:
        if (await self._endpoints.delete_one({"_id": endpoint_id})).deleted_count == 0:
            raise endpoint_not_found(endpoint_id)
        await self._deliveries.delete_many({"endpoint_id": endpoint_id})
        await self._attempts.delete_many({"endpoint_id": endpoint_id})

    async def disable_endpoint(self, endpoint_id: int, reason: str) -> None:
        await self._endpoints.update_one(
            {"_id": endpoint_id}, {"$set": {"state": EndpointState.DISABLED.value, "disabled_reason": reason}}
        )

    async def accept_events(self, events: Sequence[Event]) -> Accepted:
        enabled = [
            endpoint_from_document(document)
            async for document in self._endpoints.find({"state": EndpointState.ENABLED.value})
        ]
        wanted = [
            (endpoint.id, event)
            for event in events
            for endpoint in enabled
            if event.type in endpoint.event_types
        ]
        if not wanted:
            return Accepted()
        async with self._receiving:
            last = await next_id(self._counters, RECEIVED_COUNTER, step=len(wanted))
        first = last - len(wanted) + 1
        now = datetime.now(UTC)
        documents = [
            delivery_to_document(endpoint_id, event, received=first + index, accepted_at=now)
            for index, (endpoint_id, event) in enumerate(wanted)
        ]
        try:
            await self._deliveries.insert_many(documents, ordered=False)
            taken: set[int] = set()
        except BulkWriteError as exc:
            taken = _duplicates(exc)
        created = [endpoint_id for index, (endpoint_id, _) in enumerate(wanted) if index not in taken]
        return Accepted(deliveries=len(created), endpoint_ids=frozenset(created))

    async def _heads(self, endpoint_id: int) -> list[Document]:
        query = {"endpoint_id": endpoint_id, "state": PENDING}
        cursor = self._deliveries.find(query).sort("received", 1).limit(PENDING_WINDOW)
        return subject_heads(
            [document async for document in cursor], lambda document: document["event"]["subject"]
        )

    async def due_deliveries(self, endpoint_id: int, *, now: datetime, limit: int) -> list[Delivery]:
        due = [document for document in await self._heads(endpoint_id) if due_at(document) <= now]
        return [delivery_from_document(document) for document in due[:limit]]

    async def next_due(self, endpoint_id: int) -> datetime | None:
        return min((due_at(document) for document in await self._heads(endpoint_id)), default=None)

    async def record_attempt(self, attempt: Attempt, *, next_attempt_at: datetime | None) -> None:
        written: Document = {"attempts": attempt.attempt, "next_attempt_at": next_attempt_at}
        if attempt.outcome is Outcome.DELIVERED:
            written |= {"state": DELIVERED, "delivered_at": attempt.attempted_at, "next_attempt_at": None}
        result = await self._deliveries.update_one(
            {"_id": delivery_id(attempt.endpoint_id, attempt.message_id), "state": PENDING}, {"$set": written}
        )
        if result.matched_count == 0:
            return  # its endpoint was deleted meanwhile (or it was delivered already)
        await self._attempts.insert_one(attempt_to_document(await self._attempt_ids.next(), attempt))
        await self._keep_newest_attempts(attempt.endpoint_id)

    async def _keep_newest_attempts(self, endpoint_id: int) -> None:
        """Forget the endpoint's attempts older than its newest ATTEMPTS_KEPT (ids grow)."""
        cursor = (
            self._attempts.find({"endpoint_id": endpoint_id}, projection={"_id": 1})
            .sort("_id", -1)
            .skip(ATTEMPTS_KEPT)
            .limit(1)
        )
        async for newest_dropped in cursor:
            await self._attempts.delete_many(
                {"endpoint_id": endpoint_id, "_id": {"$lte": newest_dropped["_id"]}}
            )

    async def recent_attempts(self, endpoint_id: int, *, limit: int) -> list[Attempt]:
        await self.get_endpoint(endpoint_id)
        if limit <= 0:
            return []  # a limit of 0 is none at all to MongoDB
        cursor = self._attempts.find({"endpoint_id": endpoint_id}).sort("_id", -1).limit(limit)
        return [attempt_from_document(document) async for document in cursor]

    async def purge(self, *, delivered_before: datetime) -> int:
        result = await self._deliveries.delete_many(
            {"state": DELIVERED, "delivered_at": {"$lt": delivered_before}}
        )
        return result.deleted_count


def _duplicates(exc: BulkWriteError) -> set[int]:
    """The positions of the documents refused as already there; anything else is raised."""
    errors: list[dict[str, Any]] = (exc.details or {}).get("writeErrors", [])
    if not errors or any(error.get("code") != DUPLICATE_KEY for error in errors):
        raise exc
    return {int(error["index"]) for error in errors}
