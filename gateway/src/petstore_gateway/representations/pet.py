"""Pet, Category and Tag: wire <-> protobuf, in one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from petstore.pet.v1 import pet_pb2
from petstore_common.rules import enum_names, field_rules
from petstore_gateway.representations.fields import (
    as_object,
    get_int,
    get_object,
    get_object_list,
    get_str,
    get_str_list,
)
from petstore_gateway.representations.shapes import Document, InvalidRepresentation, ListOf, Obj, Scalar

_ID_AND_NAME = Obj({"id": Scalar.INT, "name": Scalar.STR})
PET_SHAPE = Obj(
    {
        "id": Scalar.INT,
        "category": _ID_AND_NAME,
        "name": Scalar.STR,
        "photoUrls": ListOf("photoUrl", Scalar.STR),
        "tags": ListOf("tag", _ID_AND_NAME),
        "status": Scalar.STR,
    }
)
PET = Document("Pet", PET_SHAPE)
PET_WRITTEN_FIELDS: tuple[str, ...] = tuple(
    field.name
    for field in pet_pb2.Pet.DESCRIPTOR.fields
    if field.json_name in PET_SHAPE.fields and field.name != "id"
)
"""The Pet fields a PUT /pet replaces, by their proto names: those this representation carries
(the id names the pet). Sent as UpdatePet's mask, so a pet service never takes "every field it
knows" from the gateway and a field added to the service but not here is left as stored."""
# The contract's bounds (the pet service refuses more); they also bound how long a list any
# body may hold (bodies.py).
MAX_PHOTO_URLS = field_rules(pet_pb2.Pet, "photo_urls").repeated.max_items
MAX_TAGS = field_rules(pet_pb2.Pet, "tags").repeated.max_items
PETS = Document("pets", ListOf("Pet", PET_SHAPE))

_STATUS_NAMES = enum_names(pet_pb2.PetStatus)
PET_STATUSES: Mapping[str, pet_pb2.PetStatus.ValueType] = {
    name: value for value, name in _STATUS_NAMES.items()
}
"""available, pending, sold: the PetStatus values' names, as clients write them."""


def parse_pet_status(name: str, *, what: str = "status") -> pet_pb2.PetStatus.ValueType:
    status = PET_STATUSES.get(name)
    if status is None:
        raise InvalidRepresentation(f"{what} must be one of {', '.join(PET_STATUSES)}")
    return status


def pet_from_wire(value: Any, *, require_id: bool) -> pet_pb2.Pet:
    data = as_object(value, "the pet")
    pet = pet_pb2.Pet(
        name=get_str(data, "name", required=True) or "",
        photo_urls=get_str_list(data, "photoUrls", required=True),
    )
    pet_id = get_int(data, "id", required=require_id)
    if pet_id is not None:
        pet.id = pet_id
    category = get_object(data, "category")
    if category is not None:
        pet.category.CopyFrom(_category_from_wire(category))
    for index, tag in enumerate(get_object_list(data, "tags")):
        pet.tags.append(_tag_from_wire(tag, f"tags[{index}]"))
    status = get_str(data, "status")
    if status is not None:
        pet.status = parse_pet_status(status)
    return pet


def _category_from_wire(data: Mapping[str, Any]) -> pet_pb2.Category:
    category = pet_pb2.Category()
    category_id = get_int(data, "id", path="category")
    if category_id is not None:
        category.id = category_id
    name = get_str(data, "name", path="category")
    if name is not None:
        category.name = name
    return category


def _tag_from_wire(data: Mapping[str, Any], path: str) -> pet_pb2.Tag:
    tag = pet_pb2.Tag()
    tag_id = get_int(data, "id", path=path)
    if tag_id is not None:
        tag.id = tag_id
    name = get_str(data, "name", path=path)
    if name is not None:
        tag.name = name
    return tag


def pet_to_wire(pet: pet_pb2.Pet) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    if pet.HasField("id"):
        wire["id"] = pet.id
    if pet.HasField("category"):
        wire["category"] = _id_and_name(pet.category)
    wire["name"] = pet.name
    wire["photoUrls"] = list(pet.photo_urls)
    wire["tags"] = [_id_and_name(tag) for tag in pet.tags]
    if pet.status in _STATUS_NAMES:
        wire["status"] = _STATUS_NAMES[pet.status]
    return wire


def pets_to_wire(pets: Iterable[pet_pb2.Pet]) -> list[dict[str, Any]]:
    return [pet_to_wire(pet) for pet in pets]


def _id_and_name(item: pet_pb2.Category | pet_pb2.Tag) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    if item.HasField("id"):
        wire["id"] = item.id
    if item.HasField("name"):
        wire["name"] = item.name
    return wire
