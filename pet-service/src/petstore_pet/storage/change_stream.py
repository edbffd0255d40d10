"""Pet changes from a MongoDB change stream, so a write through any replica of the pet service
reaches the gateways watching every replica. Change streams need a replica set (the compose
and Kubernetes databases are one); where the server has none (FerretDB), subscribing is
ChangesUnsupported and the gateways read through."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure, PyMongoError

from petstore_common.errors import ServiceError, Unavailable
from petstore_common.versions import VERSION_KEY
from petstore_pet.changes import ChangeHub, ChangesUnsupported, PetChange, Position, Subscription
from petstore_pet.storage.documents import ACKED_KEY, Document

log = logging.getLogger(__name__)

# Only what a change says about a pet's identity and version travels from the server. An
# acknowledgement of the pet's events (storage.outbox) changes no pet: it never travels.
PIPELINE: list[Document] = [
    {"$match": {f"updateDescription.updatedFields.{ACKED_KEY}": {"$exists": False}}},
    {
        "$project": {
            "operationType": 1,
            "documentKey": 1,
            f"fullDocument.{VERSION_KEY}": 1,
            f"updateDescription.updatedFields.{VERSION_KEY}": 1,
        }
    },
]


def change_from_event(event: Mapping[str, Any]) -> PetChange | None:
    """The pet change a change-stream event reports; None for an event after which the stream
    cannot be trusted to go on (drop, rename, invalidate...)."""
    operation = event.get("operationType")
    if operation == "delete":
        return PetChange(event["documentKey"]["_id"], 0, deleted=True)
    if operation in ("insert", "replace"):
        return PetChange(event["documentKey"]["_id"], int(event.get("fullDocument", {}).get(VERSION_KEY, 0)))
    if operation == "update":
        updated = event.get("updateDescription", {}).get("updatedFields", {})
        return PetChange(event["documentKey"]["_id"], int(updated.get(VERSION_KEY, 0)))
    return None


class MongoChangeFeed:
    """One change stream per process, opened while anyone subscribes, fanned out by a hub."""

    def __init__(self, collection: AsyncCollection[Document]) -> None:
        self._collection = collection
        self._hub = ChangeHub()
        self._reader: asyncio.Task[None] | None = None
        self._opened: asyncio.Future[None] | None = None

    @asynccontextmanager
    async def subscribe(self, resume: Position | None = None) -> AsyncIterator[Subscription]:
        # Never resumes: the change stream is closed while nobody watches, so this process's
        # feed has gaps (resuming would take the change stream's own resume token, which no
        # database here can exercise). Registered first, so nothing the stream reads after it
        # opens can pass this subscriber by.
        async with self._hub.subscribe() as subscription:
            try:
                await asyncio.shield(self._start_reader())
                yield subscription
            finally:
                if self._hub.subscribers <= 1 and self._reader is not None:
                    self._reader.cancel()  # the last watcher left: no stream to keep open
                    self._reader = None

    async def close(self) -> None:
        await self._hub.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None

    def _start_reader(self) -> asyncio.Future[None]:
        if self._reader is None or self._reader.done():
            self._opened = asyncio.get_running_loop().create_future()
            self._reader = asyncio.create_task(self._read(self._opened))
        assert self._opened is not None
        return self._opened

    async def _read(self, opened: asyncio.Future[None]) -> None:
        error: ServiceError = Unavailable("the change stream ended")
        try:
            async with await self._collection.watch(PIPELINE) as stream:
                opened.set_result(None)
                async for event in stream:
                    change = change_from_event(event)
                    if change is None:
                        error = Unavailable(f"the change stream reported {event.get('operationType')}")
                        break
                    self._hub.publish(change)
        except OperationFailure as exc:
            if opened.done():
                error = Unavailable("the change stream failed")
            else:
                error = ChangesUnsupported(
                    "the database cannot stream its changes (no change streams): read through"
                )
            log.warning("change stream refused", extra={"error": type(exc).__name__, "code": exc.code})
        except PyMongoError as exc:
            error = Unavailable("the database is unavailable")
            log.warning("change stream lost", extra={"error": type(exc).__name__})
        finally:
            if not opened.done():
                opened.set_exception(error)
                opened.exception()  # retrieved here too: no subscriber may be waiting any more
            self._hub.lose_all(error.message)
