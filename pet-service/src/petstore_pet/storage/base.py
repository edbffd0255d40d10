"""The storage contract both stores fulfil; protobuf `Pet` messages are the currency."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol, TypeAlias

from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2
from petstore_common.idempotency import IdempotencyStore
from petstore_common.rules import enum_names
from petstore_pet.changes import ChangeFeed
from petstore_pet.events import Page

READ_ONLY_FIELDS: frozenset[str] = frozenset({"id", "version"})
"""Fields of Pet no update writes: the id names the pet, the version is the store's to set."""
PET_FIELDS: tuple[str, ...] = tuple(
    field.name for field in pet_pb2.Pet.DESCRIPTOR.fields if field.name not in READ_ONLY_FIELDS
)
"""The fields of a pet an update may write: every field of this service's Pet but the read-only
ones, so a field added to the proto is writable (and stored: documents.py) with no list to edit."""
CLASSIC_FIELDS: tuple[str, ...] = ("name", "status", "category", "photo_urls", "tags")
"""What an UpdatePet with an empty mask writes: the writable fields of the Pet of release 1.0.0.

Frozen, never derived from the proto: a client that names no fields (the 1.0.0 gateway) means
the fields it knows, which are these. Were it "every field this service knows", each such PUT
would clear a field added since, which that client cannot even see (docs/compatibility.md)."""

Status: TypeAlias = pet_pb2.PetStatus.ValueType
"""A PetStatus enum value."""

STATUS_NAMES: Mapping[Status, str] = enum_names(pet_pb2.PetStatus)
"""How a status is stored and counted ("available", "pending", "sold": the PetStatus values'
names); PET_STATUS_UNSPECIFIED is stored as an absent status."""


@dataclass(frozen=True, slots=True)
class PetImage:
    """An uploaded image of a pet."""

    image_id: str
    pet_id: int
    content_type: str
    data: bytes
    additional_metadata: str
    file_name: str
    """As the client named it: for display only, never used as a path."""

    @property
    def size(self) -> int:
        return len(self.data)


def not_found(pet_id: int) -> str:
    return f"pet {pet_id} not found"


def image_not_found(pet_id: int, image_id: str) -> str:
    return f"pet {pet_id} has no image {image_id}"


def too_many_images(pet_id: int, max_images: int) -> str:
    return f"pet {pet_id} has {max_images} images already: at most {max_images} are kept"


def already_exists(pet_id: int) -> str:
    return f"pet {pet_id} already exists"


def apply_update(stored: pet_pb2.Pet, pet: pet_pb2.Pet, fields: Collection[str]) -> pet_pb2.Pet:
    """`stored` with `fields` of `pet` written onto it (a new message; the version is left as is).

    Named message and repeated fields are replaced, not merged; absent ones are cleared."""
    updated = pet_pb2.Pet()
    updated.CopyFrom(stored)
    FieldMask(paths=sorted(fields)).MergeMessage(
        pet, updated, replace_message_field=True, replace_repeated_field=True
    )
    return updated


def empty_inventory() -> dict[str, int]:
    """Every status name with a zero count, so callers always see all three keys."""
    return dict.fromkeys(STATUS_NAMES.values(), 0)


