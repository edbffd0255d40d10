"""The contract's text formats, named. Each is written once, with its rule, in the shared proto
protos/petstore/formats/v1/formats.proto (a field of TextFormats); a protovalidate pattern cannot
be shared between fields, so every field of a format in the services' protos carries a copy, and
common/common_tests/test_formats.py holds every pattern there to one of these, with the same
bounds wherever a username appears. Read from the shared proto, not from a service's, so a change
to one service's contract releases no other service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from petstore.formats.v1.formats_pb2 import TextFormats
from petstore_common.rules import field_rules


@dataclass(frozen=True, slots=True)
class TextFormat:
    name: str
    pattern: str
    """A regular expression that RE2 (the services' engine) and Python read alike."""
    phrase: str
    """What a value that does not match is told, after the field's name."""


TEXT = TextFormat(
    "text", field_rules(TextFormats, "text").string.pattern, "must not contain control characters"
)
"""Text a person reads: no control characters (Unicode category Cc)."""
USERNAME = TextFormat(
    "username",
    field_rules(TextFormats, "username").string.pattern,
    "may contain only letters, digits and . _ - @",
)
PHOTO_URL = TextFormat(
    "photo URL",
    field_rules(TextFormats, "photo_url").string.pattern,
    "must be an http or https URL, or a link without a scheme, with no control characters",
)
"""A link a storefront puts in its pages: no javascript:, data: or other scheme that runs."""
EMAIL = TextFormat("email", field_rules(TextFormats, "email").string.pattern, "must look like an email")
IMAGE_ID = TextFormat(
    "image id",
    field_rules(TextFormats, "image_id").string.pattern,
    "must be 32 lowercase hexadecimal digits",
)

FORMATS = (TEXT, USERNAME, PHOTO_URL, EMAIL, IMAGE_ID)
PATTERN_PHRASES: Mapping[str, str] = MappingProxyType({f.pattern: f.phrase for f in FORMATS})
"""Pattern -> the words for a value that does not match (request_validation uses them)."""
