"""The one place where pets and images turn into MongoDB documents and back.

A document keeps exactly what the message holds: optional fields the client left out
(pet/category/tag ids and names, the category itself, an unspecified status) are absent keys,
so what a client stores is what it reads back. The version is the store's to set: documents
carry it under VERSION_KEY (absent in documents written before pets had versions: version 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from petstore.pet.v1 import pet_pb2
from petstore_common.versions import VERSION_KEY
from petstore_pet.storage.base import STATUS_NAMES, PetImage, Status

Document = dict[str, Any]


_STATUS_BY_NAME: Mapping[str, Status] = {name: value for value, name in STATUS_NAMES.items()}
HOLDER_KEY = "held_by_order"
"""The id of the order that holds the pet (petstore_pet.holds); absent when none does. Not part
of the Pet message: who ordered a pet is the order service's to tell."""


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
