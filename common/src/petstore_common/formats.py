"""The contract's text formats, named. A protovalidate rule cannot be shared between fields, so
each format's pattern is written on every field that has it (protos/petstore/*/v1/*.proto); here
each is read from one field that carries it, and given the words a client is told when a value
does not match. common/common_tests/test_formats.py checks that every pattern in the protos is
one of these, with the same bounds wherever a username appears, so the copies cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2
from petstore_common.rules import field_rules


@dataclass(frozen=True, slots=True)
class TextFormat:
    name: str
    pattern: str
    """A regular expression that RE2 (the services' engine) and Python read alike."""
    phrase: str
    """What a value that does not match is told, after the field's name."""


TEXT = TextFormat(
    "text", field_rules(pet_pb2.Pet, "name").string.pattern, "must not contain control characters"
)
"""Text a person reads: no control characters (Unicode category Cc)."""
USERNAME = TextFormat(
    "username",
    field_rules(user_pb2.User, "username").string.pattern,
    "may contain only letters, digits and . _ - @",
)
PHOTO_URL = TextFormat(
    "photo URL",
    field_rules(pet_pb2.Pet, "photo_urls").repeated.items.string.pattern,
    "must be an http or https URL, or a link without a scheme, with no control characters",
)
"""A link a storefront puts in its pages: no javascript:, data: or other scheme that runs."""
EMAIL = TextFormat("email", field_rules(user_pb2.User, "email").string.pattern, "must look like an email")
IMAGE_ID = TextFormat(
    "image id",
    field_rules(pet_service_pb2.GetPetImageRequest, "image_id").string.pattern,
    "must be 32 lowercase hexadecimal digits",
)

FORMATS = (TEXT, USERNAME, PHOTO_URL, EMAIL, IMAGE_ID)
PATTERN_PHRASES: Mapping[str, str] = MappingProxyType({f.pattern: f.phrase for f in FORMATS})
"""Pattern -> the words for a value that does not match (request_validation uses them)."""
