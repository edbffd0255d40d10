"""Invalid input told in neutral words, and the one function that words it for a client.

A service that refuses a request field says so in a `google.rpc.Status` with one
`google.rpc.BadRequest` field violation, sent in the `grpc-status-details-bin` trailer beside the
INVALID_ARGUMENT status (the gRPC richer error model): `field` is the proto field path
(`pet.photo_urls[3]`, `tag_names`), `reason` the rule id (`string.max_len`, `required`) and
`description` the rule without any field name (`must be at most 2048 characters`). Names are the
caller's business: the gateway names the field as its client wrote it (`client_name`) and words
the two together (`worded`). No protovalidate here: the gateway imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status

STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""The trailer carrying a serialized google.rpc.Status (the gRPC richer error model)."""

REQUIRED = "required"
"""The reason (protovalidate's rule id) of a field that must be set: worded `<name> is required`."""

MAX_STATUS_DETAILS_BYTES = 4096
"""The largest Status a reader parses: one violation is a path, a rule id and a sentence, beside
the status's message (a few hundred bytes)."""
MAX_FIELD_PATH_CHARS = 256
"""The longest field path a reader names (the protos' deepest is three fields and an index)."""
MAX_DESCRIPTION_CHARS = 512
"""The longest description a reader passes on to its client."""

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9]{1,10})\])?")
"""One step of a field path: a proto field name, and a list index when it is one."""


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One refused field, neutral: no HTTP name, no client wording."""

    field: str
    """The proto field path from the request message, as protovalidate writes it."""
    reason: str
    """The rule id: `string.max_len`, `required`, ..."""
    description: str
    """The rule, without any field name: `must be at most 2048 characters`."""

    @classmethod
    def required(cls, field: str) -> FieldViolation:
        return cls(field, REQUIRED, "is required")


def worded(name: str, violation: FieldViolation) -> str:
    """`<name>: <description>`, or `<name> is required`; the description alone with no name."""
    if violation.reason == REQUIRED:
        return f"{name} is required"
    return f"{name}: {violation.description}" if name else violation.description


def client_name(request: Descriptor, path: str, renames: Mapping[str, str]) -> str | None:
    """The client's name for the field `path` leads to from the request message: JSON names,
    the resource the request carries left out (its body: `name`, not `pet.name`), and a field
    renamed by its full name (`petstore.pet.v1.ListPetsRequest.tag_names` is the query parameter
    `tags`). None when the path names no field of `request` (a newer peer's, or garbage)."""
    if not path:
        return ""
    if len(path) > MAX_FIELD_PATH_CHARS:
        return None
    parts: list[str] = []
    message: Descriptor | None = request
    for segment in path.split("."):
        match = _SEGMENT.fullmatch(segment)
        field = message.fields_by_name.get(match[1]) if match is not None and message is not None else None
        if match is None or message is None or field is None:
            return None
        carried = (
            message.name.endswith("Request") and field.message_type is not None and not field.is_repeated
        )
        if not carried:
            parts.append(renames.get(field.full_name, field.json_name))
        if match[2] is not None:
            if carried:  # an index into a field that is no list
                return None
            parts[-1] += f"[{match[2]}]"
        message = field.message_type
    return ".".join(parts)


def status_details(code: grpc.StatusCode, message: str, violations: Sequence[FieldViolation]) -> bytes:
    """The `grpc-status-details-bin` value of a status refusing `violations`."""
    bad_request = BadRequest(
        field_violations=[
            BadRequest.FieldViolation(field=v.field, reason=v.reason, description=v.description)
            for v in violations
        ]
    )
    detail = AnyMessage()
    detail.Pack(bad_request)
    status_code: int = code.value[0]
    return Status(code=status_code, message=message, details=[detail]).SerializeToString()


def first_violation(code: grpc.StatusCode, details: bytes) -> FieldViolation | None:
    """The first field violation of a `grpc-status-details-bin` value, when it is one a client
    may be told: a Status of this very code, within the bounds above. None otherwise (garbage,
    oversized, another status's): the caller falls back to the status's message."""
    if len(details) > MAX_STATUS_DETAILS_BYTES:
        return None
    try:
        status = Status.FromString(details)
        if status.code != code.value[0]:
            return None
        for detail in status.details:
            bad_request = BadRequest()
            if detail.Unpack(bad_request):  # False: a detail of another type
                for violation in bad_request.field_violations[:1]:
                    return _bounded(FieldViolation(violation.field, violation.reason, violation.description))
    except DecodeError:
        return None
    return None


def _bounded(violation: FieldViolation) -> FieldViolation | None:
    description = violation.description
    if len(violation.field) > MAX_FIELD_PATH_CHARS or len(description) > MAX_DESCRIPTION_CHARS:
        return None
    if not description.isprintable() or not (description or violation.reason == REQUIRED):
        return None
    return violation
