"""Values and bounds the service enforces, with the messages clients see: the protos' field
rules (checked on every request by the server interceptor, with REQUEST_RULES' names and words)
and what validation.py adds."""

from __future__ import annotations

import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.formats import PHOTO_URL
from petstore_pet import validation
from petstore_pet.storage.base import CLASSIC_FIELDS, PET_FIELDS, READ_ONLY_FIELDS


def refusal_of_new(pet: pet_pb2.Pet) -> str | None:
    """What CreatePet says of `pet`: the interceptor's check, then the servicer's."""
    try:
        validation.REQUEST_RULES.check(pet_service_pb2.CreatePetRequest(pet=pet))
        validation.check_new_pet(pet)
    except InvalidArgument as exc:
        return exc.message
    return None


def refusal(request: object) -> str | None:
    return validation.REQUEST_RULES.refusal(request)


def test_a_full_pet_at_every_bound_is_valid() -> None:
    pet = pet_pb2.Pet(
        id=2**63 - 1,
        name="n" * 256,
        category=pet_pb2.Category(id=1, name="c" * 256),
        photo_urls=["u" * 2048] * 64,
        tags=[pet_pb2.Tag(id=1, name="t" * 256)] * 64,
        status=pet_pb2.PET_STATUS_SOLD,
    )
    assert refusal_of_new(pet) is None


@pytest.mark.parametrize("name", ["Rex", " Rex ", "é 😀", "a\u00a0b"])
def test_a_pet_with_only_a_name_is_valid(name: str) -> None:
    assert refusal_of_new(pet_pb2.Pet(name=name)) is None


@pytest.mark.parametrize(
    ("pet", "message"),
    [
        (pet_pb2.Pet(), "name is required"),
        (pet_pb2.Pet(name="   "), "name: must not be blank"),
        (pet_pb2.Pet(name="\u3000\u00a0"), "name: must not be blank"),  # Unicode spaces too
        (pet_pb2.Pet(name="\ufeff"), "name: must not be blank"),  # as the published pattern says
        (pet_pb2.Pet(name="n" * 257), "name: must be at most 256 characters"),
        (pet_pb2.Pet(name="Re\x00x"), "name: must not contain control characters"),
        (pet_pb2.Pet(name="Re\nx"), "name: must not contain control characters"),
        (pet_pb2.Pet(name="Re\x85x"), "name: must not contain control characters"),  # C1 controls too
        (pet_pb2.Pet(name="Rex", id=0), "id: must be positive"),
        (pet_pb2.Pet(name="Rex", id=-5), "id: must be positive"),
        (pet_pb2.Pet(name="Rex", status=9), "status: must be one of available, pending, sold"),  # type: ignore[arg-type]
        (pet_pb2.Pet(name="Rex", category=pet_pb2.Category(id=0)), "category.id: must be positive"),
        (
            pet_pb2.Pet(name="Rex", category=pet_pb2.Category(name="c" * 257)),
            "category.name: must be at most 256 characters",
        ),
        (pet_pb2.Pet(name="Rex", photo_urls=["u"] * 65), "photoUrls: must have at most 64 entries"),
        (
            pet_pb2.Pet(name="Rex", photo_urls=["ok", "u" * 2049]),
            "photoUrls[1]: must be at most 2048 characters",
        ),
        (
            pet_pb2.Pet(name="Rex", photo_urls=["https://x", "javascript:alert(1)"]),
            f"photoUrls[1]: {PHOTO_URL.phrase}",
        ),
        (
            pet_pb2.Pet(name="Rex", photo_urls=["data:text/html,<script>alert(1)</script>"]),
            f"photoUrls[0]: {PHOTO_URL.phrase}",
        ),
        (pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(name="t")] * 65), "tags: must have at most 64 entries"),
        (pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(), pet_pb2.Tag(id=-1)]), "tags[1].id: must be positive"),
        (
            pet_pb2.Pet(name="Rex", tags=[pet_pb2.Tag(name="bad\x7f")]),
            "tags[0].name: must not contain control characters",
        ),
    ],
)
def test_invalid_pets_are_rejected_with_a_clear_message(pet: pet_pb2.Pet, message: str) -> None:
    assert refusal_of_new(pet) == message


