"""MongoDB helpers shared by the services' Mongo stores (PyMongo's async API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Hashable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from pymongo import AsyncMongoClient, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from petstore_common import driver_waits
from petstore_common.database_events import HEARTBEAT_SECONDS, DatabaseEvents
from petstore_common.errors import Aborted, ServiceError, Unavailable
from petstore_common.settings import ServiceSettings
from petstore_common.versions import VERSION_KEY, check_version

Document = dict[str, Any]

# How often an insert may meet an id that is already taken before we give up: ids collide
# only with client-chosen ids or with another process that drew the same block (FerretDB's
# findAndModify is a read-then-write, so two processes can draw the same counter value).
MAX_ID_ATTEMPTS = 64

ID_BLOCK_SIZE = 16
"""Ids drawn from the counter at once. One counter write per block instead of per insert, and
concurrent inserts of one process never race on the counter; a restart leaves a gap of at
most this many ids."""


class KeyedLocks:
    """One asyncio lock per key, forgotten when nobody holds or waits for it.

    A compare-and-set update (filter on `_id` and version, then matched_count) is atomic on
    MongoDB, but FerretDB v1 evaluates an update's filter and writes in two steps: measured, up
    to 8 of 8 concurrent `update_one({"_id": 1, "v": 1}, ...)` match. Writes to one document
    from one process are therefore taken in turn, so versions are exact within a process on any
    server, and across processes on MongoDB."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


def create_client(
    settings: ServiceSettings, events: DatabaseEvents | None = None
) -> AsyncMongoClient[Document]:
    """A client that fails fast (UNAVAILABLE) instead of hanging when the database is gone, and
    whose server monitoring (a heartbeat every HEARTBEAT_SECONDS) reports to `events`; its waits
    safe against a cancellation (petstore_common.driver_waits)."""
    driver_waits.install()
    return AsyncMongoClient(
        settings.mongodb_uri,
        serverSelectionTimeoutMS=settings.mongodb_timeout_ms,
        connectTimeoutMS=settings.mongodb_timeout_ms,
        socketTimeoutMS=max(settings.mongodb_timeout_ms * 5, 10_000),
        heartbeatFrequencyMS=int(HEARTBEAT_SECONDS * 1000),
        event_listeners=[events] if events is not None else None,
        maxPoolSize=settings.mongodb_max_pool_size,
        tz_aware=True,
        appname=settings.database,
    )


async def ping(client: AsyncMongoClient[Document]) -> None:
    """Raise when the database cannot be reached."""
    await client.admin.command("ping")


