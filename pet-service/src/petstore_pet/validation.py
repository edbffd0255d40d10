"""The service is the authority on values and bounds: each check raises InvalidArgument.

The field rules (ids, lengths, counts, patterns, statuses) are annotations in the protos, checked
on every request by the shared server interceptor before a servicer method runs; REQUEST_RULES
words them (and the required fields refused here) for gateways before 1.1.0 with the client's
names: its renames go with that legacy text (petstore_common.request_validation). What is left
here depends on the RPC or on several fields: which fields a create or an update mask requires,
the mask's paths (a newer client's unknown ones are ignored, docs/compatibility.md), a list's
filters, and the URL an upload makes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.field_violations import FieldViolation
from petstore_common.request_validation import RequestValidator
from petstore_common.rules import field_rules
from petstore_pet.storage.base import CLASSIC_FIELDS, PET_FIELDS, READ_ONLY_FIELDS, Status

_PHOTO_URL = field_rules(pet_pb2.Pet, "photo_urls").repeated
MAX_PHOTO_URLS = _PHOTO_URL.max_items
MAX_PHOTO_URL_CHARS = _PHOTO_URL.items.string.max_len

REQUEST_RULES = RequestValidator(
    # The legacy message's names only: the gateway names fields itself (violations.py there).
    field_names={
        "petstore.pet.v1.ListPetsRequest.statuses": "status",
        "petstore.pet.v1.ListPetsRequest.tag_names": "tags",
        "petstore.pet.v1.UploadPetImageRequest.file_name": "the file's filename",
    },
)


def _required(path: str) -> InvalidArgument:
    """A field of the pet that CreatePetRequest and UpdatePetRequest both carry as `pet`."""
    return REQUEST_RULES.refused(pet_service_pb2.UpdatePetRequest.DESCRIPTOR, FieldViolation.required(path))


def check_new_pet(pet: pet_pb2.Pet) -> None:
    """A pet to create: every field is written, so the name is required."""
    check_pet_fields(pet, PET_FIELDS)


MAX_MASK_PATHS = 64
"""The most paths an update mask may name (a Pet has a handful of fields)."""
MAX_MASK_PATH_CHARS = 128
"""The longest path an update mask may name."""
_FIELD_PATH = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*")
"""A FieldMask path: lower-case field names joined by dots."""
MAX_REPORTED_PATHS = 8
"""The most ignored paths a response names (its trailing metadata stays small)."""


@dataclass(frozen=True, slots=True)
class MaskedUpdate:
    """What an UpdatePet writes, and the paths of its mask this service does not know."""

    fields: tuple[str, ...]
    ignored: tuple[str, ...] = ()


def update_fields(pet: pet_pb2.Pet, mask: FieldMask) -> MaskedUpdate:
    """The fields an UpdatePet writes, each checked: those the mask names, or CLASSIC_FIELDS
    when it names none (never a field added since 1.0.0, which such a client cannot know).

    A path naming no field of this service's Pet is a newer client's: ignored (reported), so a
    rolling update neither fails the write nor loses what the known paths say."""
    if not pet.HasField("id"):
        raise _required("pet.id")
    if not mask.paths:
        check_pet_fields(pet, CLASSIC_FIELDS)
        return MaskedUpdate(CLASSIC_FIELDS)
    if len(mask.paths) > MAX_MASK_PATHS:
        raise InvalidArgument(f"update_mask may name at most {MAX_MASK_PATHS} paths")
    ignored: list[str] = []
    for path in mask.paths:
        field = _checked_path(path).split(".", 1)[0]
        if field not in PET_FIELDS and path not in ignored:
            ignored.append(path)
    fields = tuple(field for field in PET_FIELDS if field in mask.paths)
    check_pet_fields(pet, fields)
    return MaskedUpdate(fields, tuple(ignored))


def _checked_path(path: str) -> str:
    """`path` when a mask may name it: a field path, not of a read-only field, and no part of a
    field this service knows (fields are written whole)."""
    if len(path) > MAX_MASK_PATH_CHARS or not _FIELD_PATH.fullmatch(path):
        shown = path[:MAX_MASK_PATH_CHARS]
        raise InvalidArgument(
            f"update_mask path {shown!r} is not a field path (lower-case field names joined by dots, "
            f"at most {MAX_MASK_PATH_CHARS} characters)"
        )
    field = path.split(".", 1)[0]
    if field in READ_ONLY_FIELDS:
        read_only = ", ".join(sorted(READ_ONLY_FIELDS))
        raise InvalidArgument(f"update_mask path {path!r} names a read-only field ({read_only})")
    if field in PET_FIELDS and path != field:
        raise InvalidArgument(f"update_mask path {path!r} is not supported: {field} is written whole")
    return path


def check_pet_fields(pet: pet_pb2.Pet, fields: Collection[str]) -> None:
    """Written fields the rules leave optional: a written name must be there (the proto's
    not_blank rule, checked before, refuses one made of spaces; an unwritten name may be empty)."""
    if "name" in fields and not pet.name:
        raise _required("pet.name")


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
