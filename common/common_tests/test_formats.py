"""Every pattern in the services' protos is one of the named formats of the shared
formats.proto, and a username is bounded alike wherever it appears: a format's copies on many
fields cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator

from buf.validate.validate_pb2 import StringRules
from google.protobuf.descriptor import Descriptor, FileDescriptor

from petstore.auth.v1 import caller_pb2
from petstore.formats.v1.formats_pb2 import TextFormats
from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore.versioning.v1 import precondition_pb2
from petstore_common.formats import FORMATS, PATTERN_PHRASES, PHOTO_URL, USERNAME
from petstore_common.rules import field_rules

FILES: tuple[FileDescriptor, ...] = tuple(
    module.DESCRIPTOR
    for module in (
        caller_pb2,
        order_pb2,
        order_service_pb2,
        pet_pb2,
        pet_service_pb2,
        user_pb2,
        user_service_pb2,
        precondition_pb2,
    )
)


def _messages(message: Descriptor) -> Iterator[Descriptor]:
    yield message
    for nested in message.nested_types:
        yield from _messages(nested)


def string_fields() -> Iterator[tuple[str, StringRules]]:
    """(field's full name, its string rules) of every string field, or repeated one's items."""
    for file in FILES:
        for top in file.message_types_by_name.values():
            for message in _messages(top):
                for field in message.fields:
                    rules = field_rules(message, field.name)
                    if rules.HasField("string"):
                        yield field.full_name, rules.string
                    elif rules.HasField("repeated") and rules.repeated.items.HasField("string"):
                        yield f"{field.full_name}[]", rules.repeated.items.string


def test_every_file_of_the_protos_is_walked() -> None:
    proto_files = {file.name for file in FILES}
    assert {"petstore/pet/v1/pet.proto", "petstore/user/v1/user_service.proto"} <= proto_files
    assert len([name for name, _ in string_fields()]) > 20


def test_every_pattern_is_a_named_format() -> None:
    known = {f.pattern for f in FORMATS}
    strays = {
        name: rules.pattern for name, rules in string_fields() if rules.pattern and rules.pattern not in known
    }
    assert strays == {}


def test_each_format_is_used_and_worded() -> None:
    used = {rules.pattern for _, rules in string_fields()}
    assert {f.pattern for f in FORMATS} <= used
    assert len(PATTERN_PHRASES) == len(FORMATS)  # no two formats share a pattern


def test_a_username_is_bounded_alike_wherever_it_appears() -> None:
    canonical = field_rules(TextFormats, "username").string
    usernames = {name: rules for name, rules in string_fields() if rules.pattern == USERNAME.pattern}
    assert len(usernames) >= 4
    differing = {
        name: (rules.min_len, rules.max_len)
        for name, rules in usernames.items()
        if (rules.min_len, rules.max_len) != (canonical.min_len, canonical.max_len)
    }
    assert differing == {}


def test_a_photo_url_is_http_https_or_without_a_scheme() -> None:
    import re

    pattern = re.compile(PHOTO_URL.pattern)
    taken = ["https://cdn.example/p/1.jpg", "HTTP://x", "string", "", "/v2/pet/1/images/a", "a/b:c", "?x=1"]
    refused = [
        "javascript:alert(1)",
        " javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:x",
        "file:///etc/passwd",
        "https:evil",
        "http://a\x00b",
    ]
    assert [url for url in taken if not pattern.fullmatch(url)] == []
    assert [url for url in refused if pattern.fullmatch(url)] == []