async def next_id(counters: AsyncCollection[Document], name: str, *, step: int = 1) -> int:
    """Advance the named counter by `step` and return its new value (1, 2, ... for step 1)."""
    for _ in range(MAX_ID_ATTEMPTS):
        try:
            doc = await counters.find_one_and_update(
                {"_id": name},
                {"$inc": {"value": step}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            continue  # two first draws raced to create the counter: it exists now
        assert doc is not None  # upsert=True with AFTER always returns the document
        return int(doc["value"])
    raise Unavailable(f"could not draw from counter {name}")


class IdAllocator:
    """Server-assigned ids for one collection, handed out from blocks drawn from a counter.

    Callers that find the block used up share one draw: the process never races itself on
    the counter, and when the database is gone they all fail together, at once, instead of
    queueing behind each other's timeouts. The counter only makes a free id likely; the unique
    `_id` index is the real guard (see insert_with_new_id).
    """

    def __init__(self, counters: AsyncCollection[Document], name: str, *, block_size: int = ID_BLOCK_SIZE):
        self._counters = counters
        self._name = name
        self._block_size = block_size
        self._next = 1
        self._last = 0  # the block is used up while _next > _last
        self._draw: asyncio.Task[None] | None = None

    async def next(self) -> int:
        while self._next > self._last:
            if self._draw is None:
                self._draw = asyncio.create_task(self._draw_block())
                self._draw.add_done_callback(_retrieve_exception)
            draw = self._draw
            try:
                await asyncio.shield(draw)  # a caller cancelled by its deadline leaves the draw on
            finally:
                if self._draw is draw and draw.done():
                    self._draw = None
        value = self._next
        self._next += 1
        return value

    async def _draw_block(self) -> None:
        last = await next_id(self._counters, self._name, step=self._block_size)
        self._next, self._last = last - self._block_size + 1, last


def _retrieve_exception(task: asyncio.Task[None]) -> None:
    """A draw whose callers all gave up still fails quietly (its callers saw or will retry it)."""
    if not task.cancelled():
        task.exception()


async def insert_with_new_id(
    collection: AsyncCollection[Document], ids: IdAllocator, build: Callable[[int], Document]
) -> Document:
    """Insert `build(id)` under a freshly allocated id, taking the next one while the id is taken.

    A duplicate on another unique index (e.g. a username) is re-raised to the caller.
    """
    for _ in range(MAX_ID_ATTEMPTS):
        document = build(await ids.next())
        try:
            await collection.insert_one(document)
        except DuplicateKeyError as exc:
            if not await _is_id_conflict(collection, exc, document["_id"]):
                raise
            continue
        return document
    raise Unavailable(f"could not allocate a free id for {collection.name}")


async def _is_id_conflict(
    collection: AsyncCollection[Document], exc: DuplicateKeyError, doc_id: object
) -> bool:
    field = duplicate_key_field(exc)
    if field is not None:
        return field == "_id"
    # FerretDB does not name the violated index: the id was the conflict if it is taken.
    return await collection.find_one({"_id": doc_id}, projection={"_id": 1}) is not None


def duplicate_key_field(exc: DuplicateKeyError) -> str | None:
    """The field whose unique index was violated, when the server says which."""
    details: Mapping[str, Any] = exc.details or {}
    key_pattern = details.get("keyPattern") or details.get("keyValue")
    if isinstance(key_pattern, Mapping) and key_pattern:
        return str(next(iter(key_pattern)))
    return None


async def insert_with_optional_id(
    collection: AsyncCollection[Document],
    ids: IdAllocator,
    document: Document,
    taken: Callable[[], ServiceError],
) -> Document:
    """Insert `document` under the `_id` the client chose when it has one (`taken()` raised
    when that id is used: `_id` is the collection's only unique index), else under a fresh id."""
    if "_id" not in document:
        return await insert_with_new_id(collection, ids, lambda new_id: {"_id": new_id, **document})
    try:
        await collection.insert_one(document)
    except DuplicateKeyError:
        raise taken() from None
    return document


MAX_UPDATE_ATTEMPTS = 16
"""Read-and-conditional-write rounds a versioned update tries before it answers Aborted: each
lost round means another writer got in between, which a few more rounds outlast."""


async def update_versioned(
    collection: AsyncCollection[Document],
    query: Document,
    build: Callable[[Document], Document],
    *,
    missing: Callable[[], ServiceError],
    what: str,
    accepted_versions: Collection[int] | None = None,
) -> tuple[Document, int]:
    """Every store's versioned compare-and-set: read the document `query` finds (`missing()`
    raised when none), check its version against `accepted_versions` (If-Match), and write
    `build(stored)` with the version bumped only if nobody wrote since the read; another round
    when somebody did. Returns the document as it was read and the version written, so what is
    stored is exactly that document with the update applied."""
    for _ in range(MAX_UPDATE_ATTEMPTS):
        stored = await collection.find_one(query)
        if stored is None:
            raise missing()
        version = int(stored.get(VERSION_KEY, 0))
        check_version(version, accepted_versions, what)
        update = build(stored)
        update["$set"] = {**update.get("$set", {}), VERSION_KEY: version + 1}
        unchanged = {**query, VERSION_KEY: stored.get(VERSION_KEY, {"$exists": False})}
        if (await collection.update_one(unchanged, update)).matched_count == 1:
            return stored, version + 1
    raise Aborted(f"{what} is being changed by others; try again")
