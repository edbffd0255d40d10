"""The contract's text formats, named. Each is a protovalidate predefined rule written once in
the shared proto protos/petstore/formats/v1/formats.proto (an extension of
buf.validate.StringRules: its id, its message and its CEL expression); a field of a format says
so in its own proto (`[petstore.formats.v1.text]: true`). This module reads each rule from the
descriptors, so that the services' words for a refused value (request_validation, by rule id)
and the pattern both API descriptions publish (the gateway's apidoc) follow the proto.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from buf.validate import validate_pb2

from petstore.formats.v1 import formats_pb2

if TYPE_CHECKING:
    from google.protobuf.internal.extension_dict import _ExtensionFieldDescriptor

    Extension = _ExtensionFieldDescriptor[validate_pb2.StringRules, bool]

_PATTERN_RULE = re.compile(r"!rule \|\| this\.matches\(r'([^']*)'\)")
"""The expression of every pattern format (formats.proto says so): the pattern is the RE2
raw string, read as is."""


@dataclass(frozen=True, slots=True)
class FormatRule:
    """A predefined rule of formats.proto, as its declaration says."""

    extension: Extension
    id: str
    phrase: str
    """What a value that breaks the rule is told, after the field's name (the rule's message)."""
    expression: str

    def on(self, rules: validate_pb2.StringRules) -> bool:
        """Whether a field's string rules carry this one."""
        return rules.HasExtension(self.extension) and bool(rules.Extensions[self.extension])


@dataclass(frozen=True, slots=True)
class TextFormat:
    name: str
    rule: FormatRule
    pattern: str
    """The rule's regular expression, which RE2 (the services' engine), ECMAScript (JSON
    Schema's) and Python read alike: what the API descriptions publish."""

    @property
    def phrase(self) -> str:
        return self.rule.phrase


def _rule(extension: Extension) -> FormatRule:
    (cel,) = extension.GetOptions().Extensions[validate_pb2.predefined].cel
    return FormatRule(extension, cel.id, cel.message, cel.expression)


def _format(name: str, extension: Extension) -> TextFormat:
    rule = _rule(extension)
    match = _PATTERN_RULE.fullmatch(rule.expression)
    if match is None:
        raise ValueError(f"{rule.id}: not of the form !rule || this.matches(r'...'): {rule.expression}")
    return TextFormat(name, rule, match.group(1))


TEXT = _format("text", formats_pb2.text)
"""Text a person reads: no control characters (Unicode category Cc)."""
USERNAME = _format("username", formats_pb2.username)
PHOTO_URL = _format("photo URL", formats_pb2.photo_url)
"""A link a storefront puts in its pages: no javascript:, data: or other scheme that runs."""
EMAIL = _format("email", formats_pb2.email)
IMAGE_ID = _format("image id", formats_pb2.image_id)

FORMATS = (TEXT, USERNAME, PHOTO_URL, EMAIL, IMAGE_ID)

NOT_BLANK = _rule(formats_pb2.not_blank)
"""Empty, or with a character that is no space: a rule, not a pattern of its own (the API
descriptions fold it into the field's format)."""

RULE_PHRASES: Mapping[str, str] = MappingProxyType(
    {rule.id: rule.phrase for rule in (*(f.rule for f in FORMATS), NOT_BLANK)}
)
"""Rule id -> the words for a value that breaks it (request_validation uses them)."""


def format_of(rules: validate_pb2.StringRules) -> TextFormat | None:
    """The format a field's string rules name, if any (a field names one at most)."""
    named = [f for f in FORMATS if f.rule.on(rules)]
    if len(named) > 1:
        raise ValueError(f"a field of two formats: {', '.join(f.name for f in named)}")
    return named[0] if named else None


def published_pattern(rules: validate_pb2.StringRules) -> str:
    """The pattern the API descriptions publish for a field with these string rules (JSON
    Schema's patterns are ECMAScript's): its format's, made not blank when the field is; "" for
    a field of no format."""
    text_format = format_of(rules)
    if text_format is None:
        return ""
    return not_blank(text_format.pattern) if NOT_BLANK.on(rules) else text_format.pattern


def not_blank(pattern: str) -> str:
    """`pattern`, and at least one character that is no space (ECMAScript's \\s: the spaces the
    NOT_BLANK rule counts, in the set of characters the formats leave). A pattern of the form
    ^[^...]*$ (the text format) becomes the same class around one such character, which every
    generator and validator of JSON Schema handles; any other takes a lookahead."""
    match = re.fullmatch(r"\^\[\^(.+)\]\*\$", pattern)
    if match is None:
        return rf"^(?=.*\S)(?:{pattern})"
    chars = match.group(1)
    return rf"^[^{chars}]*[^\s{chars}][^{chars}]*$"
