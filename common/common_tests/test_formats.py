"""The shared text formats are protovalidate predefined rules (protos/petstore/formats/v1/
formats.proto), written once; these tests hold what the rest relies on: every string a request
carries is of a format or says why not, no field writes a pattern of its own, every rule is
worded, each format's pattern reads alike in the services' engine (RE2) and in Python, and the
not-blank rule refuses exactly what the published pattern refuses (ECMAScript's spaces)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator

import protovalidate
import pytest
from buf.validate.validate_pb2 import StringRules
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from petstore.formats.v1 import formats_pb2
from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.formats import (
    EMAIL,
    FORMATS,
    IMAGE_ID,
    NOT_BLANK,
    PHOTO_URL,
    RULE_PHRASES,
    TEXT,
    USERNAME,
    TextFormat,
    format_of,
    published_pattern,
)
from petstore_common.rules import field_rules

SERVICES = (order_service_pb2, pet_service_pb2, user_service_pb2)

NO_FORMAT = {
    "petstore.auth.v1.Caller.staff_key_id": "a key id the gateway signs with, never a client's text",
    "petstore.pet.v1.CreatePetRequest.idempotency_key": "an opaque key: compared, never shown",
    "petstore.user.v1.CreateUserRequest.idempotency_key": "an opaque key: compared, never shown",
    "petstore.user.v1.CreateUsersRequest.idempotency_key": "an opaque key: compared, never shown",
    "petstore.order.v1.CreateOrderRequest.idempotency_key": "an opaque key: compared, never shown",
    "petstore.pet.v1.ListPetsRequest.page_token": "the service's own token, checked when read",
    "petstore.order.v1.ListOrdersRequest.page_token": "the service's own token, checked when read",
    "petstore.pet.v1.WatchPetsRequest.resume_epoch": "the service's own epoch, compared",
    "petstore.pet.v1.UploadPetImageRequest.content_type": "the gateway's reading of the upload",
    "petstore.pet.v1.UploadPetImageRequest.images_base_url": "the gateway's own public URL",
    "petstore.user.v1.CreateUserRequest.password": "any characters a person types: hashed, never shown",
    "petstore.user.v1.UpdateUserRequest.password": "any characters a person types: hashed, never shown",
    "petstore.user.v1.LoginRequest.password": "any characters a person types: hashed, never shown",
    "petstore.user.v1.UpdateUserRequest.session_id": "the service's own session id, compared",
    "petstore.user.v1.LogoutRequest.session_token": "the service's own token, compared",
    "petstore.user.v1.CheckSessionRequest.session_id": "the service's own session id, compared",
    "petstore.user.v1.LoginRequest.client_address": "the gateway's reading of the peer",
}
"""String fields of requests with no text format, and why."""


def _string_rules(message: Descriptor, field: FieldDescriptor) -> StringRules:
    rules = field_rules(message, field.name)
    return rules.repeated.items.string if rules.HasField("repeated") else rules.string


def request_strings() -> Iterator[tuple[str, StringRules]]:
    """(full name, string rules) of every string field a request of any service carries, in the
    request or in a message of ours inside it, each once."""
    seen: set[str] = set()

    def walk(message: Descriptor) -> Iterator[tuple[str, StringRules]]:
        if message.full_name in seen or not message.full_name.startswith("petstore."):
            return
        seen.add(message.full_name)
        for field in message.fields:
            if field.type == FieldDescriptor.TYPE_STRING:
                yield field.full_name, _string_rules(message, field)
            elif field.message_type is not None:
                yield from walk(field.message_type)

    for module in SERVICES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                yield from walk(method.input_type)


def test_every_string_of_a_request_is_of_a_format_or_says_why_not() -> None:
    strings = dict(request_strings())
    assert len(strings) > 30  # the walk reaches every service's requests
    unformatted = {name for name, rules in strings.items() if format_of(rules) is None}
    assert unformatted == set(NO_FORMAT)


def test_no_field_writes_a_pattern_of_its_own() -> None:
    """A format is named, never copied: a pattern rule on a field would be a second source."""
    assert {name: rules.pattern for name, rules in request_strings() if rules.pattern} == {}


def test_every_rule_of_the_shared_proto_is_named_and_worded() -> None:
    declared = {extension.full_name for extension in formats_pb2.DESCRIPTOR.extensions_by_name.values()}
    named = {f.rule.extension.full_name for f in FORMATS} | {NOT_BLANK.extension.full_name}
    assert named == declared
    # A rule's id is its extension's full name: none can clash with protovalidate's own ids.
    assert {f.rule.id for f in FORMATS} | {NOT_BLANK.id} == declared
    assert set(RULE_PHRASES) == declared
    assert all(phrase.startswith(("must ", "may ")) for phrase in RULE_PHRASES.values())


def test_a_username_is_bounded_alike_wherever_it_appears() -> None:
    usernames = {name: rules.max_len for name, rules in request_strings() if USERNAME.rule.on(rules)}
    assert len(usernames) >= 5
    assert set(usernames.values()) == {field_rules(user_pb2.User, "username").string.max_len}


_ENGINE = protovalidate.Validator()

EXAMPLES: list[tuple[TextFormat, Callable[[str], Message], list[str], list[str]]] = [
    # (format, a message with the value in a field of that format, values taken, values refused)
    (
        TEXT,
        lambda value: pet_pb2.Category(name=value),
        ["", "Rex", "é 😀", "a\u00a0b"],
        ["a\x00b", "tab\there", "\x85", "\x7f"],
    ),
    (
        USERNAME,
        lambda value: user_service_pb2.GetUserRequest(username=value),
        ["ann", "a.b_c-d@e", "A9"],
        ["an n", "änn", "a/b", "a\nb"],  # an empty one is told it is required instead
    ),
    (
        PHOTO_URL,
        lambda value: pet_pb2.Pet(photo_urls=[value]),
        ["https://cdn.example/p/1.jpg", "HTTP://x", "string", "", "/v2/pet/1/images/a", "a/b:c", "?x=1"],
        [
            "javascript:alert(1)",
            " javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "file:///etc/passwd",
            "https:evil",
            "http://a\x00b",
        ],
    ),
    (
        EMAIL,
        lambda value: user_pb2.User(email=value),
        ["a@b", "é@ü.example", "a.b+c@d.e"],
        ["ann", "a@", "a b@c", "a\u3000@b", "a@@b"],
    ),
    (
        IMAGE_ID,
        lambda value: pet_service_pb2.GetPetImageRequest(image_id=value),
        ["0" * 32, "0123456789abcdef" * 2],
        ["A" * 32, "0" * 31, ""],
    ),
]


def _refused_by_engine(text_format: TextFormat, message: Message) -> bool:
    """Whether the services' engine refuses the message by the format's own rule (the field's
    other rules, such as lengths or presence, aside)."""
    return any(v.proto.rule_id == text_format.rule.id for v in _ENGINE.collect_violations(message))


@pytest.mark.parametrize(
    ("text_format", "make", "taken", "refused"), EXAMPLES, ids=[e[0].name for e in EXAMPLES]
)
def test_each_format_reads_alike_in_the_engine_and_in_python(
    text_format: TextFormat, make: Callable[[str], Message], taken: list[str], refused: list[str]
) -> None:
    pattern = re.compile(text_format.pattern)
    values = taken + refused
    assert [value for value in values if _refused_by_engine(text_format, make(value))] == refused
    assert [value for value in values if not pattern.fullmatch(value)] == refused


def test_every_format_has_examples() -> None:
    assert {e[0] for e in EXAMPLES} == set(FORMATS)


_ECMASCRIPT_SPACES = "\t\n\v\f\r\u2028\u2029\ufeff" + "".join(
    c for c in map(chr, range(0x10000)) if unicodedata.category(c) == "Zs"
)
"""ECMAScript's \\s (ECMA-262: WhiteSpace and LineTerminator, with every Unicode Zs): what JSON
Schema's patterns, and so the published ones, mean by it."""


