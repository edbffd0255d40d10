"""The event outbox, one contract for both stores: each hold step's event is recorded with it,
read in order, forgotten once acknowledged, bounded, and outlives a deleted pet."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pymongo.asynchronous.database import AsyncDatabase

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.errors import Aborted, FailedPrecondition
from petstore_pet.events import MAX_EVENTS_PER_PET, RELEASED, RESERVED, SOLD, Page
from petstore_pet.storage.base import PetStore
from petstore_pet.storage.documents import Document
from petstore_pet.storage.mongo import MongoPetStore

AVAILABLE = pet_pb2.PET_STATUS_AVAILABLE
PENDING = pet_pb2.PET_STATUS_PENDING
PET_SOLD = pet_pb2.PET_STATUS_SOLD


async def read(
    store: PetStore, max_pets: int = 1000, max_bytes: int | None = None
) -> list[pet_service_pb2.PetEvent]:
    page = Page(max_pets) if max_bytes is None else Page(max_pets, max_bytes)
    await store.read_events(page)
    return page.events


def told(events: list[pet_service_pb2.PetEvent]) -> list[tuple[int, int, int]]:
    """(pet id, sequence, type) of each event, in the order read."""
    return [(event.pet.id, event.sequence, event.type) for event in events]


def dropped_so_far() -> float:
    return REGISTRY.get_sample_value("petstore_pet_events_dropped_total") or 0.0


async def test_each_hold_step_records_its_event_with_the_pet_after_it(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex", status=AVAILABLE, tags=[pet_pb2.Tag(name="t")]))

    reserved = await store.reserve(pet.id, 7)
    sold = await store.sell(pet.id, 7)
    events = await read(store)

    assert told(events) == [(pet.id, 1, RESERVED), (pet.id, 2, SOLD)]
    assert [event.pet for event in events] == [reserved, sold]
    assert [event.order_id for event in events] == [7, 7]
    assert (events[0].pet.status, events[0].pet.version) == (PENDING, 2)
    assert len({event.id for event in events}) == 2
    assert all(len(event.id) == 26 for event in events)
    assert events[0].time.ToDatetime() <= events[1].time.ToDatetime()
    assert await store.get(pet.id) == sold  # the events are not part of the pet


async def test_a_release_records_released(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)

    assert await store.release(pet.id, 7)

    events = await read(store)
    assert told(events) == [(pet.id, 1, RESERVED), (pet.id, 2, RELEASED)]
    assert events[1].pet == await store.get(pet.id)
    assert events[1].pet.status == AVAILABLE


async def test_a_step_that_changes_nothing_records_nothing(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)

    await store.reserve(pet.id, 7)  # asked again
    with pytest.raises(FailedPrecondition):
        await store.reserve(pet.id, 8)  # refused: another order holds it
    with pytest.raises(FailedPrecondition):
        await store.sell(pet.id, 8)
    assert not await store.release(pet.id, 8)
    assert not await store.release(pet.id + 1000, 7)  # no such pet
    await store.sell(pet.id, 7)
    await store.sell(pet.id, 7)  # asked again
    assert not await store.release(pet.id, 7)  # sold: nothing to release
    await store.update(pet_pb2.Pet(id=pet.id, name="Max", status=PET_SOLD), ["name"])  # staff

    assert told(await read(store)) == [(pet.id, 1, RESERVED), (pet.id, 2, SOLD)]


async def test_an_ack_forgets_the_events_through_its_sequence_only(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    other = await store.create(pet_pb2.Pet(name="Tom"))
    for _ in range(2):
        await store.reserve(pet.id, 7)
        await store.release(pet.id, 7)
    await store.reserve(other.id, 8)

    await store.ack_events({pet.id: 2})
    assert told(await read(store)) == [(pet.id, 3, RESERVED), (pet.id, 4, RELEASED), (other.id, 1, RESERVED)]

    await store.ack_events({pet.id: 2, other.id: 5, 999_999: 3})  # again, past the last, unknown pet
    assert told(await read(store)) == [(pet.id, 3, RESERVED), (pet.id, 4, RELEASED)]

    await store.ack_events({pet.id: 4})
    assert await read(store) == []
    await store.reserve(pet.id, 9)  # the count goes on after every event was acknowledged
    assert told(await read(store)) == [(pet.id, 5, RESERVED)]
    version = (await store.get(pet.id)).version
    await store.ack_events({pet.id: 5})
    assert (await store.get(pet.id)).version == version  # an ack is no change of the pet


async def test_a_page_holds_at_most_its_pets_and_bytes_and_always_one_event(store: PetStore) -> None:
    pets = [await store.create(pet_pb2.Pet(name=f"pet-{n}")) for n in range(3)]
    for pet in pets:
        await store.reserve(pet.id, 7)
        await store.release(pet.id, 7)

    assert told(await read(store, max_pets=2)) == [
        (pets[0].id, 1, RESERVED),
        (pets[0].id, 2, RELEASED),
        (pets[1].id, 1, RESERVED),
        (pets[1].id, 2, RELEASED),
    ]
    assert told(await read(store, max_bytes=1)) == [(pets[0].id, 1, RESERVED)]


async def test_a_pet_keeps_its_newest_events_up_to_the_bound_and_counts_the_dropped(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    before = dropped_so_far()
    steps = MAX_EVENTS_PER_PET // 2 + 2  # a reservation and a release each: 4 events past the bound
    for _ in range(steps):
        await store.reserve(pet.id, 7)
        await store.release(pet.id, 7)

    sequences = [event.sequence for event in await read(store)]

    assert sequences == list(range(2 * steps - MAX_EVENTS_PER_PET + 1, 2 * steps + 1))
    assert dropped_so_far() - before == 2 * steps - MAX_EVENTS_PER_PET


async def test_a_deleted_pets_events_outlive_it_until_acknowledged(store: PetStore) -> None:
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)
    await store.release(pet.id, 7)
    before = await read(store)

    await store.delete(pet.id)

    assert await read(store) == before
    await store.ack_events({pet.id: 1})
    assert told(await read(store)) == [(pet.id, 2, RELEASED)]
    await store.ack_events({pet.id: 2})
    assert await read(store) == []


async def test_a_pet_stored_under_a_deleted_pets_id_waits_for_the_deleted_ones_events(
    store: PetStore,
) -> None:
    first = await store.create(pet_pb2.Pet(id=5, name="First"))
    await store.reserve(5, 7)
    await store.release(5, 7)
    await store.delete(5)
    second = await store.create(pet_pb2.Pet(id=5, name="Second"))
    await store.reserve(5, 8)
    await store.release(5, 8)

    assert [(event.pet.name, event.sequence) for event in await read(store)] == [("First", 1), ("First", 2)]
    await store.ack_events({5: 2})  # the deleted pet's: the newer pet's 1 and 2 stay
    assert [(event.pet.name, event.sequence) for event in await read(store)] == [("Second", 1), ("Second", 2)]

    await store.delete(5)  # before the newer pet's are acknowledged: kept too, in order
    await store.create(pet_pb2.Pet(id=5, name="Third"))
    await store.reserve(5, 9)
    assert [(event.pet.name, event.sequence) for event in await read(store)] == [("Second", 1), ("Second", 2)]
    await store.ack_events({5: 2})
    assert [(event.pet.name, event.sequence) for event in await read(store)] == [("Third", 1)]
    assert (first.name, second.name) == ("First", "Second")


async def test_racing_steps_and_acks_lose_no_event_and_share_no_sequence(store: PetStore) -> None:
    """Orders reserve and release one pet while acknowledgements run: every event is read once
    before its ack, its sequence its own, each pet snapshot matching its type."""
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    seen: dict[int, pet_service_pb2.PetEvent] = {}
    done = asyncio.Event()

    async def order(order_id: int) -> None:
        for _ in range(6):
            try:
                await store.reserve(pet.id, order_id)
                await store.release(pet.id, order_id)
            except (FailedPrecondition, Aborted):
                await asyncio.sleep(0)

    async def webhook_service() -> None:
        while True:
            stop = done.is_set()
            for event in await read(store):
                assert seen.setdefault(event.sequence, event) == event
            if seen:
                await store.ack_events({pet.id: max(seen)})
            if stop:
                return
            await asyncio.sleep(0)

    reader = asyncio.create_task(webhook_service())
    await asyncio.gather(*(order(order_id) for order_id in range(1, 6)))
    done.set()
    await reader

    assert sorted(seen) == list(range(1, len(seen) + 1))
    assert len(seen) >= 2
    for event in seen.values():
        assert event.pet.status == (PENDING if event.type == RESERVED else AVAILABLE)
    assert await read(store) == []


@pytest.mark.mongo
async def test_documents_of_the_previous_release_take_events(mongo_db: AsyncDatabase[Document]) -> None:
    """A pet written by 1.0.0 (no version, no outbox keys) is reserved with its event; a 1.0.0
    write beside the events (its hold step's $set and $inc) leaves them as they are."""
    await mongo_db["pets"].insert_one(
        {"_id": 3, "name": "Old", "photo_urls": [], "tags": [], "status": "available"}
    )
    store = MongoPetStore(mongo_db)

    reserved = await store.reserve(3, 7)
    await mongo_db["pets"].update_one(
        {"_id": 3, "held_by_order": 7}, {"$set": {"status": "sold"}, "$inc": {"version": 1}}
    )  # 1.0.0's sale
    await store.release(3, 7)  # sold: nothing to release

    events = await read(store)
    assert told(events) == [(3, 1, RESERVED)]
    assert events[0].pet == reserved == pet_pb2.Pet(id=3, name="Old", status=PENDING, version=1)
    assert (await store.get(3)).status == PET_SOLD


@pytest.mark.mongo
async def test_the_stored_pet_reads_the_same_with_events_beside_it(mongo_db: AsyncDatabase[Document]) -> None:
    store = MongoPetStore(mongo_db)
    pet = await store.create(pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(name="t")]))
    await store.reserve(pet.id, 7)

    document = await mongo_db["pets"].find_one({"_id": pet.id})
    read_back = await store.get(pet.id)

    assert document is not None
    assert {"events", "events_seq", "has_events"} <= document.keys()
    expected = pet_pb2.Pet(id=pet.id, name="Rex", tags=[pet_pb2.Tag(name="t")], status=PENDING, version=2)
    assert read_back.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)
    assert await store.find(statuses=[PENDING], tag_names=[], after_id=0, limit=10) == [expected]


