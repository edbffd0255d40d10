"""Document shapes: absent optional fields are absent keys, statuses are stored by name."""

from __future__ import annotations

from petstore.pet.v1 import pet_pb2
from petstore_pet.storage.base import PET_FIELDS, PetImage
from petstore_pet.storage.documents import (
    image_from_document,
    image_to_document,
    pet_from_document,
    pet_to_document,
)


def test_a_full_pet_becomes_a_full_document_and_back() -> None:
    pet = pet_pb2.Pet(
        id=3,
        name="Rex",
        category=pet_pb2.Category(id=1, name="Dogs"),
        photo_urls=["u"],
        tags=[pet_pb2.Tag(id=2, name="good"), pet_pb2.Tag(name="loud")],
        status=pet_pb2.PET_STATUS_SOLD,
    )

    document = pet_to_document(pet)

    assert document == {
        "_id": 3,
        "name": "Rex",
        "category": {"id": 1, "name": "Dogs"},
        "photo_urls": ["u"],
        "tags": [{"id": 2, "name": "good"}, {"name": "loud"}],
        "status": "sold",
    }
    assert pet_from_document(document) == pet


def test_every_writable_field_has_its_key() -> None:
    """A field added to Pet is writable by a mask (PET_FIELDS comes from the proto): were it no
    key of the document, an update naming it would remove it instead ($unset of an absent key)."""
    pet = pet_pb2.Pet(
        name="Rex",
        category=pet_pb2.Category(id=1),
        photo_urls=["u"],
        tags=[pet_pb2.Tag(id=2)],
        status=pet_pb2.PET_STATUS_SOLD,
    )
    assert {field.name for field, _ in pet.ListFields()} >= set(PET_FIELDS)  # a new one: set it above

    assert set(PET_FIELDS) <= set(pet_to_document(pet))


def test_absent_fields_are_absent_keys() -> None:
    document = pet_to_document(pet_pb2.Pet(name="Rex", category=pet_pb2.Category()))

    assert document == {"name": "Rex", "category": {}, "photo_urls": [], "tags": []}
    assert pet_from_document({"_id": 1, **document}).HasField("category")


def test_an_image_round_trips() -> None:
    image = PetImage("ab" * 16, 7, "image/gif", b"GIF89a...", "side", "a/b.gif")

    document = image_to_document(image)

    assert document["size"] == 9
    assert image_from_document(document) == image