def _as_ecmascript(pattern: str) -> re.Pattern[str]:
    """`pattern` with \\s (only ever inside a class here) read as ECMAScript reads it."""
    return re.compile(pattern.replace(r"\s", "".join(_ECMASCRIPT_SPACES)))


def _space_like() -> list[str]:
    """Every character some definition could call a space, and a few that none does."""
    categories = {"Zs", "Zl", "Zp", "Cc", "Cf"}
    chars = [c for c in map(chr, range(0x10000)) if c.isspace() or unicodedata.category(c) in categories]
    return [c for c in chars if not 0xD800 <= ord(c) < 0xE000] + ["a", "é", "😀", "\u200b"]


def test_a_not_blank_name_is_refused_by_the_service_exactly_when_the_published_pattern_refuses_it() -> None:
    """The service's rule (CEL, RE2) and the description's pattern (ECMAScript) are two readings
    of one rule: they must agree on every character a definition of space could count."""
    rules = field_rules(pet_pb2.Pet, "name").string
    assert NOT_BLANK.on(rules)
    published = _as_ecmascript(published_pattern(rules))
    names = [c * 3 for c in _space_like()] + [f" {c} " for c in _space_like()]
    disagree = [
        name
        for name in names
        if bool(_ENGINE.collect_violations(pet_pb2.Pet(name=name))) == bool(published.fullmatch(name))
    ]
    assert disagree == []


def test_a_name_of_byte_order_marks_is_blank() -> None:
    """U+FEFF is a space to ECMAScript (so to the published pattern) though not to Python's
    str.strip, which the service once used: it is refused."""
    violations = _ENGINE.collect_violations(pet_pb2.Pet(name="\ufeff"))
    assert [v.proto.rule_id for v in violations] == [NOT_BLANK.id]
