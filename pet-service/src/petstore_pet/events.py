"""The pet's event outbox: what a reservation, sale or release tells the webhook service.

Each event is written with the change it tells of, in the same single-document write (the
stores), so neither exists without the other. A pet keeps its unacknowledged events, numbered
1, 2, ... by a per-pet counter, until ReadPetEvents has handed them out and AckPetEvents says
they are safe. A deleted pet's events move to a collection of their own first (the stores).

Bounds, each written once here: MAX_EVENTS_PER_PET per pet (beyond it the oldest is dropped and
counted: a shop that runs no webhook service keeps no more than that per pet), and
MAX_EVENTS_RESPONSE_BYTES per ReadPetEvents answer (a pet may hold ~150 KB of photo URLs and
tags, so 64 events of 1,000 pets would be far past gRPC's 4 MiB message limit). The number of
pets per answer follows the list RPCs' page size rule (petstore_common.paging). A deleted pet's
events are kept DELETED_EVENTS_RETENTION after its deletion at most (purged by DeletePet, at most
once a PURGE_INTERVAL_SECONDS): a shop that runs no webhook service does not keep them forever.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeAlias, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp
from prometheus_client import Counter

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.rules import enum_names

MAX_EVENTS_PER_PET = 64
"""Unacknowledged events a pet keeps at most; a newer one pushes the oldest out (counted)."""
MAX_EVENTS_RESPONSE_BYTES = 1 << 20
"""The most bytes of events one ReadPetEvents answer carries (at least one event always)."""
DELETED_EVENTS_RETENTION = timedelta(days=7)
"""How long a deleted pet's unacknowledged events are kept after its (last) deletion."""
PURGE_INTERVAL_SECONDS = 3600.0
"""A process purges deleted pets' expired events at most this often (by a DeletePet)."""

EventType: TypeAlias = pet_service_pb2.PetEventType.ValueType
RESERVED = pet_service_pb2.PET_EVENT_TYPE_RESERVED
SOLD = pet_service_pb2.PET_EVENT_TYPE_SOLD
RELEASED = pet_service_pb2.PET_EVENT_TYPE_RELEASED
EVENT_TYPE_NAMES: Mapping[EventType, str] = enum_names(pet_service_pb2.PetEventType)
"""How an event's type is stored ("reserved", "sold", "released": the enum values' names)."""
EVENT_TYPES_BY_NAME: Mapping[str, EventType] = {name: value for value, name in EVENT_TYPE_NAMES.items()}

DROPPED = Counter(
    "petstore_pet_events_dropped_total",
    f"Pet events dropped unacknowledged: a pet already held {MAX_EVENTS_PER_PET} (no webhook service "
    "reading them, or one far behind).",
)

PURGED = Counter(
    "petstore_pet_deleted_events_purged_total",
    "Deleted pets whose events were forgotten unacknowledged after DELETED_EVENTS_RETENTION.",
)

T = TypeVar("T")


def new_event(
    event_type: EventType, pet: pet_pb2.Pet, order_id: int, sequence: int
) -> pet_service_pb2.PetEvent:
    """The event of a change that left `pet` as it is, numbered `sequence` among its pet's events.

    The time is at millisecond precision, what MongoDB keeps of a date: both stores tell the same."""
    now = datetime.now(UTC)
    time = Timestamp()
    time.FromDatetime(now.replace(microsecond=now.microsecond // 1000 * 1000))
    return pet_service_pb2.PetEvent(
        id=secrets.token_hex(13), type=event_type, time=time, sequence=sequence, pet=pet, order_id=order_id
    )


def bounded(events: Sequence[T]) -> tuple[list[T], int]:
    """`events` (oldest first) cut to the newest MAX_EVENTS_PER_PET, and how many were dropped
    (for DROPPED, once the write that drops them has been made)."""
    dropped = max(0, len(events) - MAX_EVENTS_PER_PET)
    return list(events[dropped:]), dropped


class Page:
    """A ReadPetEvents answer being filled: whole pets' events in sequence, at most `max_pets`
    pets and `max_bytes` bytes (a pet cut short ends the page: the rest waits for the next one)."""

    def __init__(self, max_pets: int, max_bytes: int = MAX_EVENTS_RESPONSE_BYTES) -> None:
        self.events: list[pet_service_pb2.PetEvent] = []
        self.pet_ids: list[int] = []
        self._max_pets = max_pets
        self._max_bytes = max_bytes
        self._bytes_left = max_bytes
        self.full = max_pets <= 0

    def copy_empty(self) -> Page:
        """An empty page of the same bounds: what a source could contribute at most."""
        return Page(self._max_pets, self._max_bytes)

    def add(self, pet_id: int, events: Iterable[pet_service_pb2.PetEvent]) -> None:
        """Add one pet's events (in sequence) while there is room; nothing once full."""
        if self.full:
            return
        added = False
        for event in events:
            size = event.ByteSize()
            if size > self._bytes_left and self.events:
                self.full = True
                break
            self.events.append(event)
            self._bytes_left -= size
            added = True
        if added:
            self.pet_ids.append(pet_id)
        if len(self.pet_ids) >= self._max_pets:
            self.full = True
