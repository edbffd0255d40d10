"""Every request is checked against the contract's field rules (the protovalidate annotations
in protos/) before its handler runs: the shared server interceptor calls `RequestValidator.check`
on each one, and a violation is INVALID_ARGUMENT.

The message names the field as the client wrote it, then what is wrong with it:
`photoUrls[3]: must be at most 2048 characters`. Fields are named by their JSON names
(photo_urls is photoUrls); the resource a request carries (CreatePetRequest.pet, ...) is the body
the client sent, so its name is left out (`name`, not `pet.name`); a service may rename a field
whose HTTP name differs (ListPetsRequest.tag_names is the query parameter `tags`). A value that
does not match its field's pattern is told the words of that format (`must not contain control
characters` says more than the regular expression: petstore_common.formats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

import protovalidate
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from petstore_common.errors import InvalidArgument
from petstore_common.formats import PATTERN_PHRASES
from petstore_common.rules import enum_names

_ENGINE = protovalidate.Validator()
"""One engine for the process: it compiles each message type's rules once and keeps them."""

_ENUM_RULES = frozenset({"enum.defined_only", "enum.in", "enum.not_in"})
"""Rules that say which values of an enum a field takes: worded as the names it may be."""


class RequestValidator:
    """Checks requests against their messages' rules; `field_names` renames fields by full name
    (e.g. "petstore.pet.v1.ListPetsRequest.tag_names": "tags")."""

    def __init__(self, *, field_names: Mapping[str, str] | None = None) -> None:
        self._field_names = MappingProxyType(dict(field_names or {}))

    def check(self, request: object) -> None:
        """Raises InvalidArgument naming the first violated rule, if any. A request that is no
        message (a handler registered without a deserializer gets bytes) has no rules."""
        if not isinstance(request, Message):
            return
        violations = _ENGINE.collect_violations(request, fail_fast=True)
        if violations:
            raise InvalidArgument(self.describe(request, violations[0]))

    def refusal(self, request: object) -> str | None:
        """What `check` would say of `request`, or None when it passes."""
        try:
            self.check(request)
        except InvalidArgument as exc:
            return exc.message
        return None

    def describe(self, request: Message, violation: protovalidate.Violation) -> str:
        """`<field path>: <what is wrong>`, or `<field path> is required`."""
        proto = violation.proto
        elements = proto.field.elements if proto.field is not None else ()
        path, field = self._path(cast(Descriptor, request.DESCRIPTOR), elements)
        if proto.rule_id == "required":
            return f"{path} is required"
        message = self._phrase(proto.rule_id, violation.rule_value, field) or proto.message
        return f"{path}: {message}" if path else message

    def _phrase(self, rule_id: str, rule_value: Any, field: FieldDescriptor | None) -> str | None:
        """Plainer words than the engine's for the rules the protos use most; None: its own."""
        if rule_id == "string.pattern":
            return PATTERN_PHRASES.get(rule_value)
        if rule_id.endswith(".gt") and rule_value == 0:
            return "must be positive"
        if rule_id in ("string.min_len", "repeated.min_items") and rule_value == 1:
            return "must not be empty"
        if rule_id == "repeated.max_items":
            return f"must have at most {rule_value} entries"
        if rule_id in _ENUM_RULES and field is not None and field.enum_type is not None:
            return f"must be one of {', '.join(enum_names(field.enum_type).values())}"
        return None

    def _path(self, request: Descriptor, elements: Sequence[Any]) -> tuple[str, FieldDescriptor | None]:
        """The client's name for the field the elements lead to, and that field."""
        parts: list[str] = []
        message: Descriptor | None = request
        field: FieldDescriptor | None = None
        for element in elements:
            field = message.fields_by_number.get(element.field_number) if message is not None else None
            if field is None:  # not ours to name (an extension): the engine's name, as is
                parts.append(element.field_name)
                message = None
                continue
            carried = (
                message is not None
                and message.name.endswith("Request")
                and field.message_type is not None
                and not field.is_repeated
            )
            if not carried:
                parts.append(self._field_names.get(field.full_name, field.json_name))
            if element.subscript is not None:
                parts[-1] += f"[{element.subscript.value}]"
            message = field.message_type
        return ".".join(parts), field
