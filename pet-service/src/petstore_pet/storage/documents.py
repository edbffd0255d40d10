"""The one place where pets and images turn into MongoDB documents and back.

A document keeps exactly what the message holds: optional fields the client left out
(pet/category/tag ids and names, the category itself, an unspecified status) are absent keys,
so what a client stores is what it reads back. The version is the store's to set: documents
carry it under VERSION_KEY (absent in documents written before pets had versions: version 0).

A pet document also carries its event outbox (petstore_pet.events) under keys no Pet field
has, so the conversion to a Pet never sees them and a release that knows no events (1.0.0)
ignores them: EVENTS_KEY (the unacknowledged events, oldest first), EVENTS_SEQ_KEY (the last
sequence given), HAS_EVENTS_KEY (true while any is kept: an equality FerretDB filters in
PostgreSQL) and ACKED_KEY (the last sequence acknowledged). A deleted pet's events move to a
document of the same shape in their own collection.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.versions import VERSION_KEY
from petstore_pet.events import EVENT_TYPE_NAMES, EVENT_TYPES_BY_NAME
from petstore_pet.storage.base import STATUS_NAMES, PetImage, Status

Document = dict[str, Any]


_STATUS_BY_NAME: Mapping[str, Status] = {name: value for value, name in STATUS_NAMES.items()}
HOLDER_KEY = "held_by_order"
"""The id of the order that holds the pet (petstore_pet.holds); absent when none does. Not part
of the Pet message: who ordered a pet is the order service's to tell."""
EVENTS_KEY = "events"
EVENTS_SEQ_KEY = "events_seq"
HAS_EVENTS_KEY = "has_events"
ACKED_KEY = "events_acked_through"
OUTBOX_KEYS = (EVENTS_KEY, EVENTS_SEQ_KEY, HAS_EVENTS_KEY, ACKED_KEY)
DELETED_AT_KEY = "deleted_at"
"""When a deleted pet's events were last moved aside (its `pet_events` document only)."""


def status_name(status: Status) -> str | None:
    """The stored name of a status; None for PET_STATUS_UNSPECIFIED (stored as absent)."""
    return STATUS_NAMES.get(status)


def pet_to_document(pet: pet_pb2.Pet) -> Document:
    document: Document = {
        "name": pet.name,
        "photo_urls": list(pet.photo_urls),
        "tags": [_labelled_to_document(tag) for tag in pet.tags],
    }
    if pet.HasField("id"):
        document["_id"] = pet.id
    if pet.HasField("category"):
        document["category"] = _labelled_to_document(pet.category)
    name = status_name(pet.status)
    if name is not None:
        document["status"] = name
    return document


def pet_from_document(document: Mapping[str, Any]) -> pet_pb2.Pet:
    pet = pet_pb2.Pet(
        id=document["_id"],
        name=document.get("name", ""),
        photo_urls=document.get("photo_urls", []),
        tags=[pet_pb2.Tag(**_labelled_from_document(tag)) for tag in document.get("tags", [])],
        status=_STATUS_BY_NAME.get(document.get("status", ""), pet_pb2.PET_STATUS_UNSPECIFIED),
        version=document.get(VERSION_KEY, 0),
    )
    category = document.get("category")
    if category is not None:
        pet.category.CopyFrom(pet_pb2.Category(**_labelled_from_document(category)))
    return pet


def hold_of(document: Mapping[str, Any]) -> tuple[Status, int | None]:
    """The stored pet's status and the order that holds it, for petstore_pet.holds."""
    holder = document.get(HOLDER_KEY)
    status = _STATUS_BY_NAME.get(document.get("status", ""), pet_pb2.PET_STATUS_UNSPECIFIED)
    return status, None if holder is None else int(holder)


def event_to_document(event: pet_service_pb2.PetEvent) -> Document:
    """An event as its outbox keeps it; the pet as a pet document (with its version)."""
    return {
        "id": event.id,
        "type": EVENT_TYPE_NAMES[event.type],
        "time": event.time.ToDatetime(tzinfo=UTC),
        "sequence": event.sequence,
        "pet": pet_to_document(event.pet) | {VERSION_KEY: event.pet.version},
        "order_id": event.order_id,
    }


def event_from_document(document: Mapping[str, Any]) -> pet_service_pb2.PetEvent:
    time = Timestamp()
    time.FromDatetime(document["time"])
    return pet_service_pb2.PetEvent(
        id=document["id"],
        type=EVENT_TYPES_BY_NAME[document["type"]],
        time=time,
        sequence=document["sequence"],
        pet=pet_from_document(document["pet"]),
        order_id=document["order_id"],
    )


def image_to_document(image: PetImage) -> Document:
    return {
        "_id": image.image_id,
        "pet_id": image.pet_id,
        "content_type": image.content_type,
        "size": image.size,
        "data": image.data,
        "additional_metadata": image.additional_metadata,
        "file_name": image.file_name,
    }


def image_from_document(document: Mapping[str, Any]) -> PetImage:
    return PetImage(
        image_id=document["_id"],
        pet_id=document["pet_id"],
        content_type=document["content_type"],
        data=bytes(document["data"]),
        additional_metadata=document.get("additional_metadata", ""),
        file_name=document.get("file_name", ""),
    )


def _labelled_to_document(item: pet_pb2.Category | pet_pb2.Tag) -> Document:
    document: Document = {}
    if item.HasField("id"):
        document["id"] = item.id
    if item.HasField("name"):
        document["name"] = item.name
    return document


def _labelled_from_document(document: Mapping[str, Any]) -> dict[str, Any]:
    return {key: document[key] for key in ("id", "name") if key in document}
