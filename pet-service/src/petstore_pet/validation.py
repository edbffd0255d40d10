"""The service is the authority on values and bounds: each check raises InvalidArgument."""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence

from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2
from petstore_common.contract_bounds import MAX_IDS_PER_CHECK
from petstore_common.errors import InvalidArgument
from petstore_pet.storage.base import PET_FIELDS, STATUS_NAMES, Status

MAX_NAME_CHARS = 256
MAX_PHOTO_URLS = 64
MAX_PHOTO_URL_CHARS = 2048
MAX_TAGS = 64
MAX_TAG_NAME_FILTERS = 64
IMAGE_ID_CHARS = 32
MAX_IMAGE_METADATA_CHARS = 1024
MAX_FILE_NAME_CHARS = 256


def check_id(value: int, field: str = "id") -> int:
    """Ids are 1..2^63-1; int64 already bounds the top."""
    if value <= 0:
        raise InvalidArgument(f"{field} must be positive")
    return value


def check_existence_question(pet_ids: Sequence[int]) -> set[int]:
    """FindExistingPets' ids: at least one, at most MAX_IDS_PER_CHECK, each a valid id."""
    if not pet_ids:
        raise InvalidArgument("ids must name at least one pet")
    if len(pet_ids) > MAX_IDS_PER_CHECK:
        raise InvalidArgument(f"ids may name at most {MAX_IDS_PER_CHECK} pets")
    return {check_id(pet_id, "ids") for pet_id in pet_ids}


def check_new_pet(pet: pet_pb2.Pet) -> None:
    """A pet to create: every field, and the id when the client chose one."""
    if pet.HasField("id"):
        check_id(pet.id)
    check_pet_fields(pet, PET_FIELDS)


def update_fields(pet: pet_pb2.Pet, mask: FieldMask) -> tuple[str, ...]:
    """The fields an UpdatePet writes (all when the mask is empty), each checked."""
    if not pet.HasField("id"):
        raise InvalidArgument("id is required")
    check_id(pet.id)
    fields = PET_FIELDS
    if mask.paths:
        for path in mask.paths:
            if path not in PET_FIELDS:
                raise InvalidArgument(
                    f"update_mask path {path!r} is not supported; use {', '.join(PET_FIELDS)}"
                )
        fields = tuple(field for field in PET_FIELDS if field in mask.paths)
    check_pet_fields(pet, fields)
    return fields


def check_pet_fields(pet: pet_pb2.Pet, fields: Collection[str]) -> None:
    if "name" in fields:
        if not pet.name.strip():
            raise InvalidArgument("name is required")
        check_text(pet.name, "name")
    if "status" in fields and pet.status != pet_pb2.PET_STATUS_UNSPECIFIED:
        check_status(pet.status)
    if "category" in fields and pet.HasField("category"):
        _check_label(pet.category, "category")
    if "photo_urls" in fields:
        if len(pet.photo_urls) > MAX_PHOTO_URLS:
            raise InvalidArgument(f"photoUrls must have at most {MAX_PHOTO_URLS} entries")
        for index, url in enumerate(pet.photo_urls):
            check_text(url, f"photoUrls[{index}]", max_chars=MAX_PHOTO_URL_CHARS)
    if "tags" in fields:
        if len(pet.tags) > MAX_TAGS:
            raise InvalidArgument(f"tags must have at most {MAX_TAGS} entries")
        for index, tag in enumerate(pet.tags):
            _check_label(tag, f"tags[{index}]")


def check_status(status: int) -> None:
    if status not in STATUS_NAMES:
        raise InvalidArgument(f"status {status} is not a valid pet status")


def check_text(value: str, field: str, *, max_chars: int = MAX_NAME_CHARS) -> None:
    if len(value) > max_chars:
        raise InvalidArgument(f"{field} must be at most {max_chars} characters")
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise InvalidArgument(f"{field} must not contain control characters")


def check_list_filter(statuses: Sequence[Status], tag_names: Sequence[str]) -> None:
    """ListPets needs at least one filter; each must be a real status or a tag name."""
    if not statuses and not tag_names:
        raise InvalidArgument("at least one status or tag name is required")
    for status in statuses:
        check_status(status)
    if len(tag_names) > MAX_TAG_NAME_FILTERS:
        raise InvalidArgument(f"tags must have at most {MAX_TAG_NAME_FILTERS} entries")
    for index, name in enumerate(tag_names):
        if not name:
            raise InvalidArgument(f"tags[{index}] must not be empty")
        check_text(name, f"tags[{index}]")


def check_image_details(additional_metadata: str, file_name: str) -> None:
    check_text(additional_metadata, "additionalMetadata", max_chars=MAX_IMAGE_METADATA_CHARS)
    check_text(file_name, "the file's filename", max_chars=MAX_FILE_NAME_CHARS)


def check_image_id(image_id: str) -> str:
    """Image ids are 32 lowercase hex digits (a UUID's), as UploadPetImage makes them."""
    if len(image_id) != IMAGE_ID_CHARS or not all(char in "0123456789abcdef" for char in image_id):
        raise InvalidArgument(f"imageId must be {IMAGE_ID_CHARS} lowercase hexadecimal digits")
    return image_id


def _check_label(label: pet_pb2.Category | pet_pb2.Tag, field: str) -> None:
    if label.HasField("id"):
        check_id(label.id, f"{field}.id")
    if label.HasField("name"):
        check_text(label.name, f"{field}.name")