def test_the_rules_hold_for_every_field_an_update_carries_and_requirements_follow_the_mask() -> None:
    """A field the mask leaves out may be empty, never out of bounds."""
    partial = pet_pb2.Pet(id=1, status=pet_pb2.PET_STATUS_PENDING)
    assert (
        refusal(pet_service_pb2.UpdatePetRequest(pet=partial, update_mask=FieldMask(paths=["status"])))
        is None
    )
    partial.name = "n" * 257
    assert refusal(pet_service_pb2.UpdatePetRequest(pet=partial)) == "name: must be at most 256 characters"


def test_an_empty_mask_writes_the_fields_of_the_classic_pet_only() -> None:
    update = validation.update_fields(pet_pb2.Pet(id=1, name="Rex"), FieldMask())

    assert update == validation.MaskedUpdate(CLASSIC_FIELDS)
    assert set(CLASSIC_FIELDS) == {"name", "status", "category", "photo_urls", "tags"}


def test_the_classic_fields_are_writable_and_no_read_only_field_is() -> None:
    assert set(CLASSIC_FIELDS) <= set(PET_FIELDS)
    assert not READ_ONLY_FIELDS & set(PET_FIELDS)
    assert {field.name for field in pet_pb2.Pet.DESCRIPTOR.fields} == set(PET_FIELDS) | READ_ONLY_FIELDS


def test_a_mask_names_the_fields_written_and_only_those_are_checked() -> None:
    update = validation.update_fields(
        pet_pb2.Pet(id=1, status=pet_pb2.PET_STATUS_PENDING), FieldMask(paths=["status", "tags"])
    )

    assert update == validation.MaskedUpdate(("tags", "status"))


def test_paths_naming_no_field_this_release_knows_are_ignored_and_reported_once() -> None:
    update = validation.update_fields(
        pet_pb2.Pet(id=1, name="Rex"), FieldMask(paths=["nickname", "name", "nickname", "owner.first"])
    )

    assert update == validation.MaskedUpdate(("name",), ignored=("nickname", "owner.first"))


def test_a_mask_of_unknown_paths_only_writes_nothing_and_requires_nothing() -> None:
    update = validation.update_fields(pet_pb2.Pet(id=1), FieldMask(paths=["nickname"]))

    assert update == validation.MaskedUpdate((), ignored=("nickname",))


TOO_LONG_PATH = "a" * (validation.MAX_MASK_PATH_CHARS + 1)


@pytest.mark.parametrize(
    ("pet", "paths", "message"),
    [
        (pet_pb2.Pet(name="Rex"), [], "id is required"),
        (pet_pb2.Pet(id=0, name="Rex"), [], "id: must be positive"),
        (pet_pb2.Pet(id=1), [], "name is required"),
        (pet_pb2.Pet(id=1), ["name"], "name is required"),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["name", "id"],
            "update_mask path 'id' names a read-only field (id, version)",
        ),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["version"],
            "update_mask path 'version' names a read-only field (id, version)",
        ),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["category.name"],
            "update_mask path 'category.name' is not supported: category is written whole",
        ),
        *(
            (
                pet_pb2.Pet(id=1, name="Rex"),
                ["name", path],
                f"update_mask path {path[: validation.MAX_MASK_PATH_CHARS]!r} is not a field path "
                "(lower-case field names joined by dots, at most 128 characters)",
            )
            for path in (
                "",
                "Name",
                "photoUrls",
                "name.",
                ".name",
                "name..x",
                "na me",
                "n\x00",
                TOO_LONG_PATH,
            )
        ),
        (
            pet_pb2.Pet(id=1, name="Rex"),
            ["nickname"] * (validation.MAX_MASK_PATHS + 1),
            "update_mask may name at most 64 paths",
        ),
    ],
)
def test_invalid_updates_are_rejected(pet: pet_pb2.Pet, paths: list[str], message: str) -> None:
    mask = FieldMask(paths=paths)

    def update() -> None:
        validation.REQUEST_RULES.check(pet_service_pb2.UpdatePetRequest(pet=pet, update_mask=mask))
        validation.update_fields(pet, mask)

    with pytest.raises(InvalidArgument) as caught:
        update()
    assert caught.value.message == message


