"""MongoDB change-stream events to pet changes, and the feed's life with a fake collection
(FerretDB has no change streams; the contract suite covers that refusal against it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import AutoReconnect, OperationFailure

from petstore.pet.v1 import pet_pb2
from petstore_pet.changes import ChangesUnsupported, PetChange, Subscription, SubscriptionLost
from petstore_pet.storage.change_stream import PIPELINE, MongoChangeFeed, change_from_event
from petstore_pet.storage.documents import ACKED_KEY, Document
from petstore_pet.storage.mongo import MongoPetStore


@pytest.mark.parametrize(
    ("event", "change"),
    [
        (
            {"operationType": "insert", "documentKey": {"_id": 3}, "fullDocument": {"version": 1}},
            PetChange(3, 1),
        ),
        (
            {"operationType": "replace", "documentKey": {"_id": 3}, "fullDocument": {"version": 5}},
            PetChange(3, 5),
        ),
        (
            {
                "operationType": "update",
                "documentKey": {"_id": 3},
                "updateDescription": {"updatedFields": {"version": 4}},
            },
            PetChange(3, 4),
        ),
        (
            {
                "operationType": "update",
                "documentKey": {"_id": 3},
                "updateDescription": {"updatedFields": {}},
            },
            PetChange(3, 0),
        ),
        ({"operationType": "delete", "documentKey": {"_id": 3}}, PetChange(3, 0, deleted=True)),
        ({"operationType": "drop"}, None),
        ({"operationType": "invalidate"}, None),
    ],
)
def test_events_become_changes(event: dict[str, Any], change: PetChange | None) -> None:
    assert change_from_event(event) == change


class FakeStream:
    def __init__(self, events: asyncio.Queue[dict[str, Any] | Exception]) -> None:
        self._events = events
        self.closed = False

    async def __aenter__(self) -> FakeStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            item = await self._events.get()
            if isinstance(item, Exception):
                raise item
            yield item


class FakeCollection:
    """Just `watch`, as PyMongo's AsyncCollection offers it."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.events: asyncio.Queue[dict[str, Any] | Exception] = asyncio.Queue()
        self.watches = 0
        self.pipelines: list[Any] = []
        self._refuse = refuse

    async def watch(self, pipeline: Any) -> FakeStream:
        self.watches += 1
        self.pipelines.append(pipeline)
        if self._refuse is not None:
            raise self._refuse
        return FakeStream(self.events)


async def until_lost(subscription: Subscription) -> None:
    async with asyncio.timeout(5):
        while True:
            await subscription.next_batch(1)


def insert(pet_id: int, version: int = 1) -> dict[str, Any]:
    return {"operationType": "insert", "documentKey": {"_id": pet_id}, "fullDocument": {"version": version}}


async def test_subscribers_share_one_change_stream_opened_while_anyone_watches() -> None:
    collection = FakeCollection()
    feed = MongoChangeFeed(collection)  # type: ignore[arg-type]
    async with feed.subscribe() as first, feed.subscribe() as second:
        await collection.events.put(insert(1))
        assert await first.next_batch(1) == [PetChange(1, 1)]
        assert await second.next_batch(1) == [PetChange(1, 1)]
        assert collection.watches == 1
        assert collection.pipelines == [PIPELINE]
    async with feed.subscribe():
        assert collection.watches == 2  # the first stream closed with its last watcher
    await feed.close()


async def test_a_server_without_change_streams_is_changes_unsupported() -> None:
    refusal = OperationFailure('`aggregate` stage "$changeStream" is not implemented yet', code=238)
    feed = MongoChangeFeed(FakeCollection(refuse=refusal))  # type: ignore[arg-type]
    with pytest.raises(ChangesUnsupported, match="cannot stream its changes"):
        async with feed.subscribe():
            pass


@pytest.mark.parametrize(
    "failure",
    [AutoReconnect("connection lost"), {"operationType": "drop"}],
    ids=["database lost", "collection dropped"],
)
async def test_a_broken_change_stream_loses_every_subscriber(failure: Exception | dict[str, Any]) -> None:
    collection = FakeCollection()
    feed = MongoChangeFeed(collection)  # type: ignore[arg-type]
    async with feed.subscribe() as subscription:
        await collection.events.put(failure)
        with pytest.raises(SubscriptionLost):
            await until_lost(subscription)
    async with feed.subscribe() as again:  # a new subscriber opens a new stream
        await collection.events.put(insert(2))
        assert await again.next_batch(1) == [PetChange(2, 1)]
    await feed.close()


@pytest.mark.mongo
async def test_an_acknowledgement_of_events_never_reaches_the_watchers(
    mongo_db: AsyncDatabase[Document],
) -> None:
    """The stream's $match, evaluated by the database on the events MongoDB would report: the
    update of an ack (the keys it really sets, taken from the stored pet) is filtered out; a
    hold step's, an insert's and a delete's pass."""
    store = MongoPetStore(mongo_db)
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)
    await store.ack_events({pet.id: 1})
    acked = await mongo_db["pets"].find_one({"_id": pet.id}, projection={"_id": False, ACKED_KEY: True})
    assert acked == {ACKED_KEY: 1}

    def update(fields: dict[str, Any], name: str) -> dict[str, Any]:
        return {"_id": name, "operationType": "update", "updateDescription": {"updatedFields": fields}}

    events = mongo_db["change_events"]
    await events.insert_many(
        [
            update(acked, "ack"),
            update({"status": "pending", "version": 2, "events_seq": 1}, "hold step"),
            {"_id": "insert", "operationType": "insert", "fullDocument": {"version": 1}},
            {"_id": "delete", "operationType": "delete"},
        ]
    )

    passed = [event["_id"] async for event in await events.aggregate(PIPELINE[:1])]

    assert sorted(passed) == ["delete", "hold step", "insert"]
