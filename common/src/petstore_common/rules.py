"""The contract's field rules, read from the protos: every bound a request field has (lengths,
counts, ranges, patterns) is written once, as a protovalidate annotation on the field
(protos/petstore/*/v1/*.proto), and read from there by whoever else needs it (a service sizing
its calls, the gateway's API description). Changing the proto changes them all.

The services enforce the annotations on every request (petstore_common.request_validation);
this module only reads them, and needs no validation engine.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar

from buf.validate import validate_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor
from google.protobuf.message import Message

if TYPE_CHECKING:
    from google.protobuf.internal.enum_type_wrapper import _EnumTypeWrapper

V = TypeVar("V", bound=int)


def field_rules(message: type[Message] | Descriptor, field_name: str) -> validate_pb2.FieldRules:
    """The protovalidate rules of a field, e.g. `field_rules(pet_pb2.Pet, "name").string.max_len`
    (a copy: the descriptor's own options stay as they are). KeyError for an unknown field; an
    empty FieldRules for a field without rules."""
    descriptor = message if isinstance(message, Descriptor) else message.DESCRIPTOR
    rules = validate_pb2.FieldRules()
    rules.CopyFrom(_rules_of(descriptor, field_name))
    return rules


@functools.cache
def _rules_of(descriptor: Descriptor, field_name: str) -> validate_pb2.FieldRules:
    options = descriptor.fields_by_name[field_name].GetOptions()
    return options.Extensions[validate_pb2.field]


def enum_names(enum: _EnumTypeWrapper[V] | EnumDescriptor) -> Mapping[V, str]:
    """The client-facing names of an enum's values, in declaration order, the zero value (its
    "unspecified") left out: PET_STATUS_AVAILABLE of PetStatus is "available"."""
    descriptor = enum if isinstance(enum, EnumDescriptor) else enum.DESCRIPTOR
    return _names_of(descriptor)  # type: ignore[return-value]  # V is the enum's own int type


@functools.cache
def _names_of(descriptor: EnumDescriptor) -> Mapping[int, str]:
    # buf lint (ENUM_VALUE_PREFIX) makes every value start with the enum's name in UPPER_SNAKE.
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", descriptor.name).upper() + "_"
    return MappingProxyType(
        {value.number: value.name.removeprefix(prefix).lower() for value in descriptor.values if value.number}
    )
