from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_gateway.representations.order import format_utc, order_from_wire, order_to_wire, parse_ship_date
from petstore_gateway.representations.shapes import InvalidRepresentation


def test_every_field_round_trips() -> None:
    wire = {
        "id": 5,
        "petId": 9,
        "quantity": 2,
        "shipDate": "2024-05-01T12:30:00.250Z",
        "status": "approved",
        "complete": True,
    }
    order = order_from_wire(wire)
    assert (order.id, order.pet_id, order.quantity, order.status) == (
        5,
        9,
        2,
        order_pb2.ORDER_STATUS_APPROVED,
    )
    assert order_to_wire(order) == wire


def test_defaults() -> None:
    order = order_from_wire({"petId": 9})
    assert (order.quantity, order.status, order.complete) == (1, order_pb2.ORDER_STATUS_PLACED, False)
    assert not order.HasField("id")
    assert not order.HasField("ship_date")
    assert order_to_wire(order) == {"petId": 9, "quantity": 1, "status": "placed", "complete": False}


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z"),
        ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00.000Z"),
        ("2024-05-01T00:30:00.123456-01:00", "2024-05-01T01:30:00.123Z"),
        ("2024-05-01T12:00:00.000+0000", "2024-05-01T12:00:00.000Z"),
    ],
)
def test_ship_dates_are_returned_in_utc(text: str, utc: str) -> None:
    assert format_utc(parse_ship_date(text)) == utc


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01T12:00:00",
        "2024-05-01",
        "yesterday",
        "",
        "2024-13-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",
        "2" * 80,
        "2024-01-01T00:00:00\x00Z",  # fromisoformat alone reads this as midnight UTC
        "2024-01-01\x0000:00:00Z",
        "2024-01-01T00:00:00Z\n",
        "\uff12\uff10\uff12\uff14-01-01T00:00:00Z",  # full-width digits
    ],
)
def test_bad_or_zoneless_ship_dates_are_rejected(text: str) -> None:
    with pytest.raises(InvalidRepresentation, match="shipDate"):
        parse_ship_date(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"petId": None}, "petId is required"),
        ({"petId": "1"}, "petId must be an integer"),
        ({"quantity": 0}, "quantity must be at least 1"),
        ({"quantity": -3}, "quantity must be at least 1"),
        ({"quantity": 2**31}, "quantity must be a 32-bit integer"),
        ({"quantity": True}, "quantity must be an integer"),
        ({"complete": 1}, "complete must be true or false"),
        ({"status": "lost"}, "status must be one of placed, approved, delivered"),
        ({"shipDate": 20240501}, "shipDate must be a string"),
    ],
)
def test_shape_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRepresentation, match=f"^{message}$"):
        order_from_wire({"petId": 1, **change})


def test_format_keeps_milliseconds_only() -> None:
    stamp = Timestamp(seconds=0, nanos=999_999_999)
    assert format_utc(stamp) == "1970-01-01T00:00:00.999Z"


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("0487-08-02T19:10:58.155195Z", "0487-08-02T19:10:58.155Z"),  # found by schemathesis
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
        ("0999-12-31T23:59:59+00:00", "0999-12-31T23:59:59.000Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_every_year_has_four_digits(text: str, utc: str) -> None:
    assert format_utc(parse_ship_date(text)) == utc