def test_a_list_filter_needs_a_status_or_a_tag() -> None:
    with pytest.raises(InvalidArgument, match="at least one status or tag name is required"):
        validation.check_list_filter([], [])
    validation.check_list_filter([pet_pb2.PET_STATUS_SOLD], [])
    validation.check_list_filter([], ["friendly"])


@pytest.mark.parametrize(
    ("statuses", "tag_names", "message"),
    [
        ([pet_pb2.PET_STATUS_UNSPECIFIED], [], "status[0]: must be one of available, pending, sold"),
        ([pet_pb2.PET_STATUS_SOLD, 7], [], "status[1]: must be one of available, pending, sold"),
        ([], [""], "tags[0]: must not be empty"),
        ([], ["t" * 257], "tags[0]: must be at most 256 characters"),
        ([], ["a\tb"], "tags[0]: must not contain control characters"),
        ([], ["t"] * 65, "tags: must have at most 64 entries"),
    ],
)
def test_invalid_list_filters_are_rejected(
    statuses: list[pet_pb2.PetStatus.ValueType], tag_names: list[str], message: str
) -> None:
    request = pet_service_pb2.ListPetsRequest(statuses=statuses, tag_names=tag_names)
    assert refusal(request) == message


def test_list_filters_at_their_bounds_are_valid() -> None:
    statuses = [pet_pb2.PET_STATUS_AVAILABLE, pet_pb2.PET_STATUS_PENDING, pet_pb2.PET_STATUS_SOLD]
    assert refusal(pet_service_pb2.ListPetsRequest(statuses=statuses, tag_names=["t" * 256] * 64)) is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pet_id": 0}, "petId: must be positive"),
        ({"additional_metadata": "m" * 1025}, "additionalMetadata: must be at most 1024 characters"),
        ({"additional_metadata": "front\x00view"}, "additionalMetadata: must not contain control characters"),
        ({"file_name": "f" * 257}, "the file's filename: must be at most 256 characters"),
        ({"file_name": "a\x00.png"}, "the file's filename: must not contain control characters"),
    ],
)
def test_image_details_are_bounded(changes: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"pet_id": 1, "additional_metadata": "m" * 1024, "file_name": "f" * 256}
    assert refusal(pet_service_pb2.UploadPetImageRequest(**fields)) is None  # type: ignore[arg-type]
    fields.update(changes)
    assert refusal(pet_service_pb2.UploadPetImageRequest(**fields)) == message  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pet_service_pb2.GetPetRequest(id=0), "id: must be positive"),
        (pet_service_pb2.DeletePetRequest(id=-1), "id: must be positive"),
        (pet_service_pb2.GetPetImageRequest(pet_id=0, image_id="a" * 32), "petId: must be positive"),
    ],
)
def test_ids_are_positive(request_: object, message: str) -> None:
    assert refusal(request_) == message


@pytest.mark.parametrize("image_id", ["a" * 32, "0123456789abcdef" * 2])
def test_image_ids_are_32_lowercase_hex_digits(image_id: str) -> None:
    assert refusal(pet_service_pb2.GetPetImageRequest(pet_id=1, image_id=image_id)) is None


@pytest.mark.parametrize(
    "image_id", ["", "a" * 31, "a" * 33, "A" * 32, "g" * 32, "../" + "a" * 29, "a" * 32 + "\n"]
)
def test_other_image_ids_are_invalid(image_id: str) -> None:
    request = pet_service_pb2.GetPetImageRequest(pet_id=1, image_id=image_id)
    assert refusal(request) == "imageId: must be 32 lowercase hexadecimal digits"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://shop.example/" + "p" * 2048, "the image's URL: must be at most 2048 characters"),
        (
            "https://shop.example/\x00",
            f"the image's URL: {PHOTO_URL.phrase}",
        ),
    ],
)
def test_the_url_an_upload_makes_is_one_photo_urls_may_hold(url: str, message: str) -> None:
    validation.check_photo_url("https://shop.example/v2/pet/1/images/" + "a" * 32)
    with pytest.raises(InvalidArgument) as caught:
        validation.check_photo_url(url)
    assert caught.value.message == message