class PetStore(Protocol):
    """Pets keyed by a positive integer id, and their images.

    Every method raises petstore_common.errors.NotFound / AlreadyExists with a client-safe
    message; stored and returned pets are copies, never shared with the caller.

    Every pet carries a version, set atomically with each write: FIRST_VERSION on create, one
    more on each update. `changes` streams every committed create, update and delete.
    """

    @property
    def changes(self) -> ChangeFeed:
        """The committed changes, in commit order (ChangesUnsupported where the database has none)."""

    @property
    def idempotency(self) -> IdempotencyStore:
        """Idempotency records of creates, in the same database."""

    async def new_id(self) -> int:
        """A server-assigned id for a pet about to be created under it."""

    async def ensure_indexes(self) -> None:
        """Create the indexes the queries need (idempotent)."""

    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    async def get(self, pet_id: int) -> pet_pb2.Pet:
        """The pet with this id; NotFound when absent."""

    async def existing(self, pet_ids: Collection[int]) -> set[int]:
        """Those of `pet_ids` that name a stored pet."""

    async def create(self, pet: pet_pb2.Pet) -> pet_pb2.Pet:
        """Store a new pet under its own id (AlreadyExists when taken) or, without one, a fresh id."""

    async def update(
        self, pet: pet_pb2.Pet, fields: Collection[str], *, accepted_versions: Collection[int] | None = None
    ) -> pet_pb2.Pet:
        """Write `fields` (from PET_FIELDS) of `pet` onto the pet with pet.id; NotFound when absent.

        A field absent in `pet` (no category, status unspecified) is removed from the stored pet.
        With `accepted_versions`, only when the stored version is one of them, checked
        atomically with the write; FailedPrecondition (and no change) otherwise. Aborted when
        an order holds the pet pending and the write changes its status; a change to a sold
        pet's status ends its hold (petstore_pet.holds.staff_write).
        """

    async def delete(self, pet_id: int) -> None:
        """Remove the pet and its images; NotFound when absent, Aborted while an order holds it
        pending. Its unacknowledged events outlive it (read_events tells them)."""

    async def holder(self, pet_id: int) -> int | None:
        """The id of the order that holds the pet (petstore_pet.holds), or None; NotFound when absent."""

    async def reserve(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        """Make an available pet pending, held by `order_id` (nothing changes when that order holds
        it already); NotFound when absent, FailedPrecondition naming its state when not available.
        A reservation records a RESERVED event in the same write (petstore_pet.events)."""

    async def release(self, pet_id: int, order_id: int) -> bool:
        """Make the pet available again if `order_id` holds it pending; whether this call did.
        Anything else (absent, sold, held by another order or none) changes nothing. A release
        records a RELEASED event in the same write."""

    async def sell(self, pet_id: int, order_id: int) -> pet_pb2.Pet:
        """Make the pet `order_id` holds sold, still held by it (nothing changes when it is sold to
        it already); NotFound when absent, FailedPrecondition when the order does not hold it.
        A sale records a SOLD event in the same write."""

    async def read_events(self, page: Page) -> None:
        """Fill `page` with unacknowledged events, each pet's in sequence: first those of deleted
        pets, then those of stored pets whose id no deleted pet's events use, each group by pet id.

        While a deleted pet's events are kept, a pet stored since under its id waits: an ack
        names a pet id only, and applies to the deleted pet's events while there are any."""

    async def purge_deleted_events(self, *, older_than: timedelta) -> int:
        """Forget the events of pets deleted (last) more than `older_than` ago, acknowledged or
        not; how many pets' were forgotten."""

    async def ack_events(self, acks: Mapping[int, int]) -> None:
        """Forget each pet's events up to its sequence (pet id -> through sequence): a deleted
        pet's while any are kept, else the stored pet's. Absent pets and events change nothing."""

    async def find(
        self, *, statuses: Collection[Status], tag_names: Collection[str], after_id: int, limit: int
    ) -> list[pet_pb2.Pet]:
        """Pets with any of `statuses` or a tag named any of `tag_names`, each once, by id,
        only ids above `after_id`, at most `limit` of them."""

    async def count_by_status(self) -> dict[str, int]:
        """The number of pets per status name, every name present (pets without status uncounted)."""

    async def add_image(self, image: PetImage, *, max_images: int) -> None:
        """Store an image of an existing pet; NotFound when the pet is absent,
        FailedPrecondition (and nothing stored) when it already has `max_images`."""

    async def get_image(self, pet_id: int, image_id: str) -> PetImage:
        """The image with this id of this pet; NotFound when the pet has no such image."""

    async def delete_image(self, image_id: str) -> None:
        """Remove one image (nothing when it is absent)."""

    async def list_images(self, pet_id: int) -> list[PetImage]:
        """The images stored for a pet, in no particular order."""
