"""The MongoDB store (PyMongo's async API): collections pets, pet_images, pet_events and counters.

Writes to a pet are compare-and-set on its stored version (an update filtered on `_id` and
version, then matched_count), and one process writes a pet at a time (KeyedLocks: FerretDB
evaluates an update's filter and its write in two steps).

A hold step's event (petstore_pet.events) goes into the pet document in the step's own write:
one document, one write, atomic on FerretDB (no transactions) as on MongoDB. FerretDB v1
ignores `$push`'s `$slice` and a `$pull` with a condition (measured: both leave the array as it
was), so removing events rewrites the outbox array whole, compare-and-set on the outbox's
counters (storage.outbox). A deleted pet's events move to `pet_events` (same shape, `_id` the pet id)
before the pet is deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.errors import Aborted, AlreadyExists, FailedPrecondition, NotFound
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_common.mongo import (
    MAX_UPDATE_ATTEMPTS,
    IdAllocator,
    KeyedLocks,
    insert_with_optional_id,
    ping,
    update_versioned,
)
from petstore_common.versions import FIRST_VERSION, VERSION_KEY
from petstore_pet import events, holds
from petstore_pet.storage import outbox
from petstore_pet.storage.base import (
    PetImage,
    Status,
    already_exists,
    apply_update,
    empty_inventory,
    image_not_found,
    not_found,
    too_many_images,
)
from petstore_pet.storage.change_stream import MongoChangeFeed
from petstore_pet.storage.documents import (
    DELETED_AT_KEY,
    EVENTS_KEY,
    HAS_EVENTS_KEY,
    HOLDER_KEY,
    OUTBOX_KEYS,
    Document,
    event_from_document,
    event_to_document,
    hold_of,
    image_from_document,
    image_to_document,
    pet_from_document,
    pet_to_document,
    status_name,
)

PET_ID_COUNTER = "pets"
"""Compare-and-set rounds an unconditional update may lose to concurrent writers before ABORTED."""

LOOKUPS_AT_ONCE = 8
"""Pet look-ups one FindExistingPets call has in flight at most (the driver's pool,
MONGODB_MAX_POOL_SIZE, is 20 by default and serves every request of the process)."""


class MongoPetStore:
    """Pets are documents whose `_id` is the pet id; images live in their own collection."""

    def __init__(self, database: AsyncDatabase[Document]) -> None:
        self._database = database
        self._pets = database["pets"]
        self._images = database["pet_images"]
        self._deleted_events = database["pet_events"]
        """The unacknowledged events of deleted pets, one document per pet id."""
        self._ids = IdAllocator(database["counters"], PET_ID_COUNTER)
        self.idempotency = MongoIdempotencyStore(database["idempotency_keys"])
        self.changes = MongoChangeFeed(self._pets)
        self._writing = KeyedLocks()

    async def ensure_indexes(self) -> None:
        await self.idempotency.ensure_indexes()
        await self._pets.create_index("status")
        await self._pets.create_index("tags.name")
        await self._pets.create_index(HAS_EVENTS_KEY, sparse=True)
        await self._images.create_index("pet_id")

    async def new_id(self) -> int:
        """A fresh id from the counter (the unique `_id` index still guards the insert)."""
        return await self._ids.next()

    async def ping(self) -> None:
        await ping(self._database.client)

    async def get(self, pet_id: int) -> pet_pb2.Pet:
        document = await self._pets.find_one({"_id": pet_id})
        if document is None:
            raise NotFound(not_found(pet_id))
        return pet_from_document(document)

    async def existing(self, pet_ids: Collection[int]) -> set[int]:
        # One `_id` equality per pet, not one `_id: {$in: ...}`: FerretDB v1 does not push `$in`
        # down and would read and filter every pet (measured: 300 ms at 3,000 pets); an equality
        # it filters in PostgreSQL. On MongoDB both are `_id` index look-ups. At most
        # LOOKUPS_AT_ONCE are in flight for one call: a question about a thousand pets takes a few
        # of the pool's connections, not all of them, so the other requests keep theirs.
        lookups = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def exists(pet_id: int) -> bool:
            async with lookups:
                return await self._pets.find_one({"_id": pet_id}, projection={"_id": True}) is not None

        distinct = list(set(pet_ids))
        found = await asyncio.gather(*(exists(pet_id) for pet_id in distinct))
        return {pet_id for pet_id, present in zip(distinct, found, strict=True) if present}

    async def create(self, pet: pet_pb2.Pet) -> pet_pb2.Pet:
        document = pet_to_document(pet) | {VERSION_KEY: FIRST_VERSION}
        stored = await insert_with_optional_id(
            self._pets, self._ids, document, lambda: AlreadyExists(already_exists(pet.id))
        )
        return pet_from_document(stored)

    async def update(
        self, pet: pet_pb2.Pet, fields: Collection[str], *, accepted_versions: Collection[int] | None = None
    ) -> pet_pb2.Pet:
        document = pet_to_document(pet)
        present = {field: document[field] for field in fields if field in document}
        absent = {field: "" for field in fields if field not in document}

        def change(stored: Document) -> Document:
            new_status = apply_update(pet_from_document(stored), pet, fields).status
            ends_hold = holds.staff_write(pet.id, *hold_of(stored), new_status=new_status)
            unset = absent | ({HOLDER_KEY: ""} if ends_hold else {})
            return {"$set": dict(present), **({"$unset": unset} if unset else {})}

        async with self._writing.hold(pet.id):
            stored, version = await update_versioned(
                self._pets,
                {"_id": pet.id},
                change,
                missing=lambda: NotFound(not_found(pet.id)),
                what=f"pet {pet.id}",
                accepted_versions=accepted_versions,
            )
        updated = apply_update(pet_from_document(stored), pet, fields)
        updated.version = version
        return updated

    async def delete(self, pet_id: int) -> None:
        async with self._writing.hold(pet_id):
            for _ in range(MAX_UPDATE_ATTEMPTS):
                stored = await self._pets.find_one({"_id": pet_id})
                if stored is None:
                    raise NotFound(not_found(pet_id))
                holds.staff_write(pet_id, *hold_of(stored), new_status=None)
                if stored.get(EVENTS_KEY):
                    await self._keep_events_of_deleted(pet_id, stored)
                # Deleted only as read: a reservation (or its event) that got in since is not
                # deleted under; the next round keeps that event too.
                unchanged = {VERSION_KEY: stored.get(VERSION_KEY), **outbox.unchanged(stored)}
                if (await self._pets.delete_one({"_id": pet_id, **unchanged})).deleted_count == 1:
                    break
            else:
                raise Aborted(f"pet {pet_id} is being changed by others; try again")
        await self._images.delete_many({"pet_id": pet_id})

    async def _keep_events_of_deleted(self, pet_id: int, stored: Document) -> None:
        """Add the deleted pet's events to its `pet_events` document, those not there already
        (a deletion tried again); an earlier pet's under this id still kept stay first."""
        for _ in range(MAX_UPDATE_ATTEMPTS):
            kept = await self._deleted_events.find_one({"_id": pet_id})
            if kept is None:
                try:
                    await self._deleted_events.insert_one(outbox.moved(pet_id, stored, datetime.now(UTC)))
                    return
                except DuplicateKeyError:
                    continue  # another replica kept them first: add to its document
            moving = outbox.with_moved(kept, stored, datetime.now(UTC))
            if moving is None:
                return
            change, dropped = moving
            filter_ = {"_id": pet_id, **outbox.unchanged(kept)}
            if (await self._deleted_events.update_one(filter_, change)).matched_count == 1:
                events.DROPPED.inc(dropped)
                return
        raise Aborted(f"pet {pet_id} is being changed by others; try again")

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        cutoff = datetime.now(UTC) - older_than
        return (await self._deleted_events.delete_many({DELETED_AT_KEY: {"$lte": cutoff}})).deleted_count

    async def holder(self, pet_id: int) -> int | None:
        stored = await self._pets.find_one({"_id": pet_id}, projection={HOLDER_KEY: True})
        if stored is None:
            raise NotFound(not_found(pet_id))
        return hold_of(stored)[1]

    async def reserve(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        reservable = {
            HOLDER_KEY: {"$exists": False},
            "$or": [_status_is(status) for status in holds.RESERVABLE],
        }
        pet, _ = await self._hold_step(
            pet_id,
            reservable,
            lambda status, holder: holds.reserve(pet_id, status, holder, order_id),
            _Step(events.RESERVED, holds.PENDING, order_id, held_after=True),
        )
        return pet

    async def release(self, pet_id: int, order_id: int) -> bool:
        held = {HOLDER_KEY: order_id, **_status_is(holds.PENDING)}
        try:
            _, wrote = await self._hold_step(
                pet_id,
                held,
                lambda status, holder: holds.release(status, holder, order_id),
                _Step(events.RELEASED, holds.AVAILABLE, order_id, held_after=False),
            )
        except NotFound:
            return False
        return wrote

    async def sell(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        held = {HOLDER_KEY: order_id, "status": {"$ne": status_name(holds.SOLD)}}
        pet, _ = await self._hold_step(
            pet_id,
            held,
            lambda status, holder: holds.sell(pet_id, status, holder, order_id),
            _Step(events.SOLD, holds.SOLD, order_id, held_after=True),
        )
        return pet

    async def _hold_step(
        self,
        pet_id: int,
        condition: Document,
        decide: Callable[[Status, int | None], bool],
        step: _Step,
    ) -> tuple[pet_pb2.Pet, bool]:
        """One step of petstore_pet.holds and its event in one write: the pet after it, and
        whether it wrote. The pet is read first (the event carries the pet after the step and
        the next sequence); `decide` raises when the step is refused, or says nothing is to be
        done (then nothing is written, no event either). The write is filtered on the step's
        `condition` and on nothing having changed since the read (version, outbox); when
        another writer got in between, again."""
        async with self._writing.hold(pet_id):
            for _ in range(MAX_UPDATE_ATTEMPTS):
                stored = await self._pets.find_one({"_id": pet_id})
                if stored is None:
                    raise NotFound(not_found(pet_id))
                if not decide(*hold_of(stored)):
                    return pet_from_document(stored), False
                after = pet_from_document(stored)
                after.status = step.status
                after.version = int(stored.get(VERSION_KEY, 0)) + 1
                sequence = outbox.next_sequence(stored)
                event = events.new_event(step.event_type, after, step.order_id, sequence)
                recorded, dropped = outbox.with_event(stored, event_to_document(event))
                holder = {HOLDER_KEY: step.order_id} if step.held_after else {}
                write: Document = recorded | {
                    "$set": {
                        **recorded["$set"],
                        "status": status_name(step.status),
                        VERSION_KEY: after.version,
                        **holder,
                    }
                }
                if not step.held_after:
                    write["$unset"] = {HOLDER_KEY: ""}
                unchanged = {
                    VERSION_KEY: stored.get(VERSION_KEY, {"$exists": False}),
                    **outbox.unchanged(stored),
                }
                written = await self._pets.update_one({"_id": pet_id, **condition, **unchanged}, write)
                if written.matched_count == 1:
                    events.DROPPED.inc(dropped)
                    return after, True
                # Another writer (or replica) changed the pet in between. Again.
        raise Aborted(f"pet {pet_id} is being changed by others; try again")

    async def read_events(self, page: events.Page) -> None:
        # The stored pets' are read before the deleted ones': a pet deleted (and one stored
        # under its id) in between shows its events among the deleted, where an ack finds them.
        stored = await _outboxes(self._pets, page)
        deleted = await _outboxes(self._deleted_events, page)
        for pet_id, told in deleted.items():
            page.add(pet_id, told)
        for pet_id, told in stored.items():
            if pet_id not in deleted:
                page.add(pet_id, told)

    async def ack_events(self, acks: Mapping[int, int]) -> None:
        acking = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def ack(pet_id: int, through: int) -> None:
            async with acking:
                await self._ack(pet_id, through)

        await asyncio.gather(*(ack(pet_id, through) for pet_id, through in acks.items()))

    async def _ack(self, pet_id: int, through: int) -> None:
        """Forget `pet_id`'s events through `through`: a deleted pet's while it has any (its
        emptied document removed), else the stored pet's. Compare-and-set on the outbox, again
        when an event or an ack got in between."""
        async with self._writing.hold(pet_id):
            for _ in range(MAX_UPDATE_ATTEMPTS):
                kept = await self._deleted_events.find_one({"_id": pet_id})
                if kept is not None:
                    collection, document = self._deleted_events, kept
                else:
                    projection = dict.fromkeys(OUTBOX_KEYS, True)
                    found = await self._pets.find_one({"_id": pet_id}, projection=projection)
                    if found is None:
                        return
                    collection, document = self._pets, found
                change = outbox.acknowledged(document, through)
                if change is None:
                    return
                unchanged = {"_id": pet_id, **outbox.unchanged(document)}
                if kept is not None and outbox.emptied(change):
                    done = (await collection.delete_one(unchanged)).deleted_count == 1
                else:
                    done = (await collection.update_one(unchanged, change)).matched_count == 1
                if done:
                    return
        raise Aborted(f"pet {pet_id}'s events are being changed by others; try again")

    async def find(
        self, *, statuses: Collection[Status], tag_names: Collection[str], after_id: int, limit: int
    ) -> list[pet_pb2.Pet]:
        clauses: list[Document] = []
        if names := [name for name in map(status_name, statuses) if name is not None]:
            clauses.append({"status": {"$in": names}})
        if tag_names:
            clauses.append({"tags.name": {"$in": list(tag_names)}})
        if not clauses:
            return []
        query: Document = {"_id": {"$gt": after_id}}
        query |= clauses[0] if len(clauses) == 1 else {"$or": clauses}
        cursor = self._pets.find(query).sort("_id", 1).limit(limit)
        return [pet_from_document(document) async for document in cursor]

    async def count_by_status(self) -> dict[str, int]:
        counts = empty_inventory()
        # FerretDB v1 supports $match and $group (its buildInfo lists both): the server counts.
        pipeline: list[Document] = [
            {"$match": {"status": {"$exists": True}}},
            {"$group": {"_id": "$status", "count": {"$sum": 1}}},
        ]
        async for row in await self._pets.aggregate(pipeline):
            if row["_id"] in counts:
                counts[row["_id"]] = int(row["count"])
        return counts

    async def add_image(self, image: PetImage, *, max_images: int) -> None:
        await self._require_pet(image.pet_id)
        if await self._images.count_documents({"pet_id": image.pet_id}) >= max_images:
            raise FailedPrecondition(too_many_images(image.pet_id, max_images))
        await self._images.insert_one(image_to_document(image))
        # A DeletePet may have removed the pet (and its images) between the check and the
        # insert, and racing uploads may have passed the count together: look again, so no
        # image outlives its pet and no pet keeps more than max_images (racers for the last
        # place may all be refused; none gets past the bound).
        try:
            await self._require_pet(image.pet_id)
            if await self._images.count_documents({"pet_id": image.pet_id}) > max_images:
                raise FailedPrecondition(too_many_images(image.pet_id, max_images))
        except (NotFound, FailedPrecondition):
            await self._images.delete_one({"_id": image.image_id})
            raise

    async def get_image(self, pet_id: int, image_id: str) -> PetImage:
        document = await self._images.find_one({"_id": image_id, "pet_id": pet_id})
        if document is None:
            raise NotFound(image_not_found(pet_id, image_id))
        return image_from_document(document)

    async def delete_image(self, image_id: str) -> None:
        await self._images.delete_one({"_id": image_id})

    async def list_images(self, pet_id: int) -> list[PetImage]:
        return [image_from_document(document) async for document in self._images.find({"pet_id": pet_id})]

    async def _require_pet(self, pet_id: int) -> None:
        if await self._pets.find_one({"_id": pet_id}, projection={"_id": 1}) is None:
            raise NotFound(not_found(pet_id))


@dataclass(frozen=True, slots=True)
class _Step:
    """A hold step's write: its event's type, the status it leaves, the order that takes it,
    and whether that order holds the pet after it."""

    event_type: events.EventType
    status: Status
    order_id: int
    held_after: bool


async def _outboxes(
    collection: AsyncCollection[Document], page: events.Page
) -> dict[int, list[pet_service_pb2.PetEvent]]:
    """The events of the documents of `collection` that hold any, by id, as many as `page` could
    take (its pets and bytes bound what is read; nothing is added to it)."""
    trial = page.copy_empty()
    found: dict[int, list[pet_service_pb2.PetEvent]] = {}
    # FerretDB filters the equality in PostgreSQL; the few documents with events are sorted.
    cursor = collection.find({HAS_EVENTS_KEY: True}, projection={EVENTS_KEY: True})
    async for document in cursor.sort("_id", 1).batch_size(outbox.READ_BATCH):
        told = [event_from_document(event) for event in document.get(EVENTS_KEY, [])]
        found[document["_id"]] = told
        trial.add(document["_id"], told)
        if trial.full:
            break
    await cursor.close()
    return found


def _status_is(status: Status) -> Document:
    """Matches a stored pet with this status (an unspecified one is stored as absent)."""
    name = status_name(status)
    return {"status": name} if name is not None else {"status": {"$exists": False}}