async def test_deleted_pets_events_are_purged_after_the_retention(store: PetStore) -> None:
    kept, expired = [await store.create(pet_pb2.Pet(name=name)) for name in ("Kept", "Expired")]
    for pet in (kept, expired):
        await store.reserve(pet.id, 7)
        await store.release(pet.id, 7)
    await store.delete(expired.id)

    assert await store.purge_deleted_events(older_than=timedelta(hours=1)) == 0
    assert await store.purge_deleted_events(older_than=timedelta(0)) == 1

    assert {event.pet.id for event in await read(store)} == {kept.id}  # a stored pet's stay


def after_first_read(store: MongoPetStore, replica_writes: Callable[[], Awaitable[object]]) -> None:
    """Another replica writes right after `store`'s first read of a pet: what it read is stale."""
    pets = store._pets  # the seam between a read and its write
    read = pets.find_one
    done = False

    async def stale_read(*args: Any, **kwargs: Any) -> Any:
        nonlocal done
        document = await read(*args, **kwargs)
        if not done:
            done = True
            await replica_writes()
        return document

    pets.find_one = stale_read  # type: ignore[method-assign]


@pytest.mark.mongo
async def test_a_step_over_an_ack_of_another_replica_keeps_the_ack(mongo_db: AsyncDatabase[Document]) -> None:
    """Without the compare-and-set on the ack, the step's rewrite of the array would bring the
    acknowledged event back."""
    store, replica = MongoPetStore(mongo_db), MongoPetStore(mongo_db)
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)
    after_first_read(store, lambda: replica.ack_events({pet.id: 1}))

    assert await store.release(pet.id, 7)

    assert told(await read(replica)) == [(pet.id, 2, RELEASED)]


@pytest.mark.mongo
async def test_an_ack_over_a_step_of_another_replica_keeps_the_steps_event(
    mongo_db: AsyncDatabase[Document],
) -> None:
    store, replica = MongoPetStore(mongo_db), MongoPetStore(mongo_db)
    pet = await store.create(pet_pb2.Pet(name="Rex"))
    await store.reserve(pet.id, 7)
    after_first_read(store, lambda: replica.release(pet.id, 7))

    await store.ack_events({pet.id: 1})

    assert told(await read(replica)) == [(pet.id, 2, RELEASED)]
