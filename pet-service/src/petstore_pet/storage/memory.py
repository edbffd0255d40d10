"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic, and each
write is published to `changes` in the same step: the change stream is in commit order. A
step's event (petstore_pet.events) is kept in the same step as the step itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.errors import AlreadyExists, FailedPrecondition, NotFound
from petstore_common.idempotency import MemoryIdempotencyStore
from petstore_common.versions import FIRST_VERSION, check_version
from petstore_pet import events, holds
from petstore_pet.changes import ChangeHub, PetChange
from petstore_pet.storage.base import (
    STATUS_NAMES,
    PetImage,
    Status,
    already_exists,
    apply_update,
    empty_inventory,
    image_not_found,
    not_found,
    too_many_images,
)


@dataclass
class _Outbox:
    """A pet's unacknowledged events, oldest first, and the last sequence given."""

    events: list[pet_service_pb2.PetEvent] = field(default_factory=list)
    sequence: int = 0
    deleted_at: datetime | None = None
    """When its pet was (last) deleted; None while the pet is stored."""

    def acknowledge(self, through: int) -> None:
        self.events = [event for event in self.events if event.sequence > through]


class MemoryPetStore:
    def __init__(self) -> None:
        self._pets: dict[int, pet_pb2.Pet] = {}
        self._images: dict[str, PetImage] = {}
        self._holders: dict[int, int] = {}
        """Pet id -> the order that holds it (see petstore_pet.holds)."""
        self._outboxes: dict[int, _Outbox] = {}
        """Stored pet id -> its events."""
        self._deleted_outboxes: dict[int, _Outbox] = {}
        """Deleted pet id -> the events it had not had acknowledged."""
        self._last_assigned_id = 0
        self.idempotency = MemoryIdempotencyStore()
        self.changes = ChangeHub()

    async def ensure_indexes(self) -> None:
        """Nothing to index: lists scan the dict."""

    async def ping(self) -> None:
        """Always reachable."""

    async def get(self, pet_id: int) -> pet_pb2.Pet:
        return _copy(self._stored(pet_id))

    async def existing(self, pet_ids: Collection[int]) -> set[int]:
        return {pet_id for pet_id in pet_ids if pet_id in self._pets}

    async def new_id(self) -> int:
        """An id no pet has, drawn like create draws one."""
        return self._draw_id()

    def _draw_id(self) -> int:
        """Like the Mongo counter: the next number, skipping ids clients chose."""
        self._last_assigned_id = next(
            i for i in itertools.count(self._last_assigned_id + 1) if i not in self._pets
        )
        return self._last_assigned_id

    async def create(self, pet: pet_pb2.Pet) -> pet_pb2.Pet:
        stored = _copy(pet)
        if stored.HasField("id"):
            if stored.id in self._pets:
                raise AlreadyExists(already_exists(stored.id))
        else:
            stored.id = self._draw_id()
        stored.version = FIRST_VERSION
        self._pets[stored.id] = stored
        self.changes.publish(PetChange(stored.id, stored.version))
        return _copy(stored)

    async def update(
        self, pet: pet_pb2.Pet, fields: Collection[str], *, accepted_versions: Collection[int] | None = None
    ) -> pet_pb2.Pet:
        stored = self._stored(pet.id)
        check_version(stored.version, accepted_versions, f"pet {pet.id}")
        updated = apply_update(stored, pet, fields)
        if holds.staff_write(pet.id, stored.status, self._holders.get(pet.id), new_status=updated.status):
            del self._holders[pet.id]
        return self._write(updated)

    async def delete(self, pet_id: int) -> None:
        stored = self._stored(pet_id)
        holds.staff_write(pet_id, stored.status, self._holders.get(pet_id), new_status=None)
        self._holders.pop(pet_id, None)
        self._keep_events_of_deleted(pet_id)
        del self._pets[pet_id]
        self.changes.publish(PetChange(pet_id, stored.version, deleted=True))
        for image_id in [i for i, image in self._images.items() if image.pet_id == pet_id]:
            del self._images[image_id]

    async def holder(self, pet_id: int) -> int | None:
        self._stored(pet_id)
        return self._holders.get(pet_id)

    async def reserve(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        stored = self._stored(pet_id)
        if not holds.reserve(pet_id, stored.status, self._holders.get(pet_id), order_id):
            return _copy(stored)
        self._holders[pet_id] = order_id
        return self._write(_with_status(stored, holds.PENDING), events.RESERVED, order_id)

    async def release(self, pet_id: int, order_id: int) -> bool:
        stored = self._pets.get(pet_id)
        if stored is None or not holds.release(stored.status, self._holders.get(pet_id), order_id):
            return False
        del self._holders[pet_id]
        self._write(_with_status(stored, holds.AVAILABLE), events.RELEASED, order_id)
        return True

    async def sell(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        stored = self._stored(pet_id)
        if not holds.sell(pet_id, stored.status, self._holders.get(pet_id), order_id):
            return _copy(stored)
        return self._write(_with_status(stored, holds.SOLD), events.SOLD, order_id)

    def _write(
        self, updated: pet_pb2.Pet, event_type: events.EventType | None = None, order_id: int = 0
    ) -> pet_pb2.Pet:
        """Store `updated` as the next version of its pet (with the event of the step, if one
        is given), and publish the change."""
        updated.version = self._pets[updated.id].version + 1
        if event_type is not None:
            outbox = self._outboxes.setdefault(updated.id, _Outbox())
            outbox.sequence += 1
            event = events.new_event(event_type, _copy(updated), order_id, outbox.sequence)
            outbox.events, dropped = events.bounded([*outbox.events, event])
            events.DROPPED.inc(dropped)
        self._pets[updated.id] = updated
        self.changes.publish(PetChange(updated.id, updated.version))
        return _copy(updated)

    def _keep_events_of_deleted(self, pet_id: int) -> None:
        """Move the pet's unacknowledged events to the deleted pets' ones. Those of an earlier
        pet under this id still kept come first: the newcomers are numbered after them."""
        outbox = self._outboxes.pop(pet_id, None)
        if outbox is None or not outbox.events:
            return
        kept = self._deleted_outboxes.get(pet_id)
        if kept is None:
            outbox.deleted_at = datetime.now(UTC)
            self._deleted_outboxes[pet_id] = outbox
            return
        kept.deleted_at = datetime.now(UTC)
        for event in outbox.events:
            kept.sequence += 1
            renumbered = pet_service_pb2.PetEvent()
            renumbered.CopyFrom(event)
            renumbered.sequence = kept.sequence
            kept.events.append(renumbered)
        kept.events, dropped = events.bounded(kept.events)
        events.DROPPED.inc(dropped)

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        cutoff = datetime.now(UTC) - older_than
        expired = [
            pet_id
            for pet_id, kept in self._deleted_outboxes.items()
            if kept.deleted_at is not None and kept.deleted_at <= cutoff
        ]
        for pet_id in expired:
            del self._deleted_outboxes[pet_id]
        return len(expired)

    async def read_events(self, page: events.Page) -> None:
        for pet_id in sorted(self._deleted_outboxes):
            page.add(pet_id, map(_copy_event, self._deleted_outboxes[pet_id].events))
        for pet_id in sorted(self._outboxes.keys() - self._deleted_outboxes.keys()):
            page.add(pet_id, map(_copy_event, self._outboxes[pet_id].events))

    async def ack_events(self, acks: Mapping[int, int]) -> None:
        for pet_id, through in acks.items():
            kept = self._deleted_outboxes.get(pet_id)
            if kept is not None:
                kept.acknowledge(through)
                if not kept.events:
                    del self._deleted_outboxes[pet_id]
            elif (outbox := self._outboxes.get(pet_id)) is not None:
                outbox.acknowledge(through)

    async def find(
        self, *, statuses: Collection[Status], tag_names: Collection[str], after_id: int, limit: int
    ) -> list[pet_pb2.Pet]:
        wanted_statuses, wanted_tags = set(statuses), set(tag_names)
        found: list[pet_pb2.Pet] = []
        for pet_id in sorted(i for i in self._pets if i > after_id):
            if len(found) >= limit:
                break
            pet = self._pets[pet_id]
            tagged = any(tag.HasField("name") and tag.name in wanted_tags for tag in pet.tags)
            if pet.status in wanted_statuses or tagged:
                found.append(_copy(pet))
        return found

    async def count_by_status(self) -> dict[str, int]:
        counts = empty_inventory()
        for pet in self._pets.values():
            name = STATUS_NAMES.get(pet.status)
            if name is not None:
                counts[name] += 1
        return counts

    async def add_image(self, image: PetImage, *, max_images: int) -> None:
        self._stored(image.pet_id)
        if sum(1 for stored in self._images.values() if stored.pet_id == image.pet_id) >= max_images:
            raise FailedPrecondition(too_many_images(image.pet_id, max_images))
        self._images[image.image_id] = image

    async def get_image(self, pet_id: int, image_id: str) -> PetImage:
        image = self._images.get(image_id)
        if image is None or image.pet_id != pet_id:
            raise NotFound(image_not_found(pet_id, image_id))
        return image

    async def delete_image(self, image_id: str) -> None:
        self._images.pop(image_id, None)

    async def list_images(self, pet_id: int) -> list[PetImage]:
        return [image for image in self._images.values() if image.pet_id == pet_id]

    def _stored(self, pet_id: int) -> pet_pb2.Pet:
        try:
            return self._pets[pet_id]
        except KeyError:
            raise NotFound(not_found(pet_id)) from None


def _with_status(pet: pet_pb2.Pet, status: Status) -> pet_pb2.Pet:
    changed = _copy(pet)
    changed.status = status
    return changed


def _copy_event(event: pet_service_pb2.PetEvent) -> pet_service_pb2.PetEvent:
    copy = pet_service_pb2.PetEvent()
    copy.CopyFrom(event)
    return copy


def _copy(pet: pet_pb2.Pet) -> pet_pb2.Pet:
    copy = pet_pb2.Pet()
    copy.CopyFrom(pet)
    return copy
