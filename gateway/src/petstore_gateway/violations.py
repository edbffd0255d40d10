"""A service's refusal of a request field, in the client's words.

A service refuses a field neutrally (petstore_common.field_violations): the proto field path of
the request the gateway sent, the rule id, and the rule without a field name. The gateway alone
knows what the client wrote, so it names the field: JSON names, the resource the request
carries left out (the body), and the fields an HTTP request spells otherwise (FIELD_NAMES).
A status without a violation this gateway can name (a service before 1.1.0, a field it does
not know) keeps the service's own message.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

import grpc
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore_common.field_violations import STATUS_DETAILS_KEY, client_name, first_violation, worded


def _full_name(request: type[Message], field: str) -> str:
    full_name: str = request.DESCRIPTOR.fields_by_name[field].full_name
    return full_name


FIELD_NAMES: Mapping[str, str] = MappingProxyType(
    {
        # The list filters are query parameters named in the singular (findByStatus, getOrders)
        # or by the classic API (findByTags).
        _full_name(pet_service_pb2.ListPetsRequest, "statuses"): "status",
        _full_name(pet_service_pb2.ListPetsRequest, "tag_names"): "tags",
        _full_name(order_service_pb2.ListOrdersRequest, "statuses"): "status",
        # uploadFile's file name is the multipart part's filename, no field of a body.
        _full_name(pet_service_pb2.UploadPetImageRequest, "file_name"): "the file's filename",
    }
)
"""Request fields whose client name is no JSON name, by full name: each named once, here."""


def violation_message(
    code: grpc.StatusCode, metadata: grpc.aio.Metadata | None, request: object
) -> str | None:
    """The client's words for the field violation an INVALID_ARGUMENT carries about `request`
    (`photoUrls[3]: must be at most 2048 characters`), or None: no violation, or none this
    gateway can name (the caller shows the status's message instead)."""
    if code != grpc.StatusCode.INVALID_ARGUMENT or metadata is None or not isinstance(request, Message):
        return None
    details = metadata.get(STATUS_DETAILS_KEY)
    if not isinstance(details, bytes):
        return None
    violation = first_violation(code, details)
    if violation is None:
        return None
    name = client_name(cast(Descriptor, request.DESCRIPTOR), violation.field, FIELD_NAMES)
    return None if name is None else worded(name, violation)
