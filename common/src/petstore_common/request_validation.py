"""Every request is checked against the contract's field rules (the protovalidate annotations
in protos/) before its handler runs: the shared server interceptor calls `RequestValidator.check`
on each one, and a violation is INVALID_ARGUMENT.

The first violated rule is told neutrally (field_violations.py): the proto field path
(`pet.photo_urls[3]`), the rule id and the rule in words without a field name (`must be at
most 2048 characters`); a value that does not match its field's pattern is told the words of
that format (`must not contain control characters` says more than the regular expression:
petstore_common.formats). The gateway names the field for its client.

The status's message words it for HTTP clients as well (`photoUrls[3]: must be at most 2048
characters`), with the same `worded`, for gateways before 1.1.0, which read no violations: JSON
names, the resource a request carries left out (`name`, not `pet.name`), and the service's own
renames (ListPetsRequest.tag_names is the query parameter `tags`). That text and the renames go
once no gateway older than 1.1.0 runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

import protovalidate
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from petstore_common.errors import InvalidArgument
from petstore_common.field_violations import REQUIRED, FieldViolation, client_name, worded
from petstore_common.formats import RULE_PHRASES
from petstore_common.rules import enum_names

_ENGINE = protovalidate.Validator()
"""One engine for the process: it compiles each message type's rules once and keeps them."""

_ENUM_RULES = frozenset({"enum.defined_only", "enum.in", "enum.not_in"})
"""Rules that say which values of an enum a field takes: worded as the names it may be."""


class RequestValidator:
    """Checks requests against their messages' rules; `field_names` renames fields by full name
    (e.g. "petstore.pet.v1.ListPetsRequest.tag_names": "tags") in the legacy message only."""

    def __init__(self, *, field_names: Mapping[str, str] | None = None) -> None:
        self._field_names = MappingProxyType(dict(field_names or {}))

    def check(self, request: object) -> None:
        """Raises InvalidArgument naming the first violated rule, if any. A request that is no
        message (a handler registered without a deserializer gets bytes) has no rules."""
        if not isinstance(request, Message):
            return
        violations = _ENGINE.collect_violations(request, fail_fast=True)
        if violations:
            descriptor = cast(Descriptor, request.DESCRIPTOR)
            raise self.refused(descriptor, self.violation(descriptor, violations[0]))

    def refusal(self, request: object) -> str | None:
        """What `check` would say of `request` (its legacy message), or None when it passes."""
        try:
            self.check(request)
        except InvalidArgument as exc:
            return exc.message
        return None

    def refused(self, request: Descriptor, violation: FieldViolation) -> InvalidArgument:
        """The error refusing a field of a `request` message: the neutral violation, and the
        legacy message for gateways before 1.1.0."""
        name = client_name(request, violation.field, self._field_names)
        return InvalidArgument(
            worded(violation.field if name is None else name, violation), violation=violation
        )

    def violation(self, request: Descriptor, violation: protovalidate.Violation) -> FieldViolation:
        """The engine's violation in neutral words."""
        proto = violation.proto
        elements = proto.field.elements if proto.field is not None else ()
        path, field = _path(request, elements)
        if proto.rule_id == REQUIRED:
            return FieldViolation.required(path)
        description = self._phrase(proto.rule_id, violation.rule_value, field) or proto.message
        return FieldViolation(path, proto.rule_id, description)

    def _phrase(self, rule_id: str, rule_value: Any, field: FieldDescriptor | None) -> str | None:
        """Plainer words than the engine's for the rules the protos use most; None: its own."""
        if rule_id in RULE_PHRASES:  # a shared format (petstore_common.formats): its own words
            return RULE_PHRASES[rule_id]
        if rule_id.endswith(".gt") and rule_value == 0:
            return "must be positive"
        if rule_id in ("string.min_len", "repeated.min_items") and rule_value == 1:
            return "must not be empty"
        if rule_id == "repeated.max_items":
            return f"must have at most {rule_value} entries"
        if rule_id in _ENUM_RULES and field is not None and field.enum_type is not None:
            return f"must be one of {', '.join(enum_names(field.enum_type).values())}"
        return None


def _path(request: Descriptor, elements: Sequence[Any]) -> tuple[str, FieldDescriptor | None]:
    """The proto field path the elements spell (`pet.photo_urls[3]`), and the field it leads to."""
    parts: list[str] = []
    message: Descriptor | None = request
    field: FieldDescriptor | None = None
    for element in elements:
        field = message.fields_by_number.get(element.field_number) if message is not None else None
        part = element.field_name
        if element.subscript is not None:
            part += f"[{element.subscript.value}]"
        parts.append(part)
        message = field.message_type if field is not None else None
    return ".".join(parts), field
