"""The event outbox as a document's keys (storage.documents): the updates the MongoDB store
writes, each a compare-and-set on the counters `unchanged` names.

A write that removes events rewrites the array whole (FerretDB v1 ignores `$push`'s `$slice` and
a conditional `$pull`); one that adds an event pushes it while there is room. A new event moves
EVENTS_SEQ_KEY on, an acknowledgement ACKED_KEY (always
to a higher sequence: what is left after it is above it), so a write filtered on both applies to
the array exactly as it was read. ACKED_KEY is also how the change stream tells an
acknowledgement, which is no change of the pet, from a write that is (storage.change_stream).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from petstore_pet import events
from petstore_pet.storage.documents import (
    ACKED_KEY,
    DELETED_AT_KEY,
    EVENTS_KEY,
    EVENTS_SEQ_KEY,
    HAS_EVENTS_KEY,
    Document,
)

READ_BATCH = 16
"""Documents with events per round trip of ReadPetEvents: each may hold MAX_EVENTS_PER_PET
events of a pet of ~150 KB; the page stops reading when it is full."""


def unchanged(document: Document) -> Document:
    """Filter terms that match only while no event was added to `document` or acknowledged in
    it since it was read."""
    return {key: document.get(key, {"$exists": False}) for key in (EVENTS_SEQ_KEY, ACKED_KEY)}


def next_sequence(document: Document) -> int:
    return int(document.get(EVENTS_SEQ_KEY, 0)) + 1


def with_event(document: Document, event: Document) -> tuple[Document, int]:
    """The update (`$set`, and `$push` while there is room) that adds `event` (numbered
    next_sequence) to the document's events, and how many older ones it drops (events.bounded).
    Below the bound the event is pushed (the array as read is the array written to: the write
    is filtered on `unchanged`); at it, the array is rewritten without the oldest."""
    told: list[Document] = document.get(EVENTS_KEY, [])
    counters = {EVENTS_SEQ_KEY: event["sequence"], HAS_EVENTS_KEY: True}
    if len(told) < events.MAX_EVENTS_PER_PET:
        return {"$set": counters, "$push": {EVENTS_KEY: event}}, 0
    kept, dropped = events.bounded([*told, event])
    return {"$set": {EVENTS_KEY: kept, **counters}}, dropped


def moved(pet_id: int, pet: Document, now: datetime) -> Document:
    """The `pet_events` document of a deleted pet's events, none kept before under its id."""
    kept = {key: pet[key] for key in (EVENTS_KEY, EVENTS_SEQ_KEY, ACKED_KEY) if key in pet}
    return {"_id": pet_id, **kept, HAS_EVENTS_KEY: True, DELETED_AT_KEY: now}


def with_moved(kept: Document, pet: Document, now: datetime) -> tuple[Document, int] | None:
    """The update adding a deleted pet's events to those kept under its id (an earlier pet's, or
    its own from a deletion tried before): only those not there yet, numbered after them; and
    how many it drops. None when every one is there."""
    known = {event["id"] for event in kept.get(EVENTS_KEY, [])}
    sequence = int(kept.get(EVENTS_SEQ_KEY, 0))
    added: list[Document] = []
    for event in pet.get(EVENTS_KEY, []):
        if event["id"] not in known:
            sequence += 1
            added.append(event | {"sequence": sequence})
    if not added:
        return None
    told, dropped = events.bounded([*kept.get(EVENTS_KEY, []), *added])
    change = {EVENTS_KEY: told, EVENTS_SEQ_KEY: sequence, HAS_EVENTS_KEY: True, DELETED_AT_KEY: now}
    return {"$set": change}, dropped


def acknowledged(document: Document, through: int) -> Document | None:
    """The update forgetting the document's events up to `through`; None when it has none."""
    told: list[dict[str, Any]] = document.get(EVENTS_KEY, [])
    left = [event for event in told if event["sequence"] > through]
    if len(left) == len(told):
        return None
    acked = max(event["sequence"] for event in told if event["sequence"] <= through)
    if left:
        return {"$set": {EVENTS_KEY: left, ACKED_KEY: acked}}
    return {"$set": {ACKED_KEY: acked}, "$unset": {EVENTS_KEY: "", HAS_EVENTS_KEY: ""}}


def emptied(change: Document) -> bool:
    """Whether an `acknowledged` update leaves no event."""
    return EVENTS_KEY in change.get("$unset", {})
