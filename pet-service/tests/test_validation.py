"""Values and bounds the service enforces, with the messages clients see."""

from __future__ import annotations

import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2
from petstore_common.errors import InvalidArgument
from petstore_pet import validation
from petstore_pet.storage.base import PET_FIELDS


def test_a_full_pet_at_every_bound_is_valid() -> None:
    validation.check_new_pet(
        pet_pb2.Pet(
            id=2**63 - 1,
            name="n" * 256,
            category=pet_pb2.Category(id=1, name="c" * 256),
            photo_urls=["u" * 2048] * 64,
            tags=[pet_pb2.Tag(id=1, name="t" * 256)] * 64,
            status=pet_pb2.PET_STATUS_SOLD,
        )
    )


def test_a_pet_with_only_a_name_is_valid() -> None:
    validation.check_new_pet(pet_pb2.Pet(name="Rex"))


@pytest.mark.parametrize(
    ("pet", "message"),
    [
        (pet_pb2.Pet(), "name is required"),
        (pet_pb2.Pet(name="   "), "name is required"),
        (pet_pb2.Pet(name="n" * 257), "name must be at most 256 characters"),
        (pet_pb2.Pet(name="Re\x00x"), "name must not contain control characters"),
        (pet_pb2.Pet(name="Re\nx"), "name must not contain control characters"),
        (pet_pb2.Pet(name="Rex", id=0), "id must be positive"),
        (pet_pb2.Pet(name="Rex", id=-5), "id must be positive"),
        (pet_pb2.Pet(name="Rex", status=9), "status 9 is not a valid pet status"),  # type: ignore[arg-type]
        (pet_pb2.Pet(name="Rex", category=pet_pb2.Category(id=0)), "category.id must be positive"),
        (
            pet_pb2.Pet(name="Rex", category=pet_pb2.Category(name="c" * 257)),
            "category.name must be at most 256 characters",
        ),
        (pet_pb2.Pet(name="Rex", photo_urls=["u"] * 65), "photoUrls must have at most 64 entries"),
        (
            pet_pb2.Pet(name="Rex", photo_urls=["ok", "u" * 2049]),
            "photoUrls[1] must be at most 2048 characters",
        ),
        (pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(name="t")] * 65), "tags must have at most 64 entries"),
        (pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(), pet_pb2.Tag(id=-1)]), "tags[1].id must be positive"),
        (
            pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(name="bad\x7f")]),
            "tags[0].name must not contain control characters",
        ),
    ],
)
def test_invalid_pets_are_rejected_with_a_clear_message(pet: pet_pb2.Pet, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validation.check_new_pet(pet)
    assert caught.value.message == message


def test_an_empty_mask_writes_every_field() -> None:
    assert validation.update_fields(pet_pb2.Pet(id=1, name="Rex"), FieldMask()) == PET_FIELDS


def test_a_mask_names_the_fields_written_and_only_those_are_checked() -> None:
    fields = validation.update_fields(
        pet_pb2.Pet(id=1, status=pet_pb2.PET_STATUS_PENDING), FieldMask(paths=["status", "tags"])
    )

    assert fields == ("status", "tags")


@pytest.mark.parametrize(
    ("pet", "paths", "message"),
    [
        (pet_pb2.Pet(name="Rex"), [], "id is required"),
        (pet_pb2.Pet(id=0, name="Rex"), [], "id must be positive"),
        (pet_pb2.Pet(id=1), [], "name is required"),
        (pet_pb2.Pet(id=1), ["name"], "name is required"),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["name", "owner"],
            "update_mask path 'owner' is not supported; use name, status, category, photo_urls, tags",
        ),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["id"],
            "update_mask path 'id' is not supported; use name, status, category, photo_urls, tags",
        ),
    ],
)
def test_invalid_updates_are_rejected(pet: pet_pb2.Pet, paths: list[str], message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validation.update_fields(pet, FieldMask(paths=paths))
    assert caught.value.message == message


def test_a_list_filter_needs_a_status_or_a_tag() -> None:
    with pytest.raises(InvalidArgument, match="at least one status or tag name is required"):
        validation.check_list_filter([], [])
    validation.check_list_filter([pet_pb2.PET_STATUS_SOLD], [])
    validation.check_list_filter([], ["friendly"])


@pytest.mark.parametrize(
    ("statuses", "tag_names", "message"),
    [
        ([pet_pb2.PET_STATUS_UNSPECIFIED], [], "status 0 is not a valid pet status"),
        ([], [""], "tags[0] must not be empty"),
        ([], ["t" * 257], "tags[0] must be at most 256 characters"),
        ([], ["t"] * 65, "tags must have at most 64 entries"),
    ],
)
def test_invalid_list_filters_are_rejected(
    statuses: list[pet_pb2.PetStatus.ValueType], tag_names: list[str], message: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validation.check_list_filter(statuses, tag_names)
    assert caught.value.message == message


def test_image_details_are_bounded() -> None:
    validation.check_image_details("m" * 1024, "f" * 256)
    with pytest.raises(InvalidArgument, match="additionalMetadata must be at most 1024 characters"):
        validation.check_image_details("m" * 1025, "")
    with pytest.raises(InvalidArgument, match="additionalMetadata must not contain control characters"):
        validation.check_image_details("front\x00view", "")
    with pytest.raises(InvalidArgument, match="the file's filename must be at most 256 characters"):
        validation.check_image_details("", "f" * 257)
    with pytest.raises(InvalidArgument, match="the file's filename must not contain control characters"):
        validation.check_image_details("", "a\x00.png")


@pytest.mark.parametrize(("value", "field"), [(0, "id"), (-1, "pet_id")])
def test_ids_must_be_positive(value: int, field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"^{field} must be positive$"):
        validation.check_id(value, field)
    assert validation.check_id(1, field) == 1


@pytest.mark.parametrize("image_id", ["a" * 32, "0123456789abcdef" * 2])
def test_image_ids_are_32_lowercase_hex_digits(image_id: str) -> None:
    assert validation.check_image_id(image_id) == image_id


@pytest.mark.parametrize("image_id", ["", "a" * 31, "a" * 33, "A" * 32, "g" * 32, "../" + "a" * 29])
def test_other_image_ids_are_invalid(image_id: str) -> None:
    with pytest.raises(InvalidArgument, match="imageId must be 32 lowercase hexadecimal digits"):
        validation.check_image_id(image_id)
