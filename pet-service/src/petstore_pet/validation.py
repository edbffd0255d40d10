"""The service is the authority on values and bounds: each check raises InvalidArgument.

The field rules (ids, lengths, counts, patterns, statuses) are annotations in the protos, checked
on every request by the shared server interceptor before a servicer method runs; REQUEST_RULES
tells it the client's names and words for them. What is left here depends on the RPC or on
several fields: which fields a create or an update mask requires, the mask's paths, a list's
filters, and the URL an upload makes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.request_validation import RequestValidator
from petstore_common.rules import field_rules
from petstore_pet.storage.base import PET_FIELDS, Status

_PHOTO_URL = field_rules(pet_pb2.Pet, "photo_urls").repeated
MAX_PHOTO_URLS = _PHOTO_URL.max_items
MAX_PHOTO_URL_CHARS = _PHOTO_URL.items.string.max_len

REQUEST_RULES = RequestValidator(
    field_names={
        "petstore.pet.v1.ListPetsRequest.statuses": "status",
        "petstore.pet.v1.ListPetsRequest.tag_names": "tags",
        "petstore.pet.v1.UploadPetImageRequest.file_name": "the file's filename",
    },
)


def check_new_pet(pet: pet_pb2.Pet) -> None:
    """A pet to create: every field is written, so the name is required."""
    check_pet_fields(pet, PET_FIELDS)


def update_fields(pet: pet_pb2.Pet, mask: FieldMask) -> tuple[str, ...]:
    """The fields an UpdatePet writes (all when the mask is empty), each checked."""
    if not pet.HasField("id"):
        raise InvalidArgument("id is required")
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
    """Written fields the rules leave optional: a written name must not be blank."""
    if "name" in fields and not pet.name.strip():
        raise InvalidArgument("name is required")


def check_list_filter(statuses: Sequence[Status], tag_names: Sequence[str]) -> None:
    """ListPets needs at least one filter."""
    if not statuses and not tag_names:
        raise InvalidArgument("at least one status or tag name is required")


def check_photo_url(url: str) -> None:
    """The URL an upload adds to its pet's photoUrls must be one photoUrls may hold (by the
    same rules, checked the same way)."""
    try:
        REQUEST_RULES.check(pet_pb2.Pet(photo_urls=[url]))
    except InvalidArgument as exc:
        raise InvalidArgument(exc.message.replace("photoUrls[0]", "the image's URL", 1)) from None
