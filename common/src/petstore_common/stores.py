"""Opening a service's store, the same way in every service: the embedded in-memory store
without MONGODB_URI, else the MongoDB store on the service's own database, with its indexes
created at start-up or, when the database is not there yet, as soon as it answers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from petstore_common.database_events import DatabaseEvents
from petstore_common.mongo import Document, create_client
from petstore_common.settings import ServiceSettings

log = logging.getLogger(__name__)


class Store(Protocol):
    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    async def ensure_indexes(self) -> None:
        """Create the indexes the store relies on (idempotent)."""


StoreT = TypeVar("StoreT", bound=Store)


class StoreReadiness:
    """Ready when the store answers and its indexes exist. A service whose indexes are missing
    must not serve: a unique index is what keeps two users from sharing a name."""

    def __init__(self, store: Store, *, indexed: bool = True, events: DatabaseEvents | None = None) -> None:
        self._store = store
        self._indexed = indexed
        self.events = events
        """The driver's heartbeats of the store's database (None: the embedded store)."""

    async def check(self) -> None:
        await self._store.ping()
        if not self._indexed:
            await self._store.ensure_indexes()
            self._indexed = True


@asynccontextmanager
async def open_store(
    settings: ServiceSettings,
    *,
    memory: Callable[[], StoreT],
    mongo: Callable[[AsyncDatabase[Document]], StoreT],
) -> AsyncIterator[tuple[StoreT, StoreReadiness]]:
    """The store and its readiness check; closes the MongoDB client on exit."""
    if not settings.mongodb_uri:
        log.info("using the in-memory store", extra={"store": "memory"})
        store = memory()
        yield store, StoreReadiness(store)
        return
    events = DatabaseEvents()
    client = create_client(settings, events)
    try:
        store = mongo(client[settings.database])
        try:
            await store.ensure_indexes()
            indexed = True
        except PyMongoError as exc:
            # Start anyway: health reports NOT_SERVING until the database answers.
            log.warning("could not create indexes yet", extra={"error": type(exc).__name__})
            indexed = False
        log.info("using MongoDB", extra={"store": "mongo", "database": settings.database})
        yield store, StoreReadiness(store, indexed=indexed, events=events)
    finally:
        await client.close()
