"""The neutral violation's wire form and the one wording function both sides use."""

from __future__ import annotations

from typing import cast

import grpc
import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore_common.field_violations import (
    MAX_FIELD_PATH_CHARS,
    MAX_STATUS_DETAILS_BYTES,
    FieldViolation,
    client_name,
    first_violation,
    status_details,
    worded,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
TOO_LONG = FieldViolation("pet.photo_urls[3]", "string.max_len", "must be at most 2048 characters")


def test_a_violation_survives_the_trailer_as_it_was_sent() -> None:
    details = status_details(INVALID, "photoUrls[3]: must be at most 2048 characters", [TOO_LONG])
    assert first_violation(INVALID, details) == TOO_LONG


def test_a_status_of_another_code_or_past_the_bound_is_not_read() -> None:
    assert first_violation(grpc.StatusCode.NOT_FOUND, status_details(INVALID, "m", [TOO_LONG])) is None
    padded = status_details(INVALID, "m" * MAX_STATUS_DETAILS_BYTES, [TOO_LONG])
    assert first_violation(INVALID, padded) is None
    assert first_violation(INVALID, b"\xff\xfe not a status") is None


@pytest.mark.parametrize(
    ("request_", "path", "name"),
    [
        (pet_service_pb2.CreatePetRequest, "pet.photo_urls[3]", "photoUrls[3]"),  # the carried pet left out
        (pet_service_pb2.UpdatePetRequest, "pet.tags[1].id", "tags[1].id"),
        (pet_service_pb2.ListPetsRequest, "tag_names[0]", "tags[0]"),  # renamed
        (pet_service_pb2.ListPetsRequest, "page_token", "pageToken"),
        (order_service_pb2.ListOrdersRequest, "statuses[2]", "statuses[2]"),  # no rename given
        (pet_service_pb2.CreatePetRequest, "", ""),  # a rule of the whole message
        (pet_service_pb2.CreatePetRequest, "pet.nickname", None),  # no such field
        (pet_service_pb2.CreatePetRequest, "pet.name.first", None),  # past a scalar
        (pet_service_pb2.CreatePetRequest, "pet[0].name", None),  # an index into no list
        (pet_service_pb2.CreatePetRequest, "pet.photo_urls[x]", None),
        (pet_service_pb2.CreatePetRequest, "pet." + "a" * MAX_FIELD_PATH_CHARS, None),
    ],
)
def test_the_client_name_of_a_field_path(request_: type[Message], path: str, name: str | None) -> None:
    renames = {"petstore.pet.v1.ListPetsRequest.tag_names": "tags"}
    assert client_name(cast(Descriptor, request_.DESCRIPTOR), path, renames) == name


def test_worded() -> None:
    assert worded("photoUrls[3]", TOO_LONG) == "photoUrls[3]: must be at most 2048 characters"
    assert worded("name", FieldViolation.required("pet.name")) == "name is required"
    assert worded("", TOO_LONG) == "must be at most 2048 characters"
